"""Parameters of a module class: which are created frozen (`requires_grad=False`), which code
unfreezes them again, and which attribute paths name a parameter.

Unfreezing is judged conservatively, because a frozen parameter that something unfreezes is a
real parameter: `<anything>.w.requires_grad = <not False>` or `<anything>.w.requires_grad_(...)`
anywhere in the file unfreezes `w`; `self.requires_grad_()`, a loop such as
`for p in self.parameters(): p.requires_grad = True` (also `named_parameters()`, `modules()`,
`named_modules()`, `_parameters`, nested loops over those) or a dynamic receiver
(`getattr(self, name)`, `params[name]`) unfreezes every parameter of the class it sits in, and
of that class's same-file bases and subclasses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional, Union

import libcst as cst

from bufferlint.analysis import torch_api
from bufferlint.analysis.classes import AttrAssignment, ClassInfo
from bufferlint.analysis.flow import body_statements, is_self_attr, self_name
from bufferlint.analysis.intent import init_time_methods, method_reads
from bufferlint.analysis.grad import argument, argument_keyword, is_literal, requires_grad_flag
from bufferlint.analysis.tensors import TensorInference
from bufferlint.analysis.walk import is_in_place_name, is_name, nodes_of, visit_in_order

# Methods of a module whose results reach its own parameters (`children()` does not: it yields
# submodules, whose parameters are not the class's own).
_PARAMETER_SOURCES = frozenset("parameters named_parameters modules named_modules _parameters".split())
_SUBMODULE_PARAMETERS = frozenset(("weight", "bias"))
_PLAIN_MODULE = frozenset(("torch.nn.Module", "torch.nn.modules.module.Module"))


@dataclass(frozen=True)
class FrozenParameter:
    """`self.<attr> = nn.Parameter(<data>, requires_grad=False)` (or `.requires_grad_(False)`)."""

    attr: str
    assignment: AttrAssignment
    data: Optional[cst.BaseExpression]  # None for `nn.Parameter(requires_grad=False)` without data
    helper: Optional[str] = None  # `self.<attr> = to_const(x)`: the file's function that builds it


def frozen_parameter_data(call: cst.BaseExpression, inference: TensorInference) -> Union[cst.BaseExpression, None, bool]:
    """For a frozen `nn.Parameter(...)` expression: its data argument (None when absent);
    False when the expression is not a frozen parameter."""
    if not isinstance(call, cst.Call):
        return False
    flag = requires_grad_flag(call)
    if flag is not None:
        # `nn.Parameter(t).requires_grad_(False)`: the last word on requires_grad wins.
        inner = call.func.value  # type: ignore[attr-defined]
        if not is_literal(flag, "False") or not is_parameter_call(inner, inference):
            return False
        return argument(inner, "data", 0)
    if not is_parameter_call(call, inference) or not is_literal(argument(call, "requires_grad", 1), "False"):
        return False
    return argument(call, "data", 0)


def is_parameter_call(node: cst.BaseExpression, inference: TensorInference) -> bool:
    """`nn.Parameter(...)` (or another torch Parameter class), as the file's imports qualify it."""
    return isinstance(node, cst.Call) and inference.qualify(node.func) in torch_api.PARAMETER_CLASSES


def frozen_parameters(
    info: ClassInfo, inference: TensorInference, function: Callable[[str], Optional[cst.FunctionDef]] = lambda name: None
) -> list[FrozenParameter]:
    """The class's frozen parameters; `function` looks up the file's top-level functions, so that
    one built by a helper of the file (`self.betas = to_const(betas)`, the helper returning
    `nn.Parameter(x, requires_grad=False)`) counts too."""
    found = []
    for assignment in info.assignments:
        value = assignment.value
        if not isinstance(value, cst.Call) or assignment.augmented:
            continue
        data = frozen_parameter_data(value, inference)
        if data is False and _frozen_next(assignment, inference):
            data = argument(value, "data", 0)  # `self.w = nn.Parameter(t)`, then `self.w.requires_grad = False`
        if data is not False:
            found.append(FrozenParameter(assignment.attr, assignment, data if isinstance(data, cst.BaseExpression) else None))
        elif isinstance(value.func, cst.Name):
            helper = function(value.func.value)
            if helper is not None and returns_frozen_parameter(helper, inference):
                found.append(FrozenParameter(assignment.attr, assignment, None, helper.name.value))
    return found


