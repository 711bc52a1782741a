"""Tensor attributes that are plain on purpose: the class keeps them on the right device itself,
or they are per-call state rather than module state. Rules stay silent on these.

Each test answers for one attribute of one class and names its reason, so a rule can say why it
kept quiet (`bufferlint` prefers a miss to a false alarm on code it cannot prove wrong).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable, Iterable, Iterator, Optional, Sequence

import libcst as cst

from bufferlint.analysis.classes import AttrAssignment, ClassInfo, ValueKind
from bufferlint.analysis.flow import assignment_targets, child_nodes, is_self_attr, iter_nodes, iter_sites, self_name, stored_names
from bufferlint.analysis.dtypes import dtype_checked, dtype_pin
from bufferlint.analysis.grad import asks_for_grad
from bufferlint.analysis.moved_attrs import called_attributes
from bufferlint.analysis.names import dotted_name
from bufferlint.analysis.named_device import fixed_device_names, on_named_device
from bufferlint.analysis.optimizer_builds import OPTIMIZER_CLASSES
from bufferlint.analysis.tensors import Scope
from bufferlint.analysis.walk import callee_name, is_name, nodes_of

# Methods through which a class can move plain attributes with the module.
_MOVE_OVERRIDES = ("_apply", "to", "cuda", "cpu", "half", "float", "double", "type")
# Tensor attributes that tell where a tensor lives: comparing them is a device check.
_PLACEMENT_ATTRS = frozenset(("device", "is_cuda", "get_device", "dtype"))


class Family:
    """The module classes of one file, with what the tests below look up across all of them
    indexed once: asked per attribute, a scan of every class made a file of n classes cost n²."""

    def __init__(
        self, members: Sequence[ClassInfo] = (), module: Optional[cst.Module] = None,
        given_by_callers: Optional[Callable[[ClassInfo], frozenset[str]]] = None,
    ) -> None:
        self.members = tuple(members)
        self.module = module
        self._given_by_callers = given_by_callers
        self._named: dict[int, frozenset[str]] = {}

    def named_by_callers(self, info: ClassInfo) -> Callable[[], frozenset[str]]:
        """The `__init__` parameters every construction of `info` in the run gives, computed on
        first need (a proof over the file's calls and the project's)."""
        def named() -> frozenset[str]:
            if id(info) not in self._named:
                self._named[id(info)] = self._given_by_callers(info) if self._given_by_callers is not None else frozenset()
            return self._named[id(info)]
        return named

    @cached_property
    def fixed_devices(self) -> frozenset[str]:
        """Module-level names bound to a literal or automatic device (`DEVICE = "cuda:0"`)."""
        return fixed_device_names(self.module) if self.module is not None else frozenset()

    @cached_property
    def move_overrides(self) -> list[tuple[ClassInfo, str, cst.FunctionDef]]:
        """Each member's `_apply`/`to`/... overrides, in member order, then `_MOVE_OVERRIDES` order."""
        return [(owner, name, func) for owner in self.members for name in _MOVE_OVERRIDES if (func := owner.methods.get(name)) is not None]

    def subclasses(self, info: ClassInfo) -> list[ClassInfo]:
        """The members that have `info` among their ancestors (`in`: identity, else equality), in member order."""
        found = {position for position, ancestor in self._ancestors_by_name.get(info.name, ()) if ancestor is info or ancestor == info}
        return [self.members[position] for position in sorted(found)]

    @cached_property
    def _ancestors_by_name(self) -> dict[str, list[tuple[int, ClassInfo]]]:
        # Equal classes have equal names, so a class's name finds every candidate ancestor.
        index: dict[str, list[tuple[int, ClassInfo]]] = defaultdict(list)
        for position, member in enumerate(self.members):
            for ancestor in member.ancestors():
                index[ancestor.name].append((position, ancestor))
        return index


def deliberate_reason(info: ClassInfo, attr: str, defining: Optional[AttrAssignment], family: Optional[Family] = None) -> Optional[str]:
    """Why `self.<attr>` is a plain tensor on purpose, or None when nothing says so.

    `defining`: the assignment that gives it its tensor (None when none is known to);
    `family`: module classes of the same file; subclasses among them count as readers."""
    family = family or Family()
    for test in _TESTS:
        reason = test(info, attr, defining, family)
        if reason is not None:
            return reason
    return None


def placed_by_design(info: ClassInfo, attr: str, defining: Optional[AttrAssignment], family: Family) -> Optional[str]:
    """Why the class places `self.<attr>` itself and never moves it (its `self.device` design, or a
    device the program names), or None: a module it hands the tensor to holds it there too."""
    return _own_device(info, attr, defining, family) or _caller_placed(info, attr, defining, family)


def init_time_methods(info: ClassInfo) -> frozenset[str]:
    """`__init__` and the methods it calls on self (transitively): they run while constructing."""
    if info.init_time is None:
        info.init_time = frozenset(_init_time_methods(info))
    return info.init_time


def construction_methods(info: ClassInfo) -> Iterator[tuple[cst.FunctionDef, str]]:
    """The methods that run while constructing (`init_time_methods`), each with its self name."""
    for name in init_time_methods(info):
        func = info.methods.get(name)
        me = self_name(func) if func is not None else None
        if func is not None and me is not None:
            yield func, me


def later_methods(info: ClassInfo) -> frozenset[str]:
    """The methods that run after construction: every method `__init__` does not reach, and
    the methods they call on self (an `extend_pe` that `__init__` and `forward` both call)."""
    if info.later is None:
        info.later = frozenset(_reached(info, [m for m in info.methods if m not in init_time_methods(info)]))
    return info.later


def reached_from(info: ClassInfo, names: Iterable[str]) -> frozenset[str]:
    """The methods `names` and those they call on self, transitively."""
    return frozenset(_reached(info, list(names)))


def _init_time_methods(info: ClassInfo) -> set[str]:
    return _reached(info, ["__init__"])


def _reached(info: ClassInfo, pending: list[str]) -> set[str]:
    found: set[str] = set()
    while pending:
        name = pending.pop()
        func = info.methods.get(name)
        if func is None or name in found:
            continue
        found.add(name)
        me = self_name(func)
        pending.extend(called for called in self_calls(func, me) if called in info.methods)
    return found


def self_calls(func: cst.FunctionDef, me: Optional[str]) -> Iterator[str]:
    """The names of the methods `func` calls on its own instance (`self.<name>(...)`)."""
    if me is None:
        return
    for node in nodes_of(func.body, cst.Call):
        if is_self_attr(node.func, me):
            yield node.func.attr.value  # type: ignore[attr-defined]


def self_rebinding(attr: str, defining: AttrAssignment) -> bool:
    """`self.k = self.k.to(x.device)` outside `__init__` is where the tensor is moved, not where
    it comes from: BUF002 reports the move; the attribute's origin is elsewhere or unknown."""
    return defining.value is not None and not defining.in_init and _mentions_self_attr(defining.value, defining.scope.self_name, attr)


def _mentions_self_attr(node: cst.CSTNode, me: Optional[str], attr: str) -> bool:
    return any(is_self_attr(n, me, attr) for n in iter_nodes(node) if isinstance(n, cst.Attribute))


@dataclass
class MethodReads:
    """What the methods of one class read of `self`, indexed once (the tests below ask per
    attribute; scanning every method per attribute made them the costliest part of a check)."""

    hasattr_checks: dict[str, str] = field(default_factory=dict)  # attr -> method with `hasattr(self, "attr")`
    placement_checks: dict[str, str] = field(default_factory=dict)  # attr -> method comparing its device/dtype
    readers: dict[str, list[str]] = field(default_factory=dict)  # attr -> methods reading `self.attr`


def method_reads(info: ClassInfo) -> MethodReads:
    if info.reads is None:
        info.reads = _index_reads(info)
    return info.reads  # type: ignore[return-value]


