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
  tensor is built on the host (MONAI's MedianFilter, moved with `.to("cuda:0")` by its tests),
  also when `__init__` ends with `self.to(device)`: a project may still build it with the
  default and call `.cuda()` on it. (Unless every construction of the class in the run gives
  the argument, `never_given.given_by_every_construction`: then no instance takes the default);
- anything in a class that registers buffers itself: it relies on `.to()` to place those, and a
  table built beside them on the caller's device is left behind when they move (botorch);
- a literal: `"cuda"` is hard-coded (the module cannot run without a GPU), `"cpu"` the host;
- a name the file binds to an automatic pick, `torch.device("cuda" if torch.cuda.is_available()
  else "cpu")`: the same hard-coding, chosen at import;
- the device of the module's own tensors (`self.weight.device` is the host while `__init__`
  runs, and stays there after `.cuda()`), of a layer `__init__` builds itself, or a `self.device`
  the class (or a base outside the linted files) may define as a property, or a method or local
  function may compute;
- a local bound in a way not followed here (`device, dtype = ...`, a loop, a `with`);
- a dtype (`.to(torch.float16)`, `.to(dtype)`), which places nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Iterator, Optional

import libcst as cst

from bufferlint.analysis.classes import AttrAssignment, ClassInfo, ValueKind
from bufferlint.analysis.cuda_intent import decides_on_cuda, is_cuda_literal
from bufferlint.analysis.flow import StatementSite, self_name, stored_names
from bufferlint.analysis.grad import argument_keyword
from bufferlint.analysis.names import Qualify
from bufferlint.analysis.walk import nodes_of

# `.to(<first argument>)` with one of these names converts the dtype, not the device.
_DTYPE_WORDS = ("dtype", "float", "half", "double", "int", "long", "bool")
_LITERALS = (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString, cst.Integer)
# how many locals deep `device = torch.device(dev)` is followed
_MAX_DEPTH = 4


def on_named_device(info: ClassInfo, defining: AttrAssignment, fixed: frozenset[str], named_by_callers: Callable[[], frozenset[str]] = frozenset) -> bool:
    """The defining value is built on (or moved to) devices the program names, and so is every
    other fresh tensor the class assigns to the name (one built on the host in `reset()` would
    be left behind); values computed from the module's state stay where that state is.
    `fixed`: the module-level names bound to a literal or an automatic pick; `named_by_callers`:
    the `__init__` parameters every construction of the class gives (asked only when needed)."""
    if info.init is None or defining.value is None or info.registered_buffers:
        return False  # a class that registers its other tables relies on `.to()` to place them
    assignments = [a for a in info.assignments_to(defining.attr) if a.kind is ValueKind.TENSOR and a.value is not None]
    for assignment in assignments:
        context = _Context(info, assignment.method, fixed, named_by_callers)
        value = _placed_value(assignment)
        if next(_placements(value), None) is None:
            if _replaced_later(assignment, assignments, context):
                continue  # `self.w = torch.ones(n)`, then `self.w = self.w.to(args.device)`
            if assignment is defining or not _reads_self(value, assignment.scope.self_name):
                return False
        elif not _all_named(value, context):
            return False
    return True


def _placed_value(assignment: AttrAssignment) -> cst.BaseExpression:
    """The value, or for `self.mean = mean.view(-1, 1, 1)` with no placement of its own, the one
    value the method binds the local to (`mean = torch.tensor([...]).to(device)`)."""
    value = assignment.value
    assert value is not None
    if next(_placements(value), None) is not None:
        return value
    root = value
    while isinstance(root, (cst.Subscript, cst.Attribute, cst.Call)):
        root = root.func if isinstance(root, cst.Call) else root.value
    if isinstance(root, cst.Name):
        bound = _local_values(assignment.method, root.value)
        if bound is not None and len(bound) == 1:
            return bound[0]
    return value


def _replaced_later(assignment: AttrAssignment, assignments: list[AttrAssignment], context: _Context) -> bool:
    """A later top-level statement of the same method places the attribute's own value on a
    device the program names (`self.w = self.w.to(args.device)`, also under a test of a setting)."""
    me = assignment.scope.self_name
    return any(
        later.method is assignment.method and later.site.top_index > assignment.site.top_index
        and later.value is not None and _reads_self(later.value, me) and _all_named(later.value, context)
        for later in assignments
    )


