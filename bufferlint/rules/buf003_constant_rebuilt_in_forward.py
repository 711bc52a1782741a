"""BUF003 constant-rebuilt-in-forward."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional

import libcst as cst

from bufferlint.analysis.attributes import class_attributes
from bufferlint.analysis.cache_guards import cache_guard
from bufferlint.analysis.classes import ClassInfo
from bufferlint.analysis.dtypes import dtype_pin, pin_guards_values
from bufferlint.analysis.flow import body_statements, is_static
from bufferlint.analysis.factory_sizes import copies_host_data, is_zero_dim, scalar_names, static_numel
from bufferlint.analysis.file import FileAnalysis
from bufferlint.analysis.names import code_excerpt
from bufferlint.analysis.tensors import TensorInference
from bufferlint.analysis.torch_api import SHAPING_METHODS
from bufferlint.analysis.walk import is_name, nodes_of, variable_names
from bufferlint.analysis.intent import given_device
from bufferlint.analysis.unmoved import moved_with_users
from bufferlint.analysis.forward import FlowState, ForwardFacts, Move, PathMethod, Site, Target, calls_in, value_bound_before, forward_facts, may_hold_move, params_of
from bufferlint.fixes.apply import subtree_ids
from bufferlint.fixes.forward import escapes, fresh_name, hoist_edit, mutated_in_place, self_attribute, without_keyword
from bufferlint.model import Applicability, Finding, Fix, Replace
from bufferlint.rules.base import Rule

_SHOWN = 40  # characters of the constant shown in the message


@dataclass
class RebuiltConstant:
    """`call` builds `value` from constants and places it on the input's device."""

    method: PathMethod
    site: Site
    call: cst.Call
    value: cst.BaseExpression  # the constant, with the move or device= dropped
    replacement: "ReplacementBuilder"
    # why a rewrite is not offered for how the method moves it: shaped for the input first
    # (`.expand(b, -1, -1)`), or moved by `.cuda()` under `if x.is_cuda:`
    declined: Optional[str] = None


class ReplacementBuilder:
    """What the forward expression becomes once the constant is `self.<name>`."""

    def __init__(self, facts: ForwardFacts, constant: "cst.Call", method: PathMethod, site: Site) -> None:
        self.move = facts.move(constant, site.state, method)
        self.self_name = method.self_name

    def build(self, name: str) -> cst.BaseExpression:
        attribute = self_attribute(self.self_name, name)
        if self.move is None:  # `torch.tensor([...], device=x.device)`: the buffer replaces the whole call
            return attribute
        return self.move.without_move(attribute)  # keeps a dtype part: `self.mask.to(x.dtype)`