def _index_reads(info: ClassInfo) -> MethodReads:
    reads = MethodReads()
    targets = {id(a.target) for a in info.assignments}
    for name, func in info.methods.items():
        me = self_name(func)
        for node in nodes_of(func.body, (cst.Call, cst.Comparison)):
            if isinstance(node, cst.Call):
                if isinstance(node.func, cst.Name) and node.func.value == "hasattr" and len(node.args) == 2:
                    for string in nodes_of(node.args[1], cst.SimpleString):
                        value = string.evaluated_value  # type: ignore[attr-defined]
                        if isinstance(value, str):
                            reads.hasattr_checks.setdefault(value, name)
            elif isinstance(node, cst.Comparison):
                for attr in _placements_compared(node, me):
                    reads.placement_checks.setdefault(attr, name)
        read_parts: list[cst.CSTNode] = [site.small for site in iter_sites(func) if not isinstance(site.small, cst.Del)]
        read_parts.extend(_header_parts(func))
        for part in read_parts:
            for node in nodes_of(part, cst.Attribute):
                if id(node) not in targets and is_self_attr(node, me):
                    methods = reads.readers.setdefault(node.attr.value, [])  # type: ignore[attr-defined]
                    if name not in methods:
                        methods.append(name)
    return reads


def _header_parts(func: cst.FunctionDef) -> Iterator[cst.CSTNode]:
    """What the headers of compound statements read (`for f in self.freqs:`, `if self.k > 0:`,
    `with self.lock:`): simple statements do not hold them."""
    for node in nodes_of(func.body, (cst.For, cst.If, cst.While, cst.With)):
        if isinstance(node, cst.For):
            yield node.iter
        elif isinstance(node, (cst.If, cst.While)):
            yield node.test
        elif isinstance(node, cst.With):
            yield from (item.item for item in node.items)


def _hasattr_cache(info: ClassInfo, attr: str, defining: Optional[AttrAssignment], family: Family) -> Optional[str]:
    """`if not hasattr(self, "k"): self.k = ...`: a registered buffer would make hasattr() true
    from the start, so the rewrite would break the cache; whatever it holds was built on demand."""
    method = method_reads(info).hasattr_checks.get(attr)
    return None if method is None else f"{method}() builds it on demand behind hasattr()"


def _moved_by_override(info: ClassInfo, attr: str, defining: Optional[AttrAssignment], family: Family) -> Optional[str]:
    return moved_by_override(info, attr, family)


def moved_by_override(info: ClassInfo, attr: str, family: Optional[Family] = None) -> Optional[str]:
    """Which `_apply`/`to`/... override moves `self.<attr>` with the module: one of the class (or
    its bases), or one of an owning class of the file that names this class and moves the
    attribute of its instance (`if isinstance(m, Detect): m.grid = list(map(fn, m.grid))`)."""
    for owner in (info, *info.ancestors()):
        for name in _MOVE_OVERRIDES:
            func = owner.methods.get(name)
            if func is None:
                continue
            me = self_name(func)
            generic = any(isinstance(n, cst.Name) and n.value in ("__dict__", "vars", "dir") for n in iter_nodes(func.body))
            mentioned = any(_mentions_self_attr(func.body, alias, attr) for alias in (me, *_super_results(func)))
            if generic or mentioned or _mentions_attr_string(func.body, attr):
                return f"{owner.name}.{name}() moves it with the module"
    for owner, name, func in family.move_overrides if family is not None else ():
        if owner is not info and _moves_instance_attr(func, info.name, attr):
            return f"{owner.name}.{name}() moves it with the module that owns it"
    return None


def _super_results(func: cst.FunctionDef) -> list[str]:
    """Names bound to what the base's move returns (`moved = super().to(*args)`): the module itself."""
    found: list[str] = []
    for assign in nodes_of(func.body, cst.Assign):
        value = assign.value  # type: ignore[attr-defined]
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and isinstance(value.func.value, cst.Call):
            inner = value.func.value.func
            if isinstance(inner, cst.Name) and inner.value == "super":
                found.extend(t.target.value for t in assign.targets if isinstance(t.target, cst.Name))  # type: ignore[attr-defined]
    return found


def _own_move_method(info: ClassInfo, attr: str, defining: Optional[AttrAssignment], family: Family) -> Optional[str]:
    """A method of its own, off the forward path, that moves it to the device it is given
    (`def to_device(self, device): self.edges = self.edges.to(device)`): the class places it itself."""
    forward_path: Optional[frozenset[str]] = None  # walked only for a method taking a device
    for owner in (info, *info.ancestors()):
        for name, func in owner.methods.items():
            devices = {p.name.value for p in func.params.params if "device" in p.name.value}
            me = self_name(func)
            if not devices or me is None or name == "__init__" or not _moves_to(func, me, attr, devices):
                continue
            if forward_path is None:
                forward_path = reached_from(info, [m for m in ("forward", "__call__") if m in info.methods])
            if name not in forward_path:
                return f"{owner.name}.{name}() moves it to the device it is given: the class places it itself"
    return None


def _moves_to(func: cst.FunctionDef, me: str, attr: str, devices: set[str]) -> bool:
    """`self.<attr> = self.<attr>.to(<device>)` (or `.cuda(<device>)`) with `<device>` among `devices`."""
    for site in iter_sites(func):
        small = site.small
        if not isinstance(small, cst.Assign) or not any(is_self_attr(t.target, me, attr) for t in small.targets):
            continue
        value = small.value
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in ("to", "cuda"):
            if is_self_attr(value.func.value, me, attr) and any(isinstance(a.value, cst.Name) and a.value.value in devices for a in value.args):
                return True
    return False


def _moves_instance_attr(func: cst.FunctionDef, class_name: str, attr: str) -> bool:
    """The override names `class_name` and assigns `<instance>.<attr>` of an object other than self."""
    me = self_name(func)
    nodes = list(iter_nodes(func.body))
    names_class = any(isinstance(n, cst.Name) and n.value == class_name for n in nodes)
    assigns = any(
        isinstance(n, cst.AssignTarget)
        and isinstance(n.target, cst.Attribute)
        and n.target.attr.value == attr
        and not (isinstance(n.target.value, cst.Name) and n.target.value.value == me)
        for n in nodes
    )
    return names_class and assigns


def _mentions_attr_string(node: cst.CSTNode, attr: str) -> bool:
    """`for name in ("a", "b"): setattr(self, name, fn(getattr(self, name)))`."""
    return any(
        isinstance(n, cst.SimpleString) and n.evaluated_value == attr for n in iter_nodes(node) if isinstance(n, cst.SimpleString)
    )


def _device_checked(info: ClassInfo, attr: str, defining: Optional[AttrAssignment], family: Family) -> Optional[str]:
    """A cache built outside construction that compares its own device (or dtype) with the input's
    rebuilds itself where needed. A tensor made in `__init__` behind such a guard is still a
    finding: the guard only exists to move it (BUF002)."""
    if _tensor_at_init(info, attr) and not _rebuilt_outside_init(info, attr):
        return None
    method = method_reads(info).placement_checks.get(attr)
    return None if method is None else f"{method}() re-checks its device"


def _rebuilt_outside_init(info: ClassInfo, attr: str) -> bool:
    """A method builds a new tensor for it (not just a moved copy of the old one)."""
    init_time = init_time_methods(info)
    return any(
        a.kind is ValueKind.TENSOR
        and a.value is not None
        and a.method.name.value not in init_time
        and not _mentions_self_attr(a.value, a.scope.self_name, attr)
        for a in info.assignments_to(attr)
    )


def _tensor_at_init(info: ClassInfo, attr: str) -> bool:
    init_time = init_time_methods(info)
    return any(a.kind is ValueKind.TENSOR and a.method.name.value in init_time for a in info.assignments_to(attr))


def _placements_compared(node: cst.Comparison, me: Optional[str]) -> Iterator[str]:
    """Attributes whose device or dtype the comparison reads (`self.k.device != x.device`)."""
    for inner in nodes_of(node, cst.Attribute):
        if inner.attr.value in _PLACEMENT_ATTRS and is_self_attr(inner.value, me):  # type: ignore[attr-defined]
            yield inner.value.attr.value  # type: ignore[attr-defined]


