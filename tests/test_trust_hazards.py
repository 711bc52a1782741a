"""The hazards behind the trust fixtures are real: the rewrite bufferlint refuses (or marks unsafe)
breaks the module at runtime, while its own output does not.

Each test takes a fixture, applies the naive rewrite (what a fixer that proved nothing would do)
and shows the failure with real torch: a KeyError while constructing, a result that changes under
`.to(torch.bfloat16)`, or an op mixing devices on the meta device under CUDA's rules.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch

from bufferlint.verify.check import check_module
from bufferlint.verify.device_check import DeviceCheckMode
from tests.module_loading import load_text

TRUST = Path(__file__).resolve().parent.parent / "fixtures" / "trust"


def _source(name: str) -> str:
    return (TRUST / name).read_text()


def _naive(text: str, old: str, new: str, tmp_path: Path) -> ModuleType:
    assert text.count(old) == 1, old
    return load_text(text.replace(old, new), tmp_path)


def _register(line: str) -> str:
    """`        self.x = <value>` -> `        self.register_buffer("x", <value>, persistent=False)`."""
    indent, rest = line[: len(line) - len(line.lstrip())], line.strip()
    target, value = rest.split(" = ", 1)
    return f'{indent}self.register_buffer("{target.split(".", 1)[1]}", {value}, persistent=False)'


@pytest.mark.parametrize(
    ("build", "line"),
    [
        ("Recurrent(4)", "        self.mask = torch.ones(size)"),  # a helper __init__ calls sets it first
        ("Diffusion()", "        self.ids = torch.arange(3)"),  # the base constructor calls an override that sets it
        ("Unpacked()", "        self.high = torch.full((3,), 2.0)"),  # a tuple assignment sets it first
    ],
)
def test_registering_a_name_set_earlier_raises_key_error(build: str, line: str, tmp_path: Path) -> None:
    text = _source("set_before_registration.py")
    naive = _naive(text, line, _register(line), tmp_path)
    with pytest.raises(KeyError, match="already exists"):
        eval(build, vars(naive))
    fixed = load_text((TRUST / "set_before_registration.fixed.py").read_text(), tmp_path)
    eval(build, vars(fixed))  # bufferlint's own output constructs


def _bf16_output(module: ModuleType, cls: str, x: torch.Tensor) -> Any:
    torch.manual_seed(0)
    model = getattr(module, cls)().to(torch.bfloat16)
    with torch.no_grad():
        return model(x.to(torch.bfloat16))


@pytest.mark.parametrize(
    ("cls", "line", "x"),
    [
        ("Pitch", "        self.bins = torch.linspace(0.3, 3.7, 4)", torch.linspace(0.299, 3.701, 200).reshape(2, 100)),
        ("Pinned", "        self.freqs = torch.linspace(1.0, 2.0, 4, dtype=torch.float32)", torch.linspace(-3.0, 3.0, 8).reshape(2, 4)),
    ],
)
def test_registering_a_table_kept_in_its_dtype_changes_results_under_a_cast(cls: str, line: str, x: torch.Tensor, tmp_path: Path) -> None:
    text = _source("dtype_tables.py")
    original = load_text(text, tmp_path)
    naive = _naive(text, line, _register(line), tmp_path)
    assert not torch.equal(_bf16_output(original, cls, x), _bf16_output(naive, cls, x))


def test_registering_a_complex_table_loses_its_imaginary_part_under_a_cast(tmp_path: Path) -> None:
    text = _source("dtype_tables.py")
    line = "        self.freqs = rotations(dim, 16)"
    naive = _naive(text, line, _register(line), tmp_path)
    model = naive.Rotary(4)
    with pytest.warns(UserWarning, match="discards the imaginary part"):
        model.to(torch.bfloat16)
    assert not model.freqs.is_complex()
    assert load_text(text, tmp_path).Rotary(4).to(torch.bfloat16).freqs.is_complex()


def test_registering_a_float8_codebook_lets_half_cast_it_out_of_float8(tmp_path: Path) -> None:
    """The naive rewrite of fixtures/trust/float8_table.py: `.half()` turns the buffer into float16
    (the plain attribute stays float8): a kernel that reads float8 codes no longer gets them, and
    the table takes twice the memory."""
    text = _source("float8_table.py")
    line = "        self.codebook = torch.linspace(-1.0, 1.0, size).to(torch.float8_e4m3fn)"
    original = load_text(text, tmp_path).Float8Codebook(16).half()
    naive = _naive(text, line, _register(line), tmp_path).Float8Codebook(16).half()
    assert original.codebook.dtype == torch.float8_e4m3fn
    assert naive.codebook.dtype == torch.float16
    assert naive.codebook.element_size() == 2 * original.codebook.element_size()


def _device_errors(module: ModuleType, cls: str, x: torch.Tensor) -> list[str]:
    torch.manual_seed(0)
    model = getattr(module, cls)()
    outcome = check_module(model, (x,), device="meta")
    assert outcome.forward == "ran", outcome.messages
    return [e.op for e in outcome.errors]


def test_dropping_the_move_of_a_tensor_rebuilt_on_the_cpu_mixes_devices(tmp_path: Path) -> None:
    text = _source("needed_moves.py")
    naive = load_text(
        text.replace("        self.noise = torch.zeros(4)\n", '        self.register_buffer("noise", torch.zeros(4), persistent=False)\n')
        .replace("self.lin(x) + self.noise.to(x.device)", "self.lin(x) + self.noise"),
        tmp_path,
    )
    assert _device_errors(load_text(text, tmp_path), "Rebuilt", torch.randn(2, 4)) == []
    assert _device_errors(naive, "Rebuilt", torch.randn(2, 4)) != []


def test_dropping_the_move_of_a_tensor_fitted_from_inputs_mixes_devices(tmp_path: Path) -> None:
    text = _source("needed_moves.py")
    naive = load_text(
        text.replace("        self.center = torch.zeros(4)\n", '        self.register_buffer("center", torch.zeros(4), persistent=False)\n')
        .replace("self.lin(x) - self.center.to(x.device)", "self.lin(x) - self.center"),
        tmp_path,
    )
    meta = torch.device("meta")

    def errors(module: ModuleType) -> list[str]:
        model = module.FromBatch().to(meta)
        model.fit(torch.randn(8, 4))  # a batch still on the CPU, after the module moved
        with torch.no_grad(), DeviceCheckMode(meta) as checker:
            model(torch.randn(2, 4, device=meta))
        return [e.op for e in checker.errors]

    assert errors(load_text(text, tmp_path)) == []
    assert errors(naive) != []


def test_dropping_a_move_a_subclass_skipping_the_base_constructor_inherits_mixes_devices(tmp_path: Path) -> None:
    """`CausalSpectral` calls `nn.Module.__init__` and keeps a plain window of its own: the base's
    registration never reaches it, and the inherited `weigh()` without its move mixes devices."""
    text = _source("needed_moves.py")
    naive = load_text(
        text.replace("        self.window = torch.hann_window(n_fft)\n", '        self.register_buffer("window", torch.hann_window(n_fft), persistent=False)\n')
        .replace("return x * self.window.to(x.device)\n\n    def forward(self, x):\n        return self.proj", "return x * self.window\n\n    def forward(self, x):\n        return self.proj"),
        tmp_path,
    )
    assert _device_errors(load_text(text, tmp_path), "CausalSpectral", torch.randn(2, 8)) == []
    assert _device_errors(naive, "Spectral", torch.randn(2, 8)) == []
    assert _device_errors(naive, "CausalSpectral", torch.randn(2, 8)) != []


def test_a_device_taken_from_a_list_of_clips_does_not_exist(tmp_path: Path) -> None:
    """The fix bufferlint no longer offers for `Contrastive` (the old one used `clips.device`)."""
    text = _source("device_source.py").replace(
        "torch.randn(batch, 4).cuda()", "torch.randn(batch, 4, device=clips.device)"
    )
    module = load_text(text, tmp_path)
    with pytest.raises(AttributeError, match="device"):
        module.Contrastive()([torch.randn(2, 4)])


@pytest.mark.parametrize(
    ("build", "line"),
    [
        ("Preference()", "        self.covar = torch.eye(3)"),  # registered by a loop over a list of names
        ("Strategy()", "        self.inducing = torch.randn(3)"),  # registered by the base class
    ],
)
def test_registering_a_name_registered_out_of_sight_breaks_the_module(build: str, line: str, tmp_path: Path) -> None:
    text = _source("unseen_registrations.py")
    naive = _naive(text, line, _register(line), tmp_path)
    original = eval(build, vars(load_text(text, tmp_path)))
    try:
        rebuilt = eval(build, vars(naive))
    except KeyError:
        return  # Preference: the loop registered it, so register_buffer raises
    # Strategy: the persistent buffer the base registered turns non-persistent, and old
    # checkpoints no longer load with strict=True
    assert set(rebuilt.state_dict()) != set(original.state_dict())
    with pytest.raises(RuntimeError, match="Unexpected key"):
        rebuilt.load_state_dict(original.state_dict(), strict=True)


def test_registering_in_one_branch_leaves_the_other_plain(tmp_path: Path) -> None:
    """The naive fix registers `mean` where it is defined (the `in_chans == 3` branch) and drops
    the per-call move: built with one channel, forward mixes devices."""
    text = _source("registration_paths.py")
    line = "            self.mean = torch.tensor((0.45, 0.44, 0.40)).view(1, 3, 1, 1)"
    naive = load_text(text.replace(line, _register(line)).replace("self.mean.type_as(x)", "self.mean.to(x.dtype)"), tmp_path)

    def errors(module: ModuleType) -> list[str]:
        outcome = check_module(module.Normalize(1), (torch.randn(2, 1, 4, 4),), device="meta")
        assert outcome.forward == "ran", outcome.messages
        return [e.op for e in outcome.errors]

    assert errors(load_text(text, tmp_path)) == []
    assert errors(naive) != []
    assert errors(load_text((TRUST / "registration_paths.fixed.py").read_text(), tmp_path)) == []


def test_a_base_constructor_after_the_registration_wipes_the_buffer(tmp_path: Path) -> None:
    """torch's Distribution.__init__ ends in `super().__init__()`, which reaches Module.__init__."""
    text = _source("registration_paths.py")
    line = "        self.table = torch.arange(3.0)"
    naive = _naive(text, line, _register(line), tmp_path)
    x = torch.randn(2, 3)
    assert torch.equal(load_text(text, tmp_path).Prior()(x), x + torch.arange(3.0))
    with pytest.raises(AttributeError, match="table"):
        naive.Prior()(x)


