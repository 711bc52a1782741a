"""Moves of `self.<attr>` on the forward path that are not a tensor copied on every call.

BUF002 reports `self.t.to(x.device)` in forward. It stays silent when:
- the attribute is evidently not a tensor: it is called (`self.resampler(x)`, `self.feats[k](x)`,
  `self.encoder.to(x.device)(x)`: a submodule the class did not register), asked for what only a
  module has (`.parameters()`, `.forward(...)`, `.eval()`), or it holds a container (`[model]`, `{}`) and is
  never assigned a tensor; a container of tensors is BUF009's finding;
- the move's result is dropped (`self.feats[k].to(x.device)` as a statement): only a module
  moves in place, a tensor's `.to()` returns a copy;
- the attribute is a self-healing cache: the forward path rebuilds it from scratch (sized by the
  input) and the move sits behind a check of the cache's own device or dtype, so it runs once
  after the module moved, not on every call;
- the target device is read off the attribute itself (`self.t.to(self.t.device)`): no move at all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Iterator, Optional

import libcst as cst

from bufferlint.analysis import torch_api
from bufferlint.analysis.classes import ClassInfo, ValueKind
from bufferlint.analysis.flow import is_self_attr, iter_nodes, self_name, stored_names
from bufferlint.analysis.walk import nodes_of

if TYPE_CHECKING:
    from bufferlint.analysis.forward import Move, PathMethod

_CONTAINERS = (cst.List, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp)
_CONTAINER_CALLS = frozenset(("list", "dict", "set", "OrderedDict", "defaultdict"))
# Tensor attributes that tell where a tensor lives: comparing them checks the placement.
_PLACEMENT_ATTRS = frozenset(("device", "dtype", "is_cuda", "get_device"))


def not_a_tensor_reason(info: ClassInfo, attr: str, called: frozenset[str]) -> Optional[str]:
    """Why `self.<attr>` cannot be a tensor, or None when it may be one; `called` is
    `called_attributes(info)`, computed once per class."""
    assignments = info.assignments_to(attr)
    if not any(a.kind is ValueKind.TENSOR for a in assignments):
        for assignment in assignments:
            if assignment.value is not None and is_container(assignment.value):
                return "it holds a container"
        if assignments and all(a.value is not None and _is_number(a.value) for a in assignments):
            return "it holds a Python number"  # `torch.as_tensor(self.eps, device=...)` makes it there
        sources = [a for a in assignments if not _moves_itself(a.value, a.scope.self_name, a.attr)]  # `self.g = self.g.to(d)` adds nothing
        built = [_constructed_class(info, a.value, a.scope.self_name) for a in sources if a.value is not None]
        if sources and len(built) == len(sources) and all(built):
            return f"it holds a `{built[0]}` object, not a tensor"  # a graph `Data(...)` has its own .to()
    if attr in called:
        return "it is called or used as a module, so it is a module or a function"
    return None


# Classes whose objects are tensors (a call of one builds a tensor, whatever inference said).
_TENSOR_CLASSES = torch_api.TENSOR_CLASSES | {"Parameter", "Buffer", "Variable"}


def _constructed_class(info: ClassInfo, value: cst.BaseExpression, me: Optional[str]) -> Optional[str]:
    """The class a value constructs (`Data(edge_index=...)`, `geometry.Meshes(...)`: a CamelCase
    callable that is no tensor class), directly or as what every `return` of a method of the
    class it calls gives (`self.build_graph()`), or None."""
    if not isinstance(value, cst.Call):
        return None
    func = value.func
    if is_self_attr(func, me):
        assert isinstance(func, cst.Attribute)
        method = info.methods.get(func.attr.value)
        returns = [r.value for r in nodes_of(method.body, cst.Return)] if method is not None else []
        found = [_constructed_class(info, r, self_name(method)) if r is not None and method is not None else None for r in returns]
        return found[0] if found and all(found) else None
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
    if name[:1].isupper() and not name.isupper() and name not in _TENSOR_CLASSES:
        return name
    return None


def _moves_itself(value: Optional[cst.BaseExpression], me: Optional[str], attr: str) -> bool:
    """`self.<attr>.to(...)`, `.cuda()`, `.cpu()`: the attribute's own value, moved."""
    return (
        isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in ("to", "cuda", "cpu")
        and is_self_attr(value.func.value, me, attr)
    )


def _is_number(value: cst.BaseExpression) -> bool:
    """A number literal (signed), or `float(...)` / `int(...)` of anything."""
    if isinstance(value, cst.UnaryOperation):
        value = value.expression
    if isinstance(value, (cst.Integer, cst.Float)):
        return True
    return isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value in ("float", "int")