def _input_derived(info: ClassInfo, attr: str, defining: Optional[AttrAssignment], family: Family) -> Optional[str]:
    """Assigned, outside construction, from what a method was called with: it lives where the
    inputs live (activations kept for a hook, fitted statistics, a target set by the caller)."""
    init_time = init_time_methods(info)
    for assignment in info.assignments_to(attr):
        name = assignment.method.name.value
        if name in init_time or assignment.value is None:
            continue
        if _mentions_self_attr(assignment.value, assignment.scope.self_name, attr):
            continue  # `self.t = self.t.to(x.device)`: a move of the module's own tensor (BUF002)
        passed_through = isinstance(assignment.value, cst.Name)
        if assignment.kind is not ValueKind.TENSOR and not passed_through:
            continue  # a non-tensor from the arguments (`max(0.1, 1 / step)`) is a hazard, not intent
        inputs = _input_names(assignment.method)
        if set(data_names(assignment.value)) & inputs:
            return f"{name}() assigns it from its arguments"
        me = assignment.scope.self_name
        if any(_mentions_self_attr(assignment.value, me, other) for other in _input_attrs(assignment.method, inputs) - {attr}):
            return f"{name}() assigns it from its arguments"
    return None


def _input_attrs(func: cst.FunctionDef, tainted: set[str]) -> set[str]:
    """Attributes the method sets from its arguments (`tainted`: `_input_names(func)`), as in
    `self.wigner = rotation(rot_mat)`: what it then derives from them
    (`self.wigner_inv = self.wigner.transpose(1, 2)`) is input-derived too."""
    me = self_name(func)
    found: set[str] = set()
    for site in iter_sites(func):
        small = site.small
        value = getattr(small, "value", None)
        if not isinstance(small, (cst.Assign, cst.AnnAssign)) or value is None or not set(data_names(value)) & tainted:
            continue
        for target in assignment_targets(small):
            if is_self_attr(target, me):
                found.add(target.attr.value)  # type: ignore[attr-defined]
    return found


# Reading these of an input gives metadata, not data: `torch.arange(x.shape[1])` lives on the CPU.
_METADATA = frozenset(("dtype", "shape", "ndim", "size", "dim", "numel", "is_cuda", "layout"))


def data_names(root: cst.CSTNode) -> Iterator[str]:
    """Names whose data or device flows into an expression (`x`, `x.device`), not their metadata."""
    return _names_through(root, _METADATA, frozenset(), frozenset(("len", "isinstance", "type")))


def _names_through(root: cst.CSTNode, hidden_attrs: frozenset[str], hidden_keywords: frozenset[str], hidden_calls: frozenset[str]) -> Iterator[str]:
    """Names read in an expression, except through the attributes, keyword arguments and calls
    given: `x` in `x.shape` is hidden by "shape", in `f(dtype=x.dtype)` by "dtype", in `len(x)` by "len"."""
    stack: list[cst.CSTNode] = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name):
            yield node.value
        elif isinstance(node, cst.Attribute):
            if node.attr.value not in hidden_attrs:
                stack.append(node.value)
        elif isinstance(node, cst.Arg):
            if node.keyword is None or node.keyword.value not in hidden_keywords:
                stack.append(node.value)
        elif not (isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in hidden_calls):
            stack.extend(child_nodes(node))


def _input_names(func: cst.FunctionDef) -> set[str]:
    """Parameters (other than self) and the locals computed from them, in statement order."""
    params = func.params
    me = self_name(func)
    tainted = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params) if p.name.value != me}
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            tainted.add(star.name.value)
    attrs: set[str] = set()  # attributes of self set from them (`self.pred = net(x)`), read later
    for site in iter_sites(func):
        small = site.small
        grown = _grown_list(small)
        if grown is not None and set(data_names(grown[1])) & tainted:
            tainted.add(grown[0])  # `grids.append(warp(points[b]))`: a list gathered from them
            continue
        value = getattr(small, "value", None)
        if not isinstance(small, (cst.Assign, cst.AnnAssign, cst.AugAssign)) or value is None:
            continue
        reads_attr = me is not None and any(isinstance(n, cst.Attribute) and is_self_attr(n, me) and n.attr.value in attrs for n in iter_nodes(value))
        if set(data_names(value)) & tainted or reads_attr:
            for target in assignment_targets(small):
                tainted.update(stored_names(target))
                if isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name):
                    tainted.add(target.value.value)  # `counts[i] = (bins == i).sum()`: filled from them in place
                if me is not None and is_self_attr(target, me):
                    attrs.add(target.attr.value)  # type: ignore[attr-defined]
    return tainted


def _per_call_state(info: ClassInfo, attr: str, defining: Optional[AttrAssignment], family: Family) -> Optional[str]:
    """Never a tensor while constructing, and (re)built by a method every time it runs (a branch
    on a setting counts; a guard on the attribute itself makes a lazy constant, unless what it
    caches is computed from the parameters or submodules: `self.delta = self.lora_b.weight @
    self.lora_a.weight` under `if self.delta is None`, cleared when training): a value of the
    current call (a sampled mask, a random count, a discretisation of the parameters), not state
    the module should carry."""
    if _tensor_at_init(info, attr):
        return None
    tensors = [a for a in info.assignments_to(attr) if a.kind is ValueKind.TENSOR and not a.augmented]
    state = _module_state(info)
    placed = [
        a for a in tensors
        if a.value is not None and _placed(a, state)
        and not (a.site.nested and _guarded_by_itself(a) and not (_reads_trained_state(a, info) and _cleared_later(info, attr)))
        and not _mentions_self_attr(a.value, a.scope.self_name, attr)  # `self.k = torch.as_tensor(self.k, device=...)`: a move
    ]
    if placed:
        return f"{placed[0].method.name.value}() rebuilds it on every call where the module's tensors live"
    return None


def _cleared_later(info: ClassInfo, attr: str) -> bool:
    """A method that runs after construction sets `self.<attr> = None`: the cache is dropped
    (when training, when the weights change) and rebuilt from the parameters where they are."""
    init_time = init_time_methods(info)
    return any(a.kind is ValueKind.NONE and a.method.name.value not in init_time for a in info.assignments_to(attr))


def _reads_trained_state(assignment: AttrAssignment, info: ClassInfo) -> bool:
    """The value reads a parameter or a submodule, itself or through a method of the class that does."""
    me, trained = assignment.scope.self_name, info.parameters | info.submodules
    value = assignment.value
    assert value is not None
    if _reads_state(value, me, frozenset(trained)):
        return True
    for call in nodes_of(value, cst.Call):
        helper = info.methods.get(call.func.attr.value) if is_self_attr(call.func, me) else None  # type: ignore[attr-defined]
        if helper is not None and _reads_state(helper.body, self_name(helper), frozenset(trained)):
            return True
    return False


def _optimisation_variable(info: ClassInfo, attr: str, defining: Optional[AttrAssignment], family: Family) -> Optional[str]:
    """Only built after construction, asking for gradients each time, and handed to an optimizer
    there (`self.lam = torch.tensor(1.0, requires_grad=True)`, `torch.optim.Adam([self.lam])`):
    a variable of the optimisation that method runs, made afresh for each run, not module state."""
    tensors = [a for a in info.assignments_to(attr) if a.kind is ValueKind.TENSOR and not a.augmented]
    init_time = init_time_methods(info)
    if not tensors or any(
        a.value is None or a.method.name.value in init_time or not asks_for_grad(a.value)
        or not _optimised_in(a.method, a.scope.self_name, attr) for a in tensors
    ):
        return None
    return f"{tensors[0].method.name.value}() builds it asking for gradients and hands it to an optimizer: a variable of the optimisation it runs"