def _frozen_next(assignment: AttrAssignment, inference: TensorInference) -> bool:
    """`self.w = nn.Parameter(t)` in a method's own body (not under a branch or loop), and a later
    statement of that body turns it off: `self.w.requires_grad = False` (or
    `self.w.requires_grad_(False)`), with no other assignment of `self.w` between. A freeze under
    a test (`if not bias: self.bias.requires_grad = False`) leaves a configuration that trains it."""
    value = assignment.value
    me = assignment.scope.self_name
    if assignment.site.nested or me is None or not is_parameter_call(value, inference):  # type: ignore[arg-type]
        return False
    if argument(value, "requires_grad", 1) is not None:  # type: ignore[arg-type]
        return False
    body = body_statements(assignment.method.body)
    for statement in body[assignment.site.top_index + 1:]:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if _turns_off(small, me, assignment.attr):
                return True
            if isinstance(small, cst.Assign) and any(is_self_attr(t.target, me, assignment.attr) for t in small.targets):
                return False
    return False


def _turns_off(small: cst.BaseSmallStatement, me: str, attr: str) -> bool:
    """`self.<attr>.requires_grad = False` or `self.<attr>.requires_grad_(False)`."""
    node = small.value if isinstance(small, cst.Expr) else small
    receiver = frozen_receiver(node)
    return receiver is not None and is_self_attr(receiver, me, attr)


def frozen_receiver(node: cst.CSTNode) -> Optional[cst.BaseExpression]:
    """`r` of `r.requires_grad = False` or `r.requires_grad_(False)`."""
    if isinstance(node, cst.Assign) and len(node.targets) == 1 and is_name(node.value, "False"):
        target = node.targets[0].target
        if isinstance(target, cst.Attribute) and target.attr.value == "requires_grad":
            return target.value
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "requires_grad_":
        if len(node.args) == 1 and is_name(node.args[0].value, "False"):
            return node.func.value
    return None


def returns_frozen_parameter(func: cst.FunctionDef, inference: TensorInference) -> bool:
    """Every return of `func` gives a frozen nn.Parameter: `return nn.Parameter(x, requires_grad=False)`,
    or a name whose last binding before it is one. Only a straight-line body is read: simple
    statements that bind one name, a docstring, and returns; anything else (a branch, a loop, a
    call that may set `requires_grad` again) means no."""
    if not isinstance(func.body, cst.IndentedBlock):
        return False
    bound: dict[str, cst.BaseExpression] = {}
    returned = False
    for statement in func.body.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            return False
        for small in statement.body:
            if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
                bound[small.targets[0].target.value] = small.value
            elif isinstance(small, cst.Return):
                value = small.value
                if isinstance(value, cst.Name):
                    value = bound.get(value.value)
                if value is None or frozen_parameter_data(value, inference) is False:
                    return False
                returned = True
            elif not (isinstance(small, cst.Expr) and isinstance(small.value, (cst.SimpleString, cst.ConcatenatedString))):
                return False
    return returned


# Element types of packed quantized weights (int4 values two to a byte, fp8 blocks).
_PACKED_TYPES = frozenset(
    f"torch.{t}" for t in "int8 uint8 int16 int32 int64 int4 uint4 long int short float8_e4m3fn float8_e5m2".split()
)


def quantized_slot(frozen: list[FrozenParameter], inference: TensorInference) -> Optional[FrozenParameter]:
    """A frozen parameter left uninitialised with a packed (integer or fp8) type:
    `nn.Parameter(torch.empty(n, k // 2, dtype=torch.int8), requires_grad=False)`. A class holding
    one is a quantized layer: its frozen parameters are the weights and scales a loader fills by
    name, not constants of the module."""
    for parameter in frozen:
        data = parameter.data
        if not isinstance(data, cst.Call) or inference.qualify(data.func) != "torch.empty":
            continue
        dtype = argument_keyword(data, "dtype")
        if dtype is not None and inference.qualify(dtype) in _PACKED_TYPES:
            return parameter
    return None


