"""Files the project pre-pass already parsed with CPython's `ast`, so the per-file pass does not.

The pre-pass (`analysis/project.py`) parses nearly every file to read class headers. From the same
tree it keeps, per file content, what the per-file pass would otherwise parse the file again for:
the prefilter's class summary (`prefilter.ClassSummary`) and, for files that will reach libcst,
whether the nesting guard passed. A file whose content is not known here (an API call, a cached
index entry, a spawned worker) takes the normal path: this is only a shortcut, never a verdict of
its own. Keys are content digests, so a file edited between the two passes is simply not known.
"""

from __future__ import annotations

import ast
import contextlib
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Iterator, Optional, Union

from bufferlint import prefilter
from bufferlint.pruning import Pruned, TopDefinition, pruned, top_definitions
from bufferlint.source import digest


@dataclass(frozen=True)
class CheckedFile:
    summary: prefilter.ClassSummary
    shallow: bool  # the nesting guard ran on this tree and passed: libcst may parse it directly
    definitions: tuple[TopDefinition, ...]  # what a check may blank (pruning.py)

    @property
    def class_regions(self) -> dict[str, tuple[int, int]]:
        """First and last line of each top-level class whose name no other top-level class has."""
        classes = [d for d in self.definitions if d.bases is not None]
        names = Counter(d.name for d in classes)
        return {d.name: (d.first, d.last) for d in classes if names[d.name] == 1}

    def for_check(self, data: bytes, extra_bases: Iterable[str]) -> Pruned:
        """What a check parses: `data` with the definitions it need not parse up front blanked."""
        return pruned(data, self.definitions, self.summary, extra_bases)


Registry = dict[bytes, CheckedFile]

# The registry in effect for this process (set around a run; forked workers inherit it).
_current: Optional[Registry] = None


def examine(data: bytes, tree: ast.Module, extra_bases: Iterable[str]) -> Optional[CheckedFile]:
    """What the per-file pass needs of a file CPython parsed into `tree`, or None when the
    per-file pass would still reject it. The nesting guard only runs where a class of the file
    may be a module, here or once the project's bases are known (the files that go on to libcst)."""
    from bufferlint.source import SourceError, check_nesting, decode

    try:
        decode(data)  # CPython's parser accepts a few files that reading them as text does not
    except SourceError:
        return None
    summary = prefilter.summarize(tree)
    shallow = False
    if summary.may_become_module_class():
        try:
            check_nesting(tree, text=data)
            shallow = True
        except SourceError:
            pass  # the per-file pass reports it
    # the definitions serve only a check that parses the file straight away (shallow)
    return CheckedFile(summary, shallow, top_definitions(tree) if shallow else ())


@contextlib.contextmanager
def in_effect(registry: Registry) -> Iterator[None]:
    global _current
    previous, _current = _current, registry
    try:
        yield
    finally:
        _current = previous


def recall(data: Union[bytes, str]) -> Optional[CheckedFile]:
    if _current is None or not isinstance(data, bytes):
        return None
    return _current.get(digest(data))