def _optimised_in(func: cst.FunctionDef, me: Optional[str], attr: str) -> bool:
    """`func` hands `self.<attr>` to an optimizer (`torch.optim.Adam([self.lam], ...)`)."""
    for call in nodes_of(func.body, cst.Call):
        name = dotted_name(call.func) or ""
        optimizer = name.startswith(("torch.optim.", "optim.")) or name.rsplit(".", 1)[-1] in OPTIMIZER_CLASSES
        if optimizer and any(_mentions_self_attr(arg.value, me, attr) for arg in call.args):
            return True
    return False


def _lazy_on_own_device(info: ClassInfo, attr: str, defining: Optional[AttrAssignment], family: Family) -> Optional[str]:
    """Built once, on first use, straight onto the device of the module's own tensors
    (`if self.idx is None: self.idx = torch.tensor(..., device=self.vars.device)`): there is no
    host copy to move, and the first call happens where the module already lives."""
    if _tensor_at_init(info, attr):
        return None
    built = [
        a for a in info.assignments_to(attr)
        if a.kind is ValueKind.TENSOR and not a.augmented and a.value is not None
        and not _mentions_self_attr(a.value, a.scope.self_name, attr)
    ]
    if not built or not all(a.site.nested and _guarded_by_itself(a) and _on_own_device(a) for a in built):
        return None
    return f"{built[0].method.name.value}() builds it once, on the device of the module's own tensors"


def _on_own_device(assignment: AttrAssignment) -> bool:
    """`device=self.<tensor>.device` in the value, or `torch.zeros_like(self.<tensor>.data)`:
    made where the module's own tensor lives."""
    scope = assignment.scope
    value = assignment.value
    if isinstance(value, cst.Call) and value.args and isinstance(value.func, cst.Attribute) and value.func.attr.value.endswith("_like"):
        source = value.args[0].value
        while isinstance(source, cst.Attribute) and source.attr.value == "data":
            source = source.value
        if is_self_attr(source, scope.self_name) and source.attr.value in scope.tensor_attrs:  # type: ignore[attr-defined]
            return True
    for arg in nodes_of(assignment.value, cst.Arg):  # type: ignore[arg-type]
        device = arg.value
        if arg.keyword is not None and arg.keyword.value == "device" and isinstance(device, cst.Attribute) and device.attr.value == "device":
            holder = device.value
            if is_self_attr(holder, scope.self_name) and holder.attr.value in scope.tensor_attrs:  # type: ignore[attr-defined]
                return True
    return False


def _guarded_by_itself(assignment: AttrAssignment) -> bool:
    """Inside a test of the attribute itself (`if self.k is None:`) or of `hasattr(self, ...)`."""
    me, attr, line = assignment.scope.self_name, assignment.attr, assignment.site.line
    for node in iter_nodes(assignment.site.top):
        if isinstance(node, (cst.If, cst.While)) and (
            _mentions_self_attr(node.test, me, attr) or any(_asks_self(c, me) for c in nodes_of(node.test, cst.Call))
        ) and any(n is line for n in iter_nodes(node)):
            return True
    return False


def _asks_self(call: cst.Call, me: Optional[str]) -> bool:
    """`hasattr(self, ...)`: a test of what the instance holds (not of another object)."""
    return is_name(call.func, "hasattr") and bool(call.args) and me is not None and is_name(call.args[0].value, me)


def _module_state(info: ClassInfo) -> frozenset[str]:
    """Attributes holding the module's tensors as the class's last reading knows them (tensors,
    parameters, buffers) and its submodules: what a value computed from them is placed with.
    (A scope's `tensor_attrs` is the first reading's, which misses tensors computed from others.)"""
    tensors = {a.attr for a in info.assignments if a.kind is ValueKind.TENSOR}
    return frozenset(tensors | info.parameters | info.registered_buffers | info.submodules | _called_like_modules(info))


def _called_like_modules(info: ClassInfo) -> set[str]:
    """Attributes built while constructing (by the class or a base of this file) by a call the
    analysis cannot type (a factory from a spec: `self.core = spec.core(config=...)`) that a
    method uses like a module (`self.core(q, k, v)`, `apply_module(self.core)(q)`): submodules
    in all but name, their state lives with the module."""
    built: set[str] = set()
    called: set[str] = set()
    for owner in (info, *info.ancestors()):
        init_time = init_time_methods(owner)
        built.update(
            a.attr for a in owner.assignments
            if a.kind is ValueKind.OTHER and a.method.name.value in init_time and isinstance(a.value, cst.Call)
        )
        called |= called_attributes(owner)
    return (built & called) - set(info.methods)


def _placed(assignment: AttrAssignment, state: frozenset[str] = frozenset()) -> bool:
    """Built with an explicit `device=`, from the module's own tensors or from what its
    submodules return (directly or through the locals the method computed from them first):
    already where it belongs."""
    value = assignment.value
    assert value is not None
    if _places(value, assignment.scope) or _reads_state(value, assignment.scope.self_name, state):
        return True
    derived = _state_locals(assignment, state)
    return bool(derived) and any(isinstance(node, cst.Name) and node.value in derived for node in iter_nodes(value))


def _places(value: cst.CSTNode, scope: Scope) -> bool:
    me = scope.self_name
    for node in iter_nodes(value):
        if isinstance(node, cst.Arg) and node.keyword is not None and node.keyword.value == "device":
            return True
        if isinstance(node, cst.Attribute) and is_self_attr(node, me) and node.attr.value in scope.tensor_attrs:
            return True
        if isinstance(node, cst.Call) and is_self_attr(node.func, me) and node.func.attr.value in scope.tensor_methods:  # type: ignore[attr-defined]
            return True
        if isinstance(node, cst.Call) and _moved_to_own_device(node, me):
            return True
    return False


def _moved_to_own_device(call: cst.Call, me: Optional[str]) -> bool:
    """`t.to(self.device)`: moved to where the module says it lives."""
    if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == "to" and call.args and me is not None):
        return False
    target = call.args[0].value
    return isinstance(target, cst.Attribute) and target.attr.value in DEVICE_ATTRS and is_name(target.value, me)


def _reads_state(value: cst.CSTNode, me: Optional[str], state: frozenset[str]) -> bool:
    """`self.a * self.b` or `self.agg(x)` with `a`, `b`, `agg` among `state`."""
    return me is not None and any(
        isinstance(node, cst.Attribute) and is_self_attr(node, me) and node.attr.value in state for node in iter_nodes(value)
    )


def _state_locals(assignment: AttrAssignment, state: frozenset[str] = frozenset()) -> set[str]:
    """Locals assigned, before `assignment`, from the module's own tensors, its submodules'
    weights (`[self.users.weight]`, `state`) or from such locals, and lists such locals are
    appended to."""
    derived: set[str] = set()
    for site in iter_sites(assignment.method):
        small = site.small
        if small is assignment.statement:
            break
        value = getattr(small, "value", None)
        grown = _grown_list(small)
        if grown is not None:  # `feats.append(f)` with `f` derived: the list holds state too
            if any(_from_state(arg.value, assignment.scope, state, derived) for arg in grown[1].args):
                derived.add(grown[0])
            continue
        if not isinstance(small, (cst.Assign, cst.AnnAssign)) or value is None:
            continue
        # `dt, A, B = self._get_params()`: what a method of the module hands back comes from its state
        from_method = isinstance(value, cst.Call) and is_self_attr(value.func, assignment.scope.self_name)
        if from_method or _from_state(value, assignment.scope, state, derived):
            for target in assignment_targets(small):
                derived.update(stored_names(target))
    return derived


def _from_state(value: cst.BaseExpression, scope: Scope, state: frozenset[str], derived: set[str]) -> bool:
    """Placed, read from the module's state, or computed from a local that is."""
    return (
        _places(value, scope) or _reads_state(value, scope.self_name, state)
        or any(isinstance(n, cst.Name) and n.value in derived for n in iter_nodes(value))
    )


def _grown_list(small: cst.BaseSmallStatement) -> Optional[tuple[str, cst.Call]]:
    """`feats.append(f)` (or `extend`/`insert`) as a statement: the list's name and the call."""
    call = small.value if isinstance(small, cst.Expr) else None
    if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and isinstance(call.func.value, cst.Name):
        if call.func.attr.value in ("append", "extend", "insert"):
            return call.func.value.value, call
    return None


