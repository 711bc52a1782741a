"""BUF004 hardcoded-cuda."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Iterator, Optional

import libcst as cst

from bufferlint.analysis.classes import ClassInfo, ValueKind
from bufferlint.analysis.cuda_intent import cuda_on_purpose, distributed_design, is_cuda_literal, offloaded
from bufferlint.analysis.torch_api import is_stateless_layer
from bufferlint.analysis.walk import is_name, nodes_of
from bufferlint.analysis.file import FileAnalysis
from bufferlint.analysis.flow import StatementSite, self_name
from bufferlint.analysis.names import dotted_name
from bufferlint.analysis.forward import (
    FACTORIES,
    FlowState,
    calls_in,
    ForwardFacts,
    PathMethod,
    Target,
    forward_facts,
    self_attr_root,
)
from bufferlint.fixes.forward import Parents, device_of, replace_arg_value, with_device, with_keyword_value, without_keyword
from bufferlint.model import Applicability, Finding, Fix, Replace
from bufferlint.rules.base import Rule


class PinKind(enum.Enum):
    CUDA_CALL = "cuda-call"  # t.cuda()
    TO_CUDA = "to-cuda"  # t.to("cuda")
    DEVICE_KEYWORD = "device-keyword"  # torch.zeros(3, device="cuda")
    TORCH_DEVICE = "torch-device"  # torch.device("cuda") anywhere else


class Role(enum.Enum):
    INIT = "init"
    FORWARD = "forward"
    OTHER = "other"


@dataclass
class Pin:
    kind: PinKind
    call: cst.Call  # the call holding the pin
    text: str  # the pin as the user wrote it, for the message
    subject: Optional[cst.BaseExpression] = None  # what `.cuda()` / `.to("cuda")` moves
    device: Optional[cst.BaseExpression] = None  # the cuda literal, for `.to(...)`


class HardcodedCuda(Rule):
    """A hard-coded GPU: `.cuda()`, `.to("cuda")`, `device="cuda"` on module state or tensors built in forward.

    ## Why it matters
    `self.table = torch.zeros(3).cuda()` or `torch.zeros(b, 8, device="cuda")` in `forward`
    pins the tensor to the first GPU. The module then fails on machines without CUDA (tests,
    CPU inference, CI), ignores `model.to("cuda:1")`, and breaks multi-GPU training, where
    each replica runs on its own device.

    Off by default: enable it with `--select BUF004` or `extend-select`. On repositories the
    rules were never tuned on it stayed under the 95% precision a default rule must reach: much
    GPU-only code pins CUDA on purpose in ways no file shows (CPU offload round trips in CUDA-only
    layers, wrappers that exist only for `nn.DataParallel`, device arguments a callee overwrites).

    ## Example
    ```python
    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("scale", torch.ones(8, device="cuda"))

        def forward(self, x):
            h = torch.zeros(x.shape[0], 8).cuda()
            return x * self.scale + h
    ```

    ## Instead
    ```python
            self.register_buffer("scale", torch.ones(8))

        def forward(self, x):
            h = torch.zeros(x.shape[0], 8, device=x.device)
    ```
    Module state follows `model.to(device)`; tensors built in `forward` take the device of an
    input.

    ## Fix safety
    Always unsafe, since the tensor ends up somewhere else than before (the message says where). In `__init__` (and for
    parameters, buffers and submodules used in `forward`) the fix drops the pin and lets the
    module's `.to()` place the tensor; in `forward` and the helpers it calls, the pin becomes the
    device of an input: `device=x.device`, `.to(x.device)`, or, where no parameter is shown to be
    a tensor, a local still holding a device read off one (`device = outputs["logits"].device`
    earlier in forward: `.to(device)`). No fix when an obligation fails:
    1. The device comes from a parameter shown to be a tensor: annotated `Tensor`, read like one
       (`x.device`, `x.shape`, `x.view(...)`), or given a tensor by a caller on the forward path;
       never one that is indexed like a list (`clips[0]`), iterated or measured with `len()`;
       or from a local bound to `<something>.device` and not rebound before the pin.
    2. An object pinned in `__init__` is not used later in `__init__`, where it runs on the GPU
       before anyone can move the module.
    3. What is pinned in `__init__` becomes module state that `.to()` places: a parameter, a
       buffer or a submodule (not a plain tensor attribute, whose BUF001 fix must come first; not
       a local; not a bare `x.cuda()` statement, which is to be deleted rather than rewritten).
    4. The pin is in `__init__` or on the forward path (elsewhere the device to use is unknown).

    ## Not reported
    CUDA asked for on purpose: pins under a test that decides about CUDA
    (`torch.cuda.is_available()`, `x.is_cuda`, a `use_cuda`/`gpu` flag, `device.type == "cpu"`) or
    after an early exit on one; devices handed to `torch.cuda.*` queries; `.cuda()` on a torch.nn
    layer that holds no tensors (`nn.Softmax(dim=1).cuda()`, a loss given no `weight`); the
    fallback of a device parameter or attribute (`if device is None: device = torch.device("cuda")`,
    `if self._device is None: self._device = ...`);
    `.cuda(t.device)` and `.cuda(device)` with `device` read off a tensor or the module's own
    parameters; the bodies of `cuda`/`to`/`_apply` overrides; device variables; `.cuda()` on the
    inputs themselves; a method moving the whole module (`self.cuda()`); a GPU offload of module
    state (the class moves the same submodule back with `.cpu()`); code under a comparison with a device kind
    (`kind == "cuda"`, `accelerator.upper() == "GPU"`); test and benchmark modules (a GPU test is one
    by design);
    and files of distributed GPU code, which import `torch.distributed`, Megatron,
    `apex.transformer` or a `DistributedDataParallel` (NCCL collectives need CUDA tensors, model
    parallelism places everything on the rank's GPU, and a wrapper handing submodules to DDP puts
    them there first).
    """

    code = "BUF004"
    name = "hardcoded-cuda"
    default_enabled = False
    summary = "Hard-coded CUDA device breaks CPU runs and ignores the module's device"
    triggers = ("cuda",)

    def check(self, analysis: FileAnalysis) -> Iterator[Finding]:
        if not analysis.may_spell("cuda"):
            return  # no method can mention it (see `_method`): no walk at all
        if analysis.is_test or distributed_design(analysis.imports.aliases.values()) is not None:
            return  # a GPU test or benchmark, or distributed GPU code: CUDA is the design there
        for info in analysis.module_classes:
            if not analysis.class_may_spell(info, "cuda"):
                continue  # nor can any of its methods
            for func in info.methods.values():
                yield from self._method(analysis, info, func)

    def _method(self, analysis: FileAnalysis, info: ClassInfo, func: cst.FunctionDef) -> Iterator[Finding]:
        # Every pin is a `cuda` name, attribute or string in the method (see `_pin`): a method
        # that mentions none needs no flow analysis.
        if self_name(func) is None or not analysis.mentions.mentions(func, "cuda"):
            return
        facts = forward_facts(analysis, info)  # once per class (shared with the other forward rules)
        role, method = _role(facts, func)
        parents: Optional[Parents] = None
        for site in method.sites:
            for pin in pins(facts, site.site.small, site.state, method):
                parents = parents or Parents(func)
                if cuda_on_purpose(pin.call, parents, func, facts.inference.qualify) or _placed_on_purpose(info, role, method, pin):
                    continue
                if role is not Role.INIT and _moves_input(facts, pin, site.state, method):
                    continue
                kept = _fix_obstacle(analysis, info, role, method, site.site, pin)
                fixed = None if kept is not None else _fix(facts, info, role, method, pin, site.state)
                message = f"`{pin.text}` hard-codes the GPU: the module fails without CUDA and ignores where it is moved"
                if fixed is None:
                    message += "; no fix: " + (kept or _no_fix_reason(role))
                else:
                    message += f"; unsafe: {fixed[1]}"
                yield self.finding(analysis, pin.call, message, None if fixed is None else fixed[0])


def _placed_on_purpose(info: ClassInfo, role: Role, method: PathMethod, pin: Pin) -> bool:
    """A method moving the module itself (`self.cuda()` before generating), or a GPU offload
    (the class moves the same object back with `.cpu()`)."""
    subject = pin.subject
    if subject is None:
        return False
    if role is not Role.INIT and is_name(subject, method.self_name):
        return True
    return _module_state(subject, method) and offloaded(subject, info.methods.values())


def _module_state(subject: cst.BaseExpression, method: PathMethod) -> bool:
    """`self.prior`, `self.unets[i]`, or a local taken from one (`unet = self.unets[i]`): what
    the module holds, not data it computes (a feature map cached on the CPU goes back to the
    input's device, not to the first GPU)."""
    root = _root_name(subject)
    if root == method.self_name:
        return True
    for site in method.sites:
        small = site.site.small
        if isinstance(small, cst.Assign) and any(is_name(t.target, root or "") for t in small.targets):
            if _root_name(small.value) == method.self_name:
                return True
    return False


def _root_name(expr: cst.BaseExpression) -> Optional[str]:
    """The name an attribute or item chain starts from (a call computes something new: None)."""
    while isinstance(expr, (cst.Attribute, cst.Subscript)):
        expr = expr.value
    return expr.value if isinstance(expr, cst.Name) else None


def _fix_obstacle(
    analysis: FileAnalysis, info: ClassInfo, role: Role, method: PathMethod, pinned: StatementSite, pin: Pin
) -> Optional[str]:
    """Why dropping the pin in `__init__` would not leave the tensor placed by `.to()`."""
    if role is not Role.INIT or pin.kind is PinKind.TORCH_DEVICE:
        return None
    small = pinned.small
    if pin.subject is not None and is_name(pin.subject, method.self_name):
        return "the module moves itself while constructing; let the caller place it"
    if isinstance(small, cst.Expr) and small.value is pin.call:
        return "the statement only moves it; delete it if the module's .to() places it"
    used = _used_while_constructing(method, pinned, pin)
    if used is not None:
        return used
    stored = _stored_in(small, method.self_name)
    submodule = isinstance(pin.subject, cst.Call) and analysis.resolver.is_module_call(pin.subject)
    if stored is not None and not submodule and stored not in (info.parameters | info.registered_buffers | info.submodules):
        if any(a.kind is ValueKind.TENSOR for a in info.assignments_to(stored)):
            return f"`{stored}` is no parameter, buffer or submodule, so the module's .to() would not place it (BUF001)"
        built = dotted_name(pin.subject.func) if isinstance(pin.subject, cst.Call) else None
        held = f"holds a `{built}`, " if built is not None and built.rpartition(".")[2][:1].isupper() else "is "
        return f"`{stored}` {held}not known to be a module, so the module's .to() may not place it"
    if stored is None and not _registers(small, method.self_name):
        return "the tensor is not stored as module state, so the module's .to() would not place it"
    return None


def _stored_in(small: cst.BaseSmallStatement, me: str) -> Optional[str]:
    """`self.<attr> = ...`: the attribute the statement stores its value in."""
    if isinstance(small, (cst.Assign, cst.AnnAssign)):
        targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
        if len(targets) == 1 and isinstance(targets[0], cst.Attribute) and is_name(targets[0].value, me):
            return targets[0].attr.value
    return None


def _registers(small: cst.BaseSmallStatement, me: str) -> bool:
    """`self.register_buffer(...)`, `self.register_parameter(...)`, `self.add_module(...)`."""
    value = small.value if isinstance(small, cst.Expr) else None
    return (
        isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and is_name(value.func.value, me)
        and value.func.attr.value in ("register_buffer", "register_parameter", "add_module", "register_module")
    )


def _used_while_constructing(method: PathMethod, pinned: StatementSite, pin: Pin) -> Optional[str]:
    """`self.stft = STFT(...).cuda()` then `self.stft(audio)` later in `__init__`: the object runs
    while constructing, on the device it was pinned to, before anyone can move the module."""
    small = pinned.small
    if not isinstance(small, cst.Assign) or len(small.targets) != 1 or not any(n is pin.call for n in nodes_of(small.value, cst.Call)):
        return None
    target = small.targets[0].target
    later = False
    for site in method.sites:
        if site.site.small is small:
            later = True
            continue
        if later and any(node.deep_equals(target) for node in nodes_of(site.site.small, type(target))):
            name = cst.Module([]).code_for_node(target)
            return f"`{name}` is used later in __init__(), while its device still matters"
    return None


def _role(facts: ForwardFacts, func: cst.FunctionDef) -> tuple[Role, PathMethod]:
    if func.name.value == "__init__":
        return Role.INIT, facts.method_sites(func, [])
    on_path = facts.path_method(func)
    if on_path is not None:
        return Role.FORWARD, on_path
    params = func.params
    names = [p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)][1:]
    return Role.OTHER, facts.method_sites(func, names)


