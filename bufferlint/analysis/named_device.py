"""Tensors a class builds on a device the program names: the class places them itself.

`self.window = torch.hann_window(n, device=device)` in `__init__(self, n, device)`, or
`torch.zeros(n).to(self.params.device)`, `torch.zeros(n, device=get_rank())`,
`torch.zeros(n).to(flair.device)`: the program decides where the tensor lives when it builds the
module, and builds it there. Maintainers of such code read a "`.to()` leaves it behind" finding
as a false alarm: the class is not meant to be moved after it is built (an export wrapper, a
layer built per call for the model's device, one module per GPU rank). Measured on fresh
repositories, such tensors were false alarms in 14 of 19 cases, and every true one was one of
the spellings below that stay findings.

What does not name a device (and so stays a finding):
- a `device` argument whose default is None or `"cpu"`: when the caller names nothing, the
  tensor is built on the host (MONAI's MedianFilter, moved with `.to("cuda:0")` by its tests);
- anything in a class that registers buffers itself: it relies on `.to()` to place those, and a
  table built beside them on the caller's device is left behind when they move (botorch);
- a literal: `"cuda"` is hard-coded (the module cannot run without a GPU), `"cpu"` the host;
- a name the file binds to an automatic pick, `torch.device("cuda" if torch.cuda.is_available()
  else "cpu")`: the same hard-coding, chosen at import;
- the device of the module's own tensors (`self.weight.device` is the host while `__init__`
  runs, and stays there after `.cuda()`), or a `self.device` the class (or a base outside the
  linted files) may define as a property;
- a dtype (`.to(torch.float16)`, `.to(dtype)`), which places nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional

import libcst as cst

from bufferlint.analysis.classes import AttrAssignment, ClassInfo, ValueKind
from bufferlint.analysis.walk import nodes_of

# `.to(<first argument>)` with one of these names converts the dtype, not the device.
_DTYPE_WORDS = ("dtype", "float", "half", "double", "int", "long", "bool")
_LITERALS = (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString, cst.Integer)
# how many locals deep `device = torch.device(dev)` is followed
_MAX_DEPTH = 4


def on_named_device(info: ClassInfo, defining: AttrAssignment, fixed: frozenset[str]) -> bool:
    """The defining value is built on (or moved to) devices the program names, and so is every
    other fresh tensor the class assigns to the name (one built on the host in `reset()` would
    be left behind); values computed from the module's state stay where that state is.
    `fixed`: the module-level names bound to a literal or an automatic pick."""
    init = info.init
    if init is None or defining.value is None or info.registered_buffers:
        return False  # a class that registers its other tables relies on `.to()` to place them
    context = _Context(info, init, fixed)
    if not _all_named(defining.value, context):
        return False
    for other in info.assignments_to(defining.attr):
        if other is defining or other.kind is not ValueKind.TENSOR or other.value is None:
            continue
        if next(_placements(other.value), None) is None:
            if not _reads_self(other.value, other.scope.self_name):
                return False
        elif not _all_named(other.value, context):
            return False
    return True


def _all_named(value: cst.BaseExpression, context: "_Context") -> bool:
    targets = list(_placements(value))
    return bool(targets) and all(_names_device(target, context, 0) for target in targets)


def _reads_self(value: cst.BaseExpression, me: Optional[str]) -> bool:
    return me is not None and any(isinstance(n.value, cst.Name) and n.value.value == me for n in nodes_of(value, cst.Attribute))


def fixed_device_names(module: cst.Module) -> frozenset[str]:
    """Module-level names bound to a literal or to a value that mentions CUDA (`DEVICE = "cpu"`,
    `device = torch.device("cuda" if torch.cuda.is_available() else "cpu")`)."""
    names: set[str] = set()
    for statement in module.body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, (cst.Assign, cst.AnnAssign)) and small.value is not None and _fixed(small.value):
                    names.update(_bound_names(small))
    return frozenset(names)


def _fixed(value: cst.BaseExpression) -> bool:
    return isinstance(value, _LITERALS) or mentions_cuda(value)


def mentions_cuda(node: cst.CSTNode) -> bool:
    """A string naming CUDA, or `torch.cuda...` / `is_available`, anywhere in `node`."""
    for child in nodes_of(node, (cst.SimpleString, cst.Attribute)):
        if isinstance(child, cst.SimpleString) and "cuda" in str(child.evaluated_value):
            return True
        if isinstance(child, cst.Attribute) and child.attr.value in ("cuda", "is_available", "current_device"):
            return True
    return False


def _bound_names(small: cst.Assign | cst.AnnAssign) -> Iterator[str]:
    targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
    for target in targets:
        if isinstance(target, cst.Name):
            yield target.value


def _placements(value: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """The device expressions of `value`: `device=` arguments and `.to(<first argument>)`."""
    for call in nodes_of(value, cst.Call):
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == "device":
                yield arg.value
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == "to" and call.args and call.args[0].keyword is None:
            yield call.args[0].value


@dataclass(frozen=True)
class _Context:
    info: ClassInfo
    init: cst.FunctionDef
    fixed: frozenset[str]


def _names_device(target: cst.BaseExpression, context: _Context, depth: int) -> bool:
    if depth > _MAX_DEPTH or _fixed(target) or _is_dtype(target):
        return False
    if isinstance(target, cst.Call):
        return _names_device_call(target, context, depth)
    if isinstance(target, cst.Name):
        return _names_device_name(target.value, context, depth)
    if isinstance(target, cst.Attribute):
        return _names_device_attribute(target, context)
    return False


def _is_dtype(target: cst.BaseExpression) -> bool:
    """`torch.float16`, `dtype`, `self.dtype`: a conversion, not a placement."""
    last = target.attr.value if isinstance(target, cst.Attribute) else target.value if isinstance(target, cst.Name) else None
    if last is None:
        return False
    if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "torch":
        return last != "device"
    return last.lower().endswith("dtype") or any(word in _DTYPE_WORDS for word in last.lower().split("_"))


def _names_device_call(call: cst.Call, context: _Context, depth: int) -> bool:
    """`torch.device(d)` names what `d` names; another call (`get_rank()`) is the program's choice."""
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value == "device":
        return bool(call.args) and _names_device(call.args[0].value, context, depth + 1)
    return True


