"""flake8 plugin (entry point `flake8.extension`, code prefix `BUF`): the same findings as
`bufferlint`, reported through flake8 (`flake8 --select BUF`).

The rules that run are the ones `bufferlint` would run for the file: the defaults, adjusted by
`select`, `ignore`, `extend-select` and `module-bases` of `[tool.bufferlint]` in the nearest
pyproject.toml (so a rule that is off by default, such as BUF006, is turned on there). flake8
then applies its own `--select`/`--extend-ignore` and `# noqa` on top.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path
from typing import Iterator, Optional

from bufferlint import __version__
from bufferlint.config import ConfigError, FileConfig, Overrides, Settings, build_settings, find_config, read_config
from bufferlint.lint import PARSE_ERROR_CODE, check_bytes


class BufferlintChecker:
    name = "bufferlint"
    version = __version__

    def __init__(self, tree: ast.AST, filename: str, lines: list[str]) -> None:
        self.filename = filename
        self.lines = lines

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        result = check_bytes("".join(self.lines), self.filename, _settings_for(self.filename))
        for finding in result.findings:
            if finding.code == PARSE_ERROR_CODE:
                continue  # flake8 reports syntax errors itself (E999)
            # flake8 columns are 0-based; it prints them plus one, as bufferlint does.
            yield finding.location.row, finding.location.column - 1, f"{finding.code} {finding.message}", type(self)


def _settings_for(filename: str) -> Settings:
    start = Path(filename).resolve() if filename not in ("-", "stdin") else Path.cwd()
    return _settings_at(find_config(start))


@lru_cache(maxsize=None)
def _settings_at(pyproject: Optional[Path]) -> Settings:
    if pyproject is None:
        return Settings()
    try:
        config = read_config(pyproject, explicit=False)
    except ConfigError:
        config = FileConfig(None, pyproject.parent)  # `bufferlint` itself reports the broken file
    return build_settings(config, Overrides())