def pins(facts: ForwardFacts, small: cst.CSTNode, state: FlowState, method: PathMethod) -> Iterator[Pin]:
    """Every hard-coded CUDA device in one statement, each reported once."""
    covered: set[int] = set()
    for call in calls_in(small):
        if id(call) in covered:
            continue
        pin = _pin(facts, call, state, method)
        if pin is not None:
            covered |= {id(n) for n in calls_in(call)}
            yield pin


def _pin(facts: ForwardFacts, call: cst.Call, state: FlowState, method: PathMethod) -> Optional[Pin]:
    qualify = facts.inference.qualify
    func = call.func
    code = cst.Module([]).code_for_node
    if isinstance(func, cst.Attribute) and func.attr.value == "cuda" and qualify(func) is None:
        if not _default_gpu(call, method) or _holds_nothing(facts, func.value):
            return None  # `.cuda(weight.device)`: the device of a tensor already placed
        return Pin(PinKind.CUDA_CALL, call, ".cuda()", subject=func.value)
    move = facts.move(call, state, method)
    if move is not None and move.method == "to" and move.target is Target.CUDA and not _holds_nothing(facts, move.subject):
        return Pin(PinKind.TO_CUDA, call, f".to({code(move.device)})", subject=move.subject, device=move.device)  # type: ignore[arg-type]
    device = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "device"), None)
    if device is not None and is_cuda_literal(device, qualify):
        return Pin(PinKind.DEVICE_KEYWORD, call, f"device={code(device)}")
    if qualify(func) == "torch.device" and is_cuda_literal(call, qualify):
        return Pin(PinKind.TORCH_DEVICE, call, code(call))
    return None


