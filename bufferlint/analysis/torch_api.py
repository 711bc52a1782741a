"""What bufferlint knows about PyTorch's API surface, as plain data (torch is never imported)."""

from __future__ import annotations

from typing import Optional

# torch.* callables that do not return a single tensor.
NON_TENSOR_TORCH_FUNCTIONS = frozenset(
    """
    device Size finfo iinfo dtype Generator Stream Event layout memory_format
    split chunk unbind meshgrid tensor_split hsplit vsplit dsplit broadcast_tensors broadcast_shapes
    sort topk kthvalue mode aminmax var_mean std_mean cummax cummin frexp histogram histogramdd
    slogdet lu qr svd eig symeig lstsq triangular_solve geqrf lobpcg pca_lowrank svd_lowrank
    is_tensor is_storage is_floating_point is_complex is_nonzero is_same_size is_inference
    is_grad_enabled is_inference_mode_enabled is_anomaly_enabled is_deterministic_algorithms_warn_only_enabled
    are_deterministic_algorithms_enabled is_warn_always_enabled numel typename
    get_default_dtype set_default_dtype get_default_device set_default_device set_default_tensor_type
    manual_seed seed initial_seed set_rng_state get_num_threads set_num_threads get_num_interop_threads
    set_num_interop_threads use_deterministic_algorithms set_printoptions set_float32_matmul_precision
    get_float32_matmul_precision set_flush_denormal set_warn_always set_anomaly_enabled
    load save compile no_grad enable_grad inference_mode set_grad_enabled autocast
    jit_script vmap cond while_loop equal allclose can_cast promote_types result_type
    """.split()
)

# torch namespaces whose members are not tensor-returning functions.
NON_TENSOR_NAMESPACES = frozenset(
    """
    cuda backends distributed jit utils autograd onnx fx export hub library testing profiler optim
    amp distributions multiprocessing package quantization ao overrides random mps xpu cpu
    compiler sparse_coo_tensor_unsafe nn types version futures monitor func masked nested
    """.split()
)

# torch namespaces whose callables return tensors (except the listed tuple-returning ones).
TENSOR_NAMESPACES = {
    "fft": frozenset(),
    "special": frozenset(),
    "linalg": frozenset("eig eigh qr svd slogdet lu lu_factor lu_factor_ex lstsq inv_ex cholesky_ex ldl_factor ldl_factor_ex solve_ex".split()),
    "nn.functional": frozenset(
        "max_pool1d_with_indices max_pool2d_with_indices max_pool3d_with_indices adaptive_max_pool1d_with_indices adaptive_max_pool2d_with_indices multi_head_attention_forward".split()
    ),
    "nn.init": frozenset("calculate_gain _calculate_fan_in_and_fan_out".split()),
    "signal.windows": frozenset(),
}

# Tensor constructors spelled as classes.
TENSOR_CLASSES = frozenset(
    """
    Tensor FloatTensor DoubleTensor HalfTensor BFloat16Tensor ByteTensor CharTensor ShortTensor
    IntTensor LongTensor BoolTensor
    """.split()
)

# Methods of a tensor that do not return a tensor.
NON_TENSOR_METHODS = frozenset(
    """
    item tolist numpy size dim ndimension numel nelement element_size data_ptr stride storage
    untyped_storage storage_offset is_contiguous is_floating_point is_complex is_signed is_pinned
    is_shared is_set_to get_device chunk split unbind tensor_split hsplit vsplit dsplit sort topk
    kthvalue mode aminmax cummax cummin frexp slogdet qr svd eig lu equal allclose backward
    register_hook register_post_accumulate_grad_hook retain_grad tolist __len__ __iter__ dim_order
    share_memory_ type_as_str
    """.split()
)

# Attributes of a tensor that are themselves tensors.
TENSOR_ATTRIBUTES = frozenset("T mT H mH real imag data grad".split())

# Tensor methods that only move a tensor between devices (BUF002 looks for these on attributes).
DEVICE_MOVE_METHODS = frozenset("to cuda cpu type_as".split())

# Tensor methods that only shape a tensor (a view, or a copy of its elements), keeping its values.
SHAPING_METHODS = frozenset("expand expand_as repeat unsqueeze squeeze view reshape flatten permute transpose contiguous".split())

