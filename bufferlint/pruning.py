"""Top-level definitions a check cannot need, blanked before libcst parses the file.

libcst's parse is most of a check's cost, and about a quarter of the bytes of files that hold
module classes are helpers and plain classes no rule reads. When checking (never when fixing), a
top-level `def` or `class` is replaced by empty lines, so every other line keeps its number and
every finding its position, when nothing the analysis reads can depend on it:

- it is not a class that may be an nn.Module (the prefilter's test, with same-file chains) and
  holds no other class (a module class defined inside a function is still a module class);
- its name appears nowhere else in the file (a helper that returns a tensor, a base class, a
  class that is constructed: all are named where they are used);
- it holds no `import` (imports anywhere in the file qualify names everywhere) and no
  `requires_grad` (BUF008 looks for unfreezing anywhere in the file).

`tests/test_pruning.py` compares pruned and full checks on every fixture; over 17 real
repositories (4,099 files) the findings and `--fix --diff` output are byte-identical. It saves
about 6% of libcst's parse on real files: most helpers are named by the classes that use them.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Iterable, Optional

from bufferlint.prefilter import ClassSummary, class_bases

# Text that keeps a definition whatever else holds (see the module docstring).
_KEEP = re.compile(rb"\bimport\b|requires_grad")
_CLASS = re.compile(rb"\bclass\b")


@dataclass(frozen=True)
class TopDefinition:
    """A top-level `def` or `class`: its lines (decorators included) and, for a class, its bases."""

    first: int
    last: int
    name: str
    bases: Optional[tuple[Optional[str], ...]]  # None for a function


def top_definitions(tree: ast.Module) -> tuple[TopDefinition, ...]:
    found = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.end_lineno is not None:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            bases = tuple(class_bases(node)) if isinstance(node, ast.ClassDef) else None
            found.append(TopDefinition(first, node.end_lineno, node.name, bases))
    return tuple(found)


def pruned(data: bytes, definitions: Iterable[TopDefinition], summary: ClassSummary, extra_bases: Iterable[str]) -> bytes:
    """`data` with the definitions no check can need blanked, or `data` itself when there are none."""
    if b"\r" in data:
        return data  # line ends other than LF: not worth the care, such files are rare
    definitions = tuple(definitions)
    modules = _module_classes(definitions, summary, frozenset(extra_bases))
    starts: Optional[list[int]] = None
    drop = []
    for definition in definitions:
        if definition.name in modules:
            continue
        starts = starts or _line_starts(data)
        begin, end = starts[definition.first - 1], starts[min(definition.last, len(starts) - 1)]
        if _needed(data, begin, end, definition):
            continue
        drop.append((definition.first, definition.last))
    if not drop:
        return data
    return _blank(data, drop)


def _module_classes(definitions: tuple[TopDefinition, ...], summary: ClassSummary, extra: frozenset[str]) -> set[str]:
    classes = {d.name: d.bases for d in definitions if d.bases is not None}
    modules: set[str] = set()
    changed = True
    while changed:  # same-file chains: class B(A) with A a module class
        changed = False
        for name, bases in classes.items():
            if name not in modules and any(b in modules or summary.may_be_module_base(b, extra) for b in bases or ()):
                modules.add(name)
                changed = True
    return modules


def _needed(data: bytes, begin: int, end: int, definition: TopDefinition) -> bool:
    if not definition.name.isascii():
        return True  # `\b` in a bytes pattern only knows ASCII letters
    own_classes = 1 if definition.bases is not None else 0
    if _KEEP.search(data, begin, end) or len(_CLASS.findall(data, begin, end)) > own_classes:
        return True
    name = re.compile(rb"\b" + re.escape(definition.name.encode()) + rb"\b")
    return name.search(data, 0, begin) is not None or name.search(data, end) is not None


def _line_starts(data: bytes) -> list[int]:
    """Offset of each line's start, plus the end of the data (so `starts[n]` ends line n)."""
    starts = [0]
    at = data.find(b"\n")
    while at != -1:
        starts.append(at + 1)
        at = data.find(b"\n", at + 1)
    if starts[-1] != len(data):
        starts.append(len(data))
    return starts


def _blank(data: bytes, ranges: list[tuple[int, int]]) -> bytes:
    lines = data.split(b"\n")
    for first, last in ranges:
        for row in range(first - 1, min(last, len(lines))):
            lines[row] = b""
    return b"\n".join(lines)