def _holds_nothing(facts: ForwardFacts, subject: cst.BaseExpression) -> bool:
    """`nn.Softmax(dim=1).cuda()`: a torch.nn layer without parameters or buffers moves nothing."""
    if not isinstance(subject, cst.Call):
        return False
    keywords = frozenset(a.keyword.value for a in subject.args if a.keyword is not None)
    positional = sum(1 for a in subject.args if a.keyword is None)
    return is_stateless_layer(facts.inference.qualify(subject.func), keywords, positional)


def _default_gpu(cuda_call: cst.Call, method: PathMethod) -> bool:
    """`.cuda()`, `.cuda(0)`, `.cuda(index)` pin a GPU; `.cuda(w.device)` follows a tensor already
    placed, and so does `.cuda(device)` with `device` read off the module's own parameters or a
    tensor (`device = get_device_of(next(self.parameters()))`)."""
    device = next((a.value for a in cuda_call.args if a.keyword is None or a.keyword.value == "device"), None)
    if device is not None and _placement_of_a_tensor(device):
        return False
    if isinstance(device, cst.Name):
        for site in method.sites:
            small = site.site.small
            if isinstance(small, cst.Assign) and any(is_name(t.target, device.value) for t in small.targets):
                if _placement_of_a_tensor(small.value):
                    return False
    return True


