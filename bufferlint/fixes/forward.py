"""Edits for the forward-path rules: drop a per-call move, hoist a constant into `__init__`,
give a factory the input's device, unpin a hard-coded GPU."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from bufferlint.analysis.classes import ClassInfo
from bufferlint.analysis.flow import self_name
from bufferlint.analysis.forward import Move
from bufferlint.analysis.names import dotted_name
from bufferlint.analysis.walk import child_nodes, is_name, iter_nodes, nodes_of
from bufferlint.fixes.register_buffer import register_call
from bufferlint.model import Edit, Insert, Replace

# Attributes every nn.Module has: a buffer of that name raises KeyError in register_buffer.
MODULE_ATTRIBUTES = frozenset(
    """
    training forward to cuda cpu xpu mps ipu type float double half bfloat16 eval train apply
    parameters buffers children modules named_parameters named_buffers named_children
    named_modules state_dict load_state_dict register_buffer register_parameter add_module
    register_module get_submodule get_parameter get_buffer zero_grad requires_grad_ share_memory
    extra_repr to_empty dump_patches call_super_init compile
    """.split()
)


class Parents:
    """Parent links inside one function, to find the block and guard around a statement."""

    def __init__(self, root: cst.CSTNode) -> None:
        self._parent: dict[int, cst.CSTNode] = {}
        stack = [root]
        while stack:
            node = stack.pop()
            for child in child_nodes(node):
                self._parent[id(child)] = node
                stack.append(child)

    def get(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        return self._parent.get(id(node))


# -- BUF002: drop the move --------------------------------------------------------------------------
def drop_move_edits(move: Move, small: cst.BaseSmallStatement, line: cst.SimpleStatementLine, parents: Parents, attr: str) -> list[Edit]:
    """`pe = self.pe.to(x.device)` -> `pe = self.pe`; a rebinding `self.w = self.w.to(...)` goes
    away, and so does an `if self.w.device != x.device:` guard that held only that statement."""
    kept = move.without_move()
    if not _is_rebinding(small, move, kept):
        return [Replace(move.call, kept)]
    if len(line.body) > 1:
        return [Replace(small, None)]
    guard = parents.get(parents.get(line) or line)
    if isinstance(guard, cst.If) and _is_device_guard(guard, attr) and _only_statement(guard.body, line):
        return _remove_statement(guard, parents)
    return _remove_statement(line, parents)


def _is_rebinding(small: cst.BaseSmallStatement, move: Move, kept: cst.BaseExpression) -> bool:
    if not isinstance(small, (cst.Assign, cst.AnnAssign)) or small.value is not move.call or kept is not move.subject:
        return False
    targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
    return len(targets) == 1 and targets[0].deep_equals(move.subject)


def _is_device_guard(guard: cst.If, attr: str) -> bool:
    """`if self.w.device != x.device:` (either side), with no else branch."""
    test = guard.test
    if guard.orelse is not None or not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    if not isinstance(test.comparisons[0].operator, (cst.NotEqual, cst.IsNot)):
        return False
    sides = (test.left, test.comparisons[0].comparator)
    return any(
        isinstance(side, cst.Attribute) and side.attr.value == "device" and _attr_name(side.value) == attr
        for side in sides
    )


def _attr_name(node: cst.BaseExpression) -> Optional[str]:
    return node.attr.value if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) else None


def _only_statement(block: cst.BaseSuite, line: cst.BaseStatement) -> bool:
    return isinstance(block, cst.IndentedBlock) and list(block.body) == [line]


def _remove_statement(stmt: cst.BaseStatement, parents: Parents) -> list[Edit]:
    """Remove `stmt`, leaving `pass` when its block would be empty."""
    block = parents.get(stmt)
    if isinstance(block, cst.IndentedBlock) and len(block.body) == 1:
        return [Replace(stmt, cst.SimpleStatementLine(body=[cst.Pass()], leading_lines=getattr(stmt, "leading_lines", ())))]
    return [Replace(stmt, None)]


# -- BUF003: hoist a constant ---------------------------------------------------------------------
def fresh_name(info: ClassInfo, wanted: str, taken: set[str]) -> str:
    """`wanted`, or `wanted_buf`, `wanted_buf2`...: free in the class, its bases and nn.Module."""
    bound = set(taken) | info.bound_names() | {a.attr for a in info.assignments} | info.registered_buffers
    bound |= info.registered_parameters | MODULE_ATTRIBUTES
    for ancestor in info.ancestors():
        bound |= ancestor.bound_names() | {a.attr for a in ancestor.assignments} | ancestor.registered_buffers
    base = wanted.strip("_") or "const"
    candidates = [base, f"{base}_buf", *(f"{base}_buf{i}" for i in range(2, 100))]
    return next(c for c in candidates if c not in bound)


def hoist_edit(info: ClassInfo, name: str, value: cst.BaseExpression, forward_self: str) -> Optional[Edit]:
    """`self.register_buffer("<name>", <value>, persistent=False)` at the end of `__init__`."""
    init = info.init
    if init is None or info.super_init_line is None or not isinstance(init.body, cst.IndentedBlock):
        return None
    init_self = self_name(init) or "self"
    value = value.with_changes(lpar=[], rpar=[]) if getattr(value, "lpar", ()) else value
    if init_self != forward_self:
        value = value.visit(_RenameSelf(forward_self, init_self))  # type: ignore[assignment]
    line = cst.SimpleStatementLine(body=[cst.Expr(register_call(init_self, name, value))])
    return Insert(init.body.body[-1], [line], after=True)


class _RenameSelf(cst.CSTTransformer):
    def __init__(self, old: str, new: str) -> None:
        super().__init__()
        self.old, self.new = old, new

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        return updated_node.with_changes(value=self.new) if updated_node.value == self.old else updated_node


def self_attribute(self_name_: str, name: str) -> cst.Attribute:
    return cst.Attribute(value=cst.Name(self_name_), attr=cst.Name(name))


def mutated_in_place(func: cst.FunctionDef, name: str, after: Optional[cst.CSTNode] = None) -> bool:
    """`t.add_(...)`, `t[i] = ...`, `t += ...`, `out=t`: a hoisted buffer would carry the change.
    With `after` (a statement of the method's own body, outside any loop), only changes that
    follow it count: `k /= 256.` before `k = k.repeat(3, 1, 1, 1).to(x.device)` built the constant."""
    nodes = list(iter_nodes(func.body))
    start = next((index for index, node in enumerate(nodes) if node is after), None) if after is not None else None
    return any(_mutates(node, name) for node in nodes[start or 0:])  # `after` not in the tree: every change counts


def escapes(func: cst.FunctionDef, name: str) -> bool:
    """`name` leaves the call: returned, put in a container (not a list only a torch call reads,
    `torch.cat([name, pad])`), stored on an object or appended somewhere. A hoisted buffer would
    then be one tensor that every call's result shares."""
    consumed = _joined_by_torch(func)
    for node in iter_nodes(func.body):
        if isinstance(node, cst.Return) and node.value is not None and _holds(node.value, name):
            return True
        if isinstance(node, (cst.List, cst.Tuple, cst.Set, cst.Dict)) and id(node) not in consumed and _holds(node, name):
            return True
        if isinstance(node, cst.Assign) and is_name(node.value, name):
            if any(isinstance(t.target, (cst.Attribute, cst.Subscript)) for t in node.targets):
                return True
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in ("append", "extend", "insert", "add", "update", "setdefault"):
            if any(is_name(a.value, name) for a in node.args):
                return True
    return False


def _joined_by_torch(func: cst.FunctionDef) -> set[int]:
    """Lists and tuples written as an argument of a torch call (`torch.cat([mask, pad], -1)`):
    the call reads them and keeps none of them."""
    return {
        id(arg.value)
        for call in nodes_of(func.body, cst.Call)
        if (dotted_name(call.func) or "").startswith("torch.")
        for arg in call.args
        if isinstance(arg.value, (cst.List, cst.Tuple))
    }


def _holds(node: cst.CSTNode, name: str) -> bool:
    if is_name(node, name):
        return True
    elements = getattr(node, "elements", None)
    if elements is not None:
        return any(is_name(getattr(e, "value", None) or e, name) for e in elements)  # type: ignore[arg-type]
    return False


def _mutates(node: cst.CSTNode, name: str) -> bool:
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and is_name(node.func.value, name):
        method = node.func.attr.value
        return method.endswith("_") and not method.startswith("__")
    if isinstance(node, cst.AssignTarget):
        return _is_item_of(node.target, name)
    if isinstance(node, cst.AugAssign):
        return is_name(node.target, name) or _is_item_of(node.target, name)
    if isinstance(node, cst.Arg):
        return node.keyword is not None and node.keyword.value == "out" and is_name(node.value, name)
    return False


def _is_item_of(target: cst.BaseExpression, name: str) -> bool:
    return isinstance(target, cst.Subscript) and is_name(target.value, name)


# -- BUF004 / BUF011: devices in calls --------------------------------------------------------------
def device_of(input_name: str) -> cst.Attribute:
    return cst.Attribute(value=cst.Name(input_name), attr=cst.Name("device"))


def with_device(call: cst.Call, input_name: str, device: Optional[cst.BaseExpression] = None) -> cst.Call:
    """`torch.zeros(b, 8)` -> `torch.zeros(b, 8, device=x.device)` (or `device=<device>`)."""
    arg = cst.Arg(
        keyword=cst.Name("device"),
        value=device_of(input_name) if device is None else device,
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )
    args = list(call.args)
    if args and args[-1].comma is cst.MaybeSentinel.DEFAULT:
        args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    return call.with_changes(args=[*args, arg])


def without_keyword(call: cst.Call, keyword: str) -> cst.Call:
    args = [a for a in call.args if not (a.keyword is not None and a.keyword.value == keyword)]
    if args and len(args) < len(call.args) and call.args[-1].keyword is not None and call.args[-1].keyword.value == keyword:
        args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return call.with_changes(args=args)


def with_keyword_value(call: cst.Call, keyword: str, value: cst.BaseExpression) -> cst.Call:
    args = [a.with_changes(value=value) if a.keyword is not None and a.keyword.value == keyword else a for a in call.args]
    return call.with_changes(args=args)


def replace_arg_value(call: cst.Call, old: cst.BaseExpression, value: cst.BaseExpression) -> cst.Call:
    return call.with_changes(args=[a.with_changes(value=value) if a.value is old else a for a in call.args])
