"""Which attribute names a file changes by item outside any `__init__`, read on CPython's ast.

`x.name[k] = v`, `x.name[k] += v` and `x.name.append(v)` (any in-place container method): on
another object, or per class on its own instance (`self.name[k] = v` in a method). A tensor built
from such a container is the container's state at that call, not a constant (forward.py).

The whole file is read, also where a check parsed only part of it with libcst (the class that
changes the name may be one the check left unparsed), and `ast` reads a file about ten times
faster than libcst does: this is asked of every file whose text may hold such a change.
(`ast` gives names NFKC-normalised, libcst as written: a name spelled with compatibility
characters, `self.ｄ`, is compared in its normal form here.)
"""

from __future__ import annotations

import ast
from typing import Optional, Union

from bufferlint.analysis.containers import IN_PLACE_METHODS

# (names changed on other objects, names each class changes on its own instance)
ItemChanges = tuple[frozenset[str], dict[str, set[str]]]
_Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]


def item_changes(tree: ast.Module) -> ItemChanges:
    elsewhere: set[str] = set()
    own: dict[str, set[str]] = {}
    stack: list[tuple[ast.AST, Optional[str], Optional[str]]] = [(tree, None, None)]
    while stack:
        node, owner, me = stack.pop()
        if isinstance(node, ast.ClassDef):
            owner, me = node.name, None
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.name == "__init__":
                continue
            me = _first_parameter(node) if owner is not None else None
        else:
            for receiver, attr in _changes(node):
                if me is not None and owner is not None and isinstance(receiver, ast.Name) and receiver.id == me:
                    own.setdefault(owner, set()).add(attr)
                else:
                    elsewhere.add(attr)
        stack.extend((child, owner, me) for child in ast.iter_child_nodes(node))
    return frozenset(elsewhere), own


def _first_parameter(function: _Function) -> Optional[str]:
    params = function.args.args
    return params[0].arg if params else None


def _changes(node: ast.AST) -> list[tuple[ast.expr, str]]:
    """(`x`, `name`) for each `x.name[k] = v` / `x.name[k] += v` / `x.name.append(v)` of `node`."""
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, ast.AugAssign):
        targets = [node.target]
    elif isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in IN_PLACE_METHODS and isinstance(func.value, ast.Attribute):
            return [(func.value.value, func.value.attr)]
        return []
    else:
        return []
    return [
        (t.value.value, t.value.attr)
        for t in targets
        if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Attribute)
    ]
