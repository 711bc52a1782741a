"""Is this expression a tensor? One answer, shared by every rule."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, Optional

import libcst as cst

from bufferlint.analysis import torch_api
from bufferlint.analysis.names import ImportMap


@dataclass
class Scope:
    """What names mean at one point of a function body."""

    self_name: Optional[str] = None
    tensor_locals: set[str] = field(default_factory=set)
    tensor_attrs: frozenset[str] = frozenset()
    tensor_methods: frozenset[str] = frozenset()

    def child(self) -> "Scope":
        return Scope(self.self_name, set(self.tensor_locals), self.tensor_attrs, self.tensor_methods)


def keyword_names(call: cst.Call) -> frozenset[str]:
    """The keywords a call passes, less those given a literal `False`: `as_tuple=False`,
    `return_counts=False` ask for what leaving them out does."""
    return frozenset(
        arg.keyword.value for arg in call.args
        if arg.keyword is not None and not (type(arg.value) is cst.Name and arg.value.value == "False")  # type: ignore[attr-defined]
    )


def positional_count(call: cst.Call) -> int:
    return sum(1 for arg in call.args if arg.keyword is None and not arg.star)


_SUBMODULE_PARAMETERS = frozenset(("weight", "bias"))
_COMPARISON_NOT_TENSOR = (cst.Is, cst.IsNot, cst.In, cst.NotIn)


class TensorInference:
    """Decides whether expressions are tensors from their shape, imports and local assignments."""

    def __init__(
        self, imports: ImportMap, tensor_functions: Callable[[str], bool] = lambda name: False,
        module_tensor: Callable[[str], bool] = lambda name: False,
    ) -> None:
        self.imports = imports
        # Functions of this file (by bare name) that are known to return tensors.
        self.tensor_functions = tensor_functions
        # Names the file binds once, at its top, to a tensor (`IMAGENET_MEAN`, module_tensors.py).
        self.module_tensor = module_tensor

    def qualify(self, node: cst.BaseExpression) -> Optional[str]:
        return self.imports.qualify_or_star(node)

    def is_tensor(self, node: cst.BaseExpression, scope: Scope) -> bool:
        handler = _HANDLERS.get(type(node))
        return handler(self, node, scope) if handler else False

    def is_tensor_or_none(self, node: cst.BaseExpression, scope: Scope) -> bool:
        return is_none(node) or self.is_tensor(node, scope)

    def is_self_attr(self, node: cst.BaseExpression, scope: Scope) -> Optional[str]:
        """`self.x` -> "x" when `self` is the instance parameter of the scope."""
        # Exact type tests here and below (hot paths; these libcst classes have no subclasses, and
        # `isinstance` on them goes through ABCMeta).
        if (
            type(node) is cst.Attribute
            and type(node.value) is cst.Name  # type: ignore[attr-defined]
            and scope.self_name is not None
            and node.value.value == scope.self_name  # type: ignore[attr-defined]
        ):
            return node.attr.value  # type: ignore[attr-defined,no-any-return]
        return None

    def _name(self, node: cst.Name, scope: Scope) -> bool:
        return node.value in scope.tensor_locals or self.module_tensor(node.value)

    def _attribute(self, node: cst.Attribute, scope: Scope) -> bool:
        attr = self.is_self_attr(node, scope)
        if attr is not None:
            return attr in scope.tensor_attrs
        if node.attr.value in _SUBMODULE_PARAMETERS and self.is_self_attr(node.value, scope) is not None:
            return True  # `self.lin.weight`: a submodule's parameter
        return node.attr.value in torch_api.TENSOR_ATTRIBUTES and self.is_tensor(node.value, scope)

    def is_torch_tensor_call(self, call: cst.Call) -> bool:
        """A call the file's imports make a torch callable that returns a tensor (`torch.cat(...)`,
        not `torch.nn.Linear(...)`)."""
        qualified = self.qualify(call.func)
        return qualified is not None and _torch_returns_tensor(qualified, call)

    def _call(self, node: cst.Call, scope: Scope) -> bool:
        func = node.func
        qualified = self.qualify(func)
        if qualified is not None:
            return _torch_returns_tensor(qualified, node)
        if isinstance(func, cst.Name):
            return self.tensor_functions(func.value)
        if isinstance(func, cst.Attribute):
            if self.is_self_attr(func, scope) in scope.tensor_methods:
                return True
            return self.is_tensor(func.value, scope) and torch_api.method_returns_tensor(
                func.attr.value, positional_count(node), keyword_names(node)
            )
        return False

    def _binary(self, node: cst.BinaryOperation, scope: Scope) -> bool:
        return self.is_tensor(node.left, scope) or self.is_tensor(node.right, scope)

    def _unary(self, node: cst.UnaryOperation, scope: Scope) -> bool:
        return not isinstance(node.operator, cst.Not) and self.is_tensor(node.expression, scope)

    def _comparison(self, node: cst.Comparison, scope: Scope) -> bool:
        if any(isinstance(target.operator, _COMPARISON_NOT_TENSOR) for target in node.comparisons):
            return False
        operands = [node.left, *(target.comparator for target in node.comparisons)]
        return any(self.is_tensor(operand, scope) for operand in operands)

    def _subscript(self, node: cst.Subscript, scope: Scope) -> bool:
        return self.is_tensor(node.value, scope)

    def _if_exp(self, node: cst.IfExp, scope: Scope) -> bool:
        branches = (node.body, node.orelse)
        return all(self.is_tensor_or_none(b, scope) for b in branches) and any(
            self.is_tensor(b, scope) for b in branches
        )


def _torch_returns_tensor(qualified: str, call: cst.Call) -> bool:
    return torch_api.torch_function_returns_tensor(qualified, positional_count(call), keyword_names(call))


def track_locals(small: cst.BaseSmallStatement, scope: Scope, inference: TensorInference) -> None:
    """Record which local names hold tensors after `small` runs (flow-insensitive within branches)."""
    kind = type(small)
    if kind is cst.Assign:
        for target in small.targets:  # type: ignore[attr-defined]
            if type(target.target) is cst.Name:
                _set_local(scope, target.target.value, inference.is_tensor(small.value, scope))  # type: ignore[attr-defined]
            for name in _unpacked_names(target.target):
                scope.tensor_locals.discard(name)
    elif kind is cst.AnnAssign and type(small.target) is cst.Name and small.value is not None:  # type: ignore[attr-defined]
        _set_local(scope, small.target.value, inference.is_tensor(small.value, scope))  # type: ignore[attr-defined]


def _set_local(scope: Scope, name: str, tensor: bool) -> None:
    if tensor:
        scope.tensor_locals.add(name)
    else:
        scope.tensor_locals.discard(name)


def _unpacked_names(target: cst.BaseExpression) -> list[str]:
    kind = type(target)
    if kind is not cst.Tuple and kind is not cst.List:
        return []
    return [e.value.value for e in target.elements if type(e.value) is cst.Name]  # type: ignore[attr-defined]


def is_none(node: cst.BaseExpression) -> bool:
    return type(node) is cst.Name and node.value == "None"  # type: ignore[attr-defined]


_HANDLERS: Mapping[type, Callable[[TensorInference, cst.BaseExpression, Scope], bool]] = {
    cst.Name: TensorInference._name,  # type: ignore[dict-item]
    cst.Attribute: TensorInference._attribute,  # type: ignore[dict-item]
    cst.Call: TensorInference._call,  # type: ignore[dict-item]
    cst.BinaryOperation: TensorInference._binary,  # type: ignore[dict-item]
    cst.UnaryOperation: TensorInference._unary,  # type: ignore[dict-item]
    cst.Comparison: TensorInference._comparison,  # type: ignore[dict-item]
    cst.Subscript: TensorInference._subscript,  # type: ignore[dict-item]
    cst.IfExp: TensorInference._if_exp,  # type: ignore[dict-item]
}
