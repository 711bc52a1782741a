"""Per-class facts about nn.Module subclasses: what each attribute is bound to, and where."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Callable, Iterator, Optional, Sequence

import libcst as cst

from bufferlint.analysis import torch_api
from bufferlint.analysis.flow import StatementSite, iter_nodes, iter_sites, locals_always, self_name
from bufferlint.analysis.tensors import Scope, TensorInference, is_none, track_locals
from bufferlint.analysis.walk import nodes_of


class ValueKind(enum.Enum):
    TENSOR = "tensor"
    NONE = "None"
    PARAMETER = "nn.Parameter"
    BUFFER = "nn.Buffer"
    MODULE = "module"
    OTHER = "other"


@dataclass
class AttrAssignment:
    """`self.<attr> = <value>` (or annotated / augmented) somewhere in a method of the class."""

    attr: str
    site: StatementSite
    target: cst.Attribute
    value: Optional[cst.BaseExpression]
    method: cst.FunctionDef
    kind: ValueKind = ValueKind.OTHER
    augmented: bool = False
    before_super_init: bool = False
    scope: Scope = field(default_factory=Scope)

    @property
    def statement(self) -> cst.BaseSmallStatement:
        return self.site.small

    @property
    def in_init(self) -> bool:
        return self.method.name.value == "__init__"

    @property
    def other_targets(self) -> list[cst.BaseAssignTargetExpression]:
        """The other names its statement binds (`self.k = self.v = ...`): rewriting the statement
        into one registration would drop them."""
        small = self.statement
        return [t.target for t in small.targets if t.target is not self.target] if isinstance(small, cst.Assign) else []


@dataclass
class RegisterBufferCall:
    call: cst.Call
    name: Optional[str]  # None when the name is not a string literal
    site: StatementSite
    method: cst.FunctionDef
    # Without a literal: the names of the literal list a loop gives it (`for key in self._names:`)
    looped: Optional[tuple[str, ...]] = None


def _names_a_parameter(call: RegisterBufferCall) -> bool:
    """`self.register_buffer(name, ...)` with `name` a parameter of the method it sits in."""
    args = call.call.args
    params = call.method.params
    names = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
    return bool(args) and isinstance(args[0].value, cst.Name) and args[0].value.value in names


@dataclass
class ClassInfo:
    node: cst.ClassDef
    name: str
    base_names: list[str]
    qualified_bases: list[Optional[str]] = field(default_factory=list)  # each base through the file's imports
    is_module: bool = False
    is_script_module: bool = False
    is_layer_subclass: bool = False
    torch_registered: frozenset[str] = frozenset()  # buffers a torch.nn base registers (`_WeightedLoss`: weight)
    methods: dict[str, cst.FunctionDef] = field(default_factory=dict)
    properties: set[str] = field(default_factory=set)
    class_attrs: dict[str, list[cst.BaseExpression]] = field(default_factory=dict)
    assignments: list[AttrAssignment] = field(default_factory=list)
    register_buffer_calls: list[RegisterBufferCall] = field(default_factory=list)
    registered_parameters: set[str] = field(default_factory=set)
    deleted: set[str] = field(default_factory=set)
    super_init_index: Optional[int] = None
    super_init_line: Optional[cst.BaseStatement] = None
    bases_info: list["ClassInfo"] = field(default_factory=list)
    # `__init__` and the methods it calls on self (intent.init_time_methods), found once
    init_time: Optional[frozenset[str]] = field(default=None, repr=False, compare=False)
    # the methods that run after construction: the others and what they call (intent.later_methods)
    later: Optional[frozenset[str]] = field(default=None, repr=False, compare=False)
    reads: Optional[object] = field(default=None, repr=False, compare=False)  # intent.MethodReads, indexed once

    @property
    def init(self) -> Optional[cst.FunctionDef]:
        return self.methods.get("__init__")

    @property
    def registered_buffers(self) -> set[str]:
        names = {c.name for c in self.register_buffer_calls if c.name is not None}
        names.update(n for c in self.register_buffer_calls for n in c.looped or ())
        return names | {a.attr for a in self.assignments if a.kind is ValueKind.BUFFER}

    @property
    def registers_unnamed(self) -> bool:
        """Registers buffers under names that neither a literal nor a looped-over list spells out
        (other than the name a registering helper is given: `registers_via`)."""
        return any(c.name is None and c.looped is None and not _names_a_parameter(c) for c in self.register_buffer_calls)

    @property
    def registers_via(self) -> frozenset[str]:
        """Methods that register a buffer under the name they are given (`def register(self, name, t)`)."""
        return frozenset(c.method.name.value for c in self.register_buffer_calls if c.name is None and c.looped is None and _names_a_parameter(c))

    @property
    def parameters(self) -> set[str]:
        return self.registered_parameters | {a.attr for a in self.assignments if a.kind is ValueKind.PARAMETER}

    @property
    def submodules(self) -> set[str]:
        return {a.attr for a in self.assignments if a.kind is ValueKind.MODULE}

    def assignments_to(self, attr: str) -> list[AttrAssignment]:
        return [a for a in self.assignments if a.attr == attr]

    def ancestors(self) -> Iterator["ClassInfo"]:
        """Same-file base classes, nearest first."""
        seen: set[int] = set()
        stack = list(self.bases_info)
        while stack:
            info = stack.pop(0)
            if id(info) in seen:
                continue
            seen.add(id(info))
            yield info
            stack.extend(info.bases_info)

    def defines_register_buffer(self) -> bool:
        return any("register_buffer" in c.methods for c in (self, *self.ancestors()))

    def bound_names(self) -> set[str]:
        """Names bound in the class body itself (class attributes, methods, properties)."""
        return set(self.class_attrs) | set(self.methods) | self.properties


def is_base_init(node: cst.CSTNode) -> bool:
    """`super().__init__(...)`, `Base.__init__(self, ...)` or `pkg.Base.__init__(self, ...)`; not
    `self.__init__(**config)`, which runs this constructor again (an explicit base call passes the
    instance first, positionally)."""
    if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "__init__"):
        return False
    receiver = node.func.value
    if isinstance(receiver, cst.Call):
        return isinstance(receiver.func, cst.Name) and receiver.func.value == "super"
    first = node.args[0] if node.args else None
    return isinstance(receiver, (cst.Name, cst.Attribute)) and first is not None and first.keyword is None and not first.star


class ClassCollector:
    """Fills a ClassInfo from the class body, using the shared tensor inference."""

    def __init__(self, inference: TensorInference, is_module_call: "ModuleCallTest", registrations: bool = True) -> None:
        self.inference = inference
        self.is_module_call = is_module_call
        # False when the file's text names neither `register_buffer` nor `register_parameter`:
        # then no statement needs to be searched for such calls.
        self.registrations = registrations
        self._module_locals_of: dict[int, frozenset[str]] = {}

    def collect_body(self, info: ClassInfo) -> None:
        for stmt in info.node.body.body if isinstance(info.node.body, cst.IndentedBlock) else ():
            if isinstance(stmt, cst.FunctionDef):
                self._add_method(info, stmt)
            elif isinstance(stmt, cst.SimpleStatementLine):
                self._add_class_level(info, stmt)

    def _add_method(self, info: ClassInfo, func: cst.FunctionDef) -> None:
        decorators = {_decorator_name(d) for d in func.decorators}
        if "property" in decorators or any(d.endswith((".setter", ".getter", ".deleter")) for d in decorators):
            info.properties.add(func.name.value)
        if "cached_property" in decorators or "functools.cached_property" in decorators:
            info.properties.add(func.name.value)
        info.methods.setdefault(func.name.value, func)

    def _add_class_level(self, info: ClassInfo, line: cst.SimpleStatementLine) -> None:
        for small in line.body:
            if isinstance(small, cst.Assign):
                for target in small.targets:
                    if isinstance(target.target, cst.Name):
                        info.class_attrs.setdefault(target.target.value, []).append(small.value)
            elif isinstance(small, cst.AnnAssign) and small.value is not None and isinstance(small.target, cst.Name):
                info.class_attrs.setdefault(small.target.value, []).append(small.value)

    def collect_methods(
        self, info: ClassInfo, tensor_attrs: frozenset[str], tensor_methods: frozenset[str], again: bool = False
    ) -> None:
        """Scan every method body; `tensor_attrs` come from an earlier pass over the class.
        `again`: a second pass, which only re-classifies assignments (deletions and registrations
        do not depend on what the first pass learned)."""
        info.assignments.clear()
        if not again:
            info.register_buffer_calls.clear()
            info.registered_parameters.clear()
            info.deleted.clear()
        for func in _all_methods(info.node):
            self._scan_method(info, func, tensor_attrs, tensor_methods, again)

    def _scan_method(
        self, info: ClassInfo, func: cst.FunctionDef, tensor_attrs: frozenset[str], tensor_methods: frozenset[str], again: bool
    ) -> None:
        scope = Scope(self_name(func), tensor_params(func, self.inference), tensor_attrs, tensor_methods)
        if scope.self_name is None:
            return
        is_init = func.name.value == "__init__"
        if is_init:
            info.super_init_index, info.super_init_line = _super_init_position(func)
        for site in iter_sites(func):
            self._scan_site(info, func, site, scope, is_init, again)

    def _scan_site(
        self, info: ClassInfo, func: cst.FunctionDef, site: StatementSite, scope: Scope, is_init: bool, again: bool
    ) -> None:
        small = site.small
        before_super = is_init and (info.super_init_index is None or site.top_index < info.super_init_index)
        for target, value, augmented in _assignment_parts(small):
            attr = self.inference.is_self_attr(target, scope)
            if attr is not None and type(target) is cst.Attribute:
                assignment = AttrAssignment(attr, site, target, value, func, augmented=augmented,
                                            before_super_init=before_super, scope=scope.child())
                assignment.kind = self._kind(info, value, scope)
                if assignment.kind is ValueKind.OTHER and type(value) is cst.Name and value.value in self._module_locals(func):  # type: ignore[union-attr]
                    assignment.kind = ValueKind.MODULE  # `embs = nn.ParameterDict(); ...; self.embs = embs`
                info.assignments.append(assignment)
        track_locals(small, scope, self.inference)
        if again:
            return
        if type(small) is cst.Del:
            for deleted in _deleted_attrs(small.target, scope, self.inference):
                info.deleted.add(deleted)
        if not self.registrations:
            return
        for call in _calls_on_self(small, scope, REGISTRATIONS):
            name = _literal_string(call.args[0].value) if call.args else None
            method = call.func.attr.value  # type: ignore[attr-defined]
            if method == "register_buffer":
                looped = _looped_names(info, site, call.args[0].value, scope.self_name) if call.args and name is None else None
                info.register_buffer_calls.append(RegisterBufferCall(call, name, site, func, looped))
            elif name is not None:
                info.registered_parameters.add(name)

    def _module_locals(self, func: cst.FunctionDef) -> frozenset[str]:
        """Locals of `func` every assignment of which builds a module (`embs = nn.ParameterDict()`)."""
        found = self._module_locals_of.get(id(func))
        if found is None:
            found = self._module_locals_of[id(func)] = locals_always(
                func, lambda value: isinstance(value, cst.Call) and self.classify(value, Scope()) is ValueKind.MODULE
            )
        return found

    def _kind(self, info: ClassInfo, value: Optional[cst.BaseExpression], scope: Scope) -> ValueKind:
        if value is None:
            return ValueKind.OTHER
        # `self.weight = self.W` with W an nn.Parameter: nn.Module registers the same parameter
        # under the second name too.
        alias = self.inference.is_self_attr(value, scope)
        if alias is not None and alias in info.parameters:
            return ValueKind.PARAMETER
        return self.classify(value, scope)

    def classify(self, value: cst.BaseExpression, scope: Scope) -> ValueKind:
        if is_none(value):
            return ValueKind.NONE
        if isinstance(value, cst.Call):
            returned = self._returned_argument(value)
            if returned is not None:
                kind = self.classify(returned, scope)
                if kind in (ValueKind.PARAMETER, ValueKind.BUFFER):
                    return kind
            qualified = self.inference.qualify(value.func)
            if qualified in torch_api.PARAMETER_CLASSES:
                return ValueKind.PARAMETER
            if qualified in torch_api.BUFFER_CLASSES:
                return ValueKind.BUFFER
            if self.is_module_call(value) or qualified in torch_api.PARAMETER_CONTAINERS:
                return ValueKind.MODULE
        if self.inference.is_tensor(value, scope):
            return ValueKind.TENSOR
        return ValueKind.OTHER

    def _returned_argument(self, call: cst.Call) -> Optional[cst.BaseExpression]:
        """What an in-place call hands back: `nn.init.xavier_uniform_(p)` returns `p`, and
        `p.normal_()` returns `p`, so `self.E = nn.init.xavier_uniform_(nn.Parameter(...))` stores
        the Parameter itself (a registered parameter, not a plain tensor)."""
        func = call.func
        qualified = self.inference.qualify(func)
        if qualified is not None and qualified.startswith("torch.nn.init.") and qualified.endswith("_"):
            first = call.args[0] if call.args else None
            return first.value if first is not None and first.keyword is None and not first.star else None
        if isinstance(func, cst.Attribute) and func.attr.value.endswith("_") and not func.attr.value.startswith("_"):
            return func.value  # a tensor method ending in `_` works in place and returns its receiver
        return None


REGISTRATIONS = ("register_buffer", "register_parameter")


def _looped_names(info: ClassInfo, site: StatementSite, name: cst.BaseExpression, me: Optional[str]) -> Optional[tuple[str, ...]]:
    """`for key in self._buffer_names: self.register_buffer(key, None)` over a literal list, written
    out or held by a class attribute: the names the registration takes."""
    if not isinstance(name, cst.Name):
        return None
    for loop in nodes_of(site.top, cst.For):
        if isinstance(loop.target, cst.Name) and loop.target.value == name.value:
            return _literal_names(info, loop.iter, me)
    return None


def _literal_names(info: ClassInfo, node: cst.BaseExpression, me: Optional[str]) -> Optional[tuple[str, ...]]:
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == me:
        held = info.class_attrs.get(node.attr.value, [])
        return _literal_names(info, held[0], None) if len(held) == 1 else None
    if isinstance(node, cst.Name):
        held = info.class_attrs.get(node.value, [])
        return _literal_names(info, held[0], None) if len(held) == 1 and held[0] is not node else None
    if isinstance(node, (cst.List, cst.Tuple)):
        names = [e.value.evaluated_value if isinstance(e.value, cst.SimpleString) else None for e in node.elements]
        return tuple(n for n in names if isinstance(n, str)) if all(isinstance(n, str) for n in names) else None
    return None


# Does this call construct an nn.Module?
ModuleCallTest = Callable[[cst.Call], bool]


def _all_methods(node: cst.ClassDef) -> Iterator[cst.FunctionDef]:
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
    for stmt in body:
        if isinstance(stmt, cst.FunctionDef):
            yield stmt


def _decorator_name(decorator: cst.Decorator) -> str:
    from bufferlint.analysis.names import dotted_name

    node = decorator.decorator
    if isinstance(node, cst.Call):
        node = node.func
    return dotted_name(node) or ""


def tensor_params(func: cst.FunctionDef, inference: TensorInference) -> set[str]:
    """Parameters annotated `torch.Tensor`, `Tensor` or `Optional[Tensor]`."""
    names: set[str] = set()
    params = func.params
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        if param.annotation is not None and _is_tensor_annotation(param.annotation.annotation, inference):
            names.add(param.name.value)
    return names


def _is_tensor_annotation(node: cst.BaseExpression, inference: TensorInference) -> bool:
    if isinstance(node, cst.Subscript) and len(node.slice) == 1:
        element = node.slice[0].slice
        if isinstance(element, cst.Index) and inference.qualify(node.value) in ("typing.Optional", None):
            return _is_tensor_annotation(element.value, inference)
        return False
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.BitOr):
        sides = (node.left, node.right)
        return any(_is_tensor_annotation(s, inference) for s in sides) and all(
            is_none(s) or _is_tensor_annotation(s, inference) for s in sides
        )
    if isinstance(node, cst.SimpleString):
        inner = node.evaluated_value
        return isinstance(inner, str) and inner in ("torch.Tensor", "Tensor")
    return inference.qualify(node) in ("torch.Tensor", "torch.FloatTensor", "torch.LongTensor", "torch.BoolTensor")


def _assignment_parts(
    small: cst.BaseSmallStatement,
) -> Iterator[tuple[cst.BaseExpression, Optional[cst.BaseExpression], bool]]:
    kind = type(small)  # exact types (no subclasses): ABCMeta's isinstance is slow on this hot path
    if kind is cst.Assign:
        for target in small.targets:  # type: ignore[attr-defined]
            yield target.target, small.value, False  # type: ignore[attr-defined]
    elif kind is cst.AnnAssign:
        yield small.target, small.value, False  # type: ignore[attr-defined]
    elif kind is cst.AugAssign:
        yield small.target, small.value, True  # type: ignore[attr-defined]


def _deleted_attrs(target: cst.BaseExpression, scope: Scope, inference: TensorInference) -> Iterator[str]:
    elements = target.elements if isinstance(target, (cst.Tuple, cst.List)) else ()
    for node in [e.value for e in elements] or [target]:
        attr = inference.is_self_attr(node, scope)
        if attr is not None:
            yield attr


def _calls_on_self(small: cst.CSTNode, scope: Scope, methods: tuple[str, ...]) -> Iterator[cst.Call]:
    if scope.self_name is None:
        return
    attribute, name = cst.Attribute, cst.Name  # exact types: ABCMeta's isinstance is slow here
    for node in nodes_of(small, cst.Call):
        func = node.func
        if type(func) is attribute and type(func.value) is name and func.value.value == scope.self_name and func.attr.value in methods:  # type: ignore[attr-defined]
            yield node


def _literal_string(node: cst.BaseExpression) -> Optional[str]:
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def top_statements(func: cst.FunctionDef) -> Sequence[cst.BaseStatement]:
    """The statements of an indented body (none for a one-line `def f(): ...`)."""
    return func.body.body if isinstance(func.body, cst.IndentedBlock) else ()


def never_initialised(info: ClassInfo) -> bool:
    """The class has an `__init__` and no method of it runs a base constructor, nor does
    `__init__` call a method on `self` or hand `self` to a function that might:
    `nn.Module.__init__` never runs, so `.to()` raises and
    `register_buffer` cannot work; whatever the class keeps, that is the bug to fix first."""
    init = info.init
    if init is None or info.super_init_index is not None:
        return False
    me = self_name(init)
    for func in info.methods.values():
        if any(is_base_init(node) for node in nodes_of(func, cst.Call)):
            return False
    for call in nodes_of(init, cst.Call):
        # `self._setup(n)` may be a base's method that runs the base constructor
        if isinstance(call.func, cst.Attribute) and isinstance(call.func.value, cst.Name) and call.func.value.value == me:
            return False
        if any(isinstance(arg.value, cst.Name) and arg.value.value == me for arg in call.args):
            return False
    return True


def base_constructor_lines(func: cst.FunctionDef) -> list[int]:
    """Indexes (in `top_statements`) of the statements of `__init__` that call a base's `__init__`."""
    return [index for index, stmt in enumerate(top_statements(func)) if any(is_base_init(node) for node in iter_nodes(stmt))]


def _super_init_position(func: cst.FunctionDef) -> tuple[Optional[int], Optional[cst.BaseStatement]]:
    """Index of the top-level statement of `__init__` that calls the base class's `__init__`."""
    body = func.body.body if isinstance(func.body, cst.IndentedBlock) else ()
    for index, stmt in enumerate(body):
        if any(is_base_init(node) for node in iter_nodes(stmt)):
            return index, stmt
    return None, None
