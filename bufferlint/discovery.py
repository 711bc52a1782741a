"""Which files a run looks at: explicit files always, folders walked for Python sources."""

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
        if os.path.isdir(path):
            for found in _walk(path):
                if found not in seen:
                    seen.add(found)
                    yield Candidate(found, explicit=False)
        elif path not in seen:
            seen.add(path)
            yield Candidate(path, explicit=True)


def _walk(root: str) -> Iterator[str]:
    for directory, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS and not d.endswith(".egg-info"))
        for name in sorted(filenames):
            if name.endswith(PYTHON_SUFFIXES):
                yield os.path.join(directory, name)
