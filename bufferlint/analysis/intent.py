"""Tensor attributes that are plain on purpose: the class keeps them on the right device itself,
or they are per-call state rather than module state. Rules stay silent on these.

Each test answers for one attribute of one class and names its reason, so a rule can say why it
kept quiet (`bufferlint` prefers a miss to a false alarm on code it cannot prove wrong).
"""

from __future__ import annotations

from typing import Iterable, Iterator, Optional, Sequence

import libcst as cst

from bufferlint.analysis.classes import AttrAssignment, ClassInfo, ValueKind
from bufferlint.analysis.flow import free_names, iter_nodes, iter_sites, self_name

# Methods through which a class can move plain attributes with the module.
_MOVE_OVERRIDES = ("_apply", "to", "cuda", "cpu", "half", "float", "double", "type")
# Tensor attributes that tell where a tensor lives: comparing them is a device check.
_PLACEMENT_ATTRS = frozenset(("device", "is_cuda", "get_device", "dtype"))


def deliberate_reason(info: ClassInfo, attr: str, defining: AttrAssignment, family: Sequence[ClassInfo] = ()) -> Optional[str]:
    """Why `self.<attr>` is a plain tensor on purpose, or None when nothing says so.

    `family`: module classes of the same file; subclasses among them count as readers."""
    for test in (_self_rebinding, _moved_by_override, _device_checked, _input_derived, _per_call_state, _construction_only):
        reason = test(info, attr, defining, family)
        if reason is not None:
            return reason
    return None


def init_time_methods(info: ClassInfo) -> set[str]:
    """`__init__` and the methods it calls on self (transitively): they run while constructing."""
    found: set[str] = set()
    pending = ["__init__"]
    while pending:
        name = pending.pop()
        func = info.methods.get(name)
        if func is None or name in found:
            continue
        found.add(name)
        me = self_name(func)
        pending.extend(called for called in _self_calls(func, me) if called in info.methods)
    return found


def _self_calls(func: cst.FunctionDef, me: Optional[str]) -> Iterator[str]:
    if me is None:
        return
    for node in iter_nodes(func.body):
        if isinstance(node, cst.Call) and _is_self_attr(node.func, me):
            yield node.func.attr.value  # type: ignore[union-attr]


def _is_self_attr(node: cst.BaseExpression, me: Optional[str], attr: Optional[str] = None) -> bool:
    return (
        isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Name)
        and node.value.value == me
        and (attr is None or node.attr.value == attr)
    )


def _self_rebinding(info: ClassInfo, attr: str, defining: AttrAssignment, family: Sequence[ClassInfo]) -> Optional[str]:
    """`self.k = self.k.to(x.device)` is where the tensor is moved, not where it comes from:
    BUF002 reports the move; the attribute's origin is elsewhere or unknown."""
    if defining.value is not None and not defining.in_init and _mentions_self_attr(defining.value, defining.scope.self_name, attr):
        return "the assignment re-binds the attribute to a moved copy of itself"
    return None


def _mentions_self_attr(node: cst.CSTNode, me: Optional[str], attr: str) -> bool:
    return any(_is_self_attr(n, me, attr) for n in iter_nodes(node) if isinstance(n, cst.Attribute))


def _moved_by_override(info: ClassInfo, attr: str, defining: AttrAssignment, family: Sequence[ClassInfo]) -> Optional[str]:
    for owner in (info, *info.ancestors()):
        for name in _MOVE_OVERRIDES:
            func = owner.methods.get(name)
            if func is None:
                continue
            me = self_name(func)
            generic = any(isinstance(n, cst.Name) and n.value in ("__dict__", "vars") for n in iter_nodes(func.body))
            if generic or _mentions_self_attr(func.body, me, attr) or _mentions_attr_string(func.body, attr):
                return f"{owner.name}.{name}() moves it with the module"
    return None