# Libraries whose functions take tensors and give back tensors where they found them
# (`einops.repeat(t, ...)`, `kornia.filters.blur(x, ...)`), as torch's own functions do.
TENSOR_LIBRARIES = frozenset(
    "einops kornia torchvision torchaudio torch_scatter torch_sparse torch_cluster torch_geometric pytorch3d "
    "opt_einsum xformers flash_attn functorch".split()
)


def is_tensor_library(qualified: Optional[str]) -> bool:
    """Whether the callable `qualified` comes from a library that keeps tensors where they are."""
    return qualified is not None and qualified.partition(".")[0] in TENSOR_LIBRARIES


# Base classes that are nn.Module subclasses without being torch.nn layers.
EXTRA_MODULE_BASES = frozenset(
    """
    pytorch_lightning.LightningModule pytorch_lightning.core.LightningModule
    pytorch_lightning.core.module.LightningModule pytorch_lightning.core.lightning.LightningModule
    lightning.LightningModule lightning.pytorch.LightningModule lightning.pytorch.core.LightningModule
    lightning.pytorch.core.module.LightningModule lightning.pytorch.core.LightningModule
    torch.jit.ScriptModule torch.jit.RecursiveScriptModule
    """.split()
)

# nn.Module subclasses of other libraries that projects build their models on, by package and
# class name (any module path under the package): transformers' `*PreTrainedModel`, diffusers'
# `ModelMixin`, OpenMMLab's `BaseModule`, torch_geometric's `MessagePassing`, smplx's body
# models. Their own attributes are not read, so a fix there stays unsafe (obligation 3).
_LIBRARY_MODULES = {
    "transformers": frozenset(("PreTrainedModel",)),
    "diffusers": frozenset(("ModelMixin",)),
    "mmengine": frozenset(("BaseModule", "BaseModel")),
    "mmcv": frozenset(("BaseModule",)),
    "torch_geometric": frozenset(("MessagePassing",)),
    "smplx": frozenset(("SMPL", "SMPLH", "SMPLX", "MANO", "FLAME")),
}


def is_library_module(qualified: Optional[str]) -> bool:
    """`transformers.BertPreTrainedModel`, `mmengine.model.BaseModule`: a module class of a library."""
    if qualified is None:
        return False
    package, _, rest = qualified.partition(".")
    names = _LIBRARY_MODULES.get(package)
    if names is None or not rest:
        return False
    last = rest.rpartition(".")[2]
    # every model family of transformers has its own `<Family>PreTrainedModel` base (not the
    # TensorFlow and Flax ones)
    return last in names or (package == "transformers" and last.endswith("PreTrainedModel") and not last.startswith(("TF", "Flax")))


# Their short names, for the prefilter: a file can subclass these without the word "torch".
NON_TORCH_MODULE_BASE_NAMES = tuple(sorted({b.rsplit(".", 1)[-1] for b in EXTRA_MODULE_BASES if not b.startswith("torch.")}))

SCRIPT_MODULE_BASES = frozenset("torch.jit.ScriptModule torch.jit.RecursiveScriptModule".split())

# Classes under torch.nn that are not modules.
NON_MODULE_NN_CLASSES = frozenset(
    "Parameter Buffer UninitializedParameter UninitializedBuffer ParameterList ParameterDict".split()
)