def parameter_reference(info: ClassInfo, node: cst.BaseExpression, owner: Optional[str]) -> Optional[str]:
    """`self.w` (w a parameter of the class) or `self.lin.weight` (lin a submodule): its name."""
    if owner is None or not isinstance(node, cst.Attribute):
        return None
    base = node.value
    if isinstance(base, cst.Name) and base.value == owner and node.attr.value in info.parameters:
        return f"the nn.Parameter `{owner}.{node.attr.value}`"
    if (
        node.attr.value in _SUBMODULE_PARAMETERS
        and isinstance(base, cst.Attribute)
        and is_name(base.value, owner)
        and base.attr.value in info.submodules
    ):
        return f"the nn.Parameter `{owner}.{base.attr.value}.{node.attr.value}`"
    return None


@dataclass
class Unfreezing:
    """What the code of one file unfreezes."""

    names: set[str] = field(default_factory=set)  # attributes unfrozen by name, anywhere
    everything_in: set[int] = field(default_factory=set)  # ids of ClassDefs that unfreeze all their parameters

    def unfreezes(self, info: ClassInfo, attr: str, related: list[ClassInfo]) -> bool:
        if attr in self.names:
            return True
        return any(id(c.node) in self.everything_in for c in (info, *related))


def presence_only(info: ClassInfo, attr: str, related: list[ClassInfo]) -> bool:
    """A frozen parameter that nothing in its class reads, and that is the only parameter and the
    class holds no submodule: its one effect is that `parameters()` is not empty, which code
    reading the module's device or dtype from `next(self.parameters())` relies on. As a buffer it
    would leave `parameters()` empty and that code raising StopIteration."""
    owners = (info, *info.ancestors())
    if not all(_bases_known(c) for c in owners) or any(c.parameters - {attr} or c.submodules for c in owners):
        return False
    return unread(info, attr, related)


def unread(info: ClassInfo, attr: str, related: list[ClassInfo]) -> bool:
    """No method of the class, its same-file bases or subclasses reads `self.<attr>`."""
    return not any(attr in method_reads(c).readers for c in (info, *related))


def _bases_known(info: ClassInfo) -> bool:
    """Every base is nn.Module itself or a class of this file (whose parameters are known)."""
    known = {b.name for b in info.bases_info}
    return all(q in _PLAIN_MODULE or n in known for n, q in zip(info.base_names, info.qualified_bases))


def related_classes(info: ClassInfo, all_classes: list[ClassInfo]) -> list[ClassInfo]:
    """Same-file bases and subclasses: code in them runs on the same instances."""
    bases = list(info.ancestors())
    subclasses = [c for c in all_classes if any(a is info for a in c.ancestors())]
    return bases + subclasses


def find_unfreezing(module: cst.Module) -> Unfreezing:
    collector = _UnfreezeCollector()
    visit_in_order(module, collector)
    return collector.result