def _mentions_attr_string(node: cst.CSTNode, attr: str) -> bool:
    """`for name in ("a", "b"): setattr(self, name, fn(getattr(self, name)))`."""
    return any(
        isinstance(n, cst.SimpleString) and n.evaluated_value == attr for n in iter_nodes(node) if isinstance(n, cst.SimpleString)
    )


def _device_checked(info: ClassInfo, attr: str, defining: AttrAssignment, family: Sequence[ClassInfo]) -> Optional[str]:
    """A cache that compares its own device (or dtype) with the input's rebuilds itself where needed."""
    for func in info.methods.values():
        me = self_name(func)
        for node in iter_nodes(func.body):
            if isinstance(node, cst.Comparison) and _compares_placement(node, me, attr):
                return f"{func.name.value}() re-checks its device"
    return None


def _compares_placement(node: cst.Comparison, me: Optional[str], attr: str) -> bool:
    for inner in iter_nodes(node):
        if isinstance(inner, cst.Attribute) and inner.attr.value in _PLACEMENT_ATTRS and _is_self_attr(inner.value, me, attr):
            return True
    return False


def _input_derived(info: ClassInfo, attr: str, defining: AttrAssignment, family: Sequence[ClassInfo]) -> Optional[str]:
    """Assigned, outside construction, from what a method was called with: it lives where the
    inputs live (activations kept for a hook, fitted statistics, a target set by the caller)."""
    init_time = init_time_methods(info)
    for assignment in info.assignments_to(attr):
        name = assignment.method.name.value
        if name in init_time or assignment.value is None:
            continue
        if set(free_names(assignment.value)) & _input_names(assignment.method):
            return f"{name}() assigns it from its arguments"
    return None


def _input_names(func: cst.FunctionDef) -> set[str]:
    """Parameters (other than self) and the locals computed from them, in statement order."""
    params = func.params
    me = self_name(func)
    tainted = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params) if p.name.value != me}
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            tainted.add(star.name.value)
    for site in iter_sites(func):
        small = site.small
        value = getattr(small, "value", None)
        if not isinstance(small, (cst.Assign, cst.AnnAssign, cst.AugAssign)) or value is None:
            continue
        if set(free_names(value)) & tainted:
            for target in _targets(small):
                tainted.update(_bound_names(target))
    return tainted


def _targets(small: cst.BaseSmallStatement) -> Iterable[cst.BaseExpression]:
    if isinstance(small, cst.Assign):
        return [t.target for t in small.targets]
    return [small.target]  # type: ignore[attr-defined]


def _bound_names(target: cst.BaseExpression) -> Iterator[str]:
    if isinstance(target, cst.Name):
        yield target.value
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _bound_names(element.value)


def _per_call_state(info: ClassInfo, attr: str, defining: AttrAssignment, family: Sequence[ClassInfo]) -> Optional[str]:
    """Never a tensor while constructing, and (re)built unconditionally by a method: a value of the
    current call (a sampled mask, a random count), not state the module should carry."""
    init_time = init_time_methods(info)
    tensors = [a for a in info.assignments_to(attr) if a.kind is ValueKind.TENSOR and not a.augmented]
    if any(a.method.name.value in init_time for a in tensors):
        return None
    if any(not a.site.nested for a in tensors):
        return "it is rebuilt on every call of a method, never while constructing"
    return None


def _construction_only(info: ClassInfo, attr: str, defining: AttrAssignment, family: Sequence[ClassInfo]) -> Optional[str]:
    """Read while constructing (a size computed with torch) and never by forward or other methods."""
    init_time = init_time_methods(info)
    targets = {id(a.target) for a in info.assignments}
    read_at_init = False
    for owner in (info, *(c for c in family if info in c.ancestors())):
        owner_init = init_time if owner is info else init_time_methods(owner)
        for func in owner.methods.values():
            me = self_name(func)
            for node in iter_nodes(func.body):
                if id(node) in targets or not _is_self_attr(node, me, attr):  # type: ignore[arg-type]
                    continue
                if func.name.value not in owner_init:
                    return None
                read_at_init = True
    return "it is only read while constructing" if read_at_init else None