def test_a_class_walking_its_buffers_walks_the_new_one_too(tmp_path: Path) -> None:
    text = _source("registration_paths.py")
    line = "        self.bounds = torch.ones(2, 3)"
    naive = _naive(text, line, _register(line), tmp_path)
    assert load_text(text, tmp_path).Batched()[0].bounds.shape == (2, 3)
    assert naive.Batched()[0].bounds.shape == (3,)


def test_registering_a_grid_a_stateless_helper_hands_out_moves_it_with_the_holder(tmp_path: Path) -> None:
    """The unsafe fix for `GridHelper.verts`: as a buffer, the whole grid follows the holder to
    its device, where the original kept it on the host and moved it chunk by chunk."""
    text = _source("handed_out_grid.py")
    original = load_text(text, tmp_path).Geometry()
    fixed = load_text((TRUST / "handed_out_grid.unsafe.py").read_text(), tmp_path).Geometry()
    for model in (original, fixed):
        model.helper.grid_vertices()  # built lazily, on the CPU
        model.to("meta")
    assert original.helper.verts.device.type == "cpu"
    assert fixed.helper.verts.device.type == "meta"


def test_registering_what_an_in_place_initialiser_returns_stops_a_parameter_training(tmp_path: Path) -> None:
    """`nn.init.xavier_uniform_(nn.Parameter(...))` returns the Parameter: registered as a buffer,
    it leaves parameters() (no optimizer trains it) and state_dict() (old checkpoints fail)."""
    text = _source("in_place_init.py")
    line = "        self.E = nn.init.xavier_uniform_(nn.Parameter(torch.zeros(n, k)))"
    naive = _naive(text, line, _register(line), tmp_path).Projection(6, 3)
    original = load_text(text, tmp_path).Projection(6, 3)
    assert "E" in dict(original.named_parameters()) and "E" in original.state_dict()
    assert "E" not in dict(naive.named_parameters()) and "E" not in naive.state_dict()
    with pytest.raises(RuntimeError, match='Unexpected key'):
        naive.load_state_dict(original.state_dict())