# torch.nn layers that hold no parameters or buffers (losses only while given no `weight`):
# `.cuda()` on one moves nothing.
STATELESS_LAYERS = frozenset(
    """
    ReLU ReLU6 LeakyReLU ELU SELU CELU GELU SiLU Mish Sigmoid Tanh Softmax LogSoftmax Softmin Softmax2d
    Softplus Softsign Hardtanh Hardswish Hardsigmoid Hardshrink Softshrink Tanhshrink Threshold GLU
    LogSigmoid Dropout Dropout1d Dropout2d Dropout3d AlphaDropout FeatureAlphaDropout Identity Flatten
    Unflatten MaxPool1d MaxPool2d MaxPool3d AvgPool1d AvgPool2d AvgPool3d AdaptiveAvgPool1d
    AdaptiveAvgPool2d AdaptiveAvgPool3d AdaptiveMaxPool1d AdaptiveMaxPool2d AdaptiveMaxPool3d LPPool1d
    LPPool2d Upsample UpsamplingNearest2d UpsamplingBilinear2d PixelShuffle PixelUnshuffle
    ChannelShuffle ZeroPad1d ZeroPad2d ZeroPad3d ConstantPad1d ConstantPad2d ConstantPad3d
    ReflectionPad1d ReflectionPad2d ReflectionPad3d ReplicationPad1d ReplicationPad2d
    ReplicationPad3d CircularPad1d CircularPad2d CircularPad3d CosineSimilarity PairwiseDistance Fold
    Unfold L1Loss MSELoss CrossEntropyLoss NLLLoss BCELoss BCEWithLogitsLoss KLDivLoss SmoothL1Loss
    HuberLoss SoftMarginLoss MultiLabelSoftMarginLoss CosineEmbeddingLoss MarginRankingLoss
    HingeEmbeddingLoss TripletMarginLoss PoissonNLLLoss GaussianNLLLoss CTCLoss MultiMarginLoss
    MultiLabelMarginLoss _Loss _WeightedLoss
    """.split()
)
# Keywords through which a loss is given a tensor it keeps as a buffer.
WEIGHT_KEYWORDS = frozenset(("weight", "pos_weight"))

PARAMETER_CLASSES = frozenset(
    "torch.nn.Parameter torch.nn.parameter.Parameter torch.nn.UninitializedParameter".split()
)
BUFFER_CLASSES = frozenset("torch.nn.Buffer torch.nn.parameter.Buffer".split())
# Containers of parameters: modules themselves (nn.Module.__setattr__ registers them as
# submodules), though the rules treat them apart from layers.
PARAMETER_CONTAINERS = frozenset(
    "torch.nn.ParameterList torch.nn.ParameterDict torch.nn.modules.container.ParameterList "
    "torch.nn.modules.container.ParameterDict".split()
)


def is_module_base(qualified: Optional[str]) -> bool:
    """Whether a resolved base-class name is `torch.nn.Module` or one of its subclasses we know."""
    if qualified is None:
        return False
    if qualified in EXTRA_MODULE_BASES or is_library_module(qualified):
        return True
    parts = qualified.split(".")
    if parts[:2] != ["torch", "nn"] or len(parts) < 3:
        return False
    last = parts[-1]
    if not last.lstrip("_")[:1].isupper() or last in NON_MODULE_NN_CLASSES:
        return False
    # torch.nn.Linear, torch.nn.modules.linear.Linear, torch.nn.parallel.DistributedDataParallel;
    # the private bases under torch.nn.modules (`loss._Loss`, `conv._ConvNd`) are modules too
    if last.startswith("_"):
        return len(parts) == 5 and parts[2] == "modules" and parts[3] != "module"
    return len(parts) == 3 or parts[2] in ("modules", "parallel", "quantized", "qat", "intrinsic")


def is_stateless_layer(qualified: Optional[str], keywords: frozenset[str], positional: int) -> bool:
    """`nn.Softmax(dim=1)`, `nn.CrossEntropyLoss()`: a layer that holds no tensor to move."""
    if qualified is None or not is_module_base(qualified):
        return False
    name = qualified.rpartition(".")[2]
    if name not in STATELESS_LAYERS:
        return False
    if name.endswith("Loss"):
        # the weight is the first positional argument of the weighted losses
        return not keywords & WEIGHT_KEYWORDS and (positional == 0 or name in ("L1Loss", "MSELoss", "KLDivLoss", "SmoothL1Loss", "HuberLoss"))
    return True


# Buffers that torch.nn bases register in `__init__` (by class name): a subclass that assigns a
# tensor to one fills the buffer, it keeps no plain attribute.
_WEIGHTED_LOSSES = "_WeightedLoss CrossEntropyLoss NLLLoss NLLLoss2d BCELoss MultiLabelSoftMarginLoss MultiMarginLoss"
_RUNNING_STATS = "_NormBase _BatchNorm BatchNorm1d BatchNorm2d BatchNorm3d SyncBatchNorm _InstanceNorm InstanceNorm1d InstanceNorm2d InstanceNorm3d"
_REGISTERED_BY = {
    **{name: ("weight",) for name in _WEIGHTED_LOSSES.split()},
    "BCEWithLogitsLoss": ("weight", "pos_weight"),
    **{name: ("running_mean", "running_var", "num_batches_tracked") for name in _RUNNING_STATS.split()},
}


