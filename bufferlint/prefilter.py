"""Decide, without libcst, that a file cannot hold a finding.

Every rule reports on `analysis.module_classes` only (the nn.Module subclasses of the file), so a
file without one has no finding. Two gates, each a necessary condition:

1. text: the file contains one of the enabled rules' trigger words (`Rule.triggers`);
2. syntax: CPython's own parser (`ast`, ~10x faster than libcst) finds a class that may be a
   module. The test mirrors `analysis/modules.py` and errs on the side of "may": a base counts when
   its qualified name could be a module base through any star import, not only the first one.

The file is only parsed with libcst when both gates pass. The `ast` parse doubles as the syntax
check every skipped file gets (DESIGN: a broken file is never silently skipped): a file that fails
it is handed to the normal path, which reports the error.
"""

from __future__ import annotations

import ast
import functools
import re
import warnings
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Optional, Union

from bufferlint.analysis import torch_api
from bufferlint.analysis.project import plain_import_bindings

Source = Union[bytes, str]


# The last source the ast gate parsed without error, so the skipped path need not parse it again.
# Compared by identity: one slot, one thread per process (workers are processes).
_last_valid: Optional[Source] = None


# `class X(nn.Module)` and the like: such a file almost surely goes on to libcst, which reports
# syntax errors itself, so the ast gate would only add its cost. (Saying "may" is always safe.)
_LIKELY_MODULE = re.compile(r"^[ \t]*class[ \t]+\w+[ \t]*\([^)]*\bModule\b", re.MULTILINE)
_LIKELY_MODULE_BYTES = re.compile(_LIKELY_MODULE.pattern.encode(), re.MULTILINE)


def may_have_findings(data: Source, triggers: Iterable[str], extra_bases: Iterable[str] = ()) -> bool:
    global _last_valid
    if not text_gate(data, triggers, extra_bases):
        return False
    if likely_module(data):
        return True
    tree = parse_quietly(data)
    if tree is None:
        return True  # the normal path parses it again and reports the error
    _last_valid = data
    return has_module_class(tree, extra_bases)


def likely_module(data: Source) -> bool:
    """`class X(...Module...)` somewhere in the text (see `_LIKELY_MODULE`)."""
    likely = _LIKELY_MODULE_BYTES if isinstance(data, bytes) else _LIKELY_MODULE
    return likely.search(data) is not None  # type: ignore[arg-type]


def known_valid(data: Source) -> bool:
    """Whether `data` is the source the ast gate just parsed without error."""
    return data is _last_valid


def text_gate(data: Source, triggers: Iterable[str], bases: Iterable[str] = ()) -> bool:
    """Whether `data` holds one of `triggers` as a substring, or names one of the classes `bases`
    (dotted names; their last part) as a whole identifier: a class can only name its base so, and a
    project's bases can be hundreds of names, too many to search for one by one."""
    if isinstance(data, str):
        if any(trigger in data for trigger in triggers):
            return True
    elif any(trigger in data for trigger in _encoded(tuple(triggers))):
        return True
    names = _base_names(tuple(bases), isinstance(data, bytes))
    return bool(names) and not names.isdisjoint(_IDENTIFIER[type(data)].findall(data))  # type: ignore[call-overload]


# Identifier-shaped runs of a file's text: ASCII word characters and any non-ASCII character (a
# UTF-8 byte, for bytes), so a name with combining marks or `·` stays one run. A run may hold more
# than a name, never less: the test stays a superset.
_IDENTIFIER: dict[type, "re.Pattern[Any]"] = {
    str: re.compile(r"[\w\x80-\U0010ffff]+"),
    bytes: re.compile(rb"[\w\x80-\xff]+"),
}


@functools.lru_cache(maxsize=64)
def _encoded(triggers: tuple[str, ...]) -> tuple[bytes, ...]:
    return tuple(trigger.encode() for trigger in triggers)


@functools.lru_cache(maxsize=64)
def _base_names(bases: tuple[str, ...], as_bytes: bool) -> frozenset[Source]:
    names = {base.rsplit(".", 1)[-1] for base in bases}
    return frozenset(name.encode() for name in names) if as_bytes else frozenset(names)


def parse_quietly(data: Source) -> Optional[ast.Module]:
    """The ast of `data`, or None when CPython rejects it (the caller reports why)."""
    if isinstance(data, bytes) and b"\0" in data:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(data)
    except (SyntaxError, ValueError, UnicodeDecodeError, LookupError, RecursionError, MemoryError):
        return None