def test_registering_one_of_two_tensors_an_in_place_update_joins_splits_their_devices(tmp_path: Path) -> None:
    """`target` as a buffer follows the loss to another device while `multiplier` stays plain on
    the CPU; `multiplier += step * (violation - target)`, given a float, then raises where the
    original ran."""
    text = _source("in_place_siblings.py")
    line = "        self.target = torch.tensor([target, target])"
    naive = _naive(text, line, _register(line), tmp_path).ConstrainedLoss(0.5).to("meta")
    original = load_text(text, tmp_path).ConstrainedLoss(0.5).to("meta")
    errors = {}
    for name, model in (("original", original), ("naive", naive)):
        with DeviceCheckMode(torch.device("meta")) as mode:  # CUDA's device rules, on the meta device
            model.update(0.7)
        errors[name] = [e.op for e in mode.errors]
    assert errors["original"] == []  # the move took neither: both stay on the CPU
    assert errors["naive"] != []


@pytest.mark.parametrize(
    ("line", "registered"),
    [
        ("        self.scale = self.shift = torch.ones(dim)", '        self.register_buffer("scale", torch.ones(dim), persistent=False)'),
        ("        self.low = self.high = nn.Parameter(torch.zeros(dim), requires_grad=False)", '        self.register_buffer("low", torch.zeros(dim))'),
    ],
    ids=["tensor", "frozen-parameter"],
)
def test_registering_one_name_of_a_chained_assignment_drops_the_other(line: str, registered: str, tmp_path: Path) -> None:
    text = _source("chained_and_empty.py")
    x = torch.randn(2, 4)
    assert load_text(text, tmp_path).CachedAttention(4)(x).shape == (2, 4)
    with pytest.raises(AttributeError):
        _naive(text, line, registered, tmp_path).CachedAttention(4)(x)


