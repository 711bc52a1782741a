"""Resolve a verify target (`path/to/file.py::Class` or `package.module:Class`) to a class.

Parsing is torch-free and happens in the parent process; importing happens in the worker
subprocess because it runs user code.
"""
from __future__ import annotations

import ast
import importlib
import importlib.util
import linecache
import os
import sys
import traceback
import types
from dataclasses import dataclass
from pathlib import Path

from bufferlint.verify.errors import UsageError
from bufferlint.verify.paths import display_path

# calls that can bind module-level names the parser cannot see
_DYNAMIC_BINDERS = frozenset({"globals", "exec", "setattr", "vars", "locals", "__getattr__"})
_FORMS = "expected path/to/file.py::Class or package.module:Class"


@dataclass(frozen=True)
class Target:
    raw: str
    class_name: str  # may be dotted for nested classes: "Outer.Inner"
    file: Path | None = None  # set for the file form
    module: str | None = None  # set for the module form


def _check_class_name(raw: str, name: str) -> None:
    if not name or not all(part.isidentifier() for part in name.split(".")):
        raise UsageError(f"bad target {raw!r}: {name!r} is not a class name ({_FORMS})")


def parse_target(raw: str) -> Target:
    """Split the target text; checks that a file target exists, imports nothing."""
    if "::" in raw:
        path_text, _, class_name = raw.rpartition("::")
        _check_class_name(raw, class_name)
        path = Path(path_text)
        if path.suffix != ".py":
            raise UsageError(f"bad target {raw!r}: {path_text!r} is not a .py file ({_FORMS})")
        if not path.is_file():
            raise UsageError(f"bad target {raw!r}: no such file {path_text}")
        return Target(raw=raw, class_name=class_name, file=path.resolve())
    module, sep, class_name = raw.rpartition(":")
    if not sep or not module:
        raise UsageError(f"bad target {raw!r}: {_FORMS}")
    if not all(part.isidentifier() for part in module.split(".")):
        raise UsageError(f"bad target {raw!r}: {module!r} is not a module name ({_FORMS})")
    _check_class_name(raw, class_name)
    return Target(raw=raw, class_name=class_name, module=module)


def check_class_statically(target: Target) -> None:
    """Fail fast, before starting a worker and importing torch, when a file target's module
    cannot define the class: a syntax error, or no top-level binding of its name at all.
    Anything dynamic (a star import, `globals()`, ...) is left to the real import."""
    if target.file is None:
        return
    try:
        tree = ast.parse(target.file.read_bytes(), filename=str(target.file))
    except SyntaxError as exc:
        raise UsageError(f"cannot import {display_path(str(target.file))}: SyntaxError: {exc.msg} "
                         f"(at {display_path(str(target.file))}:{exc.lineno})") from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read {display_path(str(target.file))}: {exc}") from None
    names = _top_level_names(tree.body)
    used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    dynamic = "*" in names or bool(used & _DYNAMIC_BINDERS)
    if not dynamic and target.class_name.split(".")[0] not in names:
        raise UsageError(f"no class {target.class_name} in {target.raw.rpartition('::')[0]}")


def _top_level_names(body: list[ast.stmt]) -> set[str]:
    """Names bound at module level, looking into if/try/with blocks as the import would run them."""
    names: set[str] = set()
    for node in body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
            continue  # their bodies bind names in their own scope
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        for block in ("body", "orelse", "finalbody"):
            names |= _top_level_names([n for n in getattr(node, block, []) if isinstance(n, ast.stmt)])
        for handler in getattr(node, "handlers", []):
            names |= _top_level_names(handler.body)
    return names


def package_root(file: Path) -> tuple[Path, str]:
    """The sys.path entry and dotted module name under which `file` imports as part of its
    package (walking up while `__init__.py` exists), so relative imports in it keep working."""
    file = file.resolve()
    parts = [file.stem]
    folder = file.parent
    while (folder / "__init__.py").is_file():
        parts.insert(0, folder.name)
        folder = folder.parent
    if parts[-1] == "__init__":
        parts.pop()
    return folder, ".".join(parts)


def _user_location(exc: BaseException, file: Path | None) -> str:
    """`file.py:LINE` of the innermost frame in the user's file, for one-line import errors."""
    if isinstance(exc, SyntaxError) and exc.filename:
        return f"{display_path(exc.filename)}:{exc.lineno}"
    frames = traceback.extract_tb(exc.__traceback__)
    for frame in reversed(frames):
        if file is not None and Path(frame.filename) == file:
            return f"{display_path(frame.filename)}:{frame.lineno}"
    return f"{display_path(frames[-1].filename)}:{frames[-1].lineno}" if frames else ""


def _import_error(what: str, exc: BaseException, file: Path | None) -> UsageError:
    where = _user_location(exc, file)
    first_line = (str(exc).splitlines() or [""])[0]
    suffix = f" (at {where})" if where else ""
    return UsageError(f"cannot import {what}: {type(exc).__name__}: {first_line}{suffix}")


def import_target_module(target: Target) -> types.ModuleType:
    """Import the module holding the class. Any exception from user code is a UsageError."""
    if target.file is not None:
        return _import_file(target.file)
    assert target.module is not None
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())  # `python -m` semantics: the cwd is importable
    try:
        return importlib.import_module(target.module)
    except ModuleNotFoundError as exc:
        if exc.name and target.module.startswith(exc.name):
            raise UsageError(f"cannot import {target.module}: no module named {exc.name}") from None
        raise _import_error(target.module, exc, None) from None
    except BaseException as exc:  # user code: anything can happen, SystemExit included
        raise _import_error(target.module, exc, None) from None


def _import_file(file: Path) -> types.ModuleType:
    root, name = package_root(file)
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    try:
        if "." in name:
            module = importlib.import_module(name)
        else:
            module = _exec_file(file, name)
    except BaseException as exc:
        raise _import_error(display_path(str(file)), exc, file) from None
    if Path(getattr(module, "__file__", "") or "").resolve() != file:
        # an installed package of the same name shadows the file: load the file itself
        try:
            module = _exec_file(file, f"_bufferlint_target_{abs(hash(str(file)))}")
        except BaseException as exc:
            raise _import_error(display_path(str(file)), exc, file) from None
    return module


def _exec_file(file: Path, name: str) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look the module up by name
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]  # as importlib does: no half-initialised module left behind
        raise
    return module


def get_class(module: types.ModuleType, target: Target) -> type:
    obj: object = module
    for part in target.class_name.split("."):
        if not hasattr(obj, part):
            where = target.raw.rpartition(":")[0].rstrip(":")  # the file or module as typed
            raise UsageError(f"no class {target.class_name} in {where}")
        obj = getattr(obj, part)
    if not isinstance(obj, type):
        raise UsageError(f"{target.raw}: {target.class_name} is not a class")
    return obj


def exec_old_source(source: str, module_name: str, filename: str) -> types.ModuleType:
    """Execute an old version of the module `module_name` as a separate module in the same
    package, so relative imports resolve exactly as they do for the new version."""
    name = f"{module_name}__bufferlint_old"
    module = types.ModuleType(name)
    module.__file__ = filename
    module.__package__ = module_name.rpartition(".")[0]
    sys.modules[name] = module  # dataclasses look their module up by name while the class is built
    # the old text has no file of its own: register it so tracebacks and reports show its lines
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    try:
        code = compile(source, filename, "exec")
        exec(code, module.__dict__)  # noqa: S102 - running the user's old code is the point
    except BaseException as exc:
        raise _import_error(f"the old version ({filename})", exc, Path(filename)) from None
    return module
