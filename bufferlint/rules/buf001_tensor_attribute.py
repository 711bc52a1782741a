"""BUF001 tensor-attribute."""

from __future__ import annotations

from typing import Iterator, Optional

from bufferlint.analysis.attributes import ClassAttributes, class_attributes, file_family
from bufferlint.analysis.evidence import Evidence
from bufferlint.analysis.unmoved import moved_with_users
from bufferlint.analysis.file import FileAnalysis
from bufferlint.analysis.intent import self_rebinding
from bufferlint.analysis.named_device import built_on_cuda
from bufferlint.fixes.register_buffer import buffer_fix, buffer_registration
from bufferlint.model import Applicability, Finding, Fix
from bufferlint.rules.base import Rule


class TensorAttribute(Rule):
    """A tensor stored as a plain attribute of an `nn.Module` subclass.

    ## Why it matters
    PyTorch moves, casts, saves and replicates only what a module registered: parameters and
    buffers. `self.table = torch.randn(5, 5)` stays on the CPU after `model.cuda()`, is skipped by
    `.half()`, is not replicated by `DataParallel`, and `forward()` fails with "Expected all tensors
    to be on the same device". Built on CUDA by name in `__init__` (`torch.ones(n).cuda()`,
    `device="cuda"`), it ties the module to a GPU whatever moves it, and the message says so.

    ## Example
    ```python
    class DCT(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.basis = dct_matrix(n)
    ```

    ## Instead
    ```python
            self.register_buffer("basis", dct_matrix(n), persistent=False)
    ```
    `persistent=False` keeps the tensor out of `state_dict()`, so checkpoints stay exactly as they
    were and old ones still load with `strict=True`. Not flagged: a second name for a parameter
    (`self.weight = self.W`, W an `nn.Parameter`), which nn.Module registers as a parameter too.
    A tensor the file builds once at import under a constant's name (`IMAGENET_MEAN =
    torch.FloatTensor([...])`, bound once and never changed in place) is a tensor here too:
    `self.mean_ = IMAGENET_MEAN` keeps a plain tensor attribute.

    ## When it is reported
    Only with evidence that the tensor's device matters, named in the message: it meets the
    input or the module's tensors in an op (arithmetic, a comparison, a torch function, a tensor
    method, a submodule call, a helper given both, unless it is a function of the file that first
    rebuilds that input on the host with `torch.tensor([...])`), `forward` moves it per call, it is indexed with
    an index from the input's device, or `forward` or a public method returns it. Not reported:
    a tensor only read for its metadata or on the host (`.shape`, `.item()`, `int()`,
    unpacked into a call's arguments as sizes, given as padding widths, output sizes or pooling windows:
    `F.pad(x, (0, self.n - x.size(-1)))`), sampling weights whose draws are all that leaves
    (`torch.multinomial(self.w, k).to(x.device)`, `choice(n, prob=self.w)` returned: moving or handing
    out a draw moves no constant; a draw that meets the input unmoved stays a finding), weights
    sampled with a `torch.Generator` (`generator=self.rng`: `.to()` moves no generator, and the
    sampler refuses a tensor on another device than its generator), a table whose only use is
    being returned by a method off the forward path that no method of the class calls, after that
    method combines it with a tensor it builds on the host each call (`off = self.lo +
    torch.rand(b, 3) * self.span; return off`: a host-side sampler whose callers place its draws), used as an index into another tensor (CUDA accepts CPU indices), only read while
    constructing, a 0-dim scalar (CUDA accepts it next to GPU tensors; one element of a 1-D
    tensor counts: `width * (centres[1] - centres[0])`), a stand-in for a Parameter
    that other configurations assign (TorchScript placeholders), a cache rebuilt for the input's
    shape, a table the class checks is float32 and reads only in the branch that rebuilds its caches
    (`if seq_len > self.max_seq_len_cached: ... self.inv_freq.to(t.device)`), a cache computed from the parameters (`if self.delta is None: self.delta = self.up.weight
    @ self.down.weight`), a tensor a method builds asking for gradients and hands to its own
    optimizer (a multiplier re-created for every run), state set from a method's arguments (a local filled
    from them in place counts: `counts[i] = (idx == i).sum()`) or rebuilt per call, a lazy cache behind `hasattr`,
    a table built once on first use with the device of the module's own tensors
    (`if self.idx is None: self.idx = torch.tensor(..., device=self.codes.device)`),
    and tensors of classes that place them themselves (their own `to()`/`_apply()` in the class or
    a base in any file, a `self.device` or `self._device` they keep, or a base in another file keeps
    for tensors the class builds there from its own state, never one stored as a caller gave it,
    moved again by a method, or asking for gradients), a project that sets its
    default device), tensors built in `__init__` on a device the program names and that no
    method moves again (a `device` argument, though one that defaults to None or `"cpu"` only
    when every construction of the class in the run names it, `args.device` of an options
    object it is given or keeps, a rank, a package's configured device such as `flair.device`;
    a literal `"cuda"`, a name bound to `torch.device("cuda" if torch.cuda.is_available() else
    "cpu")`, and the device of the module's own weights, which is the host while `__init__`
    runs, stay findings), results of the current call computed from the module's own tensors or what
    its submodules return or hold (a submodule built by a factory from a spec counts when a method
    calls it like a module: `self.core = spec.core(...)`, then `self.core(q, k)`), values handed on as `list(self.sizes)`, tensors a holding module moves along in its own `_apply()` (YOLO's
    `self.detect.stride = fn(self.detect.stride)`, in a class that builds the holder's class or a
    file that imports it), tensors built only after construction by a method the project calls
    under `with torch.device(...)` (gpt-fast's `setup_caches()`), names that are buffers already, or may be, registered out of sight (by a
    loop over a list of names, by a base class in any file, by a property's setter, under
    computed names, by a base in a file of the run whose module name another file shares, by a
    torch.nn base such as `_WeightedLoss`, whose `weight` is a buffer, or by a class or base that
    overrides `__setattr__` and so decides where an assignment goes: a spiking layer's memory table),
    a tensor that `__init__` turns into host values further down (`self.f = self.f.tolist()`)
    or into a parameter (also by a loop over names: `setattr(self, key, nn.Parameter(...))`),
    and an optional argument stored as it is (`self.mask = mask`, `mask=None`) that no
    construction of the class in the run gives (CLIP's attention block in a vision tower built
    without a mask: always None; calls in other files count where every file that names the class
    only calls it, no package re-exports it and no file imports its module as a value), an
    argument stored as it is that every construction (all in the class's file) hands in from an
    attribute its owner places itself and never moves (`Embedding(features=self.features)` in a
    model keeping `self.device`: the alias lives where the owner puts it), nor anything in a file written for ONNX or ncnn export (`model_onnx.py`,
    `export-onnx.py`, or `ensemble_export.py` and `exporter.py` using `torch.onnx`): such modules are traced where they are built and never moved; nor in a
    class whose `__init__` never runs `nn.Module.__init__()` (it cannot be moved at all: that is
    the bug to fix first), nor in a class every instance of which the project builds for one call
    and drops (`Pool(n, x.device)(x)`, or a local it only calls) when the tensor comes from what
    that call hands in (also through a helper given arguments annotated as tensors) or is placed
    on a device it names. Classes on torch.nn's private bases (`torch.nn.modules.loss._Loss`,
    `_WeightedLoss`, `conv._ConvNd`) are modules like any other.

    ## Fix safety
    `self.register_buffer("x", <the same expression>, persistent=False)` at the defining
    assignment (the first in `__init__`); when `self.x = None` comes first, `None` is registered
    there; a tensor only assigned outside `__init__` gets a `None` registration right after
    `super().__init__()`, and so does an assignment in a branch of `__init__` (every branch then
    fills the buffer). The fix is safe only when the analysis proves every obligation below;
    one it disproves means no fix, one it cannot prove makes the fix unsafe, and the message
    names it.
    1. The class is no `ScriptModule`, has no `register_buffer` of its own, and does not rewrite
       its instance dictionary wholesale (`self.__dict__.update(stem.__dict__)` brings another
       module's `_buffers` table and drops the registration) (no fix).
    2. The name is no property, method, class attribute, parameter or deleted attribute of the
       class or a base, and no torch.nn base owns it (`weight`, `bias`...) (no fix).
    3. Nothing binds the name before the registration runs, or `register_buffer` raises
       KeyError: not the statements of `__init__` before it, not a helper they call (resolved
       from the class being built, so a subclass's override counts), not a base constructor in
       this file or another, not a tuple assignment or `setattr`; nor a subclass of this file or
       another (bound: no fix; a base outside the linted files, `setattr` with a computed name,
       `f(self)`: unsafe).
    4. It is registered after `super().__init__()` (no fix), and no base constructor runs after
       the registration (`Module.__init__` resets `_buffers`; a torch `Distribution` base runs it
       again) (unsafe).
    5. Every value the class assigns to it is a tensor or `None`, and the defining statement assigns
       no other name (`self.k = self.v = torch.zeros(n)`: the registration would drop `v`) (no fix);
       no code outside the class sets the name on an object to a plain Python value
       (`layer.anchors = [float(a) for a in spec]`: if that object is this module, the buffer
       refuses the list) (unsafe).
    6. The value is a fresh tensor: it does not require grad or derive from a parameter or a
       submodule's weights (no fix), does not alias an argument or another attribute, is not
       handed to another module, and is not a randomly initialised `weight` or `bias`, which may be
       a layer's weight that never became an nn.Parameter (a buffer would keep it from training)
       (unsafe).
    7. Its values survive casting with the module: not complex (`.to(torch.bfloat16)` drops the
       imaginary part), not bucket boundaries of `torch.bucketize`, no dtype spelled out,
       such as `dtype=torch.float32`, `.to(torch.float8_e4m3fn)` or `torch.FloatTensor(...)` (a
       pin to the default float dtype is no obstacle on a table of zeros, ones or other small
       integers that nothing changes later: half and bfloat16 hold those exactly), no
       check of its dtype in the class (`assert self.inv_freq.dtype == torch.float32`),
       and not in a module that a holder in any file puts back in float32 after casting itself to half (`def half(self):
       super().half(); self.kernel = self.kernel.float()`: the plain tensor stays exact, a buffer
       would be rounded first) (no fix); not compared with data as thresholds
       (`g >= self.edges[:-1]`: `.half()` would round the edges and move values across them;
       comparing its size is fine) (unsafe); a helper it is built by is readable in the linted
       files (else unsafe).
    8. The project does not build its modules on the meta device and restore them with
       `load_state_dict()` (non-persistent buffers are never restored) (unsafe), nor pin torch
       below 1.6 in a Python file of the run (`"torch==1.4.0"` in `setup.py`: `persistent=` does not
       exist there) (no fix).
    9. Nothing in the class or its bases walks every buffer (`self.named_buffers()`,
       `self._buffers`) or overrides what lists them (`named_buffers()`, `state_dict()`,
       `_load_from_state_dict()`...): the new buffer would be walked or listed there (unsafe).
    10. When the only evidence is that a method returns it, the class holds parameters, buffers
       or a submodule holding some, so whoever uses it runs it on the module's device; a stateless helper that
       only hands the tensor out may be kept on the host on purpose (a grid its holder moves to
       the GPU chunk by chunk), and a buffer would follow the holder there (unsafe).
    11. No tensor attribute left plain meets it in an in-place update (`self.lam += self.lr * c`,
        with `c` computed from it, either way round): after `.to("cuda")` the two would sit on
        different devices and the update would raise where the original ran (no fix).
    12. When the only use that meets the input is as an argument of a function imported from
        outside the run (not torch, not the linted files: a compiled op such as a voxeliser),
        that function is not read, and may want the tensor on the host (unsafe).
    13. No method uses it with a tensor it builds on the host on every call
        (`(torch.arange(b) * n).unsqueeze(1) + self.pairs`, then `.to(x.device)`): the original
        adds two CPU tensors; as a buffer on the GPU it would meet the CPU one and the op would
        raise (no fix).
    14. A cache check that fills it fills no other attribute (`if self.mean_gpu is None:` setting
        `mean_gpu` and `std_gpu`): registered alone, it would follow `.to()`/`.half()` and the
        other parts would not (unsafe).
    Large float constants and float masks are still fixed, with a note that `.half()` casts them.
    """

    code = "BUF001"
    name = "tensor-attribute"
    skips_export_files = True
    skips_test_files = True
    summary = "Tensor attribute is not registered: .to()/.cuda() leave it behind"

    def check(self, analysis: FileAnalysis) -> Iterator[Finding]:
        family = file_family(analysis)
        for info in family.members:
            attributes = class_attributes(analysis, info)
            for attr, defining in attributes.defining.items():
                if self_rebinding(attr, defining) or attributes.quiet(attr) is not None:
                    continue
                evidence = attributes.evidence(attr)
                if evidence is not None:
                    yield self._finding(analysis, attributes, attr, evidence)

    def _finding(self, analysis: FileAnalysis, attributes: ClassAttributes, attr: str, evidence: Evidence) -> Finding:
        registration = buffer_registration(attributes, attr)
        hazards = registration.hazards
        message = f"Tensor attribute `{attr}` is not a registered buffer: {_left_behind(analysis, attributes, attr)}, and {evidence.describe()}"
        fix: Optional[Fix] = None
        if hazards.blocking:
            message += f"; no fix: {hazards.blocking[0]}"
        elif registration.edit is None:
            message += "; no fix: no __init__ with super().__init__() to register it in"
        else:
            unsafe = [*hazards.unsafe, *_handed_out(attributes, evidence), *_outside_use(attributes, evidence)]
            applicability = Applicability.UNSAFE if unsafe else Applicability.SAFE
            fix = buffer_fix(registration.edit, applicability, attr)
            if unsafe:
                message += f"; unsafe: {unsafe[0]}"
        if hazards.notes and fix is not None:
            message += f"; {hazards.notes[0]}"
        return self.finding(analysis, attributes.defining[attr].statement, message, fix)


