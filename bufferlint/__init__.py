"""bufferlint: find PyTorch modules that keep tensors outside PyTorch's bookkeeping, and fix them.

The linter and the fixer never import torch; only `bufferlint.verify` and the pytest plugin do.
The public names are loaded on first use: the pytest plugin imports this package in every
project where bufferlint is installed, and should not pay for libcst there.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "Applicability": "bufferlint.model",
    "Finding": "bufferlint.model",
    "Fix": "bufferlint.model",
    "Settings": "bufferlint.config",
    "fix_source": "bufferlint.lint",
    "lint_source": "bufferlint.lint",
}

__all__ = ["__version__", *_EXPORTS]

if TYPE_CHECKING:
    from bufferlint.config import Settings
    from bufferlint.lint import fix_source, lint_source
    from bufferlint.model import Applicability, Finding, Fix


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'bufferlint' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