def _placement_of_a_tensor(expr: cst.BaseExpression) -> bool:
    """`w.device`, `w.get_device()`, or anything read off `self.parameters()`."""
    for node in nodes_of(expr, (cst.Attribute, cst.Call)):
        if isinstance(node, cst.Attribute) and node.attr.value in ("device", "get_device", "parameters", "buffers"):
            return True
    return False


def _moves_input(facts: ForwardFacts, pin: Pin, state: FlowState, method: PathMethod) -> bool:
    """`x.cuda()` on an input: neither module state nor a tensor the module builds."""
    return pin.subject is not None and facts.derived(pin.subject, state, method, inputs_only=True)


def _fix(facts: ForwardFacts, info: ClassInfo, role: Role, method: PathMethod, pin: Pin, state: FlowState) -> Optional[tuple[Fix, str]]:
    """The fix, and why it is unsafe (where the tensor lives afterwards, which is the point)."""
    if role is Role.INIT or (role is Role.FORWARD and _registered_state(info, pin, method)):
        replacement = _unpinned(facts, pin, method)
        if replacement is None:
            return None
        fix = Fix(Applicability.UNSAFE, "Drop the device pin; the module's .to() places the tensor", (Replace(pin.call, replacement),))
        return fix, "it then lives where the module is moved (the CPU until then), not on the current GPU"
    if role is Role.FORWARD and method.device_input is not None:
        replacement = _on_input_device(pin, device_of(method.device_input), facts)
        fix = Fix(Applicability.UNSAFE, f"Use the device of `{method.device_input}`", (Replace(pin.call, replacement),))
        return fix, f"it then lives on `{method.device_input}`'s device, not on the current GPU"
    if role is Role.FORWARD and state.devices:
        # `device = outputs["logits"].device` earlier in forward, still bound here
        name = "device" if "device" in state.devices else sorted(state.devices)[0]
        replacement = _on_input_device(pin, cst.Name(name), facts)
        fix = Fix(Applicability.UNSAFE, f"Use `{name}`", (Replace(pin.call, replacement),))
        return fix, f"it then lives on `{name}`, read off a tensor earlier in {method.name}(), not on the current GPU"
    return None