def is_container(value: cst.BaseExpression) -> bool:
    """A literal list/tuple/dict/set, `list(...)`-like, or a repeated one (`[torch.zeros(1)] * n`)."""
    if isinstance(value, _CONTAINERS):
        return True
    if isinstance(value, cst.Call):
        return isinstance(value.func, cst.Name) and value.func.value in _CONTAINER_CALLS
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Multiply):
        return is_container(value.left) or is_container(value.right)
    return False


def called_attributes(info: ClassInfo) -> frozenset[str]:
    """Attributes some method uses as a module: calls (`self.a(x)`, `self.a[k](x)`, the moved copy
    `self.a.to(x.device)(x)`), asks for what only a module has (`self.a.parameters()`,
    `self.a.to(d).forward(x)`), calls what a wrapper makes of it (`apply_module(self.a)(x)`), or
    assigns from such a method (`self.a = model.eval()`)."""
    called: set[str] = set()
    for func in info.methods.values():
        me = self_name(func)
        for node in nodes_of(func.body, cst.Call):
            callee = node.func
            if isinstance(callee, cst.Attribute) and callee.attr.value in _MODULE_METHODS:
                callee = callee.value
            attr = _attr_root(_unmoved(callee), me)
            if attr is None and isinstance(callee, cst.Call) and len(callee.args) == 1 and callee.args[0].keyword is None:
                attr = _attr_root(callee.args[0].value, me)  # `wrap(self.a)(x)`
            if attr is not None:
                called.add(attr)
    for assignment in info.assignments:
        value = assignment.value
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in ("eval", "train"):
            called.add(assignment.attr)  # `model.eval()` returns the module itself
    return frozenset(called)


# Methods an nn.Module has and a tensor has not.
_MODULE_METHODS = frozenset(
    "forward eval train parameters named_parameters modules named_modules children named_children "
    "state_dict load_state_dict zero_grad get_input_embeddings resize_token_embeddings".split()
)


def _unmoved(node: cst.BaseExpression) -> cst.BaseExpression:
    """`self.a.to(d)` or `self.a.cuda()` -> `self.a`; anything else as it is."""
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in ("to", "cuda", "cpu"):
        node = node.func.value
    return node


def result_dropped(small: cst.BaseSmallStatement, call: cst.Call) -> bool:
    """`self.m.to(x.device)` as a whole statement: an in-place module move."""
    return isinstance(small, cst.Expr) and small.value is call


def self_healing(info: ClassInfo, attr: str, path: Iterable[cst.FunctionDef], func: cst.FunctionDef, call: cst.Call) -> bool:
    """The move runs behind a check of the cache's own placement, and the forward path also
    rebuilds the cache from scratch (not from a moved copy of itself)."""
    path_ids = {id(f) for f in path}
    me = self_name(func)
    rebuilt = any(
        id(a.method) in path_ids and a.value is not None and not _is_none(a.value) and not _mentions(a.value, a.scope.self_name, attr)
        for a in info.assignments_to(attr)
    )
    if not rebuilt:
        return False
    for node in iter_nodes(func.body):
        if isinstance(node, cst.If) and _checks_placement(node.test, me, attr):
            if any(inner is call for inner in iter_nodes(node.body)):
                return True
    return False


def _checks_placement(test: cst.BaseExpression, me: Optional[str], attr: str) -> bool:
    for node in iter_nodes(test):
        if isinstance(node, cst.Attribute) and node.attr.value in _PLACEMENT_ATTRS and _attr_root(node.value, me) == attr:
            return True
    return False


def _mentions(node: cst.CSTNode, me: Optional[str], attr: str) -> bool:
    return any(isinstance(n, cst.Attribute) and _attr_root(n, me) == attr for n in iter_nodes(node))


def _attr_root(node: cst.BaseExpression, me: Optional[str]) -> Optional[str]:
    """`self.a` or `self.a[k]` -> "a"."""
    while isinstance(node, cst.Subscript):
        node = node.value
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == me:
        return node.attr.value
    return None


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def to_own_device(move: "Move", method: "PathMethod", attr: str) -> bool:
    """The target device is read off the attribute itself (`self.t.to(self.t.device)`, or a local
    bound from an expression that reads it): the move changes nothing."""
    device = move.device
    if device is None:
        return False
    if _reads_attr(device, method.self_name, attr):
        return True
    if isinstance(device, cst.Name):
        for site in method.sites:
            small = site.site.small
            if isinstance(small, cst.Assign) and device.value in set(_stored_names_of(small)):
                if _reads_attr(small.value, method.self_name, attr):
                    return True
    return False


def _reads_attr(node: cst.CSTNode, me: str, attr: str) -> bool:
    return any(
        isinstance(n, cst.Attribute) and isinstance(n.value, cst.Name) and n.value.value == me and n.attr.value == attr
        for n in nodes_of(node, cst.Attribute)
    )


def _stored_names_of(small: cst.Assign) -> Iterator[str]:
    for target in small.targets:
        yield from stored_names(target.target)