def test_a_frozen_parameter_a_holder_unfreezes_is_trained(tmp_path: Path) -> None:
    """`WorldModel.imagine()` ends with `self.requires_grad_(True)`: the reward head's frozen
    `support` is trainable from then on, and an optimizer step changes it."""
    text = (Path(__file__).resolve().parent.parent / "fixtures" / "buf008" / "held_unfrozen.py").read_text()
    model = load_text(text, tmp_path).WorldModel()
    x = torch.randn(2, 4)
    model.imagine(x)
    assert model.reward.support.requires_grad
    before = model.reward.support.detach().clone()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    model(x).sum().backward()
    optimizer.step()
    assert not torch.equal(before, model.reward.support.detach())


def test_a_frozen_parameter_swapped_from_outside_breaks_as_a_buffer(tmp_path: Path) -> None:
    """BUF008's rewrite of `QuantileLoss.levels`, which `Forecaster.sample` swaps for another
    Parameter and restores: as a buffer, the swap makes it a parameter and the restore raises."""
    text = _source("swapped_from_outside.py")
    line = "        self.levels = nn.Parameter(torch.tensor(levels), requires_grad=False)"
    naive = _naive(text, line, '        self.register_buffer("levels", torch.tensor(levels))', tmp_path)
    x = torch.randn(4, 3)
    original = load_text(text, tmp_path).Forecaster()
    assert original(x).shape == (4, 3, 3)
    assert [name for name, _ in original.loss.named_parameters()] == ["levels"]
    with pytest.raises(TypeError, match="cannot assign"):
        naive.Forecaster()(x)


