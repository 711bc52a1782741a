"""Import a Python file as a fresh module under a unique name (fixtures, fixed outputs)."""

from __future__ import annotations

import importlib.util
import itertools
import sys
from pathlib import Path
from types import ModuleType

_counter = itertools.count()


def load_module(path: Path, prefix: str = "bufferlint_test_module") -> ModuleType:
    name = f"{prefix}_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def load_text(text: str, directory: Path) -> ModuleType:
    path = directory / f"loaded_{next(_counter)}.py"
    path.write_text(text)
    return load_module(path)
