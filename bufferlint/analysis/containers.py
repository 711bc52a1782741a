"""Is this expression a list, tuple, set or dict holding tensors (or nn.Parameters)?

`.to()`, `.cuda()` and `.half()` only reach registered parameters and buffers: tensors inside a
Python container attribute are never moved, cast or saved. Recognised: literals and
comprehensions whose elements (dict: values) are tensors or nested such containers,
`list(...)`/`tuple(...)` of those, the tuple-returning splitters (`torch.split`, `x.chunk(...)`,
`torch.meshgrid`...), and local names bound to any of these, or to an empty literal that the same
method then fills with `.append(t)`, `.extend(...)`, `.insert(i, t)` or `name[k] = t`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import libcst as cst

from bufferlint.analysis import torch_api
from bufferlint.analysis.classes import AttrAssignment, ClassInfo, tensor_params
from bufferlint.analysis.flow import is_self_attr, iter_sites, self_name
from bufferlint.analysis.tensors import Scope, TensorInference, positional_count, track_locals
from bufferlint.analysis.walk import nodes_of

# torch functions and tensor methods that return a tuple of tensors.
SPLITTING_FUNCTIONS = frozenset(
    "split chunk unbind tensor_split hsplit vsplit dsplit meshgrid broadcast_tensors".split()
)
_LITERALS = {cst.List: "list", cst.Tuple: "tuple", cst.Set: "set", cst.Dict: "dict",
             cst.ListComp: "list", cst.SetComp: "set", cst.DictComp: "dict"}
_GROWING_METHODS = frozenset(("append", "extend", "insert", "add"))
# Every method that changes a list, dict or set in place.
IN_PLACE_METHODS = _GROWING_METHODS | frozenset("update setdefault pop popitem remove discard clear sort reverse".split())


@dataclass(frozen=True)
class Contents:
    """What a container expression holds: `kind` is list/tuple/set/dict, `items` "tensors" or
    "nn.Parameters"."""

    kind: str
    items: str


def may_hold_tensors(node: cst.BaseExpression) -> bool:
    """A syntactic first look: could `contents()` answer anything but None for `node`?"""
    if isinstance(node, (cst.Name, *_LITERALS)):
        return True
    if not isinstance(node, cst.Call):
        return False
    func = node.func
    if isinstance(func, cst.Name):
        return func.value in ("list", "tuple", "dict", "set") or func.value in SPLITTING_FUNCTIONS
    return isinstance(func, cst.Attribute) and func.attr.value in SPLITTING_FUNCTIONS


class ContainerInference:
    def __init__(self, inference: TensorInference) -> None:
        self.inference = inference

    def contents(self, node: cst.BaseExpression, scope: Scope, local: Optional[dict[str, Contents]] = None) -> Optional[Contents]:
        local = local or {}
        if isinstance(node, cst.Name):
            return local.get(node.value)
        kind = _LITERALS.get(type(node))
        if kind is not None:
            items = self._items(_elements(node), scope, local)
            return Contents(kind, items) if items else None
        if isinstance(node, cst.Call):
            return self._call_contents(node, scope, local)
        return None

    def holds(self, node: cst.BaseExpression, scope: Scope, local: dict[str, Contents]) -> Optional[str]:
        """"tensors" or "nn.Parameters" when `node` is one, or a container of them."""
        if isinstance(node, cst.Call) and self.inference.qualify(node.func) in torch_api.PARAMETER_CLASSES:
            return "nn.Parameters"
        if self.inference.is_tensor(node, scope):
            return "tensors"
        inner = self.contents(node, scope, local)
        return inner.items if inner is not None else None

    def _items(self, elements: list[cst.BaseExpression], scope: Scope, local: dict[str, Contents]) -> Optional[str]:
        found = [self.holds(e, scope, local) for e in elements]
        if "tensors" in found:
            return "tensors"
        return "nn.Parameters" if "nn.Parameters" in found else None

    def _call_contents(self, call: cst.Call, scope: Scope, local: dict[str, Contents]) -> Optional[Contents]:
        func = call.func
        if isinstance(func, cst.Name) and func.value in ("list", "tuple") and positional_count(call) == 1:
            inner = call.args[0].value
            if isinstance(inner, cst.GeneratorExp):
                items = self._items([inner.elt], scope, local)
                return Contents(func.value, items) if items else None
            found = self.contents(inner, scope, local)
            return Contents(func.value, found.items) if found is not None else None
        qualified = self.inference.qualify(func)
        if qualified is not None:
            head, _, name = qualified.rpartition(".")
            return Contents("tuple", "tensors") if head == "torch" and name in SPLITTING_FUNCTIONS else None
        if isinstance(func, cst.Attribute) and func.attr.value in SPLITTING_FUNCTIONS:
            return Contents("tuple", "tensors") if self.inference.is_tensor(func.value, scope) else None
        return None


def _elements(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(node, (cst.List, cst.Tuple, cst.Set)):
        return [e.value for e in node.elements if isinstance(e, cst.Element)]
    if isinstance(node, cst.Dict):
        return [e.value for e in node.elements if isinstance(e, cst.DictElement)]
    if isinstance(node, (cst.ListComp, cst.SetComp)):
        return [node.elt]
    if isinstance(node, cst.DictComp):
        return [node.value]
    return []


def is_empty_literal(node: cst.BaseExpression) -> Optional[str]:
    if isinstance(node, (cst.List, cst.Dict)) and not node.elements:
        return "list" if isinstance(node, cst.List) else "dict"
    if isinstance(node, cst.Call) and not node.args and isinstance(node.func, cst.Name) and node.func.value in ("list", "dict", "set"):
        return node.func.value  # type: ignore[attr-defined]
    return None


class MethodContainers:
    """Walks one method in source order, tracking tensor locals and container locals (also
    `self.<attr>` keys, for attributes filled after `self.<attr> = []`), so that an attribute
    assignment's value can be judged where it runs."""

    def __init__(self, containers: ContainerInference, function: cst.FunctionDef, template: Scope) -> None:
        self.containers = containers
        self.function = function
        self.self_name = self_name(function)
        inference = containers.inference
        self.scope = Scope(self.self_name, tensor_params(function, inference), template.tensor_attrs, template.tensor_methods)
        self.local: dict[str, Contents] = {}
        self.empty: dict[str, str] = {}
        self.before: dict[int, tuple[Scope, dict[str, Contents]]] = {}
        for site in iter_sites(function):
            self.before[id(site.small)] = (self.scope.child(), dict(self.local))
            self._track(site.small)
            track_locals(site.small, self.scope, inference)

    def contents_at(self, small: cst.BaseSmallStatement, value: cst.BaseExpression) -> Optional[Contents]:
        """What `value` holds when `small` (a statement of this method) runs."""
        scope, local = self.before.get(id(small), (self.scope, self.local))
        return self.containers.contents(value, scope, local)

    def filled_attr(self, attr: str, value: cst.BaseExpression) -> Optional[Contents]:
        """`self.<attr> = []` (this `value`) followed by `self.<attr>.append(<tensor>)` in this method."""
        if self.self_name is None or is_empty_literal(value) is None:
            return None
        return self.local.get(f"{self.self_name}.{attr}")

    def _key(self, node: cst.BaseExpression) -> Optional[str]:
        if isinstance(node, cst.Name):
            return node.value
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == self.self_name:
            return f"{self.self_name}.{node.attr.value}"
        return None

    def _track(self, small: cst.BaseSmallStatement) -> None:
        if isinstance(small, cst.Assign):
            for target in small.targets:
                if isinstance(target.target, cst.Subscript):
                    self._grow(target.target.value, small.value)
                else:
                    self._bind(target.target, small.value)
        elif isinstance(small, cst.AnnAssign) and small.value is not None:
            self._bind(small.target, small.value)
        elif isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            call = small.value
            if isinstance(call.func, cst.Attribute) and call.func.attr.value in _GROWING_METHODS and call.args:
                self._grow(call.func.value, call.args[-1].value)

    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        key = self._key(target)
        if key is None:
            return
        self.local.pop(key, None)
        self.empty.pop(key, None)
        found = self.containers.contents(value, self.scope, self.local)
        if found is not None and "." not in key:
            self.local[key] = found
        kind = is_empty_literal(value)
        if kind is not None:
            self.empty[key] = kind

    def _grow(self, target: cst.BaseExpression, item: cst.BaseExpression) -> None:
        key = self._key(target)
        if key is None or key not in self.empty or key in self.local:
            return
        holds = self.containers.holds(item, self.scope, self.local)
        if holds is not None:
            self.local[key] = Contents(self.empty[key], holds)


