"""Dotted-name resolution through a file's imports (`import torch as T`, `from torch import nn`).

libcst's QualifiedNameProvider would do this, but it needs the ScopeProvider, which costs more than
parsing the file. Every rule only needs "which import does this dotted name start from", so one
cheap pass over the import statements gives the same answers for the code we care about.
"""

from __future__ import annotations

from typing import Callable, Optional

import libcst as cst

# How a file's imports name an expression (`nn.Linear` -> `torch.nn.Linear`), or None.
Qualify = Callable[[cst.BaseExpression], Optional[str]]


def dotted_name(node: cst.BaseExpression) -> Optional[str]:
    """`a.b.c` as a string, or None when the expression is not a plain dotted name."""
    # Exact type tests: `isinstance` against libcst's abstract node classes goes through ABCMeta,
    # and this runs for nearly every expression the analyses look at (Name and Attribute have no
    # subclasses).
    kind = type(node)
    if kind is cst.Name:
        return node.value  # type: ignore[attr-defined]
    parts: list[str] = []
    while kind is cst.Attribute:
        parts.append(node.attr.value)  # type: ignore[attr-defined]
        node = node.value  # type: ignore[attr-defined]
        kind = type(node)
    if kind is not cst.Name:
        return None
    parts.append(node.value)  # type: ignore[attr-defined]
    return ".".join(reversed(parts))


def _module_name(node: cst.BaseExpression) -> str:
    return dotted_name(node) or ""


class ImportMap:
    """Local names bound by imports, mapped to the fully qualified names they stand for."""

    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}
        self.star_modules: list[str] = []

    @classmethod
    def from_module(cls, module: cst.Module) -> "ImportMap":
        from bufferlint.analysis.flow import iter_all_statements

        imports = cls()
        for stmt in iter_all_statements(module):
            if not isinstance(stmt, cst.SimpleStatementLine):
                continue
            for node in stmt.body:
                if isinstance(node, cst.Import):
                    imports._add_import(node)
                elif isinstance(node, cst.ImportFrom):
                    imports._add_import_from(node)
        return imports

    def _add_import(self, node: cst.Import) -> None:
        for alias in node.names:
            full = _module_name(alias.name)
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.aliases[alias.asname.name.value] = full
            else:
                # `import torch.nn` binds `torch`, which then resolves `torch.nn.X` by itself.
                top = full.split(".")[0]
                self.aliases[top] = top

    def _add_import_from(self, node: cst.ImportFrom) -> None:
        if node.relative or node.module is None:
            return  # relative imports point into the user's own package: unknown here
        base = _module_name(node.module)
        if isinstance(node.names, cst.ImportStar):
            self.star_modules.append(base)
            return
        for alias in node.names:
            name = _module_name(alias.name)
            local = name
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
            self.aliases[local] = f"{base}.{name}"

    def qualify(self, node: cst.BaseExpression) -> Optional[str]:
        """The qualified name of a dotted expression whose first part comes from an import."""
        name = dotted_name(node)
        return None if name is None else self._through_imports(name)

    def qualify_or_star(self, node: cst.BaseExpression) -> Optional[str]:
        """`qualify`, else the first `star_candidates` name (one dotted-name pass for both)."""
        name = dotted_name(node)
        if name is None:
            return None
        if name.partition(".")[0] in self.aliases:
            return self._through_imports(name) or None
        return f"{self.star_modules[0]}.{name}" if self.star_modules else None

    def _through_imports(self, name: str) -> Optional[str]:
        head, _, rest = name.partition(".")
        target = self.aliases.get(head)
        if target is None:
            return None
        return f"{target}.{rest}" if rest else target

    def qualify_call(self, node: cst.Call) -> Optional[str]:
        return self.qualify(node.func)

    def star_candidates(self, node: cst.BaseExpression) -> list[str]:
        """Qualified names a bare name could have through `from X import *`."""
        name = dotted_name(node)
        if name is None or name.split(".")[0] in self.aliases:
            return []
        return [f"{module}.{name}" for module in self.star_modules]


def code_excerpt(node: cst.CSTNode, limit: int = 40) -> str:
    """The node's code for a message, cut to `limit` characters (`torch.arange(b)...`)."""
    code = cst.Module([]).code_for_node(node)
    return code if len(code) <= limit else code[: limit - 3] + "..."
