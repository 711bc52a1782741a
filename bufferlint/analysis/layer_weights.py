"""Frozen weights a module puts into the torch layers it holds.

`self.emb = nn.Embedding(c_in, d)`, then `self.emb.weight = nn.Parameter(table, requires_grad=False)`
(the sinusoidal time embedding of the Informer family), or a fixed Sobel kernel put into an
`nn.Conv2d` the same way: a constant the layer reads as its weight, kept as a parameter nothing
trains. The layer reads `weight` itself, so no rewrite can register it in place: the remedy is a
buffer applied with `torch.nn.functional` (`F.embedding(x, self.table)`), which a maintainer writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional

import libcst as cst

from bufferlint.analysis import torch_api
from bufferlint.analysis.classes import ClassInfo, ValueKind
from bufferlint.analysis.flow import is_self_attr
from bufferlint.analysis.intent import construction_methods
from bufferlint.analysis.names import Qualify
from bufferlint.analysis.parameters import frozen_parameter_data, frozen_receiver
from bufferlint.analysis.tensors import TensorInference
from bufferlint.analysis.walk import is_name, nodes_of

_LAYER_TENSORS = frozenset(("weight", "bias"))


@dataclass(frozen=True)
class FrozenLayerWeight:
    """`self.<layer>.<name> = nn.Parameter(<data>, requires_grad=False)` while constructing."""

    layer: str
    name: str
    layer_class: str  # the torch layer, qualified (`torch.nn.Embedding`)
    statement: cst.CSTNode  # where the table goes in
    filled: bool = False  # filled in place (`self.conv.weight.data.fill_(1.)`) and frozen apart


def frozen_layer_weights(info: ClassInfo, inference: TensorInference, qualify: Qualify) -> Iterator[FrozenLayerWeight]:
    """The frozen parameters the class's construction puts into torch layers it builds itself."""
    layers = _held_layers(info, qualify)
    if not layers:
        return
    for func, me in construction_methods(info):
        for assign in nodes_of(func.body, cst.Assign):
            if len(assign.targets) != 1:
                continue
            target = assign.targets[0].target
            if not (isinstance(target, cst.Attribute) and target.attr.value in _LAYER_TENSORS and is_self_attr(target.value, me)):
                continue
            layer = target.value.attr.value  # type: ignore[attr-defined]
            data = frozen_parameter_data(assign.value, inference)
            if layer in layers and isinstance(data, cst.BaseExpression) and _built_here(data, func, qualify):
                yield FrozenLayerWeight(layer, target.attr.value, layers[layer], assign)


def filled_layer_weights(info: ClassInfo, qualify: Qualify) -> Iterator[FrozenLayerWeight]:
    """The weights of torch layers the class builds that its construction fills with a constant
    and freezes there (`self.conv.weight.data.fill_(1.)`, then `self.conv.weight.requires_grad_(False)`:
    a fixed summation or Sobel kernel kept in a conv)."""
    layers = _held_layers(info, qualify)
    if not layers:
        return
    for func, me in construction_methods(info):
        frozen = _frozen_held(func, me)
        for node in nodes_of(func.body, (cst.Assign, cst.Call)) if frozen else ():
            filled = _filled_layer_tensor(node, func, me, qualify)
            if filled is not None and filled in frozen and filled[0] in layers:
                yield FrozenLayerWeight(filled[0], filled[1], layers[filled[0]], node, filled=True)


def _frozen_held(func: cst.FunctionDef, me: str) -> frozenset[tuple[str, str]]:
    """(layer, tensor) for each `self.<layer>.<weight|bias>` the method freezes, one by one or
    under `for p in self.<layer>.parameters(): p.requires_grad = False` (both then)."""
    frozen: set[tuple[str, str]] = set()
    for receiver, whole in _freezes(func):
        if whole and isinstance(receiver, cst.Attribute) and is_self_attr(receiver, me):
            frozen.update((receiver.attr.value, name) for name in _LAYER_TENSORS)
        elif not whole:
            held = _held_tensor(receiver, me)
            if held is not None:
                frozen.add(held)
    return frozenset(frozen)


