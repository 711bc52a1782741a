"""A light walk over a libcst tree: read each node's dataclass fields, never rebuild nodes.

libcst's visitors (and so `libcst.matchers.findall`/`children`) call `_visit_and_replace_children`,
which re-creates every node on the way, and importing `libcst.matchers` alone costs about a third
of a second. Analyses only need to find nodes of a few types: `iter_nodes` does that in the same
(source) order as `m.findall`, so results stay identical.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Callable, Iterator, Optional, TypeVar, Union

import libcst as cst

N = TypeVar("N", bound=cst.CSTNode)

# Fields that hold only whitespace, brackets and punctuation: never a node worth visiting.
_TRIVIA_PREFIXES = (
    "whitespace", "lpar", "rpar", "lbracket", "rbracket", "lbrace", "rbrace", "comma", "semicolon",
    "leading_lines", "lines_after", "header", "footer", "dot", "colon", "equal", "asynchronous",
)
# Where the dataclass field order is not the source order, libcst's visit order (the source order).
_VISIT_ORDER: dict[type, tuple[str, ...]] = {
    cst.IfExp: ("body", "test", "orelse"),
    cst.Arg: ("keyword", "value"),
    cst.FunctionDef: ("decorators", "name", "type_parameters", "params", "returns", "body"),
    cst.ClassDef: ("decorators", "name", "type_parameters", "bases", "keywords", "body"),
    cst.ExceptHandler: ("type", "name", "body"),
    cst.ExceptStarHandler: ("type", "name", "body"),
    cst.Parameters: ("posonly_params", "posonly_ind", "params", "star_arg", "kwonly_params", "star_kwarg"),
    cst.MatchCase: ("pattern", "guard", "body"),
}
_FIELDS: dict[type, tuple[str, ...]] = {}
_NODE_TYPES: dict[type, bool] = {}
_REVERSED_FIELDS: dict[type, tuple[str, ...]] = {}
_MATCHES: dict[object, dict[type, bool]] = {}


def iter_nodes(root: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """`root` and every node below it, pre-order, in source order."""
    return iter(nodes_of(root, cst.CSTNode))


def nodes_of(root: cst.CSTNode, types: Union[type[N], tuple[type[N], ...]]) -> list[N]:
    """The nodes of `types` at or below `root`, outermost first, in source order (like `m.findall`)."""
    # The analyses' hottest loop. One list, not a generator: a generator step per node cost more
    # than the few early exits save. Children are pushed straight onto the stack, last field
    # first, and node-ness is one dictionary lookup per type (see `_is_node_type`).
    matches = _MATCHES.get(types)
    if matches is None:
        matches = _MATCHES[types] = {}
    found: list[N] = []
    stack: list[cst.CSTNode] = [root]
    pop, push, known = stack.pop, stack.append, _NODE_TYPES
    while stack:
        node = pop()
        kind = type(node)
        hit = matches.get(kind)
        if hit is None:
            hit = matches[kind] = issubclass(kind, types)
        if hit:
            found.append(node)  # type: ignore[arg-type]
        names = _REVERSED_FIELDS.get(kind)
        if names is None:  # (an empty tuple is a leaf: `Name`, strings, numbers)
            names = _reversed_fields(kind)
        for name in names:
            value = getattr(node, name)
            value_kind = type(value)
            if value_kind is tuple or value_kind is list:
                for item in reversed(value):
                    node_kind = known.get(type(item))
                    if node_kind or (node_kind is None and _is_node_type(type(item))):
                        push(item)
            else:
                # Most field values that are not nodes are strings and sentinels: their type is
                # known after the first one, and answering False must not call the function.
                node_kind = known.get(value_kind)
                if node_kind or (node_kind is None and _is_node_type(value_kind)):
                    push(value)
    return found


def has_node(root: cst.CSTNode, types: Union[type[N], tuple[type[N], ...]]) -> bool:
    return bool(nodes_of(root, types))


def child_nodes(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The syntax children of `node` (no whitespace or punctuation), in source order."""
    children: list[cst.CSTNode] = []
    for name in _syntax_fields(type(node)):
        value = getattr(node, name)
        kind = type(value)
        if kind is tuple or kind is list:
            children.extend(v for v in value if _is_node_type(type(v)))
        elif _is_node_type(kind):
            children.append(value)
    return children


