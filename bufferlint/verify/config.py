"""Per-class constructor kwargs and example input from pyproject.toml (torch-free).

    [tool.bufferlint.verify."models.attn:CausalSelfAttention"]
    kwargs = { d = 64 }
    input = "torch.randn(2, 16, 64)"

    [tool.bufferlint.verify."model.py::GPT"]
    build = "GPT(GPTConfig(n_layer=2, n_embd=64))"   # instead of kwargs: any expression

Keys use either target form: `package.module:Class` or `path/to/file.py::Class` (a path
relative to the pyproject.toml's folder). The nearest pyproject.toml up from the class's file
wins, like `[tool.bufferlint]` itself.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bufferlint.config import find_config
from bufferlint.verify.errors import UsageError

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib  # type: ignore[no-redef,import-not-found]


@dataclass
class ClassConfig:
    kwargs: dict[str, Any] = field(default_factory=dict)
    input: str | None = None
    origin: str = ""  # where it came from, for messages
    build: str | None = None  # an expression that builds the module, evaluated in its file's namespace


def verify_tables(pyproject: Path) -> dict[str, Any]:
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"cannot read {pyproject}: {exc}") from None
    tables = data.get("tool", {}).get("bufferlint", {}).get("verify", {})
    if not isinstance(tables, dict):
        raise UsageError(f"{pyproject}: [tool.bufferlint.verify] must be a table")
    return tables


def _module_names(file: Path, root: Path, package_name: str | None) -> set[str]:
    """Dotted names a config key may use for `file`: the import name, and the path relative to
    the pyproject folder (with a leading `src.` dropped, for src layouts)."""
    names = {package_name} if package_name else set()
    try:
        rel = file.resolve().relative_to(root.resolve()).with_suffix("")
    except ValueError:
        return names
    dotted = ".".join(rel.parts)
    names.add(dotted)
    if dotted.startswith("src."):
        names.add(dotted[len("src."):])
    return names


def _key_matches(key: str, root: Path, file: Path | None, names: set[str], class_name: str) -> bool:
    if "::" in key:
        path_text, _, cls = key.rpartition("::")
        return cls == class_name and file is not None and (root / path_text).resolve() == file.resolve()
    module, _, cls = key.rpartition(":")
    return cls == class_name and module in names


def _to_class_config(key: str, table: Any, pyproject: Path) -> ClassConfig:
    where = f'{pyproject} [tool.bufferlint.verify."{key}"]'
    if not isinstance(table, dict):
        raise UsageError(f"{where} must be a table with `kwargs` (or `build`) and `input`")
    unknown = set(table) - {"kwargs", "input", "build"}
    if unknown:
        raise UsageError(f"{where}: unknown key(s) {', '.join(sorted(unknown))} (expected kwargs, build, input)")
    kwargs = table.get("kwargs", {})
    if not isinstance(kwargs, dict):
        raise UsageError(f"{where}: kwargs must be a table")
    expr = table.get("input")
    if expr is not None and not isinstance(expr, str):
        raise UsageError(f"{where}: input must be a string (a Python expression)")
    build = table.get("build")
    if build is not None and not isinstance(build, str):
        raise UsageError(f"{where}: build must be a string (a Python expression that returns the module)")
    if build is not None and kwargs:
        raise UsageError(f"{where}: give either kwargs or build, not both")
    return ClassConfig(kwargs=dict(kwargs), input=expr, origin=where, build=build)


def lookup(file: Path | None, module_name: str | None, class_name: str) -> ClassConfig | None:
    """Config for one class from the nearest pyproject.toml up from its file (or the cwd)."""
    pyproject = find_config(file if file is not None else Path.cwd())
    if pyproject is None:
        return None
    root = pyproject.parent
    names = _module_names(file, root, module_name) if file is not None else {module_name or ""}
    for key, table in verify_tables(pyproject).items():
        if _key_matches(key, root, file, names, class_name):
            return _to_class_config(key, table, pyproject)
    return None


def merge(found: ClassConfig | None, kwargs: dict[str, Any] | None, expr: str | None, build: str | None = None) -> ClassConfig:
    """Flags win over the file: `--kwargs` entries override the table's, `--input` and `--build`
    replace theirs (and `--build` drops the table's kwargs, `--kwargs` its build)."""
    merged = ClassConfig() if found is None else ClassConfig(dict(found.kwargs), found.input, found.origin, found.build)
    if kwargs:
        merged.kwargs.update(kwargs)
        merged.build = None
    if build is not None:
        merged.build, merged.kwargs = build, {}
    if expr is not None:
        merged.input = expr
    return merged