def _left_behind(analysis: FileAnalysis, attributes: ClassAttributes, attr: str) -> str:
    """What a plain attribute costs: left behind by moves, or, built on CUDA by name, a module
    that cannot run anywhere else (a maintainer of GPU-only code reads ".to() leaves it behind"
    of a tensor already on the GPU as noise; the hard-coded device is what to act on)."""
    if built_on_cuda(attributes.defining[attr], analysis.inference.qualify):
        return "it is hard-coded to CUDA, so the module cannot run on another device, .to()/.half() leave it behind"
    return ".to()/.cuda() leave it behind"


def _outside_use(attributes: ClassAttributes, evidence: Evidence) -> list[str]:
    """The only use that puts it next to the input is an argument of a function from outside the
    run (a compiled op): it may read the tensor on the host on purpose, and a buffer would follow
    the module to the GPU (a copy back on every call)."""
    if evidence.via is None or not attributes.analysis.project.known:
        return []
    return [f"its use beside the input is an argument of `{evidence.via}`, outside the linted files: that it wants the tensor on the module's device rather than on the host is not proved"]


def _handed_out(attributes: ClassAttributes, evidence: Evidence) -> list[str]:
    """A tensor whose only evidence is that a method returns it, in a class that holds no state:
    its users may keep it on the host on purpose (a large grid handed out chunk by chunk), and a
    buffer would follow the holder to the GPU."""
    if evidence.kind != "returned" or moved_with_users(attributes) is None:
        return []
    return [f"{attributes.info.name} is not known to hold parameters, buffers or a submodule holding any, and only hands it out ({evidence.method}() returns it): nothing shows its users want it on the module's device"]