def _tracing_only(info: ClassInfo, attr: str, defining: Optional[AttrAssignment], family: Family) -> Optional[str]:
    """Read after construction only under `if torch.jit.is_tracing():` (or `is_scripting()`,
    `torch.onnx.is_in_onnx_export()`): a table precomputed for export, which the tracer folds into
    the graph; a live module never reads it, so where `.to()` leaves it changes nothing."""
    if not _all_methods_visible(info):
        return None
    read = False
    for owner in (info, *info.ancestors(), *family.subclasses(info)):
        skipped = init_time_methods(owner)
        for name in method_reads(owner).readers.get(attr, ()):
            if name in skipped:
                continue
            func = owner.methods[name]
            reads, guarded = _reads_under_tracing(func, self_name(func), attr)
            if reads != guarded:
                return None
            read = read or reads > 0
    return "it is only read under a tracing check (`is_tracing()`): a table for export, which the tracer folds in" if read else None


_TRACING_CHECKS = ("is_tracing", "is_scripting", "is_in_onnx_export")


def _reads_under_tracing(func: cst.FunctionDef, me: Optional[str], attr: str) -> tuple[int, int]:
    """How many times `func` reads `self.<attr>`, and how many of those sit in the body of an
    `if` whose test calls a tracing check."""
    guarded: set[int] = set()
    for branch in nodes_of(func.body, cst.If):
        test = branch.test  # type: ignore[attr-defined]
        if any(callee_name(call) in _TRACING_CHECKS for call in nodes_of(test, cst.Call)):
            guarded.update(id(n) for n in nodes_of(branch.body, cst.Attribute))  # type: ignore[attr-defined]
    reads = [n for n in nodes_of(func.body, cst.Attribute) if is_self_attr(n, me, attr)]  # type: ignore[arg-type]
    return len(reads), sum(1 for n in reads if id(n) in guarded)


def _construction_only(info: ClassInfo, attr: str, defining: Optional[AttrAssignment], family: Family) -> Optional[str]:
    """Read while constructing (a size computed with torch) and never by forward or other methods."""
    if not _all_methods_visible(info):
        return None  # a base class defined elsewhere (a torch layer, another file) may read it
    read_at_init = False
    for owner in (info, *info.ancestors(), *family.subclasses(info)):
        owner_init = init_time_methods(owner)
        for method in method_reads(owner).readers.get(attr, ()):
            if method not in owner_init:
                return None
            read_at_init = True
    return "it is only read while constructing" if read_at_init else None


def _all_methods_visible(info: ClassInfo) -> bool:
    """Every base is `nn.Module` itself or a class of this file whose bases are visible too."""
    if info.is_layer_subclass:
        return False
    for owner in (info, *info.ancestors()):
        local = {a.name for a in owner.bases_info}
        if any(base not in local and base.rpartition(".")[2] != "Module" for base in owner.base_names):
            return False
    return True


def _placeholder(info: ClassInfo, attr: str, defining: Optional[AttrAssignment], family: Family) -> Optional[str]:
    """`self.cls_token = nn.Parameter(...)` in one configuration and `torch.tensor(0)` in the
    other: the tensor only stands in (for TorchScript) where the parameter is not used."""
    for assignment in info.assignments_to(attr):
        if assignment.kind not in (ValueKind.PARAMETER, ValueKind.MODULE, ValueKind.BUFFER) or assignment.value is None:
            continue
        if _mentions_self_attr(assignment.value, assignment.scope.self_name, attr):
            continue  # `self.t = nn.Parameter(self.t)`: the tensor itself, made trainable on demand
        return f"it stands in for the {assignment.kind.value} that {assignment.method.name.value}() assigns in other configurations"
    return None


def _shape_cache(info: ClassInfo, attr: str, defining: Optional[AttrAssignment], family: Family) -> Optional[str]:
    """Rebuilt after construction from the size of what a method was given (a growing causal
    mask, a rotary table regrown for the sequence length): a cache of the input's shape, not a
    constant of the module."""
    later = later_methods(info)
    for assignment in info.assignments_to(attr):
        name = assignment.method.name.value
        # Any kind but None: a table rebuilt by a helper the inference cannot type is still one.
        if name not in later or assignment.value is None or assignment.kind is ValueKind.NONE:
            continue
        if _mentions_self_attr(assignment.value, assignment.scope.self_name, attr):
            continue  # a move of its own tensor (BUF002)
        if set(_size_names(assignment.value)) & _shape_names(assignment.method):
            return f"{name}() rebuilds it for the size of its input: a cache of the input's shape, not a constant"
    return _unpacked_shape_cache(info, attr, later) or _rebuilt_through_helper(info, attr, later)


def _unpacked_shape_cache(info: ClassInfo, attr: str, later: frozenset[str]) -> Optional[str]:
    """`self.sin, self.cos = tables(n, d)` with `n` from the input's size: unpacking assigns no
    single value, so the assignments above do not hold it; the methods that name it are read."""
    for name in method_reads(info).readers.get(attr, ()):
        func = info.methods[name]
        if name not in later:
            continue
        me = self_name(func)
        for site in iter_sites(func):
            small = site.small
            if not isinstance(small, cst.Assign):
                continue
            unpacked = any(
                isinstance(t.target, (cst.Tuple, cst.List)) and any(is_self_attr(e.value, me, attr) for e in t.target.elements)
                for t in small.targets
            )
            if unpacked and set(_size_names(small.value)) & _shape_names(func):
                return f"{name}() rebuilds it for the size of its input: a cache of the input's shape, not a constant"
    return None


# Reading these of an input says where and how to build a tensor, not how big: not a size.
_PLACEMENT = frozenset(("dtype", "device", "is_cuda", "layout", "requires_grad"))


def _size_names(root: cst.CSTNode) -> Iterator[str]:
    """Names whose data or size flows into an expression (`x`, `x.shape[1]`, `x.size(0)`), not
    their dtype or device (`torch.arange(self.n, dtype=x.dtype)` is the same size for every x)."""
    return _names_through(root, _PLACEMENT, frozenset(("dtype", "device")), frozenset())


def _shape_names(func: cst.FunctionDef) -> set[str]:
    """Parameters (other than self) and the locals computed from their data or size (`n =
    x.size(1)`), also through loops over them and lists grown from them (`for i in range(b):
    ids.extend([i] * h)`), and the attributes of self set from them (`self.batch = x.size(0)`,
    named `self.batch`)."""
    params = func.params
    me = self_name(func)
    tainted = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params) if p.name.value != me}
    loops = list(nodes_of(func.body, cst.For))
    while True:  # a loop may taint what an earlier statement of its body grows: until nothing changes
        before = len(tainted)
        for loop in loops:
            if set(_size_names(loop.iter)) & tainted:
                tainted.update(stored_names(loop.target))
        for site in iter_sites(func):
            _taint_site(site.small, tainted, me)
        if len(tainted) == before:
            return tainted


def _taint_site(small: cst.BaseSmallStatement, tainted: set[str], me: Optional[str]) -> None:
    grown = _grown_list(small)
    if grown is not None:
        if any(set(_size_names(arg.value)) & tainted for arg in grown[1].args):
            tainted.add(grown[0])
        return
    value = getattr(small, "value", None)
    if isinstance(small, (cst.Assign, cst.AnnAssign, cst.AugAssign)) and value is not None and set(_size_names(value)) & tainted:
        for target in assignment_targets(small):
            tainted.update(stored_names(target))
            parts = [e.value for e in target.elements] if isinstance(target, (cst.Tuple, cst.List)) else [target]
            tainted.update(f"{me}.{part.attr.value}" for part in parts if me is not None and is_self_attr(part, me))  # type: ignore[attr-defined]