def _freezes(func: cst.FunctionDef) -> Iterator[tuple[cst.BaseExpression, bool]]:
    """What the method freezes: `r` of each `r.requires_grad = False` / `r.requires_grad_(False)`
    (False: that tensor), and `m` of each loop `for p in m.parameters(): p.requires_grad = False`
    (True: all of its parameters)."""
    for node in nodes_of(func.body, (cst.Assign, cst.Call)):
        receiver = frozen_receiver(node)
        if receiver is not None:
            yield receiver, False
    for loop in nodes_of(func.body, cst.For):
        owner = _frozen_by_loop(loop)
        if owner is not None:
            yield owner, True


def _frozen_by_loop(loop: cst.For) -> Optional[cst.BaseExpression]:
    """`m` of `for p in m.parameters(): p.requires_grad = False` (or `requires_grad_(False)`)."""
    over, target = loop.iter, loop.target
    if not (isinstance(over, cst.Call) and isinstance(over.func, cst.Attribute) and over.func.attr.value == "parameters"):
        return None
    if not isinstance(target, cst.Name):
        return None
    receivers = map(frozen_receiver, nodes_of(loop.body, (cst.Assign, cst.Call)))
    return over.func.value if any(isinstance(r, cst.Name) and r.value == target.value for r in receivers) else None


def _held_tensor(node: Optional[cst.BaseExpression], me: str) -> Optional[tuple[str, str]]:
    """(layer, tensor) for `self.<layer>.<weight|bias>`."""
    if isinstance(node, cst.Attribute) and node.attr.value in _LAYER_TENSORS:
        inner = node.value
        if isinstance(inner, cst.Attribute) and is_self_attr(inner, me):
            return inner.attr.value, node.attr.value
    return None


def _filled_layer_tensor(node: cst.CSTNode, func: cst.FunctionDef, me: str, qualify: Qualify) -> Optional[tuple[str, str]]:
    """(layer, tensor) that the statement fills with a constant: `self.conv.weight.data = <table>`,
    `.data.fill_(<literal>)`, `.data.copy_(<table>)`; a table the method computes (`_built_here`)."""
    if isinstance(node, cst.Assign) and len(node.targets) == 1:
        target = node.targets[0].target
        if isinstance(target, cst.Attribute) and target.attr.value == "data" and _built_here(node.value, func, qualify):
            return _held_tensor(target.value, me)
        return None
    if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and len(node.args) == 1):
        return None
    receiver, method, given = node.func.value, node.func.attr.value, node.args[0].value
    if isinstance(receiver, cst.Attribute) and receiver.attr.value == "data":
        receiver = receiver.value  # `.data.fill_(1.)`, or on the parameter under `torch.no_grad()`
    constant = _literal(given) if method == "fill_" else method == "copy_" and _built_here(given, func, qualify)
    return _held_tensor(receiver, me) if constant else None


def _literal(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.UnaryOperation):
        node = node.expression
    return isinstance(node, (cst.Integer, cst.Float))


def _built_here(data: cst.BaseExpression, func: cst.FunctionDef, qualify: Qualify, depth: int = 0) -> bool:
    """The data is a table the method computes with torch or NumPy (`torch.arange(n).view(...)`,
    or a local every binding of which is one): a constant, not weights loaded from a checkpoint
    (`weights.get_tensor(name)` in an inference server, which freezes everything it loads)."""
    while isinstance(data, cst.Call) and isinstance(data.func, cst.Attribute) and qualify(data.func) is None:
        data = data.func.value  # `.float()`, `.view(...)`, `.repeat(...)` on the table
    if isinstance(data, cst.Call):
        qualified = qualify(data.func) or ""
        if qualified.rpartition(".")[2] in _LOADERS:  # `torch.load(path)`, `np.load(path)`
            return False
        return qualified.split(".")[0] in ("torch", "numpy") and not any(_loaded(a.value) for a in data.args)
    if isinstance(data, cst.BinaryOperation):  # `torch.tensor([...]) / 4`
        parts = (data.left, data.right)
        return any(_built_here(p, func, qualify, depth) for p in parts) and all(
            _literal(p) or _built_here(p, func, qualify, depth) for p in parts
        )
    if isinstance(data, cst.Name) and depth < 2:
        values = [
            assign.value for assign in nodes_of(func.body, cst.Assign)
            if any(isinstance(t.target, cst.Name) and t.target.value == data.value for t in assign.targets)
        ]
        fresh = [v for v in values if not _rebuilds(v, data.value)]  # `k = k.repeat(g, 1, 1, 1)` keeps what k was
        return bool(fresh) and all(_built_here(v, func, qualify, depth + 1) for v in fresh)
    return False