def built_on_cuda(defining: AttrAssignment, qualify: Qualify) -> bool:
    """`self.t = torch.zeros(n).cuda()` (or `device="cuda"`, `.to("cuda:0")`, or a local built so
    and sliced: `rows = torch.from_numpy(a).cuda(); self.t = rows[:, 1:]`), unconditionally in
    `__init__`: whatever the module is moved to, it cannot be built without a GPU. A choice
    (`x.cuda() if gpu else x`, a statement under a test of CUDA) may be on purpose."""
    value = defining.value
    if value is None or not defining.in_init or not _unconditional(defining.site):
        return False
    if _pins_cuda(value, qualify):
        return True
    root = value
    while isinstance(root, (cst.Subscript, cst.Attribute)):
        root = root.value
    if not isinstance(root, cst.Name):
        return False
    bound = _local_values(defining.method, root.value)
    return bound is not None and len(bound) == 1 and _pins_cuda(bound[0], qualify)


def _unconditional(site: StatementSite) -> bool:
    """Not under a test that decides on CUDA (`if torch.cuda.is_available():`, `if self.use_gpu:`)
    nor in a `try` that may fall back: a branch on a setting (`if not cfg.downsample:`) still
    hard-codes the device."""
    if not site.nested:
        return True
    for statement in nodes_of(site.top, (cst.If, cst.While, cst.Try)):
        if any(line is site.line for line in nodes_of(statement, cst.SimpleStatementLine)):
            if isinstance(statement, cst.Try) or decides_on_cuda(statement.test):  # type: ignore[attr-defined]
                return False
    return True


def _pins_cuda(value: cst.BaseExpression, qualify: Qualify) -> bool:
    if nodes_of(value, cst.IfExp):
        return False
    for call in nodes_of(value, cst.Call):
        func = call.func
        method = func.attr.value if isinstance(func, cst.Attribute) else None
        if method == "cuda" and all(isinstance(arg.value, cst.Integer) for arg in call.args):
            return True
        if method == "to" and call.args and call.args[0].keyword is None and is_cuda_literal(call.args[0].value, qualify):
            return True
        device = argument_keyword(call, "device")
        if device is not None and is_cuda_literal(device, qualify):
            return True
    return False


def _all_named(value: cst.BaseExpression, context: "_Context") -> bool:
    targets = list(_placements(value))
    return bool(targets) and all(_names_device(target, context, 0) for target in targets)


def _reads_self(value: cst.BaseExpression, me: Optional[str]) -> bool:
    return me is not None and any(isinstance(n.value, cst.Name) and n.value.value == me for n in nodes_of(value, cst.Attribute))


def fixed_device_names(module: cst.Module) -> frozenset[str]:
    """Module-level names bound to a literal or to a value that mentions CUDA or builds a
    `torch.device` from a literal (`DEVICE = "cpu"`, `DEVICE = torch.device("cpu")`,
    `device = torch.device("cuda" if torch.cuda.is_available() else "cpu")`)."""
    names: set[str] = set()
    for statement in module.body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, (cst.Assign, cst.AnnAssign)) and small.value is not None and _fixed(small.value):
                    names.update(_bound_names(small))
    return frozenset(names)


def _fixed(value: cst.BaseExpression) -> bool:
    if isinstance(value, _LITERALS) or mentions_cuda(value):
        return True
    # `torch.device("cpu")`
    return (
        isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "device"
        and bool(value.args) and isinstance(value.args[0].value, _LITERALS)
    )


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
        yield from stored_names(target)


