"""Effective settings: which rules run, and how fixes behave; `[tool.bufferlint]` loading.

A file's configuration is the `[tool.bufferlint]` table of the nearest `pyproject.toml` that has
one, in its folder or above (or the file given with `--config`); `file_configs.py` resolves it
per file. Command-line flags override it. Patterns in `exclude`, `extend-exclude` and
`per-file-ignores` are relative to that file's folder.
"""

from __future__ import annotations

import difflib
import functools

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional

from bufferlint.analysis.project_facts import EMPTY, ProjectFacts
from bufferlint.rules import all_rules
from bufferlint.rules.base import Rule

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python < 3.11 only
    import tomli as tomllib


class ConfigError(Exception):
    """Bad configuration or arguments: exit code 2."""


@dataclass(frozen=True)
class Settings:
    select: Optional[tuple[str, ...]] = None  # None: every rule enabled by default
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    unsafe_fixes: bool = False
    module_bases: tuple[str, ...] = ()
    # (gitignore-style pattern relative to the project root, codes): see bufferlint.filters.
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = field(default_factory=tuple)
    ignore_noqa: bool = False  # report findings even where `# noqa` suppresses them
    # device findings in tests and benchmarks (`tests/`, `test_*.py`): off unless asked for
    check_tests: bool = False
    fixable: Optional[tuple[str, ...]] = None  # rules whose fixes are offered (None: all)
    unfixable: tuple[str, ...] = ()  # rules whose findings are reported without a fix
    # What the other files of the run say (project_facts.py): part of the cache key through repr().
    project: ProjectFacts = EMPTY

    def enabled_rules(self) -> list[type[Rule]]:
        return list(_enabled_rules(self))

    def fix_allowed(self, code: str) -> bool:
        """`fixable` / `unfixable`, as ruff has them: `--fix` leaves the other rules' findings alone."""
        fixable, unfixable = _fix_choice(self)
        return (fixable is None or code in fixable) and code not in unfixable

    def triggers(self) -> tuple[str, ...]:
        """Substrings one of which a file must contain to possibly have a finding (or else name one
        of `module_bases`): the rules' own, in rule order (`torch`, the most common, is met first)."""
        return _triggers(self)


# Both are asked for every file of a run, and a project's module bases can be hundreds of names.
@functools.lru_cache(maxsize=64)
def _enabled_rules(settings: Settings) -> tuple[type[Rule], ...]:
    rules = all_rules()
    if settings.select is None:
        chosen = {r for r in rules if r.default_enabled}
    else:
        chosen = set(_matching(rules, settings.select))
    chosen |= set(_matching(rules, settings.extend_select))
    chosen -= set(_matching(rules, settings.ignore))
    return tuple(sorted(chosen, key=lambda rule: rule.code))


@functools.lru_cache(maxsize=64)
def _fix_choice(settings: Settings) -> tuple[Optional[frozenset[str]], frozenset[str]]:
    """(codes `fixable` names, None for all; codes `unfixable` names)."""
    rules = all_rules()
    fixable = None if settings.fixable is None else frozenset(r.code for r in _matching(rules, settings.fixable))
    return fixable, frozenset(r.code for r in _matching(rules, settings.unfixable))


@functools.lru_cache(maxsize=64)
def _triggers(settings: Settings) -> tuple[str, ...]:
    return tuple(dict.fromkeys(t for rule in _enabled_rules(settings) for t in rule.triggers))


# Files that cannot be read or parsed: always reported, never selected or ignored like a rule.
_UNREADABLE = "BUF999"


def _matching(rules: Iterable[type[Rule]], selectors: Iterable[str]) -> Iterable[type[Rule]]:
    for selector in selectors:
        if selector.upper() == _UNREADABLE:
            raise ConfigError(f"{_UNREADABLE} (a file that cannot be read or parsed) is always reported; exclude such files instead (`extend-exclude`)")
        found = [r for r in rules if _selects(selector, r)]
        if not found:
            raise ConfigError(f"unknown rule selector: {selector!r}")
        yield from found


def _selects(selector: str, rule: type[Rule]) -> bool:
    return rule.code.startswith(selector.upper()) or rule.name == selector.lower() or selector.upper() == "ALL"


def unknown_selectors(selectors: Iterable[str]) -> list[str]:
    rules = all_rules()
    return [s for s in selectors if s.upper() != _UNREADABLE and not any(_selects(s, r) for r in rules)]


# ---------------------------------------------------------------------------------------------
# The configuration file

# `verify` is the runtime verifier's own table (`bufferlint.verify.config` validates it).
KNOWN_KEYS = frozenset(
    """
    select ignore extend-select exclude extend-exclude per-file-ignores unsafe-fixes module-bases
    force-exclude respect-gitignore fixable unfixable verify check-tests
    """.split()
)
_LIST_KEYS = ("select", "ignore", "extend-select", "exclude", "extend-exclude", "module-bases", "fixable", "unfixable")
_BOOL_KEYS = ("unsafe-fixes", "force-exclude", "respect-gitignore", "check-tests")
_CODE_KEYS = ("select", "ignore", "extend-select", "fixable", "unfixable")


@dataclass(frozen=True)
class FileConfig:
    """The validated `[tool.bufferlint]` table and where it came from."""

    path: Optional[Path]  # None: no configuration file, defaults only
    root: Path  # the folder patterns are relative to
    values: Mapping[str, Any] = field(default_factory=dict)

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    @property
    def where(self) -> str:
        return f"{self.path} [tool.bufferlint]" if self.path else "defaults"