class ConstantRebuiltInForward(Rule):
    """A constant tensor rebuilt inside `forward` on every call and moved to the input's device.

    ## Why it matters
    `torch.triu(torch.ones(8, 8), 1).bool().to(x.device)` depends on nothing the call brings:
    only literals and values fixed in `__init__`. Building it in `forward` allocates, computes
    and copies it to the GPU on every step. Built once as a buffer, it moves with the module.

    ## Example
    ```python
    class CausalAttention(nn.Module):
        def forward(self, x):
            mask = torch.triu(torch.ones(8, 8), 1).bool().to(x.device)
            ...
    ```

    ## Instead
    ```python
        def __init__(self):
            ...
            self.register_buffer("mask", torch.triu(torch.ones(8, 8), 1).bool(), persistent=False)

        def forward(self, x):
            mask = self.mask
    ```

    ## What counts as constant
    Literals, module-level literal constants and tensors the file builds once at import under a
    constant's name (`IMAGENET_MEAN = torch.FloatTensor([...])`, bound once and never changed in
    place: `IMAGENET_MEAN.to(x)` copies it per call, and its fix registers it as the buffer),
    torch and numpy calls that are not random (`np.eye(3)`, not `np.random.randn(3)`), attributes set in
    `__init__` to plain values (never tensors, parameters or submodules; a list, dict or set only
    when no code of the file outside `__init__` changes it by item: after a tuner's
    `layer.p[rel] -= step`, `torch.tensor(list(self.p.values()))` is that epoch's state), and
    locals bound only to such expressions (also in steps that apply constants to them: `k /= 256.`,
    then `k = k.repeat(3, 1, 1, 1).to(x.device)`), and parameters of a method forward calls that
    every call from forward leaves at a literal default or gives a constant
    (`def time_step_embedding(self, t, max_period=10000)`, called as
    `self.time_step_embedding(t)`; a `@staticmethod` forward calls on the instance too, whose
    constants get no fix: it has no instance to read a buffer from). A top-level function of the
    file that a method on the path calls by name (`timestep_embedding(t, self.dim)`) is walked the
    same way, its constants reported once wherever classes call it, with no fix either, and only
    those it computes (`torch.arange(half)`, which `device=` builds on the device): a table of
    Python or numpy data (`torch.tensor([...])`) is copied from the host however a function builds
    it, and a function has nowhere else to keep it. A constant shaped for the input before its move
    (`torch.eye(3).unsqueeze(0).expand(b, -1, -1).to(x.device)`, also `.repeat`, `.view`,
    `.reshape`, `.permute`) is reported as the constant at its root, with no fix (the rewrite would
    have to keep the shaping on the buffer). The function is
    followed only when a call runs the body written there: defined once and bound by nothing
    else at the top level, undecorated (`functools.lru_cache` keeps its results), keeping no
    state between calls (no `global`, no store into a memo dict it does not bind), and not
    shadowed by a local of the caller; a function it calls in turn is not followed. The statement-by-statement analysis of a method stops
    a block at a `return` or `raise` (what follows never runs). Anything read from the inputs, including their shapes, is not constant; nor
    is a list, dict or set that the method fills in place (`out = []`, then `out.append(...)`).
    A tensor the method changes in place once built (`total = torch.zeros(n).to(x.device)`, then
    `total += part`) is a fresh working tensor each call, not a constant: no finding.
    What moves must be made by a torch call that returns a tensor: `torch.nn.Linear(4, 4).to(x.device)`
    moves a module. Only constants built on the host and then copied are flagged:
    `<constant>.to(x.device)` (also `.to(x)`, `.type_as(x)`, `.type(x.type())`), and `torch.tensor([...], device=x.device)`
    (Python data is copied from the host, unless it is one number: `torch.tensor(self.rate, ...)`
    with `rate: float` or `rate=0.1` given to `__init__`, or arithmetic over a `math` function's
    result or over numbers: `torch.tensor(math.log(10000) / (half - 1), device=...)`,
    `torch.tensor(10 ** (min_db / 10), device=...)` with `min_db=-80.0`); a factory that computes its tensor on the device
    (`torch.arange(n, device=x.device)`, `torch.zeros(..., device=...)`) is not. Constants with at most one element
    (`torch.tensor(0.)` loss accumulators, `torch.tensor([-inf])` fill values) or none
    (`torch.zeros(0, 2)` empty results) are not: a buffer would save nothing. Nor is code that runs
    only when a cache the method keeps on `self` is missing or stale (after
    `if self.cache is not None and n <= len(self.cache): return`, or under `if self.cache is None:`):
    it builds a lazily grown cache, not a constant per call. A file written for ONNX or ncnn
    export (`model_onnx.py`, `export-onnx.py`, or `ensemble_export.py` and `exporter.py` using `torch.onnx`) is not checked: the tracer folds its constants.

    ## Fix safety
    Always unsafe: the fix hoists the tensor into `__init__` as a non-persistent buffer (named
    after the local it is bound to, or the keyword it is passed as, else `<method>_const`) and
    uses `self.<name>` in `forward`, keeping a dtype cast such as `.to(x.dtype)`. It cannot prove
    that the code building the constant runs at construction too (attributes it reads may not
    exist then), nor that nothing relied on a fresh tensor per call. No fix when an obligation is
    disproved:
    1. The tensor does not leave the call (returned, put in a list or dict, stored on an
       object): a buffer would be one tensor every call shares. Nor is the local it is bound to
       bound again by the next statement before anything reads it: the line is a dead store, and
       the remedy is to delete it, not to keep its tensor as a buffer.
    2. It reads no local variable or parameter of the method.
    3. Its dtype is not spelled out (`dtype=torch.float32`, `.double()`): a buffer is cast by
       `.half()` and `.to(torch.bfloat16)`. A pin to the default float dtype does not count on a
       table whose every value half and bfloat16 hold exactly (zeros, ones, an identity, small
       integers): the cast cannot change it.
    4. The class does not place its tensors itself (`self.device = device` set while
       constructing, or `device=device` passed on from its `__init__`): the hoisted constant
       would be built on the CPU, not on that device.
    5. The project does not build its modules on the meta device (a non-persistent buffer is never
       restored by `load_state_dict()`), nor pin torch below 1.6 in a `setup.py` or other Python
       file of the run (`"torch==1.4.0"`: `persistent=` does not exist there).
    6. The class is no `ScriptModule`, has no `register_buffer` of its own, and has an `__init__`
       calling `super().__init__()`.
    7. Something moves the module: it holds parameters, buffers or submodules (also a model its
       constructor, or a base's, loads with `encoder_cls.from_pretrained(name)`), or a module of the
       run holds it. A loss object holding none that nothing holds may never be moved, and then the
       per-call placement is what puts the constant on the input's device.
    Also none for a constant shaped for the input before its move, moved by `.cuda()` under a
    test of the input's device (`if x.is_cuda: iden = iden.cuda()`, PointNet's transformer
    identity), or bound to a local that a later statement moves: the rewrite would have to keep
    the shaping, drop the branch, or span both statements.
    """

    code = "BUF003"
    name = "constant-rebuilt-in-forward"
    skips_export_files = True
    skips_test_files = True
    summary = "Constant tensor rebuilt and moved to the input's device on every forward call"

    def check(self, analysis: FileAnalysis) -> Iterator[Finding]:
        if not may_hold_move(analysis) and not analysis.may_mention("device"):
            return  # neither a move nor a factory given `device=`
        in_functions: set[int] = set()  # calls in top-level functions, reported once whichever class runs them
        for info in analysis.module_classes:
            facts = forward_facts(analysis, info)
            taken: set[str] = set()
            for found in rebuilt_constants(facts):
                if found.method.function:
                    if id(found.call) in in_functions:
                        continue
                    in_functions.add(id(found.call))
                local = _assigned_local(found)
                after = None if found.site.site.nested else found.site.site.line
                if local is not None and mutated_in_place(found.method.func, local, after):
                    continue  # a fresh working tensor each call (`total += part`): no constant
                yield self._finding(analysis, info, found, taken)

    def _finding(self, analysis: FileAnalysis, info: ClassInfo, found: RebuiltConstant, taken: set[str]) -> Finding:
        shown = code_excerpt(found.value, _SHOWN)
        imported = _module_tensor(analysis.inference, found.value)
        if imported:
            message = f"`{shown}`, a tensor the file builds at import, is copied to the input's device on every call: register it as a buffer in __init__"
        elif found.method.function:
            message = (
                f"`{shown}` is computed on the host on every call of {found.method.name}(), which {info.name}.forward "
                "runs, and copied to the input's device: build it there (`device=` on the factory), or once as a buffer passed in"
            )
        else:
            message = f"`{shown}` is rebuilt from constants on every call and moved to the input's device: build it once in __init__ as a buffer"
        reason = _no_fix_reason(analysis, info, found)
        fix: Optional[Fix] = None
        if reason is None:
            name = fresh_name(info, _wanted_name(found), taken)
            insert = hoist_edit(info, name, found.value, found.method.self_name)
            if insert is not None:
                taken.add(name)
                edits = (Replace(found.call, found.replacement.build(name)), insert)
                fix = Fix(Applicability.UNSAFE, f"Hoist into __init__ as non-persistent buffer `{name}`", edits)
                message += (
                    "; unsafe: that no caller relied on a fresh copy per call is not proved" if imported else
                    "; unsafe: that the code building it runs at construction too, and that no caller relied on "
                    "a fresh tensor per call, is not proved"
                )
            else:
                reason = "no __init__ with super().__init__() to build it in"
        if reason is not None:
            message += f"; no fix: {reason}"
        return self.finding(analysis, found.call, message, fix)


