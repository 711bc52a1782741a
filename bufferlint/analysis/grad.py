"""Whether a tensor expression requires grad: literal evidence only (`requires_grad=True`,
`.requires_grad_()`, `nn.Parameter(...)`, a parameter of the module), never guesses.

BUF007 asks this about tensors handed to `register_buffer`; BUF008 uses the `requires_grad`
argument helpers to recognise parameters created frozen.
"""

from __future__ import annotations

from typing import Callable, Optional

import libcst as cst

from bufferlint.analysis import torch_api
from bufferlint.analysis.classes import ClassInfo
from bufferlint.analysis.flow import branch_arms, exclusive, iter_sites, self_name
from bufferlint.analysis.tensors import TensorInference
from bufferlint.analysis.walk import nodes_of

# Decorators and context managers under which nothing computed requires grad.
_GRAD_OFF = frozenset(("torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad", "torch.autograd.grad_mode.no_grad"))
# Tensor methods whose result never requires grad, whatever the receiver.
_GRAD_STOPPING_METHODS = frozenset("detach detach_ new_zeros new_ones new_empty new_full new_tensor".split())


def is_literal(node: Optional[cst.BaseExpression], value: str) -> bool:
    return isinstance(node, cst.Name) and node.value == value


def argument(call: cst.Call, keyword: str, position: int) -> Optional[cst.BaseExpression]:
    """The value passed as `keyword=` or as the `position`-th positional argument."""
    positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    return positional[position].value if len(positional) > position else None


def asks_for_grad(value: cst.BaseExpression) -> bool:
    """`value` is built asking for gradients: `requires_grad=` or `.requires_grad_()` with a
    flag other than a literal False."""
    for node in nodes_of(value, (cst.Arg, cst.Call)):
        if isinstance(node, cst.Arg):
            if node.keyword is not None and node.keyword.value == "requires_grad" and not is_literal(node.value, "False"):
                return True
        elif isinstance(node, cst.Call):
            flag = requires_grad_flag(node)
            if flag is not None and not is_literal(flag, "False"):
                return True
    return False


def leaf_lister(info: ClassInfo, name: str) -> Optional[str]:
    """A method of the class or a base of the file that returns `self.<name>` paired with its
    name (`return [("weight", self.weight), ...]`): a meta-learning module's `named_leaves()`,
    through which its own update step trains the tensors it keeps as buffers."""
    for owner in (info, *info.ancestors()):
        for lister, func in owner.methods.items():
            me = self_name(func)
            for ret in nodes_of(func.body, cst.Return):
                if ret.value is not None and any(_named_pair(pair, me, name) for pair in nodes_of(ret.value, cst.Tuple)):
                    return f"{owner.name}.{lister}()"
    return None


def _named_pair(pair: cst.Tuple, me: Optional[str], name: str) -> bool:
    """`("weight", self.weight)`."""
    if len(pair.elements) != 2 or me is None:
        return False
    label, value = pair.elements[0].value, pair.elements[1].value
    return (
        isinstance(label, cst.SimpleString) and label.evaluated_value == name
        and isinstance(value, cst.Attribute) and is_literal(value.value, me) and value.attr.value == name
    )


def method_name(call: cst.Call) -> Optional[str]:
    return call.func.attr.value if isinstance(call.func, cst.Attribute) else None


def requires_grad_flag(call: cst.Call) -> Optional[cst.BaseExpression]:
    """For `<x>.requires_grad_(flag)`: the flag (`True` when omitted); None for other calls."""
    if method_name(call) != "requires_grad_":
        return None
    flag = argument(call, "requires_grad", 0)
    return flag if flag is not None else cst.Name("True")