def has_module_class(tree: ast.Module, extra_bases: Iterable[str] = ()) -> bool:
    """Whether some class of the file may be an nn.Module subclass (a superset of modules.py)."""
    return summarize(tree).has_module_class(extra_bases)


@dataclass(frozen=True)
class ClassSummary:
    """What the ast gate reads of a file: every class (nested ones too) with its bases as written,
    and every import binding that may qualify them. Small, so a pre-pass can keep one per file
    (see `CheckedFile`)."""

    classes: tuple[tuple[str, tuple[Optional[str], ...]], ...]
    aliases: tuple[tuple[str, str], ...]  # every binding of a name, not only the last: see below
    stars: tuple[str, ...]

    def has_module_class(self, extra_bases: Iterable[str] = ()) -> bool:
        if not self.classes:
            return False
        extra = _frozen(tuple(extra_bases))
        # A same-file chain (class B(A), A a module) starts at a class with a module base of its
        # own, so "some class is a module" is "some class has a module base other than a local class".
        return any(self.may_be_module_base(base, extra) for _, bases in self.classes for base in bases)

    def may_become_module_class(self) -> bool:
        """Whether some class has a base written as a (dotted) name other than `object`: such a
        class may be a module, here or through a base the project scan finds in another file."""
        return any(base is not None and base != "object" for _, bases in self.classes for base in bases)

    def may_be_module_base(self, written: Optional[str], extra_bases: frozenset[str]) -> bool:
        """Whether a base written `written` in this file may be an nn.Module (local classes aside).
        A name bound twice (`if x: import a.nn as nn` / `else: import torch.nn as nn`) may be
        either: which one libcst's analysis settles on depends on statement order, so both count."""
        return _may_be_module(written, self._bindings, self.stars, extra_bases)

    def module_class_names(self, extra_bases: Iterable[str]) -> set[str]:
        """Names of the classes that may be modules, following same-file chains."""
        extra = _frozen(tuple(extra_bases))
        modules: set[str] = set()
        changed = True
        while changed:
            changed = False
            for name, bases in self.classes:
                if name not in modules and any(b in modules or self.may_be_module_base(b, extra) for b in bases):
                    modules.add(name)
                    changed = True
        return modules

    @functools.cached_property
    def _bindings(self) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for name, target in self.aliases:
            found.setdefault(name, []).append(target)
        return found


@functools.lru_cache(maxsize=16)
def _frozen(names: tuple[str, ...]) -> frozenset[str]:
    return frozenset(names)  # asked once per file with the same (often long) tuple of bases


def summarize(tree: ast.Module) -> ClassSummary:
    classes: list[tuple[str, tuple[Optional[str], ...]]] = []
    aliases: list[tuple[str, str]] = []
    stars: list[str] = []
    for node in _statements(tree.body):
        if isinstance(node, ast.ClassDef):
            classes.append((node.name, tuple(class_bases(node))))
        elif isinstance(node, ast.Import):
            aliases.extend(plain_import_bindings(node).items())
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            for alias in node.names:
                if alias.name == "*":
                    stars.append(node.module)
                else:
                    aliases.append((alias.asname or alias.name, f"{node.module}.{alias.name}"))
    return ClassSummary(tuple(classes), tuple(dict.fromkeys(aliases)), tuple(stars))


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement, nested ones included; classes and imports are statements, and no
    expression holds a statement, so expressions need no visit."""
    stack = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        for name in _BODIES:
            child = getattr(node, name, None)
            if child:
                stack.extend(reversed(child))
        if isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            for handler in node.handlers:  # type: ignore[attr-defined]
                stack.extend(reversed(handler.body))
        elif isinstance(node, ast.Match):
            for case in node.cases:
                stack.extend(reversed(case.body))


_BODIES = ("body", "orelse", "finalbody")


def class_bases(node: ast.ClassDef) -> list[Optional[str]]:
    names = []
    for base in node.bases:
        if isinstance(base, ast.Starred):
            base = base.value
        names.append(_dotted(base))
    return names


def _dotted(node: ast.expr) -> Optional[str]:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _may_be_module(written: Optional[str], aliases: dict[str, list[str]], stars: Iterable[str], extra: frozenset[str]) -> bool:
    if written is None:
        return False
    head, _, rest = written.partition(".")
    candidates = [f"{target}.{rest}" if rest else target for target in aliases.get(head, ())]
    candidates.extend(f"{module}.{written}" for module in stars)
    if any(torch_api.is_module_base(q) for q in candidates):
        return True
    return bool(extra) and (written in extra or any(q in extra for q in candidates))
