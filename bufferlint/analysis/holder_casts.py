"""Holders that keep a module they hold in full precision: `half()` on the whole, then back to float.

    def half(self):
        super().half()
        self.kernel = self.kernel.float()   # distances are expanded in float32
        return self

A plain tensor inside `self.kernel` (and inside every module it holds) never sees the cast: it
stays exact. As a buffer, `super().half()` rounds it to float16 first and `.float()` only widens
the rounded value, so registering it changes what forward computes. Read from the `ast` of each
file during the project pre-pass; `ProjectFacts.kept_float_by_holder` answers for a class.
"""

from __future__ import annotations

import ast
from typing import Iterator, Optional

# Where a cast of the whole module comes before the re-cast: the holder's own cast overrides, or a
# method that casts to half itself (`self.half(); self.kernel.float()`).
_CAST_OVERRIDES = frozenset(("half", "bfloat16", "to", "_apply", "type"))
_HALF_METHODS = frozenset(("half", "bfloat16"))
_HALF_DTYPES = frozenset(("half", "float16", "bfloat16"))
_FULL_METHODS = frozenset(("float", "double"))
_FULL_DTYPES = frozenset(("float", "float32", "float64", "double"))
# `in` on the source bytes: files without any of these words hold no such holder.
WORDS = (b".half()", b".bfloat16()", b"def half", b"def bfloat16")


def holder_recasts(classes: Iterator[ast.ClassDef], module: str) -> tuple[tuple[str, str, str, int], ...]:
    """(holder class, qualified; the attribute it re-casts; the class built into it, by name; the line)."""
    found = []
    for node in classes:
        built = _built_attributes(node)
        for method in node.body:
            if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) or not method.args.args:
                continue
            if method.name not in _CAST_OVERRIDES and not any(_casts_to_half(n) for n in ast.walk(method)):
                continue
            me = method.args.args[0].arg
            for call in ast.walk(method):
                attr = _recast_attribute(call, me)
                if attr is not None and attr in built:
                    found.append((f"{module}.{node.name}", attr, built[attr], call.lineno))  # type: ignore[attr-defined]
    return tuple(found)


def _built_attributes(node: ast.ClassDef) -> dict[str, str]:
    """`self.<attr> = Cls(...)` anywhere in the class: attribute -> the class's name as spelled last."""
    built = {}
    for stmt in ast.walk(node):
        if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1 or not isinstance(stmt.value, ast.Call):
            continue
        target, func = stmt.targets[0], stmt.value.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and name[:1].isupper():
            built[target.attr] = name
    return built


def _recast_attribute(node: ast.AST, me: str) -> Optional[str]:
    """`<me>.<attr>.float()`, `.double()`, `.to(torch.float32)`, `.to(dtype=torch.float)`: the attribute."""
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return None
    method, receiver = node.func.attr, node.func.value
    full = (method in _FULL_METHODS and not node.args) or (method in ("to", "type") and _names_dtype(node, _FULL_DTYPES))
    if full and isinstance(receiver, ast.Attribute) and isinstance(receiver.value, ast.Name) and receiver.value.id == me:
        return receiver.attr
    return None


def _casts_to_half(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return False
    return node.func.attr in _HALF_METHODS or (node.func.attr == "to" and _names_dtype(node, _HALF_DTYPES))


def _names_dtype(call: ast.Call, dtypes: frozenset[str]) -> bool:
    """A positional or `dtype=` argument spelled `torch.<one of dtypes>`."""
    values = [*call.args, *(k.value for k in call.keywords if k.arg == "dtype")]
    return any(isinstance(v, ast.Attribute) and v.attr in dtypes and isinstance(v.value, ast.Name) and v.value.id == "torch" for v in values)