def _rebuilt_through_helper(info: ClassInfo, attr: str, later: frozenset[str]) -> Optional[str]:
    """`if pred.size(0) != self.batch: self.batch = pred.size(0); self.grids()`, where `grids()`
    rebuilds the table from `self.batch`: a method of the forward path checks the input's size
    and re-sizes the state a helper builds the attribute from. (A rebuild behind a flag, once,
    is a reconfiguration, not a cache of the input's shape.)"""
    builders = {a.method.name.value: a.method for a in info.assignments_to(attr) if a.value is not None and a.kind is not ValueKind.NONE}
    for name in sorted(later):
        func = info.methods.get(name)
        me = self_name(func) if func is not None else None
        if func is None or me is None:
            continue
        tainted = _shape_names(func)
        sized = {n.partition(".")[2] for n in tainted if n.startswith(f"{me}.")}
        if not sized:
            continue
        for branch in nodes_of(func.body, cst.If):
            if not set(_size_names(branch.test)) & tainted:
                continue  # rebuilt whatever the input's size
            for call in nodes_of(branch.body, cst.Call):
                callee = call.func
                helper = builders.get(callee.attr.value) if is_self_attr(callee, me) else None  # type: ignore[attr-defined]
                helper_me = self_name(helper) if helper is not None else None
                if helper is not None and helper_me is not None and any(is_self_attr(n, helper_me) and n.attr.value in sized for n in nodes_of(helper.body, cst.Attribute)):  # type: ignore[attr-defined]
                    return f"{name}() rebuilds it through {helper.name.value}() when the input's size changes: a cache of the input's shape, not a constant"
    return None


def _kept_on_host(info: ClassInfo, attr: str, defining: Optional[AttrAssignment], family: Family) -> Optional[str]:
    """Used after construction together with values the class itself brings to the CPU
    (`self.plan_ids[~masks.cpu()] = ...`, `self.done |= mask.cpu()`): host-side bookkeeping
    (per-environment counters read one element at a time) that lives on the CPU on purpose;
    or sent to the CPU itself (`self.table = self.table.cpu()`), which says the same."""
    for assignment in info.assignments_to(attr):
        if assignment.value is not None and _to_host(assignment.value):
            return f"{assignment.method.name.value}() sends it to the CPU: it is kept on the host on purpose"
    if defining is not None and defining.value is not None and _from_host_attributes(info, defining):
        return "it is computed from tensors the class puts on the CPU itself: it is kept on the host on purpose"
    init_time = init_time_methods(info)
    for owner in (info, *family.subclasses(info)):
        for name in method_reads(owner).readers.get(attr, ()):
            func = owner.methods[name]
            if name in init_time and owner is info:
                continue
            me = self_name(func)
            host_locals = _host_built_locals(func)
            for site in iter_sites(func):
                if _mentions_self_attr(site.small, me, attr) and _brings_to_host(site.small, me, attr):
                    return f"{name}() brings values to the CPU to use with it: it is kept on the host on purpose"
                if _filled_into(site.small, host_locals) and _mentions_self_attr(site.small, me, attr):
                    return f"{name}() copies its values into a tensor it builds on the CPU: it is used on the host on purpose"
    return None


# torch factories whose result, without `device=`, is a tensor on the host
_HOST_FACTORIES = frozenset("Tensor FloatTensor LongTensor DoubleTensor zeros ones empty full".split())


def _host_built_locals(func: cst.FunctionDef) -> frozenset[str]:
    """Locals built with a torch factory and no `device=` (`w = torch.Tensor(n)`) and otherwise
    only rebound to what their own methods return (`w = w.mul(s)`): tensors on the host."""
    verdicts: dict[str, bool] = {}
    for assign in nodes_of(func.body, cst.Assign):
        for target in assign.targets:
            if isinstance(target.target, cst.Name):
                name = target.target.value
                ok = _host_factory_call(assign.value) if name not in verdicts else _own_method_result(assign.value, name)
                verdicts[name] = verdicts.get(name, True) and ok
    return frozenset(name for name, ok in verdicts.items() if ok)


def _host_factory_call(value: cst.BaseExpression) -> bool:
    return (
        isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and is_name(value.func.value, "torch")
        and value.func.attr.value in _HOST_FACTORIES and not any(a.keyword is not None and a.keyword.value == "device" for a in value.args)
    )


def _own_method_result(value: cst.BaseExpression, name: str) -> bool:
    """`w.mul(s)`, `w.float()`: computed from the local on its own device (not `.to()`/`.cuda()`)."""
    return (
        isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and is_name(value.func.value, name)
        and value.func.attr.value not in ("to", "cuda", "type_as")
    )


def _filled_into(small: cst.BaseSmallStatement, host_locals: frozenset[str]) -> bool:
    """`w[i] = <value>` with `w` one of `host_locals`: the value is copied into a host tensor."""
    return isinstance(small, cst.Assign) and any(
        isinstance(t.target, cst.Subscript) and isinstance(t.target.value, cst.Name) and t.target.value.value in host_locals
        for t in small.targets
    )


def _from_host_attributes(info: ClassInfo, defining: AttrAssignment) -> bool:
    """`self._offset = 0.5 * (1.0 - self.center / self.radius)` where every attribute it reads
    is given only values sent to the CPU (`self.radius = radius` after `radius =
    radius.to(device="cpu")`): what it computes stays there too, by design."""
    me = defining.scope.self_name
    read = {n.attr.value for n in nodes_of(defining.value, cst.Attribute) if is_self_attr(n, me)} - {defining.attr}  # type: ignore[arg-type]
    return bool(read) and all(_always_on_host(info, other) for other in read)


def _always_on_host(info: ClassInfo, attr: str) -> bool:
    assignments = [a for a in info.assignments_to(attr) if a.value is not None]
    return bool(assignments) and all(_host_value(a.value, a.method) for a in assignments)  # type: ignore[arg-type]


def _host_value(value: cst.BaseExpression, method: cst.FunctionDef) -> bool:
    """Sent to the CPU or built there (`device="cpu"`), or a local that some binding puts there
    and every other binding gives a Python value or arithmetic (`radius = [radius] * 3`)."""
    if _to_host(value) or _built_on_host(value):
        return True
    if not isinstance(value, cst.Name):
        return False
    bound = [a.value for a in nodes_of(method.body, cst.Assign) if any(is_name(t.target, value.value) for t in a.targets)]
    placed = {id(b) for b in bound if _to_host(b) or _built_on_host(b)}
    return bool(placed) and all(id(b) in placed or isinstance(b, _PYTHON_VALUES) for b in bound)


_PYTHON_VALUES = (cst.List, cst.Tuple, cst.BinaryOperation, cst.Integer, cst.Float)


def _built_on_host(value: cst.BaseExpression) -> bool:
    """A call given `device="cpu"` (`torch.tensor(c, device="cpu")`, `t.to(device="cpu")`)."""
    return isinstance(value, cst.Call) and any(
        a.keyword is not None and a.keyword.value == "device" and isinstance(a.value, cst.SimpleString) and a.value.evaluated_value == "cpu"
        for a in value.args
    )


def _brings_to_host(node: cst.CSTNode, me: Optional[str], attr: str) -> bool:
    """A `.cpu()` or `.to("cpu")` in `node` of something other than `self.<attr>` itself."""
    return any(
        _to_host(call) for call in nodes_of(node, cst.Call)
        if isinstance(call.func, cst.Attribute) and not _mentions_self_attr(call.func.value, me, attr)
    )


def _to_host(node: cst.CSTNode) -> bool:
    """`<x>.cpu()` or `<x>.to("cpu")`."""
    if not isinstance(node, cst.Call) or not isinstance(node.func, cst.Attribute):
        return False
    if node.func.attr.value == "cpu":
        return not node.args
    return node.func.attr.value == "to" and any(
        isinstance(a.value, cst.SimpleString) and a.value.evaluated_value == "cpu" for a in node.args
    )