@pytest.mark.filterwarnings("ignore::FutureWarning")  # torch.nn.utils.weight_norm, deprecated but still used
def test_every_tensor_name_torch_nn_layers_own_is_held_back() -> None:
    """hazards.py declines a buffer named like a tensor a torch.nn layer owns (registering it on a
    subclass raises KeyError); the pattern must cover every name real layers, and the utilities
    that rewrite them (weight_norm, spectral_norm, pruning), hold, and nothing else blocks."""
    from torch.nn.utils import prune, spectral_norm, weight_norm

    from bufferlint.analysis.hazards import _LAYER_OWNED

    layers = [
        torch.nn.Conv2d(2, 2, 3), torch.nn.Linear(2, 2), torch.nn.Embedding(3, 2), torch.nn.BatchNorm2d(2),
        torch.nn.LSTM(2, 4, num_layers=2, bidirectional=True, proj_size=2), torch.nn.GRU(2, 2),
        torch.nn.MultiheadAttention(4, 2, kdim=3, vdim=3, add_bias_kv=True), torch.nn.MultiheadAttention(4, 2),
        weight_norm(torch.nn.Linear(2, 2)), spectral_norm(torch.nn.Linear(2, 2)),
        prune.l1_unstructured(torch.nn.Linear(2, 2), "weight", amount=0.5),
    ]
    owned = {name for layer in layers for name in (*layer._parameters, *layer._buffers, *vars(layer)) if isinstance(getattr(layer, name, None), torch.Tensor)}
    assert {"weight_ih_l1_reverse", "weight_hr_l0", "bias_k", "weight_g", "weight_orig", "weight_u", "weight_mask"} <= owned
    assert [name for name in sorted(owned) if not _LAYER_OWNED.match(name)] == []
    assert not _LAYER_OWNED.match("weight_mask_kernel") and not _LAYER_OWNED.match("weight_maskUpdater")
    subclass = type("Masked", (torch.nn.Conv2d,), {})(2, 2, 3)
    subclass.register_buffer("weight_mask_kernel", torch.ones(1), persistent=False)  # not owned: no KeyError
    with pytest.raises(KeyError):
        subclass.register_buffer("weight", torch.ones(1))


def test_registering_before_the_instance_dictionary_is_rewritten_loses_the_buffer(tmp_path: Path) -> None:
    """`self.__dict__.update(stem.__dict__)` brings the stem's `_buffers` table: the kernels
    registered just before are gone, and forward raises."""
    text = _source("dict_rewrite.py")
    line = "        self.kernels = torch.eye(4).view(4, 1, 2, 2).repeat(3, 1, 1, 1)"
    x = torch.randn(1, 3, 8, 8)
    original = load_text(text, tmp_path)
    assert original.Unfold(original.Stem())(x).shape == (1, 4, 4, 4)
    naive = _naive(text, line, _register(line), tmp_path)
    with pytest.raises(AttributeError, match="kernels"):
        naive.Unfold(naive.Stem())(x)


