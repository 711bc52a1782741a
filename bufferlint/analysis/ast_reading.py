"""Readings of CPython's ast that the whole-project passes share (project, project_facts,
optimizer_builds, constructions)."""

from __future__ import annotations

import ast
from typing import Iterator, Optional


def nodes_on_lines(tree: ast.Module, lines: set[int]) -> Iterator[ast.AST]:
    """The nodes of the statements that span one of `lines` (the rest of the file is not walked)."""
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        first, last = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
        if first is not None and last is not None and not any(first <= line <= last for line in lines):
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def called_name(func: ast.AST) -> Optional[str]:
    """`f` for `f(...)` and `x.f(...)`, else None."""
    if type(func) is ast.Name:
        return func.id  # type: ignore[attr-defined]
    if type(func) is ast.Attribute:
        return func.attr  # type: ignore[attr-defined]
    return None


def absolute_module(module: str, level: int, package: str) -> Optional[str]:
    """The module a `from <dots><module> import ...` in `package` names; None above the top."""
    if level == 0:
        return module
    parts = package.split(".") if package else []
    if level - 1 > len(parts):
        return None
    anchor = parts[: len(parts) - (level - 1)]
    return ".".join([*anchor, module] if module else anchor)
