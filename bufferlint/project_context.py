"""The rest of the project, for a run given only some of its files.

A pre-commit hook passes only the files a commit changes, and an editor only the file it shows.
The project scan (analysis/project.py) still needs the others: a base class defined in another
file makes a class a module, a training script that unfreezes parameters or resumes an optimizer
decides a fix. So the scan also reads the project's other Python files (one `ast` parse each, or
a cache hit), while only the given files are checked. Linting a file alone then reports what
linting the whole project reports for it.

The project is the folder of the configuration found for a given file (`pyproject.toml`,
`bufferlint.toml`...), else its git root (also with `--config FILE`, which may sit anywhere); a
file in neither is scanned alone. A folder given on the command line that holds the whole project
needs nothing more. Files the configuration excludes stay out of the scan too.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Optional

from bufferlint.discovery import Candidate, discover, identity
from bufferlint.file_configs import FileConfigs
from bufferlint.filters import git_root

_SCANNED_SUFFIXES = (".py", ".pyi")


def context_paths(given: Iterable[str], candidates: list[Candidate], configs: FileConfigs) -> list[str]:
    """Python files of the candidates' projects that the run does not check, in walking order."""
    folders = [os.path.realpath(p) for p in given if os.path.isdir(p)]
    git_roots: dict[str, Optional[str]] = {}  # by folder: files of one folder share it
    roots = sorted({os.path.realpath(root) for c in candidates if (root := project_folder(c.path, configs, git_roots)) is not None})
    # A folder given on the command line that holds the project: the run walks all of it already.
    roots = [root for root in roots if not any(_within(root, folder) for folder in folders)]
    if not roots:
        return []
    seen = {identity(c.path) for c in candidates}
    found: list[str] = []
    for root in roots:
        for candidate in discover([root]):
            key = identity(candidate.path)
            if key in seen or not candidate.path.endswith(_SCANNED_SUFFIXES) or not configs.keep(candidate):
                continue
            seen.add(key)
            found.append(candidate.path)
    return found


def project_folder(path: str, configs: FileConfigs, git_roots: dict[str, Optional[str]]) -> Optional[str]:
    """The folder of the configuration found for `path`, else its git root, else None. A file
    named with `--config` may sit anywhere: then the git root (`git_roots`: found so far, by folder)."""
    if path == "-":
        return None
    config = configs.config_of(path)
    if config.path is not None and not configs.explicit:
        return str(config.root)
    folder = os.path.dirname(os.path.abspath(path))
    if folder not in git_roots:
        root = git_root(Path(folder))
        git_roots[folder] = None if root is None else str(root)
    return git_roots[folder]


def _within(path: str, folder: str) -> bool:
    """`path` is `folder` or inside it."""
    try:
        return os.path.commonpath([path, folder]) == folder
    except ValueError:  # another drive on Windows
        return False