def rebuilt_constants(facts: ForwardFacts) -> Iterator[RebuiltConstant]:
    for method in facts.methods:
        for site in method.sites:
            covered: set[int] = set()
            for call in site.calls:
                if id(call) in covered:
                    continue
                value = _constant_on_input_device(facts, call, site, method)
                declined = _guarded_cuda(facts, call, site, method) if value is not None else None
                if value is None:
                    value, declined = _shaped_constant(facts, call, site, method)
                if value is not None and method.function and _copied_anyway(facts, value):
                    value = None  # a function has nowhere to keep it, and its data comes from the host
                if value is not None and cache_guard(method.func, method.self_name, site.site) is not None:
                    break  # runs when a cache the method keeps is missing or stale, not per call
                if value is not None:
                    covered |= subtree_ids(call)
                    yield RebuiltConstant(method, site, call, value, ReplacementBuilder(facts, call, method, site), declined)


def _constant_on_input_device(
    facts: ForwardFacts, call: cst.Call, site: Site, method: PathMethod
) -> Optional[cst.BaseExpression]:
    """The constant that `call` copies from the host to the input's device, or None. A factory
    given `device=x.device` computes its tensor there (`torch.arange(n, device=...)`): no host
    copy, no finding; but `torch.tensor([...], device=...)` copies Python data from the host."""
    move = facts.move(call, site.state, method)
    if move is not None:
        subject = move.subject
        if not _to_input(facts, move, site, method) or not _is_tensor_constant(facts, subject, method, site.state):
            return None
        return subject if _a_table(facts, subject, method) else None
    qualified = facts.inference.qualify(call.func) or ""
    device = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "device"), None)
    if qualified not in _HOST_DATA_FACTORIES or device is None or facts.device_target(device, site.state, method) is not Target.INPUT:
        return None
    if _number_data(facts, call, method):
        return None  # `torch.tensor(self.rate, device=...)`: one number, nothing to save
    value = without_keyword(call, "device")
    return value if facts.is_constant(value, method) and not _trivial(facts, value) else None