def _no_fix_reason(role: Role) -> str:
    if role is Role.FORWARD:
        return "no tensor argument to take the device from"
    if role is Role.INIT:
        return "a device object, not a tensor; use the device of an input or of a parameter"
    return "outside __init__ and forward, the device to use is unknown"


def _registered_state(info: ClassInfo, pin: Pin, method: PathMethod) -> bool:
    attr = self_attr_root(pin.subject, method.self_name) if pin.subject is not None else None
    return attr is not None and attr in (info.parameters | info.registered_buffers | info.submodules)


def _unpinned(facts: ForwardFacts, pin: Pin, method: PathMethod) -> Optional[cst.BaseExpression]:
    if pin.kind is PinKind.DEVICE_KEYWORD:
        return without_keyword(pin.call, "device")
    if pin.kind is PinKind.CUDA_CALL:
        assert pin.subject is not None
        return pin.subject.with_changes(lpar=pin.call.lpar, rpar=pin.call.rpar) if pin.call.lpar else pin.subject
    if pin.kind is PinKind.TO_CUDA:
        move = facts.move(pin.call, FlowState(), method)
        return move.without_move() if move is not None else None
    return None


def _on_input_device(pin: Pin, device: cst.BaseExpression, facts: ForwardFacts) -> cst.BaseExpression:
    """The pinned call placed on `device` (`x.device`, or a local holding a tensor's device)."""
    if pin.kind is PinKind.DEVICE_KEYWORD:
        return with_keyword_value(pin.call, "device", device)
    if pin.kind is PinKind.TORCH_DEVICE:
        return device
    if pin.kind is PinKind.TO_CUDA:
        assert pin.device is not None
        return replace_arg_value(pin.call, pin.device, device)
    subject = pin.subject
    assert subject is not None and isinstance(pin.call.func, cst.Attribute)
    if isinstance(subject, cst.Call) and _is_device_less_factory(facts, subject):
        return with_device(subject, "", device)  # torch.zeros(b, 8).cuda() -> torch.zeros(b, 8, device=x.device)
    func = pin.call.func.with_changes(attr=cst.Name("to"))
    return pin.call.with_changes(func=func, args=[cst.Arg(device)])


def _is_device_less_factory(facts: ForwardFacts, call: cst.Call) -> bool:
    qualified = facts.inference.qualify(call.func) or ""
    has_device = any(a.keyword is not None and a.keyword.value == "device" for a in call.args)
    return qualified.startswith("torch.") and qualified[len("torch.") :] in FACTORIES and not has_device
