"""Build the module and its example input the same way everywhere (seeded, torch in scope)."""
from __future__ import annotations

import inspect
from typing import Any

import torch
from torch import nn

from bufferlint.verify.errors import UsageError
from bufferlint.verify.location import at, one_line, traceback_location

SEED = 0


class BuildError(Exception):
    """The user's constructor raised: a verification failure, not a usage error."""


def missing_arguments(cls: type, kwargs: dict[str, Any]) -> list[str]:
    """Required constructor parameters that `kwargs` does not provide."""
    try:
        signature = inspect.signature(cls)
    except (TypeError, ValueError):  # builtin or odd metaclass: let the call decide
        return []
    required = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [
        p.name for p in signature.parameters.values()
        if p.kind in required and p.default is inspect.Parameter.empty and p.name not in kwargs
    ]


def build(cls: type, kwargs: dict[str, Any]) -> nn.Module:
    """Seed, then construct: the old and new versions get identical initial weights."""
    torch.manual_seed(SEED)
    try:
        module = cls(**kwargs)
    except Exception as exc:
        raise BuildError(f"{cls.__name__}(**{kwargs!r}) raised {one_line(exc)}{at(traceback_location(exc))}") from None
    if not isinstance(module, nn.Module):
        raise UsageError(f"{cls.__name__} is not a torch.nn.Module subclass")
    return module


def make_input(expr: str) -> tuple:
    """Evaluate the example-input expression (seeded, `torch` in scope). A tuple is spread
    into positional arguments; anything else is the single argument."""
    torch.manual_seed(SEED)
    try:
        value = eval(compile(expr, "<input>", "eval"), {"torch": torch})  # noqa: S307 - user's own expression
    except Exception as exc:
        raise UsageError(f"input expression {expr!r} failed: {one_line(exc)}") from None
    return value if isinstance(value, tuple) else (value,)
