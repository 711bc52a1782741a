"""Tensors a file builds once, at import, under a constant's name.

`IMAGENET_MEAN = torch.FloatTensor([0.485, 0.456, 0.406])[None, :, None, None]` at the top of a
loss file holds one tensor on the host for the life of the program. A module that keeps it
(`self.mean_ = IMAGENET_MEAN`) keeps a plain tensor attribute, and one that copies it per call
(`IMAGENET_MEAN.to(x.device)` in forward) copies a constant per call: the same findings as a
tensor built in `__init__` or in forward.

A name counts when it is spelled as a constant (upper case), is bound exactly once, by a plain
assignment at the top of the file, to a torch call over literals (`torch.tensor([...])`,
`torch.FloatTensor(...)`, `torch.eye(3)`), possibly indexed or reshaped with literals; and when
nothing else in the file binds it (`global`, a loop, an import, a second assignment) or changes it
in place (`NAME[i] = ...`, `NAME.mul_(...)`). Everything is read from the whole file's ast, after a
text test for such a line, so a file without one pays nothing.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from typing import Iterator, Optional

# `NAME = torch.` at the start of a line: a file without such a line holds no module tensor.
MODULE_TENSOR_TEXT = re.compile(rb"(?m)^[A-Z][A-Z0-9_]*[ \t]*=[ \t]*torch\.")


def module_tensors(tree: ast.Module) -> frozenset[str]:
    """The file's module-level tensor constants (see the module docstring)."""
    candidates = {name for name, value in _top_assignments(tree) if name.isupper() and _built_from_literals(value)}
    if not candidates:
        return frozenset()
    stores: Counter[str] = Counter()
    changed: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            stores[node.id] += 1
        elif isinstance(node, ast.alias):
            stores[(node.asname or node.name).split(".")[0]] += 1
        else:
            changed.update(_changed(node))
    return frozenset(name for name in candidates if stores[name] == 1 and name not in changed)


def _top_assignments(tree: ast.Module) -> Iterator[tuple[str, ast.expr]]:
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            yield node.targets[0].id, node.value


def _built_from_literals(value: ast.expr) -> bool:
    """`torch.<f>(<literals>)`, then indexed or given method calls with literals only."""
    while True:
        if isinstance(value, ast.Subscript) and _literal(value.slice):
            value = value.value
        elif isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and _dotted_root(value.func) != "torch":
            if not _literal_arguments(value):
                return False
            value = value.func.value  # `.view(3, 1, 1)`, `.float()` on the table
        else:
            break
    return isinstance(value, ast.Call) and _dotted_root(value.func) == "torch" and _literal_arguments(value)


def _dotted_root(func: ast.expr) -> Optional[str]:
    while isinstance(func, ast.Attribute):
        func = func.value
    return func.id if isinstance(func, ast.Name) else None


def _literal_arguments(call: ast.Call) -> bool:
    return all(_literal(arg) for arg in call.args) and all(
        keyword.arg is not None and (_literal(keyword.value) or _dotted_root(keyword.value) == "torch") for keyword in call.keywords
    )


def _literal(node: ast.expr) -> bool:
    """Numbers, strings, None, slices and containers of them (`[0.485, 0.456]`, `None, :, None`)."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp):
        return _literal(node.operand)
    if isinstance(node, (ast.List, ast.Tuple)):
        return all(_literal(element) for element in node.elts)
    if isinstance(node, ast.Slice):
        return all(part is None or _literal(part) for part in (node.lower, node.upper, node.step))
    return False


def _changed(node: ast.AST) -> Iterator[str]:
    """Names a function may rebind (`global NAME`) or that `node` changes in place (`NAME[i] =
    ...`, `NAME.add_(...)`)."""
    if isinstance(node, ast.Global):
        yield from node.names
    elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) and isinstance(node.value, ast.Name):
        yield node.value.id
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
        if node.func.attr.endswith("_") and not node.func.attr.startswith("_"):
            yield node.func.value.id
