"""Shared paths and helpers for the runtime verifier's tests."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torch import nn

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "verify"
MODELS = FIXTURES / "verify_models.py"
AGAINST = FIXTURES / "against"


def models_target(class_name: str) -> str:
    return f"{MODELS}::{class_name}"


def build(class_name: str, **kwargs: object) -> "nn.Module":
    """A fixture model, imported the way the verifier imports targets, seeded like the worker."""
    import torch

    from bufferlint.verify.target import get_class, import_target_module, parse_target

    target = parse_target(models_target(class_name))
    torch.manual_seed(0)
    return get_class(import_target_module(target), target)(**kwargs)


def line_of(path: Path, marker: str) -> int:
    """1-based line of the fixture line tagged with `marker` (so tests survive edits)."""
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if marker in line:
            return number
    raise AssertionError(f"{marker} not in {path}")


def run_python(args: list[str], cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """`python ARGS` with this checkout importable, output captured."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