def _shaped_constant(
    facts: ForwardFacts, call: cst.Call, site: Site, method: PathMethod
) -> tuple[Optional[cst.BaseExpression], Optional[str]]:
    """The constant at the root of what `call` moves to the input's device, and why no rewrite
    is offered, when only shaping methods given the input's sizes stand between them
    (`torch.eye(3).unsqueeze(0).expand(b, -1, -1).to(x.device)`: the table is rebuilt and copied
    each call, in as many copies as the batch), or when a local bound to the constant is moved by
    a later statement (`ct = torch.Tensor([...]).t()`, then `ct = ct.to(x.device)`)."""
    move = facts.move(call, site.state, method)
    if move is None or not _to_input(facts, move, site, method):
        return None, None
    subject = value_bound_before(move.subject, site, method)
    if subject is not move.subject and _is_tensor_constant(facts, subject, method, site.state):
        return (subject, _MOVED_LATER.format(move.subject.value)) if _a_table(facts, subject, method) else (None, None)  # type: ignore[attr-defined]
    inner = subject
    while isinstance(inner, cst.Call) and isinstance(inner.func, cst.Attribute) and inner.func.attr.value in SHAPING_METHODS:
        inner = inner.func.value
    if inner is subject or not _is_tensor_constant(facts, inner, method, site.state):
        return None, None
    return (inner, _SHAPED) if _a_table(facts, inner, method) else (None, None)


_SHAPED = "it is shaped for the input before the move, and a rewrite that keeps that shaping on the buffer is not offered"
_MOVED_LATER = "it is bound to `{}` and moved by a later statement, and a rewrite across the two statements is not offered"


def _to_input(facts: ForwardFacts, move: Move, site: Site, method: PathMethod) -> bool:
    """The move sends the tensor to the input's device: `.to(x.device)`, or `.cuda()` when `x` is on CUDA."""
    return move.target is Target.INPUT or facts.follows_input_to_cuda(move, site.site, site.state, method)


def _guarded_cuda(facts: ForwardFacts, call: cst.Call, site: Site, method: PathMethod) -> Optional[str]:
    """Why no rewrite is offered for a constant `call` moves: only for `.cuda()` under `if
    x.is_cuda:` (the one move `_to_input` takes that does not target the input by name)."""
    move = facts.move(call, site.state, method)
    if move is None or move.target is Target.INPUT:
        return None
    return "it is moved by `.cuda()` under a test of the input's device, and a rewrite that drops that branch is not offered"


def _a_table(facts: ForwardFacts, constant: cst.BaseExpression, method: PathMethod) -> bool:
    """More than one number: not a scalar or an empty tensor (`_trivial`), nor a data factory
    given one number (`torch.tensor(fillval).to(x.device)`, `fillval = -float(2 ** 30)`)."""
    if _trivial(facts, constant):
        return False
    return not (
        isinstance(constant, cst.Call) and facts.inference.qualify(constant.func) in _HOST_DATA_FACTORIES and _number_data(facts, constant, method)
    )


