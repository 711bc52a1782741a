"""bufferlint: find PyTorch modules that keep tensors outside PyTorch's bookkeeping, and fix them.

The linter and the fixer never import torch; only `bufferlint.verify` and the pytest plugin do.
"""

from bufferlint.config import Settings
from bufferlint.lint import fix_source, lint_source
from bufferlint.model import Applicability, Finding, Fix

__version__ = "0.1.0"

__all__ = ["Applicability", "Finding", "Fix", "Settings", "__version__", "fix_source", "lint_source"]