def test_a_meta_learning_layer_trains_its_buffers_through_its_leaves(tmp_path: Path) -> None:
    """`MetaLinear` keeps its weights as buffers asking for gradients: its own step trains them
    (they change), and the non-leaf tensors it puts back are what a Parameter slot refuses."""
    text = (Path(__file__).resolve().parent.parent / "fixtures" / "buf007" / "meta_learning_leaves.py").read_text()
    layer = load_text(text, tmp_path).MetaLinear(3, 2)
    x = torch.randn(4, 3)
    before = layer.weight.detach().clone()
    grads = torch.autograd.grad(layer(x).sum(), list(layer.leaves()), create_graph=True)
    layer.step(grads, lr=0.1)
    assert not torch.equal(before, layer.weight.detach())
    assert not layer.weight.is_leaf
    as_parameter = torch.nn.Linear(3, 2)
    with pytest.raises(TypeError, match="cannot assign"):
        as_parameter.weight = layer.weight


def test_a_list_of_registered_parameters_follows_the_module_and_a_list_of_tables_does_not(tmp_path: Path) -> None:
    """fixtures/trust/parameter_references.py: `.double()` converts the parameters in place, so the
    list still points at them, converted; the built tables in the other list stay float32."""
    module = load_text(_source("parameter_references.py"), tmp_path)
    fused = module.FusedBottleneck().double()
    assert [w.dtype for w in fused.weights] == [torch.float64] * 3
    assert fused.weights[0] is fused.conv1.weight and fused.weights[2] is fused.downsample[0].weight
    fused(torch.randn(2, 4, 6, 6, dtype=torch.float64))
    bank = module.WindowBank().double()
    assert [w.dtype for w in bank.windows] == [torch.float32] * 2
    with pytest.raises(RuntimeError):
        bank(torch.randn(2, 4, 6, 6, dtype=torch.float64))


def test_a_parameter_copy_rebuilt_before_each_read_follows_the_parameters(tmp_path: Path) -> None:
    """fixtures/trust/params_snapshot.py: on the meta device under CUDA's rules, the solver that
    rebuilds its flat copy before reading it mixes no devices after `.to()`; the penalty that reads
    the copy stored at construction does (the finding kept)."""
    module = load_text(_source("params_snapshot.py"), tmp_path)
    x = torch.randn(2, 3)
    solver = check_module(module.ShootingSolver(torch.nn.Linear(3, 3)), (x,), device="meta")
    penalty = check_module(module.AnchoredPenalty(torch.nn.Linear(3, 3)), (x,), device="meta")
    assert solver.forward == penalty.forward == "ran"
    assert solver.errors == []
    assert penalty.errors != []


def test_registering_margins_a_matmul_meets_with_a_float32_cast_breaks_half(tmp_path: Path) -> None:
    """fixtures/trust/strict_dtype_op.py: cast with `.half()`, the original keeps its margins in
    float32 beside the `onehot.float()` it builds, and matmul runs; registered, the margins turn
    half and matmul refuses the pair."""
    text = _source("strict_dtype_op.py")
    logits, target = torch.randn(4, 3).half(), torch.tensor([0, 2, 1, 0])
    original = load_text(text, tmp_path).MarginLoss([10, 40, 90]).half()
    original(logits, target)
    line = "        self.margins = (m * margin).unsqueeze(0)"
    naive = _naive(text, line, _register(line), tmp_path).MarginLoss([10, 40, 90]).half()
    with pytest.raises(RuntimeError, match="dtype"):
        naive(logits, target)


