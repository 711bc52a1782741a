"""A light walk over a libcst tree: read each node's dataclass fields, never rebuild nodes.

libcst's visitors (and so `libcst.matchers.findall`/`children`) call `_visit_and_replace_children`,
which re-creates every node on the way, and importing `libcst.matchers` alone costs about a third
of a second. Analyses only need to find nodes of a few types: `iter_nodes` does that in the same
(source) order as `m.findall`, so results stay identical.
"""

from __future__ import annotations

import dataclasses
from typing import Iterator, TypeVar, Union

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


def iter_nodes(root: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """`root` and every node below it, pre-order, in source order."""
    stack: list[cst.CSTNode] = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(child_nodes(node)))


def nodes_of(root: cst.CSTNode, types: Union[type[N], tuple[type[N], ...]]) -> Iterator[N]:
    """The nodes of `types` at or below `root`, outermost first, in source order (like `m.findall`)."""
    for node in iter_nodes(root):
        if isinstance(node, types):
            yield node  # type: ignore[misc]


def has_node(root: cst.CSTNode, types: Union[type[N], tuple[type[N], ...]]) -> bool:
    return next(nodes_of(root, types), None) is not None


def child_nodes(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The syntax children of `node` (no whitespace or punctuation), in source order."""
    children: list[cst.CSTNode] = []
    for name in _syntax_fields(type(node)):
        value = getattr(node, name)
        if isinstance(value, cst.CSTNode):
            children.append(value)
        elif isinstance(value, (list, tuple)):
            children.extend(v for v in value if isinstance(v, cst.CSTNode))
    return children


def is_name(node: cst.CSTNode, value: str) -> bool:
    """`node` is the bare name `value` (what `m.matches(node, m.Name(value))` tested)."""
    return isinstance(node, cst.Name) and node.value == value


def _syntax_fields(kind: type) -> tuple[str, ...]:
    names = _FIELDS.get(kind)
    if names is None:
        names = _VISIT_ORDER.get(kind) or tuple(
            f.name for f in dataclasses.fields(kind) if not f.name.startswith(_TRIVIA_PREFIXES)
        )
        _FIELDS[kind] = names
    return names