def _pinned_and_placed_once(info: ClassInfo, attr: str, defining: Optional[AttrAssignment], family: Family) -> Optional[str]:
    """A table built in `__init__` with its dtype set on purpose (`dtype=torch.float32`) that the
    class moves itself, only behind a test of its own placement and to a device the program
    picks rather than the input's (`if self.f.device.type == "cpu": self.f = self.f.to(
    torch.cuda.current_device())`): kept out of the buffers so that `.half()` leaves it alone,
    and placed once by design. (Moved to the input's device, it stays a finding.)"""
    if defining is None or defining.value is None or not defining.in_init or dtype_pin(defining.value, dotted_name) is None:
        return None
    init_time = init_time_methods(info)
    moves = [
        (name, call) for name in method_reads(info).readers.get(attr, ()) if name not in init_time
        for call in _moves_of(info.methods[name], attr)
    ]
    if not moves or not all(_placed_once(info.methods[name], attr, call) for name, call in moves):
        return None
    return f"{moves[0][0]}() places it once, on a device the program picks, and its dtype is kept on purpose"


def _source_of_rebuilt_caches(info: ClassInfo, attr: str, defining: Optional[AttrAssignment], family: Family) -> Optional[str]:
    """A table the class keeps in its own dtype (it checks it: `assert self.inv_freq.dtype ==
    torch.float32`) and reads after construction only inside the branch that rebuilds its caches
    once they no longer fit the input (`if seq_len > self.max_seq_len_cached or
    self.cos_cached.device != x.device: ...; self.cos_cached = ...`): the source of those caches,
    kept plain on purpose so that casting the module leaves it exact, and moved only when they are
    rebuilt, not on every call."""
    if defining is None or not defining.in_init:
        return None
    init_time = init_time_methods(info)
    later = [info.methods[name] for name in method_reads(info).readers.get(attr, ()) if name not in init_time]
    if not later or dtype_checked(attr, later) is None:
        return None
    if not all(_read_only_when_rebuilding(func, attr) for func in later):
        return None
    return f"{later[0].name.value}() reads it only to rebuild its caches, and checks its dtype: kept plain on purpose"


def _read_only_when_rebuilding(func: cst.FunctionDef, attr: str) -> bool:
    """Every statement of `func` that reads `self.<attr>` sits in the body (not the `else`) of an
    `if` that compares the class's own state (`seq_len > self.max_len`, `self.cache.device !=
    x.device`; not a flag such as `self.training`) and rebuilds other attributes of it."""
    me = self_name(func)
    reading = [site for site in iter_sites(func) if _mentions_self_attr(site.small, me, attr)]
    for site in reading:
        top = site.top
        if not (site.nested and isinstance(top, cst.If)) or not _compares_state(top.test, me):
            return False
        if not any(node is site.small for node in nodes_of(top.body, type(site.small))):
            return False
        rebuilt = {
            t.target.attr.value for assign in nodes_of(top.body, cst.Assign) for t in assign.targets  # type: ignore[attr-defined]
            if is_self_attr(t.target, me) and t.target.attr.value != attr  # type: ignore[attr-defined]
        }
        if not rebuilt:
            return False
    return bool(reading)


def _compares_state(test: cst.BaseExpression, me: Optional[str]) -> bool:
    return any(
        any(is_self_attr(node, me) for node in nodes_of(comparison, cst.Attribute)) for comparison in nodes_of(test, cst.Comparison)
    )


def _moves_of(func: cst.FunctionDef, attr: str) -> Iterator[cst.Call]:
    me = self_name(func)
    for call in nodes_of(func.body, cst.Call):
        if isinstance(call.func, cst.Attribute) and call.func.attr.value in ("to", "cuda") and is_self_attr(call.func.value, me, attr):
            yield call


def _placed_once(func: cst.FunctionDef, attr: str, call: cst.Call) -> bool:
    """`self.<attr> = self.<attr>.to(<program device>)` inside `if <its placement>:`."""
    me = self_name(func)
    inputs = _input_names(func)
    if me is None or _reads_self_or(call.args, me, inputs):
        return False
    for site in iter_sites(func):
        small = site.small
        if isinstance(small, cst.Assign) and small.value is call and any(is_self_attr(t.target, me, attr) for t in small.targets):
            return isinstance(site.top, cst.If) and site.nested and attr in set(_placements_compared_in(site.top.test, me))
    return False


def _reads_self_or(args: Sequence[cst.Arg], me: str, names: set[str]) -> bool:
    return any(isinstance(n, cst.Name) and (n.value == me or n.value in names) for arg in args for n in iter_nodes(arg.value))


def _placements_compared_in(test: cst.BaseExpression, me: Optional[str]) -> Iterator[str]:
    for comparison in nodes_of(test, cst.Comparison):
        yield from _placements_compared(comparison, me)
    for node in nodes_of(test, cst.Attribute):
        if node.attr.value == "is_cuda" and is_self_attr(node.value, me):
            yield node.value.attr.value  # type: ignore[attr-defined]


def _placed_by_choice(info: ClassInfo, attr: str, defining: Optional[AttrAssignment], family: Family) -> Optional[str]:
    """`self.mask = mask.cuda() if self.use_gpu else mask` (or under `if self.use_gpu:`): the
    class chooses the device itself when it builds the tensor, following a setting of its own.
    (In forward, a guarded move is a lazy move of a constant: BUF002's business.)"""
    init_time = init_time_methods(info)
    for assignment in info.assignments_to(attr):
        value = assignment.value
        if value is None or assignment.method.name.value not in init_time:
            continue
        if isinstance(value, cst.IfExp):
            tests: list[cst.BaseExpression] = [value.test]
            branches = [value.body, value.orelse]
        elif isinstance(assignment.site.top, cst.If):
            tests, branches = [assignment.site.top.test], [value]
        else:
            continue
        if any(_placement_setting(test, assignment.scope.self_name) for test in tests) and any(map(_device_move, branches)):
            return f"{assignment.method.name.value}() chooses its device from a setting of the class"
    return None


def _placement_setting(test: cst.BaseExpression, me: Optional[str]) -> bool:
    """A test that reads a flag of the class (`self.use_gpu`) or asks whether CUDA is there."""
    for node in iter_nodes(test):
        if isinstance(node, cst.Attribute) and (is_self_attr(node, me) or node.attr.value == "is_available"):
            return True
    return False