def _placements(value: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """The device expressions of `value`: `device=` arguments and `.to(<first argument>)`
    (`.to(*args)` yields its starred name, which then names nothing proved)."""
    for call in nodes_of(value, cst.Call):
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == "device":
                yield arg.value
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == "to" and call.args and call.args[0].keyword is None:
            first = call.args[0]
            yield cst.Ellipsis() if first.star else first.value


@dataclass(frozen=True)
class _Context:
    info: ClassInfo
    method: cst.FunctionDef  # the method that builds the tensor
    fixed: frozenset[str]
    named_by_callers: Callable[[], frozenset[str]] = frozenset

    @property
    def me(self) -> Optional[str]:
        return self_name(self.method)

    def params(self) -> dict[str, cst.Param]:
        p = self.method.params
        return {param.name.value: param for param in (*p.posonly_params, *p.params, *p.kwonly_params)}


def _names_device(target: cst.BaseExpression, context: _Context, depth: int) -> bool:
    if depth > _MAX_DEPTH or _fixed(target) or _is_dtype(target):
        return False
    if isinstance(target, cst.Call):
        return _names_device_call(target, context, depth)
    if isinstance(target, cst.Name):
        return _names_device_name(target.value, context, depth)
    if isinstance(target, cst.Attribute):
        return _names_device_attribute(target, context, depth)
    if isinstance(target, cst.Subscript):
        return _names_device_item(target, context, depth)
    return False


def _names_device_item(target: cst.Subscript, context: _Context, depth: int) -> bool:
    """`config["device"]`, `self.opt["gpu_id"]`: the entry, under a string key that names no
    dtype, of a mapping that names devices as a name or attribute would (an argument, a setting
    the class keeps); not an entry of a literal the method builds."""
    key = _string_key(target)
    if key is None or any(word in _DTYPE_WORDS for word in key.lower().split("_")) or key.lower().endswith("dtype"):
        return False
    return _names_device(target.value, context, depth + 1)


def _string_key(target: cst.Subscript) -> Optional[str]:
    if len(target.slice) != 1 or not isinstance(target.slice[0].slice, cst.Index):
        return None
    key = target.slice[0].slice.value
    return key.evaluated_value if isinstance(key, cst.SimpleString) and isinstance(key.evaluated_value, str) else None


def _is_dtype(target: cst.BaseExpression) -> bool:
    """`torch.float16`, `dtype`, `self.dtype`: a conversion, not a placement."""
    last = target.attr.value if isinstance(target, cst.Attribute) else target.value if isinstance(target, cst.Name) else None
    if last is None:
        return False
    if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "torch":
        return last != "device"
    return last.lower().endswith("dtype") or any(word in _DTYPE_WORDS for word in last.lower().split("_"))


def _names_device_call(call: cst.Call, context: _Context, depth: int) -> bool:
    """`torch.device(d)` names what `d` names; a function from elsewhere (`get_rank()`) is the
    program's choice; a method of the class or a function `__init__` defines may compute the
    device of the module's own tensors, which is the host while it is built."""
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value == "device":
        return bool(call.args) and _names_device(call.args[0].value, context, depth + 1)
    if _mentions(func, context.me):
        return False
    if isinstance(func, cst.Name) and (func.value in context.params() or _bound_locally(context.method, func.value)):
        return False
    return not isinstance(func, (cst.Lambda, cst.Call))


def _names_device_name(name: str, context: _Context, depth: int) -> bool:
    """A parameter of the method (unless it defaults to the host and some construction of the
    class may leave it out: then the caller may name nothing),
    a local bound only to devices the program names, or a name from elsewhere (`from .config
    import DEVICE`); not one bound to a literal or an automatic pick, here or at module level."""
    params = context.params()
    if name in params:
        if name == context.me:
            return False
        return not _host_default(params[name].default) or (context.method is context.info.init and name in context.named_by_callers())
    values = _local_values(context.method, name)
    if values is None:
        return False  # bound in a way not followed: not proved
    if values:
        return all(_names_device(value, context, depth + 1) for value in values)
    return name not in context.fixed


def _host_default(default: Optional[cst.BaseExpression]) -> bool:
    """`device=None` or `device="cpu"`: when the caller names nothing, the tensor is built on
    the host, and a `.to("cuda")` of the module leaves it there (MONAI's MedianFilter)."""
    if default is None:
        return False
    if isinstance(default, cst.Name):
        return default.value == "None"
    return isinstance(default, cst.SimpleString) and "cpu" in str(default.evaluated_value)


def _local_values(method: cst.FunctionDef, name: str) -> Optional[list[cst.BaseExpression]]:
    """What `name = <value>` statements of the method bind it to; None when something else
    binds it too (tuple unpacking, a loop, `with ... as`, a walrus, a nested definition)."""
    values: list[cst.BaseExpression] = []
    for node in nodes_of(method.body, (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.For, cst.WithItem, cst.NamedExpr, cst.FunctionDef)):
        if isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            if node.targets[0].target.value == name:
                values.append(node.value)
            continue
        if isinstance(node, cst.AnnAssign) and isinstance(node.target, cst.Name):
            if node.target.value == name and node.value is not None:
                values.append(node.value)
            continue
        if name in _other_bindings(node):
            return None
    return values


def _other_bindings(node: cst.CSTNode) -> set[str]:
    if isinstance(node, cst.Assign):
        return {n for t in node.targets for n in stored_names(t.target)}
    if isinstance(node, (cst.AugAssign, cst.For)):
        return set(stored_names(node.target))
    if isinstance(node, cst.WithItem):
        return set(stored_names(node.asname.name)) if node.asname is not None else set()  # type: ignore[arg-type]
    if isinstance(node, cst.NamedExpr):
        return set(stored_names(node.target))
    if isinstance(node, cst.FunctionDef):
        return {node.name.value}
    return set()


def _bound_locally(method: cst.FunctionDef, name: str) -> bool:
    values = _local_values(method, name)
    return values is None or bool(values)


def _names_device_attribute(target: cst.Attribute, context: _Context, depth: int) -> bool:
    """`args.device` of an argument, `flair.device` of an imported package, the device of a
    module the caller gives (`next(wrapped.parameters()).device`), or a setting the class keeps
    (`self.params.device`, `self.device = device`); not the device of the module's own tensors,
    nor of a layer the method builds itself (`lin.weight.device`)."""
    root: cst.BaseExpression = target
    chain: list[str] = []
    while isinstance(root, cst.Attribute):
        chain.append(root.attr.value)
        root = root.value
    chain.reverse()  # from the root outwards: `self.params.device` -> ["params", "device"]
    me = context.me
    if isinstance(root, cst.Call):
        # `next(wrapped.parameters()).device`: where a module the caller gives lives
        return chain == ["device"] and _reads_argument(root, context) and not _mentions(root, me)
    if not isinstance(root, cst.Name):
        return False
    if root.value == me:
        return len(chain) <= 2 and _kept_setting(context, chain[0], depth)
    if root.value in context.params():
        return True
    return _local_values(context.method, root.value) == [] and root.value not in context.fixed


def _reads_argument(node: cst.CSTNode, context: _Context) -> bool:
    params = set(context.params()) - {context.me}
    return any(name.value in params for name in nodes_of(node, cst.Name))


def _mentions(node: cst.CSTNode, name: Optional[str]) -> bool:
    return name is not None and any(n.value == name for n in nodes_of(node, cst.Name))


def _kept_setting(context: _Context, attr: str, depth: int) -> bool:
    """The class (or a base of the linted files) sets `self.<attr>` in `__init__`, only from an
    argument it is given (`self.params = params`, `self.dev = device`) and never to a host
    default; a property or a method by that name, or a base outside the linted files that may
    define one, is not proved a setting."""
    owners = (context.info, *context.info.ancestors())
    if any(attr in owner.properties or attr in owner.methods for owner in owners):
        return False
    assignments = [a for owner in owners for a in owner.assignments if a.attr == attr]
    return bool(assignments) and all(
        a.in_init and a.value is not None
        and _names_device(a.value, replace(context, method=a.method), depth + 1)
        for a in assignments
    )


def shared_generator_device(
    info: ClassInfo, value: cst.BaseExpression, qualify: Qualify
) -> Optional[str]:
    """The device expression (as code) that `value` is built on with `device=` and that a
    `torch.Generator(device=...)` the class builds while constructing uses too; not a literal and
    not an `__init__` argument that defaults to None or "cpu" (then the host is the default)."""
    device = _device_keyword(value)
    if device is None or isinstance(device, _LITERALS) or _host_by_default(info, device):
        return None
    shown = cst.Module([]).code_for_node(device)
    for assignment in info.assignments:
        built = assignment.value
        if assignment.in_init and isinstance(built, cst.Call) and qualify(built.func) == "torch.Generator":
            other = _device_keyword(built)
            if other is not None and cst.Module([]).code_for_node(other) == shown:
                return shown
    return None


def _device_keyword(value: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    return argument_keyword(value, "device") if isinstance(value, cst.Call) else None


def _host_by_default(info: ClassInfo, device: cst.BaseExpression) -> bool:
    if not isinstance(device, cst.Name) or info.init is None:
        return False
    params = info.init.params
    for param in (*params.params, *params.kwonly_params):
        if param.name.value == device.value and param.default is not None:
            default = param.default
            return (isinstance(default, cst.Name) and default.value == "None") or (
                isinstance(default, cst.SimpleString) and default.evaluated_value == "cpu"
            )
    return False
