"""Where each file builds classes, for proofs about constructor arguments across files.

never_given.py proves `self.attn_mask` is always None when no construction of the class gives
`attn_mask`. Inside one file it reads the calls from the tree; a class built in other files needs
those files' calls, and the lint of one file never parses another. So the ast pass of every file
records (FileFacts.constructions) each call of a capitalised name it imports from the project
(`Transformer(w, l, h, checkpoint=c)` after `from .blocks import Transformer`), with the class the
import names and which arguments it gives; and (FileFacts.only_built) the names every mention of
which in the file is such a call. A file that names a class any other way (hands it around, subclasses it,
imports it under another name, re-exports it, names it in a string or a comment) leaves the
class's calls unproved, so what this misses can only cost a finding, never make one false.
"""

from __future__ import annotations

import ast
import re
from typing import Iterable, Iterator, Optional

from bufferlint.analysis.ast_reading import absolute_module, nodes_on_lines

# (the name as called, the class its import names, what it gives:
# "0", "1=None" for positions, "mask", "mask=None" for keywords, "*" for a star argument)
Construction = tuple[str, str, tuple[str, ...]]

# Libraries whose classes are not the project's: calls of names imported from them are not kept.
_LIBRARIES = frozenset(("torch", "numpy", "scipy", "typing", "collections", "dataclasses", "enum", "pathlib"))


def constructions(tree: ast.Module, source: bytes, package: str) -> tuple[Construction, ...]:
    """The file's calls of the capitalised names it imports from the project (a top-level `from m
    import Cls`), each with the class it names. Only the statements on lines that call one are
    walked."""
    bound = _bindings(tree, package)
    if not bound:
        return ()
    spelled = b"|".join(re.escape(name.encode("ascii")) for name in bound)
    lines = {source.count(b"\n", 0, m.start()) + 1 for m in re.finditer(rb"(?<![\w.])(?:" + spelled + rb")[ \t]*\(", source)}
    found: list[Construction] = []
    for node in nodes_on_lines(tree, lines) if lines else ():
        if type(node) is ast.Call and type(node.func) is ast.Name and node.func.id in bound:  # type: ignore[attr-defined]
            name = node.func.id  # type: ignore[attr-defined]
            found.append((name, bound[name], _given(node)))  # type: ignore[arg-type]
    return tuple(sorted(found))


def only_built(tree: ast.Module, calls: Iterable[Construction], mentions: dict[bytes, int]) -> tuple[str, ...]:
    """The names the file mentions (`mentions`: capitalised words outside imports, class headers,
    docstrings and `super(Cls, ...)`) only in the calls `calls` records, and its own top-level
    classes (how a file uses its own class is read from its tree: never_given.py)."""
    counted: dict[str, int] = {}
    for name, _, _ in calls:
        counted[name] = counted.get(name, 0) + 1
    built = {name for name, count in counted.items() if mentions.get(name.encode("ascii"), 0) == count}
    built.update(node.name for node in tree.body if isinstance(node, ast.ClassDef))
    return tuple(sorted(built))


def gives(given: tuple[str, ...], parameter: str, position: Optional[int]) -> bool:
    """Whether a call that gives `given` may pass `parameter` (at `position`) a value other than
    None."""
    return "*" in given or parameter in given or (position is not None and str(position) in given)


def surely_gives(given: tuple[str, ...], parameter: str, position: Optional[int]) -> bool:
    """Whether a call that gives `given` passes `parameter` (at `position`) a value other than
    None (a star argument may pass it or not)."""
    return "*" not in given and (parameter in given or (position is not None and str(position) in given))


def _given(call: ast.Call) -> tuple[str, ...]:
    given: list[str] = []
    for index, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            return ("*",)
        given.append(f"{index}=None" if _is_none(arg) else str(index))
    for keyword in call.keywords:
        if keyword.arg is None:
            return ("*",)
        given.append(f"{keyword.arg}=None" if _is_none(keyword.value) else keyword.arg)
    return tuple(given)


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _bindings(tree: ast.Module, package: str) -> dict[str, str]:
    """Capitalised names the file imports at its top from the project, and the class each names."""
    bound: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            for name, target in _imported(node, package):
                if target.split(".")[0] not in _LIBRARIES:
                    bound[name] = target
    return bound


def _imported(node: ast.ImportFrom, package: str) -> Iterator[tuple[str, str]]:
    base = absolute_module(node.module or "", node.level, package)
    if base is None:
        return
    for alias in node.names:
        if alias.name != "*" and alias.name[:1].isupper():
            yield alias.asname or alias.name, f"{base}.{alias.name}" if base else alias.name