# what a submodule registers as its parameters, read through the attribute that holds it
_LAYER_PARAMETERS = frozenset(("weight", "bias"))


def registered_parameters_only(info: ClassInfo, assignment: AttrAssignment) -> bool:
    """`self.w_conv = [self.conv1.weight, self.conv2.weight]` (and what the method appends to it
    the same way): references to parameters the module registers, which `.to()`, `.cuda()` and
    `.half()` convert in place, so the list keeps pointing at the moved tensors."""
    value, me = assignment.value, assignment.scope.self_name
    if not isinstance(value, (cst.List, cst.Tuple)) or not value.elements or me is None:
        return False
    items = [e.value for e in value.elements]
    for call in nodes_of(assignment.method.body, cst.Call):
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("append", "extend", "insert") and is_self_attr(func.value, me, assignment.attr):
            items.extend(a.value for a in call.args)
    return all(_parameter_reference(item, info, me) for item in items)


def _parameter_reference(node: cst.BaseExpression, info: ClassInfo, me: str) -> bool:
    """`self.<registered parameter>` or `self.<layer>.weight` / `self.<layers>[0].bias`."""
    if not isinstance(node, cst.Attribute):
        return False
    if is_self_attr(node, me):
        return node.attr.value in info.parameters
    root: cst.BaseExpression = node.value
    while isinstance(root, (cst.Attribute, cst.Subscript)):
        root = root.value
    return node.attr.value in _LAYER_PARAMETERS and isinstance(root, cst.Name) and root.value == me