class _UnfreezeCollector(cst.CSTVisitor):
    def __init__(self) -> None:
        self.result = Unfreezing()
        self.classes: list[cst.ClassDef] = []
        self.self_names: list[Optional[str]] = []
        # Per function: names bound to the module's own parameters or modules (loop targets, locals).
        self.sources: list[set[str]] = [set()]

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.classes.append(node)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.classes.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.self_names.append(self_name(node) if self.classes else None)
        self.sources.append(set())

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.self_names.pop()
        self.sources.pop()

    def visit_For(self, node: cst.For) -> None:
        self._bind(node.target, node.iter)

    def visit_ListComp(self, node: cst.ListComp) -> None:
        self._bind_comprehension(node.for_in)

    def visit_SetComp(self, node: cst.SetComp) -> None:
        self._bind_comprehension(node.for_in)

    def visit_DictComp(self, node: cst.DictComp) -> None:
        self._bind_comprehension(node.for_in)

    def visit_GeneratorExp(self, node: cst.GeneratorExp) -> None:
        self._bind_comprehension(node.for_in)

    def _bind_comprehension(self, for_in: Optional[cst.CompFor]) -> None:
        # The element is visited before its `for` clauses: bind their targets first.
        while for_in is not None:
            self._bind(for_in.target, for_in.iter)
            for_in = for_in.inner_for_in

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind(target.target, node.value)
            if isinstance(target.target, cst.Attribute) and target.target.attr.value == "requires_grad":
                if not is_literal(node.value, "False"):
                    self._unfrozen(target.target.value)

    def visit_Call(self, node: cst.Call) -> None:
        flag = requires_grad_flag(node)
        if flag is not None and not is_literal(flag, "False"):
            self._unfrozen(node.func.value)  # type: ignore[attr-defined]

    @property
    def _owner(self) -> Optional[str]:
        return self.self_names[-1] if self.self_names else None

    def _bind(self, target: cst.BaseExpression, source: cst.BaseExpression) -> None:
        if self._reaches_parameters(source):
            for name in nodes_of(target, cst.Name):
                self.sources[-1].add(name.value)

    def _reaches_parameters(self, node: cst.BaseExpression) -> bool:
        """`self.parameters()`, `m.named_parameters()` (m a source), `list(params)`..."""
        owners = set(self.sources[-1]) | ({self._owner} if self._owner else set())
        for attr in nodes_of(node, cst.Attribute):
            if attr.attr.value in _PARAMETER_SOURCES and isinstance(attr.value, cst.Name) and attr.value.value in owners:
                return True
        return any(n.value in self.sources[-1] for n in nodes_of(node, cst.Name))

    def _unfrozen(self, receiver: cst.BaseExpression) -> None:
        if isinstance(receiver, cst.Attribute):
            self.result.names.add(receiver.attr.value)
        elif isinstance(receiver, cst.Subscript) and _string_index(receiver) is not None:
            self.result.names.add(_string_index(receiver) or "")
        elif self.classes and self._reaches_module(receiver):
            self.result.everything_in.add(id(self.classes[-1]))

    def _reaches_module(self, receiver: cst.BaseExpression) -> bool:
        """The module itself, one of its parameters bound by a loop, or a dynamic lookup on it."""
        owner = self._owner
        if isinstance(receiver, cst.Name):
            return receiver.value == owner or receiver.value in self.sources[-1]
        if isinstance(receiver, cst.Call):  # getattr(self, name)
            return is_name(receiver.func, "getattr") and bool(receiver.args) and (
                is_name(receiver.args[0].value, owner or "") or self._reaches_parameters(receiver.args[0].value)
            )
        if isinstance(receiver, cst.Subscript):  # params[name], self._parameters[key]
            return self._reaches_parameters(receiver.value) or self._reaches_module(receiver.value)
        return False


def _string_index(node: cst.Subscript) -> Optional[str]:
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return None
    value = node.slice[0].slice.value
    if isinstance(value, cst.SimpleString) and isinstance(value.evaluated_value, str):
        return value.evaluated_value
    return None


def updated_after_construction(info: ClassInfo, attr: str) -> Optional[str]:
    """The method that writes into `self.<attr>` in place after construction (`self.m.data =
    v`, `self.m.data.copy_(v)`, `self.m.mul_(b)`, `self.m[k] = v`): the frozen Parameter holds
    state the class keeps up to date (running statistics), not a constant."""
    init_time = init_time_methods(info)
    for name, func in info.methods.items():  # in the order the class defines them
        me = self_name(func)
        if name in init_time or me is None:
            continue
        for node in nodes_of(func.body, (cst.AssignTarget, cst.AugAssign, cst.Call)):
            if isinstance(node, cst.Call):
                written = node.func.value if isinstance(node.func, cst.Attribute) and is_in_place_name(node.func.attr.value) else None
            elif isinstance(node, cst.AssignTarget):  # an item or `.data`: `self.m = ...` replaces it instead
                written = node.target if not is_self_attr(node.target, me) else None
            else:
                written = node.target if isinstance(node, cst.AugAssign) else None
            if written is not None and _names_own(written, me, attr):
                return name
    return None


def _names_own(node: cst.BaseExpression, me: str, attr: str) -> bool:
    """`self.<attr>`, or an item or the `.data` of it."""
    while isinstance(node, cst.Subscript) or (isinstance(node, cst.Attribute) and node.attr.value == "data"):
        node = node.value
    return is_self_attr(node, me, attr)