def test_distributed_data_parallel_refuses_a_sparse_buffer(tmp_path: Path) -> None:
    """fixtures/trust/sparse_adjacency.py: DistributedDataParallel (one CPU process, gloo) wraps
    the original, whose sparse matrix is a plain attribute; registered as a buffer, wrapping raises."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    text = _source("sparse_adjacency.py")
    args = (torch.tensor([[0, 1, 2], [1, 2, 0]]), torch.ones(3), 3)
    line = "        self.adj = torch.sparse_coo_tensor(idx, val, size=(n, n))"
    original = load_text(text, tmp_path).GraphConv(*args)
    naive = _naive(text, line, _register(line), tmp_path).GraphConv(*args)
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        DistributedDataParallel(original)
        with pytest.raises(RuntimeError, match="sparse"):
            DistributedDataParallel(naive)
    finally:
        dist.destroy_process_group()


def test_registering_after_the_base_constructor_a_name_it_set_raises_key_error(tmp_path: Path) -> None:
    """fixtures/trust/schedule_in_base.py: the base constructor reaches the subclass's override,
    which sets `cond_ids`; a registration right after `super().__init__()` comes too late."""
    text = _source("schedule_in_base.py")
    load_text(text, tmp_path).LatentDiffusion(10, 4)
    line = "        super().__init__(steps)"
    naive = _naive(text, line, line + '\n        self.register_buffer("cond_ids", None, persistent=False)', tmp_path)
    with pytest.raises(KeyError, match="cond_ids"):
        naive.LatentDiffusion(10, 4)


def test_an_own_to_storing_a_moved_copy_raises_on_the_parameter_and_works_on_the_buffer(tmp_path: Path) -> None:
    """fixtures/trust/own_to_reassigns.py: the second assignment (in `to()`) blocks nothing: on the
    frozen Parameter it raises TypeError once the device changes; on the buffer it works."""
    text = _source("own_to_reassigns.py")
    with pytest.raises(TypeError, match="cannot assign"):
        load_text(text, tmp_path).Grid(3).to("meta")
    line = "        self.occs = nn.Parameter(torch.zeros(n, device=device), requires_grad=False)"
    fixed = _naive(text, line, '        self.register_buffer("occs", torch.zeros(n, device=device))', tmp_path).Grid(3).to("meta")
    assert fixed.occs.device.type == "meta" and "occs" in dict(fixed.named_buffers())


def test_a_buffer_refuses_the_list_a_plain_tensor_attribute_took() -> None:
    """tests/test_project_facts.py (plain value set from outside): another file replaces a layer's
    anchors with a list; on a plain attribute that works, on a buffer it raises TypeError."""
    plain, registered = torch.nn.Module(), torch.nn.Module()
    plain.anchors = torch.ones(2)
    plain.anchors = [1.0, 2.0]
    registered.register_buffer("anchors", torch.ones(2), persistent=False)
    with pytest.raises(TypeError, match="anchors"):
        registered.anchors = [1.0, 2.0]


def test_registering_a_table_the_class_checks_as_float32_fails_once_cast(tmp_path: Path) -> None:
    """fixtures/trust/rebuild_source_table.py: cast with `.to(torch.bfloat16)`, the original keeps
    its frequency table in float32 and rebuilds its cache; registered, the table is cast too and
    the class's own check fails."""
    text = _source("rebuild_source_table.py")
    x = torch.randn(2, 6, 8, dtype=torch.bfloat16)
    load_text(text, tmp_path).RotaryCache(8).to(torch.bfloat16)(x, 6)
    line = "        self.inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))"
    first = text.index(line)
    naive_text = text[:first] + _register(line) + text[first + len(line):]
    naive = load_text(naive_text, tmp_path).RotaryCache(8).to(torch.bfloat16)
    with pytest.raises(AssertionError):
        naive(x, 6)


def _first_replaced(text: str, old: str, new: str) -> str:
    at = text.index(old)
    return text[:at] + new + text[at + len(old):]


def test_registering_tables_a_method_adds_to_a_host_arange_mixes_devices(tmp_path: Path) -> None:
    """fixtures/trust/host_built_partner.py: on the meta device under CUDA's rules, the original
    adds its CPU tables to the CPU `torch.arange(b)` and moves the sum; registered, the tables
    follow the module and meet the CPU arange (no fix offered)."""
    text = _source("host_built_partner.py")
    walks = torch.randint(0, 10, (2, 3))
    original = check_module(load_text(text, tmp_path).SkipGramLoss(10, 4, 3), (walks,), device="meta")
    naive_text = text
    for line in ("        self.heads = torch.LongTensor(heads)", "        self.tails = torch.LongTensor(tails)"):
        naive_text = _first_replaced(naive_text, line, _register(line))
    naive = check_module(load_text(naive_text, tmp_path).SkipGramLoss(10, 4, 3), (walks,), device="meta")
    assert original.forward == "ran" and original.errors == []
    assert naive.errors != []