def _is_node_type(kind: type) -> bool:
    # `isinstance(v, cst.CSTNode)` goes through ABCMeta (CSTNode is abstract) and was a third of
    # the analysis time on real files; a per-type answer is a dictionary lookup.
    known = _NODE_TYPES.get(kind)
    if known is None:
        known = _NODE_TYPES[kind] = issubclass(kind, cst.CSTNode)
    return known


def _reversed_fields(kind: type) -> tuple[str, ...]:
    names = _REVERSED_FIELDS[kind] = tuple(reversed(_syntax_fields(kind)))
    return names


def is_name(node: cst.CSTNode, value: str) -> bool:
    """`node` is the bare name `value` (what `m.matches(node, m.Name(value))` tested)."""
    return isinstance(node, cst.Name) and node.value == value


def variable_names(expr: cst.CSTNode) -> list[str]:
    """The names `expr` reads as variables, in source order: not the attribute names it spells
    (`count` of `self.count`)."""
    attrs = {id(node.attr) for node in nodes_of(expr, cst.Attribute)}
    return [node.value for node in nodes_of(expr, cst.Name) if id(node) not in attrs]


def _syntax_fields(kind: type) -> tuple[str, ...]:
    names = _FIELDS.get(kind)
    if names is None:
        names = _VISIT_ORDER.get(kind) or tuple(
            f.name for f in dataclasses.fields(kind) if not f.name.startswith(_TRIVIA_PREFIXES) and not _text_only(f)
        )
        _FIELDS[kind] = names
    return names


def _text_only(field: "dataclasses.Field[object]") -> bool:
    """A field declared to hold only text (`Name.value`, `Arg.star`): never a node to visit."""
    return field.type is str or typing.get_origin(field.type) is typing.Literal


def is_in_place_name(name: str) -> bool:
    """`add_`, `normal_`: torch's trailing underscore for an op that changes its operand (not `__init__`)."""
    return name.endswith("_") and not name.endswith("__")


def callee_name(call: cst.Call) -> str:
    """`x.view(...)` -> "view", `zeros(...)` -> "zeros", anything else -> ""."""
    func = call.func
    return func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""


def visit_in_order(root: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    """Call `visitor`'s `visit_<Node>` and `leave_<Node>` methods as `root.visit(visitor)` would,
    in the same order over the syntax nodes (a `visit_` answering False skips the node's children;
    its `leave_` still runs), but reading fields instead of rebuilding every node: libcst's own walk
    costs about what parsing the file did. Whitespace and punctuation nodes are not visited, nor
    are `visit_<Node>_<field>` handlers called."""
    stack: list[tuple[cst.CSTNode, bool]] = [(root, False)]
    while stack:
        node, leaving = stack.pop()
        kind = type(node)
        if leaving:
            leave = _handler(visitor, "leave_", kind)
            if leave is not None:
                leave(node)
            continue
        visit = _handler(visitor, "visit_", kind)
        stack.append((node, True))
        if visit is None or visit(node) is not False:
            stack.extend((child, False) for child in reversed(child_nodes(node)))


_HANDLERS: dict[tuple[type, str, type], Optional[str]] = {}


def _handler(visitor: cst.CSTVisitor, prefix: str, kind: type) -> Optional[Callable[[cst.CSTNode], object]]:
    key = (type(visitor), prefix, kind)
    name = _HANDLERS.get(key, "")
    if name == "":  # libcst's base class defines every handler as a no-op: only overrides count
        candidate = prefix + kind.__name__
        own = getattr(type(visitor), candidate, None)
        name = _HANDLERS[key] = candidate if own is not None and own is not getattr(cst.CSTVisitor, candidate, None) else None
    return None if name is None else getattr(visitor, name)
