"""Which configuration each file of a run gets, as ruff decides it.

- `--config FILE` applies to every file.
- Otherwise each file uses the nearest `pyproject.toml` with a `[tool.bufferlint]` table in its
  folder or above it (`config.find_config`): a nested project keeps its own rules and excludes,
  a `pyproject.toml` without the table is passed over, and the order of the paths on the command
  line changes nothing.
- Command-line flags apply on top of every file's configuration; a configuration is read and
  validated once per run, when the first file that uses it is seen.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Optional

from bufferlint.config import FileConfig, Overrides, Settings, build_settings, config_at, load_explicit
from bufferlint.discovery import Candidate
from bufferlint.filters import FileFilter

MakeFilter = Callable[[FileConfig, Settings], FileFilter]


class FileConfigs:
    def __init__(self, explicit: Optional[str], flags: Overrides, make_filter: MakeFilter) -> None:
        self._flags, self._make_filter = flags, make_filter
        self._explicit = None if explicit is None else load_explicit(explicit)
        self._by_folder: dict[Path, FileConfig] = {}
        self._by_path: dict[str, FileConfig] = {}  # each file is asked about two or three times
        self._prepared: dict[Optional[Path], tuple[Settings, FileFilter]] = {}

    @property
    def explicit(self) -> bool:
        """`--config FILE`: one configuration for every file, wherever it sits."""
        return self._explicit is not None

    def config_of(self, path: str) -> FileConfig:
        """The configuration that applies to `path`, read once per folder."""
        if self._explicit is not None:
            return self._explicit
        known = self._by_path.get(path)
        if known is not None:
            return known
        # the path as written, not resolved: a link is configured where it sits, and a loop is
        # reported when it is read (BUF999), not here
        start = Path(os.path.abspath(path)) if path != "-" else Path.cwd()
        folder = start if start.is_dir() else start.parent
        config = self._by_folder.get(folder)
        if config is None:
            config = self._by_folder[folder] = config_at(folder)
        if path != "-":
            self._by_path[path] = config
        return config

    def at(self, path: str) -> tuple[Settings, FileFilter]:
        """The settings and file filter of the configuration that applies to `path`, built once
        per configuration file."""
        config = self.config_of(path)
        found = self._prepared.get(config.path)
        if found is None:
            settings = build_settings(config, self._flags)
            found = self._prepared[config.path] = settings, self._make_filter(config, settings)
        return found

    def keep(self, candidate: Candidate) -> bool:
        return self.at(candidate.path)[1].keep(candidate)

    def settings_for(self, path: str) -> Settings:
        """The file's settings, its configuration's per-file ignores included."""
        settings, file_filter = self.at(path)
        return file_filter.settings_for(path, settings)

    def describe(self, path: str) -> str:
        """`--show-settings`: the configuration file that applies to `path` and what it resolves to."""
        settings, file_filter = self.at(path)
        config = self.config_of(path)
        lines = [
            f"Path: {path}",
            f"Configuration: {config.path if config.path is not None else 'none (defaults)'}",
            f"Project root: {file_filter.root}",
            f"Enabled rules: {', '.join(rule.code for rule in settings.enabled_rules())}",
            f"select: {list(settings.select) if settings.select is not None else 'default'}",
            f"extend-select: {list(settings.extend_select)}",
            f"ignore: {list(settings.ignore)}",
            f"unsafe-fixes: {str(settings.unsafe_fixes).lower()}",
            f"check-tests: {str(settings.check_tests).lower()}",
            f"module-bases: {list(settings.module_bases)}",
            f"exclude: {list(file_filter.patterns)}",
            f"force-exclude: {str(file_filter.force_exclude).lower()}",
            f"respect-gitignore: {str(file_filter.respect_gitignore).lower()}",
            f"per-file-ignores: {dict((pattern, list(codes)) for pattern, codes in settings.per_file_ignores)}",
            f"ignore for this path: {list(file_filter.settings_for(path, settings).ignore)}",
        ]
        return "".join(line + "\n" for line in lines)