def _copied_anyway(facts: ForwardFacts, value: cst.BaseExpression) -> bool:
    """Python or numpy data, or a tensor the file builds at import: copied from the host however
    a function builds it. A function can only pass a computed table (`torch.arange(half)`)."""
    return copies_host_data(value, facts.inference.qualify) or any(_module_tensor(facts.inference, name) for name in nodes_of(value, cst.Name))


# Factories that turn Python data into a tensor: given `device=`, they still copy it from the host.
_HOST_DATA_FACTORIES = frozenset(("torch.tensor", "torch.as_tensor"))


def _number_data(facts: ForwardFacts, call: cst.Call, method: PathMethod) -> bool:
    """The data is one number: a name the method knows to hold one, or an attribute `__init__`
    sets from one (`self.rate = rate` with `rate: float` or `rate=0.1`)."""
    data = next((a.value for a in call.args if a.keyword is None or a.keyword.value == "data"), None)
    if isinstance(data, (cst.BinaryOperation, cst.UnaryOperation)):
        return _math_arithmetic(facts, data) or _number_arithmetic(data, scalar_names(method.func))
    if isinstance(data, cst.Name):
        return data.value in scalar_names(method.func)
    if isinstance(data, cst.Attribute) and is_name(data.value, method.self_name):
        sources = [a for a in facts.info.assignments_to(data.attr.value) if a.value is not None]
        return bool(sources) and all(
            is_zero_dim(a.value, facts.inference.qualify) or _is_number(a.value, scalar_names(a.method))  # type: ignore[arg-type]
            for a in sources
        )
    return False


def _math_arithmetic(facts: ForwardFacts, data: cst.BaseExpression) -> bool:
    """Arithmetic over what a `math` function returns (`log(10000) / (half_dim - 1)`), with no
    list, tuple or subscript in it: one number."""
    if any(True for _ in nodes_of(data, (cst.List, cst.Tuple, cst.ListComp, cst.Subscript))):
        return False
    return any((facts.inference.qualify(c.func) or "").startswith("math.") for c in nodes_of(data, cst.Call))


def _number_arithmetic(data: cst.BaseExpression, scalars: frozenset[str]) -> bool:
    """Arithmetic over numbers and names known to hold them (`10 ** (min_db / 10)`, `min_db=-80.0`)."""
    if isinstance(data, cst.BinaryOperation):
        return _number_arithmetic(data.left, scalars) and _number_arithmetic(data.right, scalars)
    if isinstance(data, cst.UnaryOperation):
        return _number_arithmetic(data.expression, scalars)
    return _is_number(data, scalars)


def _is_number(value: cst.BaseExpression, scalars: frozenset[str]) -> bool:
    return isinstance(value, (cst.Integer, cst.Float)) or (isinstance(value, cst.Name) and value.value in scalars)


def _trivial(facts: ForwardFacts, constant: cst.BaseExpression) -> bool:
    """A scalar or an empty tensor (`torch.tensor(0.)`, `torch.zeros(0, 2)`): a loss accumulator,
    a fill value, an empty result. Building one costs about what reading a buffer does."""
    numel = static_numel(constant, facts.inference.qualify)
    return numel is not None and numel <= 1


def _is_tensor_constant(facts: ForwardFacts, expr: cst.BaseExpression, method: PathMethod, state: FlowState) -> bool:
    # A torch call that makes a tensor (`torch.nn.Linear(...).to(x.device)` moves a module), a
    # module-level tensor, or a local a torch factory made on the host (`k.repeat(3, 1, 1, 1)`).
    tensor = (
        any(facts.inference.is_torch_tensor_call(c) for c in calls_in(expr))
        or _module_tensor(facts.inference, expr)
        or any(name.value in state.cpu for name in nodes_of(expr, cst.Name))
    )
    return tensor and facts.is_constant(expr, method)


def _module_tensor(inference: TensorInference, expr: cst.BaseExpression) -> bool:
    """`IMAGENET_MEAN`, a tensor the file builds at import (analysis/module_tensors.py)."""
    return isinstance(expr, cst.Name) and inference.module_tensor(expr.value)