def find_config(start: Path) -> Optional[Path]:
    """The nearest `pyproject.toml` with a `[tool.bufferlint]` table in `start` (a file's folder)
    or above it, as ruff looks for `[tool.ruff]`: one without the table (a sub-project's, a
    vendored package's) is passed over."""
    folder = start if start.is_dir() else start.parent
    for candidate in [folder, *folder.parents]:
        path = candidate / "pyproject.toml"
        if path.is_file() and _has_table(path):
            return path
    return None


@functools.lru_cache(maxsize=None)
def _has_table(path: Path) -> bool:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    try:
        return isinstance(tomllib.loads(text).get("tool", {}).get("bufferlint"), dict)
    except tomllib.TOMLDecodeError:
        return "bufferlint" in text  # ours but broken: reading it names the error


def load_explicit(explicit: str) -> FileConfig:
    path = Path(explicit)
    if not path.is_file():
        raise ConfigError(f"--config: no such file: {explicit}")
    return read_config(path, explicit=True)


def config_at(start: Path) -> FileConfig:
    """The configuration that applies at `start`: the nearest table, else the defaults."""
    found = find_config(start)
    return FileConfig(None, Path.cwd()) if found is None else read_config(found, explicit=False)


def read_config(path: Path, explicit: bool) -> FileConfig:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"cannot read {path}: {error}") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: invalid TOML: {error}") from None
    table = data.get("tool", {}).get("bufferlint")
    if table is None and explicit and path.name != "pyproject.toml":
        if "tool" in data:
            raise ConfigError(f"{path}: no [tool.bufferlint] table (it has [tool.{next(iter(data['tool']), '')}])")
        table = data  # a dedicated file (e.g. bufferlint.toml) holds the keys at the top level
    if table is None:
        table = {}
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.bufferlint] must be a table")
    config = FileConfig(path, path.resolve().parent, table)
    validate(config)
    return config


def validate(config: FileConfig) -> None:
    """Unknown keys, wrong types and unknown rule codes all fail, naming what is wrong."""
    where = config.where
    unknown = sorted(set(config.values) - KNOWN_KEYS)
    if unknown:
        guesses = [f"`{key}`: did you mean `{close[0]}`?" for key in unknown if (close := difflib.get_close_matches(key, KNOWN_KEYS, n=1))]
        hint = f" ({'; '.join(guesses)})" if guesses else f" (known: {', '.join(sorted(KNOWN_KEYS))})"
        raise ConfigError(f"{where}: unknown key{'s' if len(unknown) > 1 else ''}: {', '.join(unknown)}{hint}")
    for key in _LIST_KEYS:
        if key in config.values and not _is_str_list(config.values[key]):
            raise ConfigError(f"{where}: `{key}` must be a list of strings")
    for key in _BOOL_KEYS:
        if key in config.values and not isinstance(config.values[key], bool):
            raise ConfigError(f"{where}: `{key}` must be true or false")
    ignores = config.values.get("per-file-ignores", {})
    if not isinstance(ignores, dict) or not all(_is_str_list(codes) for codes in ignores.values()):
        raise ConfigError(f"{where}: `per-file-ignores` must be a table of pattern = [codes]")
    problems = [f"`{key}`: {', '.join(map(repr, bad))}" for key in _CODE_KEYS if (bad := unknown_selectors(config.values.get(key, ())))]
    problems += [f"`per-file-ignores` {pattern!r}: {', '.join(map(repr, bad))}" for pattern, codes in ignores.items() if (bad := unknown_selectors(codes))]
    if problems:
        raise ConfigError(f"{where}: unknown rule codes in " + "; ".join(problems) + " (see `bufferlint --list-rules`)")


def _is_str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


@dataclass(frozen=True)
class Overrides:
    """What the command line says; None means "not given, use the configuration"."""

    select: Optional[tuple[str, ...]] = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    unsafe_fixes: Optional[bool] = None
    module_bases: tuple[str, ...] = ()
    ignore_noqa: bool = False
    fixable: Optional[tuple[str, ...]] = None
    unfixable: tuple[str, ...] = ()
    check_tests: Optional[bool] = None


def build_settings(config: FileConfig, flags: Overrides) -> Settings:
    """Flags win over the file: `--select` replaces `select`; the other lists add to the file's."""
    configured = config.get("select")
    select = flags.select if flags.select is not None else (None if configured is None else tuple(configured))
    unsafe = flags.unsafe_fixes if flags.unsafe_fixes is not None else bool(config.get("unsafe-fixes", False))
    per_file = tuple((pattern, tuple(codes)) for pattern, codes in config.get("per-file-ignores", {}).items())
    settings = Settings(
        select=select,
        ignore=_list(config, "ignore") + flags.ignore,
        extend_select=_list(config, "extend-select") + flags.extend_select,
        unsafe_fixes=unsafe,
        module_bases=_list(config, "module-bases") + flags.module_bases,
        per_file_ignores=per_file,
        ignore_noqa=flags.ignore_noqa,
        fixable=flags.fixable if flags.fixable is not None else (None if config.get("fixable") is None else tuple(config.get("fixable"))),
        unfixable=_list(config, "unfixable") + flags.unfixable,
        check_tests=flags.check_tests if flags.check_tests is not None else bool(config.get("check-tests", False)),
    )
    # unknown selectors on the command line fail here, before any file is read
    settings.enabled_rules()
    settings.fix_allowed("")
    return settings


def _list(config: FileConfig, key: str) -> tuple[str, ...]:
    return tuple(config.get(key, ()))


def relative_to_root(path: str, root: Path) -> str:
    """`path` relative to the project root in `/` form; paths outside it stay as they are."""
    absolute = os.path.abspath(path)
    relative = os.path.relpath(absolute, root)
    if relative.startswith(".."):
        return Path(absolute).as_posix().lstrip("/")
    return Path(relative).as_posix()