def _names_device_name(name: str, context: _Context, depth: int) -> bool:
    """A parameter of `__init__` (whatever its default: the caller may name another), a local
    of it bound only to devices the program names, or a name from elsewhere (`from .config import
    DEVICE`); not one bound to a literal or an automatic pick, here or at module level."""
    init = context.init
    params = {p.name.value: p for p in (*init.params.params, *init.params.kwonly_params)}
    if name in params:
        return name != _self_name(init) and not _host_default(params[name].default)
    local_values = list(_local_values(init, name))
    if local_values:
        return all(_names_device(value, context, depth + 1) for value in local_values)
    return name not in context.fixed


def _host_default(default: Optional[cst.BaseExpression]) -> bool:
    """`device=None` or `device="cpu"`: when the caller names nothing, the tensor is built on
    the host, and a `.to("cuda")` of the module leaves it there (MONAI's MedianFilter)."""
    if default is None:
        return False
    if isinstance(default, cst.Name):
        return default.value == "None"
    return isinstance(default, cst.SimpleString) and "cpu" in str(default.evaluated_value)


def _local_values(init: cst.FunctionDef, name: str) -> Iterator[cst.BaseExpression]:
    for small in nodes_of(init.body, (cst.Assign, cst.AnnAssign)):
        if isinstance(small, (cst.Assign, cst.AnnAssign)) and small.value is not None and name in _bound_names(small):
            yield small.value


def _names_device_attribute(target: cst.Attribute, context: _Context) -> bool:
    """`args.device`, `flair.device`, `x.device` of an argument, the device of a module the
    caller gives (`next(wrapped.parameters()).device`), or a setting the class keeps
    (`self.params.device`, `self.device = device`); not the device of the module's own tensors."""
    root = target
    chain: list[str] = []
    while isinstance(root, cst.Attribute):
        chain.append(root.attr.value)
        root = root.value  # type: ignore[assignment]
    me = _self_name(context.init)
    if isinstance(root, cst.Call):
        # `next(wrapped.parameters()).device`: where a module the caller gives lives
        return chain == ["device"] and _reads_argument(root, context.init) and not _mentions(root, me)
    if not isinstance(root, cst.Name):
        return False
    if root.value != me:
        return True
    return _kept_setting(context.info, chain[-1])


def _reads_argument(node: cst.CSTNode, init: cst.FunctionDef) -> bool:
    params = {p.name.value for p in (*init.params.params[1:], *init.params.kwonly_params)}
    return any(name.value in params for name in nodes_of(node, cst.Name))


def _mentions(node: cst.CSTNode, name: Optional[str]) -> bool:
    return name is not None and any(n.value == name for n in nodes_of(node, cst.Name))


def _self_name(init: cst.FunctionDef) -> Optional[str]:
    return init.params.params[0].name.value if init.params.params else None


def _kept_setting(info: ClassInfo, attr: str) -> bool:
    """The class (or a base of the linted files) sets `self.<attr>` in `__init__`, and only to
    values that are no tensor, parameter or module; a property or a method by that name, or a
    base outside the linted files that may define one, is not proved a setting."""
    owners = (info, *info.ancestors())
    if any(attr in owner.properties or attr in owner.methods for owner in owners):
        return False
    assignments = [a for owner in owners for a in owner.assignments if a.attr == attr]
    return bool(assignments) and all(
        a.in_init and a.kind not in (ValueKind.TENSOR, ValueKind.PARAMETER, ValueKind.BUFFER, ValueKind.MODULE)
        for a in assignments
    )