def _no_fix_reason(analysis: FileAnalysis, info: ClassInfo, found: RebuiltConstant) -> Optional[str]:
    """The first hoist obligation that fails (see the rule's docs), or None."""
    if info.is_script_module:
        return "ScriptModule subclasses do not support non-persistent buffers"
    if info.defines_register_buffer():
        return "the class or a base defines its own register_buffer"
    if found.method.function:
        return f"{found.method.name}() is a function of the module, not a method: it has no instance to read a buffer from"
    if found.declined is not None:
        return found.declined
    if is_static(found.method.func):
        return f"{found.method.name}() is a static method: it has no instance to read a buffer from (pass the table in, or make it a method)"
    local = _assigned_local(found)
    if local is not None and escapes(found.method.func, local):
        return f"`{local}` leaves {found.method.name}() (returned or stored), and a buffer would be one tensor shared by every call"
    rebinding = _rebound_unread(found, local) if local is not None else None
    if rebinding is not None:
        return f"`{code_excerpt(rebinding, _SHOWN)}` binds `{local}` again before anything reads it: nothing uses the tensor, so delete the line instead"
    facts_locals = [n for n in variable_names(found.value) if n in found.method.locals and n != found.method.self_name]
    if facts_locals:
        if isinstance(found.value, cst.Name) and found.value.value == facts_locals[0] and facts_locals[0] not in params_of(found.method.func):
            return _MOVED_LATER.format(facts_locals[0])  # `k = torch.eye(3)`, then `k = k.to(x.device)`
        if facts_locals[0] in params_of(found.method.func):
            return (
                f"it reads `{facts_locals[0]}`, a parameter of {found.method.name}() that every call from forward keeps "
                "constant, and a rewrite that fixes its value in __init__ is not offered"
            )
        return (
            f"it reads `{facts_locals[0]}`, a local variable of {found.method.name}(), and a rewrite that "
            "computes that local in __init__ too is not offered"
        )
    placed = given_device(info)
    if placed is not None:
        return f"{placed}, and a hoisted constant would be built on the CPU"
    pin = dtype_pin(found.value, analysis.inference.qualify)
    if pin is not None and pin_guards_values(found.value, pin, analysis.inference.qualify):
        return f"its dtype is spelled out (`{pin}`), and a buffer is cast by .half() and .to(torch.bfloat16), which may change what the code computes"
    if analysis.project.old_torch is not None:
        return f"the project pins torch below 1.6 ({analysis.project.old_torch}), where register_buffer() takes no `persistent=`"
    if analysis.project.meta_init is not None:
        return f"the project builds modules on the meta device ({analysis.project.meta_init}), and load_state_dict() never restores a non-persistent buffer"
    unmoved = moved_with_users(class_attributes(analysis, info))
    if unmoved is not None and unmoved.blocking:
        return unmoved.reason
    return None


def _assigned_local(found: RebuiltConstant) -> Optional[str]:
    small = found.site.site.small
    if isinstance(small, cst.Assign) and small.value is found.call and len(small.targets) == 1:
        target = small.targets[0].target
        if isinstance(target, cst.Name):
            return target.value
    return None


def _rebound_unread(found: RebuiltConstant, local: str) -> Optional[cst.Assign]:
    """The statement right after the constant's (in the method's own body) when it binds `local`
    again from a value that does not read it: the constant is a dead store, and hoisting it
    would keep a tensor nothing uses."""
    site = found.site.site
    body = body_statements(found.method.func.body)
    if site.nested or site.line.body[-1] is not site.small or site.top_index + 1 >= len(body):
        return None
    following = body[site.top_index + 1]
    if type(following) is not cst.SimpleStatementLine or type(following.body[0]) is not cst.Assign:
        return None
    rebinding = following.body[0]
    targets = [t.target for t in rebinding.targets]
    if not any(is_name(t, local) for t in targets) or local in variable_names(rebinding.value):
        return None
    return rebinding


def _wanted_name(found: RebuiltConstant) -> str:
    """The local it is bound to, or the keyword it is passed as, or `<method>_const`: never the
    name of the torch function that builds it (`tensor`, `LongTensor` say nothing)."""
    local = _assigned_local(found)
    if local is not None:
        return local
    if isinstance(found.value, cst.Name):
        return found.value.value.lower()  # `IMAGENET_MEAN`: `imagenet_mean`
    small = found.site.site.small
    for arg in nodes_of(small, cst.Arg):
        if arg.keyword is not None and arg.value is found.call:
            return arg.keyword.value
    return f"{found.method.name.strip('_')}_const"