def registered_by(qualified: str) -> tuple[str, ...]:
    """The buffers the torch.nn base `qualified` registers for its subclasses."""
    return _REGISTERED_BY.get(qualified.rpartition(".")[2], ()) if is_module_base(qualified) else ()


def is_layer_base(qualified: Optional[str]) -> bool:
    """A torch.nn layer other than the bare Module: it owns attributes (weight, bias...) already."""
    return is_module_base(qualified) and qualified not in (
        "torch.nn.Module",
        "torch.nn.modules.module.Module",
        "torch.nn.modules.loss._Loss",  # owns nothing but `reduction`
        "torch.nn.ModuleList",
        "torch.nn.ModuleDict",
        "torch.nn.Sequential",
    ) and qualified not in EXTRA_MODULE_BASES and not is_library_module(qualified)


def torch_function_returns_tensor(qualified: str, call_arity: int, keywords: frozenset[str]) -> bool:
    """Whether calling the torch callable `qualified` gives a tensor."""
    parts = qualified.split(".")
    if parts[0] != "torch" or len(parts) < 2:
        return False
    if qualified in _VARIABLE:
        return call_arity >= 1  # the old autograd wrapper gives back the tensor it is handed
    if qualified in TENSOR_STATIC_METHODS:
        return True
    if len(parts) == 2:
        return _top_level_returns_tensor(parts[1], call_arity, keywords)
    if parts[1] in ("functional",) and len(parts) == 3:
        return True  # torch.functional.stft and friends
    for namespace, tuple_returning in TENSOR_NAMESPACES.items():
        prefix = namespace.split(".")
        if parts[1 : 1 + len(prefix)] == prefix and len(parts) == 2 + len(prefix):
            return parts[-1] not in tuple_returning
    return False


_VARIABLE = frozenset(("torch.autograd.Variable", "torch.autograd.variable.Variable"))
# Static methods of torch classes that build a tensor (`nn.Transformer.generate_square_subsequent_mask(n)`:
# a float mask of -inf above the diagonal).
TENSOR_STATIC_METHODS = frozenset(
    """
    torch.nn.Transformer.generate_square_subsequent_mask
    torch.nn.modules.transformer.Transformer.generate_square_subsequent_mask
    """.split()
)


def _top_level_returns_tensor(name: str, call_arity: int, keywords: frozenset[str]) -> bool:
    if name in TENSOR_CLASSES:
        return True
    if name in NON_TENSOR_TORCH_FUNCTIONS or name in NON_TENSOR_NAMESPACES:
        return False
    if not name[:1].islower() and not name.startswith("_"):
        return False  # other classes: torch.Generator, torch.Size...
    if name.startswith(("is_", "get_", "set_", "_")):
        return False
    if name in ("max", "min", "median", "nanmedian"):
        return call_arity == 1 and "dim" not in keywords  # with dim: (values, indices)
    if name in ("unique", "unique_consecutive"):
        return not keywords & {"return_inverse", "return_counts"}
    if name in ("where", "nonzero"):
        return call_arity != 1 or name == "nonzero" and "as_tuple" not in keywords
    return True


def method_returns_tensor(method: str, call_arity: int, keywords: frozenset[str]) -> bool:
    """Whether `<tensor>.method(...)` gives a tensor."""
    if method in NON_TENSOR_METHODS or method.startswith("_"):
        return False
    if method in ("max", "min", "median", "nanmedian"):
        return call_arity == 0 and "dim" not in keywords
    if method == "type":
        return call_arity > 0 or bool(keywords)
    if method in ("unique", "unique_consecutive"):
        return not keywords & {"return_inverse", "return_counts"}
    if method == "nonzero":
        return "as_tuple" not in keywords
    return True