def _device_move(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in ("cuda", "to")


def _caller_placed(info: ClassInfo, attr: str, defining: Optional[AttrAssignment], family: Family) -> Optional[str]:
    """`__init__(self, ..., device, dtype)` building it with both (`t.to(device=device, dtype=dtype)`),
    and no method moving it later: constructed in place where the caller wants it, never moved
    (a class that moves it per call shows it is not; that stays a finding)."""
    init = info.init
    if defining is None or defining.value is None or init is None or defining.method is not init:
        return None
    params = {p.name.value for p in (*init.params.params, *init.params.kwonly_params)}
    given = {
        arg.keyword.value for arg in nodes_of(defining.value, cst.Arg)
        if arg.keyword is not None and arg.keyword.value in ("device", "dtype")
        and isinstance(arg.value, cst.Name) and arg.value.value in params
    }
    if given != {"device", "dtype"}:
        if on_named_device(info, defining, family.fixed_devices, family.named_by_callers(info)) and not moved_later(info, attr):
            return "it is built on a device the program names, and no method moves it"
        return _derived_from_caller_placed(info, attr, defining, family)
    if moved_later(info, attr):
        return None
    return "it is built on the device and dtype the caller gives __init__(), and no method moves it"


def _derived_from_caller_placed(info: ClassInfo, attr: str, defining: AttrAssignment, family: Family) -> Optional[str]:
    """`self.norm = (self.centroids ** 2).sum(0)` right after such a tensor: it lives beside it."""
    assert defining.value is not None
    me = defining.scope.self_name
    for other in {n.attr.value for n in nodes_of(defining.value, cst.Attribute) if is_self_attr(n, me)} - {attr}:
        source = next((a for a in info.assignments_to(other) if a.in_init and a.kind is ValueKind.TENSOR), None)
        if source is not None and source.value is not None and not _mentions_self_attr(source.value, me, attr):
            if _caller_placed(info, other, source, family) is not None and not moved_later(info, attr):
                return f"it is computed from `{other}`, which the caller places"
    return None


def moved_later(info: ClassInfo, attr: str) -> bool:
    init_time = init_time_methods(info)
    for name in method_reads(info).readers.get(attr, ()):
        func = info.methods[name]
        me = self_name(func)
        if name in init_time:
            continue
        for call in nodes_of(func.body, cst.Call):
            if isinstance(call.func, cst.Attribute) and call.func.attr.value in ("to", "cuda", "type_as") and _mentions_self_attr(call.func.value, me, attr):
                return True
    return False


def _own_device(info: ClassInfo, attr: str, defining: Optional[AttrAssignment], family: Family) -> Optional[str]:
    """The class's `self.device` design (or a `use_cuda` flag its constructor is given) covers
    the tensors it places there; one that a later method moves to somewhere else
    (`self.window.to(x.device)`) is outside that design."""
    reason = own_device(info) or cuda_flag(info)
    if reason is None:
        return None
    if moved_elsewhere(info, attr) and not (_built_on_own_device(defining) and _places_held_modules(info)):
        return None
    return reason


def _built_on_own_device(defining: Optional[AttrAssignment]) -> bool:
    """The defining value names the class's own device (`device=self.device`, `.to(self.device)`)."""
    if defining is None or defining.value is None:
        return False
    me = defining.scope.self_name
    return any(is_self_attr(n, me) and n.attr.value in DEVICE_ATTRS for n in nodes_of(defining.value, cst.Attribute))  # type: ignore[attr-defined]


def _places_held_modules(info: ClassInfo) -> bool:
    """While constructing, the class moves its own submodules (or itself) to its `self.device`
    (`self.unet.to(self.device)`): the whole module lives where the class puts it, and a later
    `self.t.to(x.device)` is a guard for inputs, no sign the tensor should follow `.to()`."""
    tensors = {a.attr for a in info.assignments if a.kind is ValueKind.TENSOR}
    for func, me in construction_methods(info):
        for call in nodes_of(func.body, cst.Call):
            if _moves_held_to_own_device(call, me, tensors):
                return True
    return False


def _moves_held_to_own_device(call: cst.Call, me: str, tensors: set[str]) -> bool:
    """`self.<sub>.to(self.device)` (a held module, not a tensor attribute) or `self.to(self.device)`."""
    callee = call.func
    if not (isinstance(callee, cst.Attribute) and callee.attr.value == "to" and len(call.args) == 1):
        return False
    target = call.args[0].value
    if not (isinstance(target, cst.Attribute) and is_self_attr(target, me) and target.attr.value in DEVICE_ATTRS):
        return False
    held = callee.value
    return is_name(held, me) or (isinstance(held, cst.Attribute) and is_self_attr(held, me) and held.attr.value not in tensors)


def moved_elsewhere(info: ClassInfo, attr: str) -> bool:
    """A method after construction moves `self.<attr>` to a target that is not the class's own
    `self.device`."""
    init_time = init_time_methods(info)
    for name in method_reads(info).readers.get(attr, ()):
        if name in init_time:
            continue
        func_def = info.methods[name]
        me = self_name(func_def)
        recorded = _recorded_devices(func_def, me)
        for call in nodes_of(func_def.body, cst.Call):
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value in ("to", "cuda") and is_self_attr(func.value, me, attr):
                own = any(is_self_attr(n, me) and n.attr.value in DEVICE_ATTRS for n in nodes_of(call, cst.Attribute))
                if not own and not any(isinstance(a.value, cst.Name) and a.value.value in recorded for a in call.args):
                    return True
    return False


def _recorded_devices(func: cst.FunctionDef, me: Optional[str]) -> set[str]:
    """Names the method also stores as the class's own device (`self.device = device`): a move to
    one of them is a move to `self.device` (`def _set_kernels_to_device(self, device)`)."""
    found = set()
    for assign in nodes_of(func.body, cst.Assign):
        if isinstance(assign.value, cst.Name) and any(
            is_self_attr(t.target, me) and t.target.attr.value in DEVICE_ATTRS for t in assign.targets  # type: ignore[attr-defined]
        ):
            found.add(assign.value.value)
    return found


def own_device(info: ClassInfo) -> Optional[str]:
    """`self.device = device` (or `self._device`): the class places its tensors itself rather
    than through `.to()`."""
    for owner in (info, *info.ancestors()):
        for a in owner.assignments:
            if a.attr in DEVICE_ATTRS and a.method.name.value in init_time_methods(owner):
                return f"{owner.name} keeps its own `self.{a.attr}` and places its tensors there"
    return None


DEVICE_ATTRS = frozenset(("device", "_device"))


def cuda_flag(info: ClassInfo) -> Optional[str]:
    """`__init__(self, ..., use_cuda=True)` moving its own tensors with `.cuda()` only under that
    flag (`if use_cuda: self.grid = self.grid.cuda()`, or `if self.use_cuda:` once stored), in a
    class holding no parameters or submodules: its tensors are all it has, and it places them
    where its caller chooses, as a `device` argument would. (A model that moves its layers under
    the flag too is still moved and replicated by its users: LPIPS's scaling constants stay
    behind in DataParallel's replicas.)"""
    if any(owner.parameters or owner.submodules or owner.registered_buffers for owner in (info, *info.ancestors())):
        return None
    for owner in (info, *info.ancestors()):
        init = owner.init
        me = self_name(init) if init is not None else None
        if init is None or me is None:
            continue
        params = {p.name.value for p in (*init.params.params[1:], *init.params.kwonly_params)}
        stored = {a.attr for a in owner.assignments if a.in_init and isinstance(a.value, cst.Name) and a.value.value in params}
        for branch in nodes_of(init.body, cst.If):
            flag = _flag_read(branch.test, me, params, stored)
            if flag is not None and any(_moves_own_tensor_to_cuda(line, me) for line in nodes_of(branch.body, cst.SimpleStatementLine)):
                return f"{owner.name} moves its tensors to CUDA only when its `{flag}` argument asks: it places them itself"
    return None


def _flag_read(test: cst.BaseExpression, me: str, params: set[str], stored: set[str]) -> Optional[str]:
    """The constructor argument (`use_cuda`) or its stored copy (`self.use_cuda`) the test reads
    as a whole: the test is the name, or `not` of it."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test = test.expression
    if isinstance(test, cst.Name) and test.value in params:
        return test.value
    if isinstance(test, cst.Attribute) and is_self_attr(test, me) and test.attr.value in stored:
        return test.attr.value
    return None


def _moves_own_tensor_to_cuda(line: cst.SimpleStatementLine, me: str) -> bool:
    """`self.t = self.t.cuda()`: an attribute of its own moved to CUDA in place."""
    for small in line.body:
        if isinstance(small, cst.Assign) and len(small.targets) == 1 and is_self_attr(small.targets[0].target, me):
            value = small.value
            if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "cuda":
                return is_self_attr(value.func.value, me)
    return False


def given_device(info: ClassInfo) -> Optional[str]:
    """`__init__(self, ..., device)` passing `device=device` on to what it builds: the class
    places its tensors on the device it is given (a constant built elsewhere would not be)."""
    init = info.init
    if init is None:
        return None
    params = init.params
    names = {p.name.value for p in (*params.params, *params.kwonly_params)} & {"device"}
    for arg in nodes_of(init.body, cst.Arg) if names else ():
        if arg.keyword is not None and arg.keyword.value == "device" and isinstance(arg.value, cst.Name) and arg.value.value in names:
            return f"{info.name} builds its tensors on the `device` its __init__() is given"
    return own_device(info)


_TESTS = (
    _placeholder, _hasattr_cache, _moved_by_override, _own_move_method, _own_device, _device_checked,
    _input_derived, _shape_cache, _per_call_state, _optimisation_variable, _lazy_on_own_device, _construction_only, _tracing_only, _kept_on_host,
    _placed_by_choice, _caller_placed, _pinned_and_placed_once, _source_of_rebuilt_caches,
)