def test_hoisting_weights_from_a_dict_a_tuner_changes_freezes_them(tmp_path: Path) -> None:
    """fixtures/trust/tuned_probabilities.py: after the tuner steps the dict, the original mixes
    with the new weights; a buffer hoisted from the dict at construction keeps the first ones."""
    text = _source("tuned_probabilities.py")
    module = load_text(text, tmp_path)
    feats = torch.randn(2, 4, 3)

    class Holder(torch.nn.Module):
        def __init__(self, layer: torch.nn.Module) -> None:
            super().__init__()
            self.layer = layer

    original = module.RelationMix(["a", "b"], 3)
    before = original(feats)
    module.Tuner(Holder(original), step=0.25).update({"a": True, "b": False})
    assert not torch.allclose(original(feats), before)
    line = "        weights = torch.tensor(list(self.p.values())).view(-1, 1, 1).to(feats.device)"
    hoisted_text = _first_replaced(text, line, "        weights = self.weights")
    hoisted_text = _first_replaced(
        hoisted_text, "        self.linear = nn.Linear(dim, dim)",
        '        self.linear = nn.Linear(dim, dim)\n        self.register_buffer("weights", torch.tensor(list(self.p.values())).view(-1, 1, 1), persistent=False)',
    )
    hoisted_module = load_text(hoisted_text, tmp_path)
    torch.manual_seed(0)
    hoisted = hoisted_module.RelationMix(["a", "b"], 3)
    hoisted.load_state_dict(original.state_dict())
    frozen = hoisted(feats)
    hoisted_module.Tuner(Holder(hoisted), step=0.25).update({"a": True, "b": False})
    assert torch.allclose(hoisted(feats), frozen)


def test_sampling_weights_kept_on_the_host_mix_no_devices(tmp_path: Path) -> None:
    """fixtures/trust/sampled_weights.py: the weights stay on the CPU after `.to()`, the draw is
    moved to the input's device, and nothing mixes devices; the twin whose draw meets the input
    unmoved does (its finding kept)."""
    module = load_text(_source("sampled_weights.py"), tmp_path)
    nodes, context = torch.randint(0, 8, (3,)), torch.randn(3, 4)
    sampling = check_module(module.NegativeSampling(8, 4), (nodes, context), device="meta")
    drawn_mask = check_module(module.DrawnMask(4), (torch.randn(2, 4),), device="meta")
    assert sampling.forward == "ran" and sampling.errors == []
    assert drawn_mask.errors != []


def test_registering_a_view_of_a_table_changed_in_place_stops_following_it(tmp_path: Path) -> None:
    """trust/derived_from_plain_tensor.py's RunningRow: `row` views `table`, which `update` changes
    in place. As a buffer, `row` is replaced by its own copy on `.double()` while `table` stays the
    plain tensor it was: the update no longer shows. (The fix is declined for exactly this.)"""
    text = _source("derived_from_plain_tensor.py")
    line = "        self.row = self.table.view(1, -1)"
    outputs = []
    for module in (load_text(text, tmp_path), _naive(text, line, _register(line), tmp_path)):
        torch.manual_seed(0)
        model = module.RunningRow(3).double()
        model.update(0, 5.0)
        outputs.append(model(torch.zeros(1, 3, dtype=torch.float64)) - model.lin(torch.zeros(1, 3, dtype=torch.float64)))
    assert outputs[0].tolist() == [[5.0, 0.0, 0.0]]
    assert outputs[1].tolist() == [[0.0, 0.0, 0.0]]
