"""Which discovered files a run keeps, and which codes each file ignores.

- `exclude` (default: the folders discovery already skips) and `extend-exclude`: gitignore-style
  patterns relative to the project root (the configuration file's folder). They apply to files
  found by walking a folder; a file named on the command line is kept unless `force-exclude`
  (pre-commit passes every file by name, so its hooks use `--force-exclude`).
- `.gitignore` files from the git root (the nearest folder with `.git`) down to each file's
  folder, deeper files winning, as git does; walked files only, like `exclude`.
- `per-file-ignores`: pattern -> codes, added to `ignore` for the files the pattern matches.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Optional

from bufferlint.config import FileConfig, Settings, relative_to_root
from bufferlint.discovery import SKIPPED_DIRS, Candidate

# Jupyter keeps autosave copies of every notebook in .ipynb_checkpoints: never lint those twice.
DEFAULT_EXCLUDE = tuple(sorted(f"{name}/" for name in SKIPPED_DIRS)) + ("*.egg-info/", ".ipynb_checkpoints/")


if TYPE_CHECKING:
    import pathspec


class LazySpec:
    """Gitignore-style patterns compiled on first use: importing `pathspec` pulls in asyncio,
    ssl and logging, which a run over files named on the command line never needs."""

    def __init__(self, patterns: Iterable[str]) -> None:
        self._patterns = list(patterns)
        self._spec: "Optional[pathspec.PathSpec]" = None

    @property
    def spec(self) -> "pathspec.PathSpec":
        if self._spec is None:
            import pathspec

            self._spec = pathspec.GitIgnoreSpec.from_lines(self._patterns)
        return self._spec

    @property
    def patterns(self) -> tuple[str, ...]:
        return tuple(self._patterns)

    def match_file(self, path: str) -> bool:
        return self.spec.match_file(path)

    def check_file(self, path: str) -> Any:
        return self.spec.check_file(path)


def _spec(patterns: Iterable[str]) -> LazySpec:
    return LazySpec(patterns)


@dataclass
class FileFilter:
    root: Path
    exclude: LazySpec
    force_exclude: bool = False
    respect_gitignore: bool = True
    per_file_ignores: tuple[tuple[LazySpec, tuple[str, ...]], ...] = ()
    _gitignores: "GitIgnores" = field(default_factory=lambda: GitIgnores())

    @classmethod
    def from_config(cls, config: FileConfig, settings: Settings, force_exclude: Optional[bool] = None) -> "FileFilter":
        patterns = list(config.get("exclude", DEFAULT_EXCLUDE)) + list(config.get("extend-exclude", []))
        return cls(
            root=config.root,
            exclude=_spec(patterns),
            force_exclude=bool(config.get("force-exclude", False)) if force_exclude is None else force_exclude,
            respect_gitignore=bool(config.get("respect-gitignore", True)),
            per_file_ignores=tuple((_spec([pattern]), codes) for pattern, codes in settings.per_file_ignores),
        )

    @property
    def patterns(self) -> tuple[str, ...]:
        """The exclusion patterns, `exclude` and `extend-exclude` together."""
        return self.exclude.patterns

    def keep(self, candidate: Candidate) -> bool:
        if candidate.explicit and not self.force_exclude:
            return True
        if self.exclude.match_file(relative_to_root(candidate.path, self.root)):
            return False
        return not (self.respect_gitignore and self._gitignores.ignored(candidate.path))

    def select(self, candidates: Iterable[Candidate]) -> Iterator[Candidate]:
        return (c for c in candidates if self.keep(c))

    def settings_for(self, path: str, settings: Settings) -> Settings:
        """`settings` with this file's per-file ignores added to `ignore`."""
        relative = relative_to_root(path, self.root)
        extra = tuple(code for spec, codes in self.per_file_ignores if spec.match_file(relative) for code in codes)
        return replace(settings, ignore=settings.ignore + extra) if extra else settings


def git_root(folder: Path) -> Optional[Path]:
    """The nearest folder at or above `folder` that holds `.git`, or None (callers cache it for
    one run: a long-lived process may see a repository appear)."""
    return next((candidate for candidate in (folder, *folder.parents) if (candidate / ".git").exists()), None)


class GitIgnores:
    """`.gitignore` matching as git does it; parsed files are cached for one run."""

    def __init__(self) -> None:
        self._specs: dict[Path, Optional[LazySpec]] = {}
        self._chains: dict[Path, tuple[Path, ...]] = {}

    def ignored(self, path: str) -> bool:
        absolute = Path(os.path.abspath(path))
        decision: Optional[bool] = None
        for folder in self._chain(absolute.parent):  # from the git root down: deeper files win
            spec = self._spec(folder)
            if spec is None:
                continue
            result = spec.check_file(absolute.relative_to(folder).as_posix())
            if result.include is not None:
                decision = result.include
        return bool(decision)

    def _chain(self, folder: Path) -> tuple[Path, ...]:
        """The folders from the git root down to `folder`; none when it is not in a git repo."""
        if folder not in self._chains:
            root = git_root(folder)
            ancestors = [folder, *folder.parents]
            self._chains[folder] = () if root is None else tuple(reversed(ancestors[: ancestors.index(root) + 1]))
        return self._chains[folder]

    def _spec(self, folder: Path) -> Optional[LazySpec]:
        if folder not in self._specs:
            try:
                text = (folder / ".gitignore").read_text(encoding="utf-8", errors="replace")
            except OSError:
                self._specs[folder] = None
            else:
                self._specs[folder] = _spec(text.splitlines())
        return self._specs[folder]