class GradInference:
    """Explains why an expression requires grad, or answers None when nothing says it does.

    `parameter` tells whether `self.<name>` (or a dotted path under self) is a parameter.
    """

    def __init__(self, inference: TensorInference, parameter: Callable[[cst.BaseExpression], Optional[str]]) -> None:
        self.inference = inference
        self.parameter = parameter

    def reason(self, node: cst.BaseExpression, grad_locals: dict[str, str]) -> Optional[str]:
        if isinstance(node, cst.Name):
            return grad_locals.get(node.value)
        if isinstance(node, cst.Attribute):
            return self.parameter(node)
        if isinstance(node, cst.Subscript):
            return self.reason(node.value, grad_locals)
        if isinstance(node, cst.BinaryOperation):
            return self.reason(node.left, grad_locals) or self.reason(node.right, grad_locals)
        if isinstance(node, cst.UnaryOperation):
            return self.reason(node.expression, grad_locals)
        if isinstance(node, cst.Call):
            return self._call_reason(node, grad_locals)
        return None

    def _call_reason(self, call: cst.Call, grad_locals: dict[str, str]) -> Optional[str]:
        if self.inference.qualify(call.func) in torch_api.PARAMETER_CLASSES:
            # `nn.Parameter(idx, requires_grad=False)` as a buffer is inert: no grad, moved, saved.
            return None if is_literal(argument_keyword(call, "requires_grad"), "False") else "an nn.Parameter"
        flag = requires_grad_flag(call)
        if flag is not None:
            return "a tensor after .requires_grad_()" if is_literal(flag, "True") else None
        if is_literal(argument_keyword(call, "requires_grad"), "True"):
            return "a tensor created with requires_grad=True"
        name = method_name(call)
        if name is not None and name not in _GRAD_STOPPING_METHODS and self.inference.qualify(call.func) is None:
            # `.float()`, `.clone()`, `.t()` keep the receiver's autograd history.
            assert isinstance(call.func, cst.Attribute)
            return self.reason(call.func.value, grad_locals)
        return None

    def computed_without_grad(self, node: cst.BaseExpression, function: cst.FunctionDef, line: cst.SimpleStatementLine) -> bool:
        """`node` is computed (not a parameter itself, not made to require grad) where grad is off:
        in a method under `@torch.no_grad()` or in a `with torch.no_grad():` block, what it derives
        from parameters carries no grad (`self.biases[:, idx]` for an eval-mode cache)."""
        if isinstance(node, (cst.Name, cst.Attribute)):
            return False  # the parameter itself (or a local that may be one) keeps requires_grad
        if isinstance(node, cst.Call) and self._call_reason(node, {}) is not None and method_name(node) is None:
            return False  # `nn.Parameter(...)`, a factory given requires_grad=True: grad mode does not matter
        if isinstance(node, cst.Call) and (requires_grad_flag(node) is not None or argument_keyword(node, "requires_grad") is not None):
            return False
        return self._grad_off(function, line)

    def _grad_off(self, function: cst.FunctionDef, line: cst.SimpleStatementLine) -> bool:
        for decorator in function.decorators:
            target = decorator.decorator
            if self.inference.qualify(target.func if isinstance(target, cst.Call) else target) in _GRAD_OFF:
                return True
        for block in nodes_of(function.body, cst.With):
            if any(self._turns_grad_off(item.item) for item in block.items):
                if any(inner is line for inner in nodes_of(block.body, cst.SimpleStatementLine)):
                    return True
        return False

    def _turns_grad_off(self, item: cst.BaseExpression) -> bool:
        if not isinstance(item, cst.Call):
            return False
        name = self.inference.qualify(item.func)
        if name in _GRAD_OFF:
            return True
        return name == "torch.set_grad_enabled" and bool(item.args) and is_literal(item.args[0].value, "False")

    def locals_before(self, function: cst.FunctionDef, stop: cst.BaseSmallStatement) -> dict[str, str]:
        """Local names that hold grad-requiring tensors when `stop` runs (source order; not what
        another arm of an `if` around `stop` binds: that arm did not run)."""
        found: dict[str, str] = {}
        arms = branch_arms(function)
        at_stop = arms.get(id(stop), ())
        for site in iter_sites(function):
            if site.small is stop:
                break
            if isinstance(site.small, cst.Assign) and not exclusive(arms.get(id(site.small), ()), at_stop):
                reason = self.reason(site.small.value, found)
                for target in site.small.targets:
                    if isinstance(target.target, cst.Name):
                        _set(found, target.target.value, reason)
        return found


def argument_keyword(call: cst.Call, keyword: str) -> Optional[cst.BaseExpression]:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    return None


def _set(found: dict[str, str], name: str, reason: Optional[str]) -> None:
    if reason is None:
        found.pop(name, None)
    else:
        found[name] = reason
