"""Which files a run looks at: explicit files always, folders walked for Python sources.

- A path named on the command line is linted whatever its suffix (as ruff does: `bufferlint
  script` checks an extension-less script as Python), unless it is a folder, which is walked.
- Paths that do not exist, dangling symlinks and symlink loops are still candidates: reading them
  fails and the run reports them (BUF999) instead of skipping them silently.
- Folders are walked without following symlinked folders (no loops, no escaping the tree);
  symlinked files inside them are linted (and fixed through the link). A folder that cannot be
  listed becomes a candidate of its own, so reading it reports why.
- The same file reached twice (two spellings, or a link and its target) is processed once.
- Paths are spelled as ruff spells them: relative to the working folder when inside it, without
  `./` (`bufferlint .` reports `vit/x.py`, so `--diff` output applies with `git apply`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterator

PYTHON_SUFFIXES = (".py", ".pyi", ".ipynb")  # notebooks: see bufferlint.notebook
SKIPPED_DIRS = frozenset(
    """
    .git .hg .svn .venv venv .tox .nox .mypy_cache .pytest_cache .ruff_cache __pycache__
    node_modules .bufferlint_cache .eggs build dist site-packages
    """.split()
)


@dataclass(frozen=True)
class Candidate:
    path: str
    explicit: bool  # named on the command line: never skipped silently


def discover(paths: list[str]) -> Iterator[Candidate]:
    seen: set[str] = set()
    for path in paths:
        found = _walk(path) if os.path.isdir(path) else iter([path])
        for file in found:
            key = identity(file)
            if key not in seen:
                seen.add(key)
                yield Candidate(display_path(file), explicit=file == path)


def display_path(path: str) -> str:
    """`./vit/x.py` -> `vit/x.py`; an absolute path inside the working folder -> relative to it."""
    normal = os.path.normpath(path) if path else path
    if not os.path.isabs(normal):
        return normal
    try:
        relative = os.path.relpath(normal)
    except (OSError, ValueError):  # another drive on Windows, or the working folder is gone
        return normal
    return normal if relative == os.pardir or relative.startswith(os.pardir + os.sep) else relative


def identity(path: str) -> str:
    """One key per file on disk; a path that cannot be resolved stands for itself."""
    try:
        return os.path.normcase(os.path.realpath(path))
    except (OSError, ValueError):
        return path


def _walk(root: str) -> Iterator[str]:
    unlistable: list[str] = []
    for directory, dirnames, filenames in os.walk(root, onerror=lambda e: unlistable.append(e.filename), followlinks=False):
        yield from _flush(unlistable)
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS and not d.endswith(".egg-info"))
        for name in sorted(filenames):
            if name.endswith(PYTHON_SUFFIXES):
                yield os.path.join(directory, name)
    yield from _flush(unlistable)


def _flush(pending: list[str]) -> Iterator[str]:
    while pending:
        yield pending.pop(0)