def _rebuilds(value: cst.BaseExpression, name: str) -> bool:
    """`name.repeat(...)`, `name.float().view(...)`: a method chain on the name itself."""
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
        value = value.func.value
    return isinstance(value, cst.Name) and value.value == name


def _loaded(arg: cst.BaseExpression) -> bool:
    """The argument reads something loaded (`torch.from_numpy(np.load(path))`, `weights.get_tensor(k)`)."""
    return any(isinstance(call.func, cst.Attribute) and call.func.attr.value in _LOADERS for call in nodes_of(arg, cst.Call))


_LOADERS = frozenset(("load", "get_tensor", "get_sharded", "load_state_dict", "from_pretrained", "loadtxt", "fromfile"))


def _held_layers(info: ClassInfo, qualify: Qualify) -> dict[str, str]:
    """Attributes every assignment of which builds one torch layer class (`nn.Embedding(...)`)."""
    layers: dict[str, str] = {}
    for attr in {a.attr for a in info.assignments if a.kind is ValueKind.MODULE}:
        built = {  # `self.emb.weight = ...` is no assignment of `emb` itself
            qualify(a.value.func) if isinstance(a.value, cst.Call) else None
            for a in info.assignments_to(attr)
            if isinstance(a.target.value, cst.Name)
        }
        if len(built) == 1:
            layer = built.pop()
            if layer is not None and torch_api.is_layer_base(layer):
                layers[attr] = layer
    return layers


@dataclass(frozen=True)
class FrozenOwnWeight:
    """`self.weight.data = <table>` in the constructor of a torch layer subclass that freezes that
    weight there too (EDSR's `MeanShift(nn.Conv2d)`: a fixed colour shift kept in a conv)."""

    name: str
    layer_class: str  # the torch layer it subclasses, qualified (`torch.nn.Conv2d`)
    statement: cst.Assign  # where the table goes in


def frozen_own_weights(info: ClassInfo, qualify: Qualify) -> Iterator[FrozenOwnWeight]:
    """The weights a torch layer subclass fills with a table it computes and freezes, while
    constructing; only in a class that holds nothing else (a module freezing everything it holds
    is a frozen pretrained part, not a constant)."""
    layer = next((base for base in info.qualified_bases if torch_api.is_layer_base(base)), None)
    if layer is None or info.submodules or info.parameters or info.registered_parameters:
        return
    for func, me in construction_methods(info):
        frozen = _frozen_here(func, me)
        for assign in nodes_of(func.body, cst.Assign) if frozen else ():
            target = assign.targets[0].target if len(assign.targets) == 1 else None
            name = _own_data_target(target, me)
            if name in frozen and _computed(assign.value, qualify):
                yield FrozenOwnWeight(name, layer, assign)


def _own_data_target(target: Optional[cst.BaseExpression], me: str) -> Optional[str]:
    """`weight` for `self.weight.data`."""
    if isinstance(target, cst.Attribute) and target.attr.value == "data":
        inner = target.value
        if isinstance(inner, cst.Attribute) and inner.attr.value in _LAYER_TENSORS and is_self_attr(inner, me):
            return inner.attr.value
    return None


def _frozen_here(func: cst.FunctionDef, me: str) -> frozenset[str]:
    """The layer tensors the method freezes: `self.weight.requires_grad = False` (or
    `requires_grad_(False)`) each, and both under `for p in self.parameters(): p.requires_grad =
    False`. `self.requires_grad = False` sets a plain attribute of the module and freezes nothing."""
    frozen: set[str] = set()
    for receiver, whole in _freezes(func):
        if whole and is_name(receiver, me):
            frozen.update(_LAYER_TENSORS)
        elif not whole and isinstance(receiver, cst.Attribute) and is_self_attr(receiver, me) and receiver.attr.value in _LAYER_TENSORS:
            frozen.add(receiver.attr.value)
    return frozenset(frozen)


def _computed(value: cst.BaseExpression, qualify: Qualify) -> bool:
    """A table the expression computes with torch or NumPy (`torch.eye(3).view(3, 3, 1, 1) / std`),
    reading nothing loaded."""
    calls = list(nodes_of(value, cst.Call))
    roots = {(qualify(call.func) or "").split(".")[0] for call in calls}
    return bool(roots & {"torch", "numpy"}) and not any(_loaded(call) for call in calls)
