"""Imports that a round of fixes left unread, removed so the next linter in the hook stays green.

Turning the last `nn.Parameter(t, requires_grad=False)` of a file into `self.register_buffer(...)`
can leave `import torch.nn as nn` with no reader, which pyflakes and ruff's default rules (F401)
report. After each round, a top-level import name is removed when the round's edits took away
its last read: `import torch.nn as nn`, `from torch import nn`, one name of `from x import a, b`;
the statement goes when none of its names is left. Left alone, as the author's:
- names that were unread before the fix, and any import of a package's `__init__.py` or of a
  file with an `__all__` (a re-export may be what the import is for);
- a name still spelled in a string that may be a type (`"nn.Module"` as an annotation);
- a plain `import a.b` (it binds `a`, which other imports share), star imports, and an import
  statement that carries a comment or shares its line with other statements.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Iterator, Optional, Union

import libcst as cst

from bufferlint.analysis.walk import nodes_of
from bufferlint.model import Replace

Import = Union[cst.Import, cst.ImportFrom]


def orphaned_import_edits(before: cst.Module, after: cst.Module, package: bool) -> list[Replace]:
    """Edits of `after` that remove the imported names the fixes left unread (`package`: the file
    is a package's `__init__.py`)."""
    if package or _declares_all(after):
        return []
    reads_before, reads_after = _reads(before), _reads(after)
    dead = {name for name, count in reads_before.items() if count and not reads_after.get(name)}
    if not dead:
        return []
    spelled = _strings(after)
    dead = {name for name in dead if re.search(rf"\b{re.escape(name)}\b", spelled) is None}
    return [edit for line, small in _imports(after) if (edit := _without(line, small, dead)) is not None]


def _declares_all(module: cst.Module) -> bool:
    return any(
        isinstance(target.target, cst.Name) and target.target.value == "__all__"
        for small in nodes_of(module, cst.Assign) for target in small.targets
    )


def _imports(module: cst.Module) -> Iterator[tuple[cst.SimpleStatementLine, Import]]:
    """Top-level import statements alone on their line, without a comment."""
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            continue
        small = statement.body[0]
        if isinstance(small, (cst.Import, cst.ImportFrom)) and statement.trailing_whitespace.comment is None:
            if not any(line.comment is not None for line in statement.leading_lines):
                yield statement, small


def _without(line: cst.SimpleStatementLine, small: Import, dead: set[str]) -> Optional[Replace]:
    """The import line without its dead names (removed whole when none is left)."""
    if isinstance(small.names, cst.ImportStar):
        return None
    aliases = list(small.names)
    keep = [alias for alias in aliases if _bound(alias, isinstance(small, cst.ImportFrom)) not in dead]
    if len(keep) == len(aliases):
        return None
    if not keep:
        return Replace(line, None)
    keep[-1] = keep[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return Replace(line, line.with_changes(body=[small.with_changes(names=keep)]))


def _bound(alias: cst.ImportAlias, from_import: bool) -> Optional[str]:
    """The name an alias binds, when it binds exactly one name of its own (`import a.b` binds `a`,
    shared with every other import of `a.*`: not handled)."""
    if alias.asname is not None:
        name = alias.asname.name
        return name.value if isinstance(name, cst.Name) else None
    if isinstance(alias.name, cst.Name):
        return alias.name.value
    return None


def _reads(module: cst.Module) -> Counter[str]:
    """How often each name is read outside import statements (attribute and keyword names excluded)."""
    skipped: set[int] = set()
    for node in nodes_of(module, (cst.Attribute, cst.Arg, cst.Import, cst.ImportFrom)):
        if isinstance(node, cst.Attribute):
            skipped.add(id(node.attr))
        elif isinstance(node, cst.Arg):
            if node.keyword is not None:
                skipped.add(id(node.keyword))
        else:
            skipped.update(id(name) for name in nodes_of(node, cst.Name))
    return Counter(name.value for name in nodes_of(module, cst.Name) if id(name) not in skipped)


# A string that may be a forward-referenced annotation (`"nn.Module"`, `"Optional[Tensor]"`), not prose.
_TYPE_TEXT = re.compile(r"[\w.\[\], |]+")


def _strings(module: cst.Module) -> str:
    """The strings that may be type expressions, joined."""
    texts = (node.evaluated_value for node in nodes_of(module, cst.SimpleString))
    return "\n".join(text for text in texts if isinstance(text, str) and _TYPE_TEXT.fullmatch(text))
