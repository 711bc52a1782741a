"""Build the module and its example input the same way everywhere (seeded, torch in scope)."""
from __future__ import annotations

import inspect
import sys
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


def build(cls: type, kwargs: dict[str, Any], expr: str | None = None) -> nn.Module:
    """Seed, then construct: the old and new versions get identical initial weights. `expr`
    (`--build`) is evaluated instead of `cls(**kwargs)`, in the namespace of the file that defines
    `cls` (so the old version of a file builds with its own classes), with `torch` in scope."""
    torch.manual_seed(SEED)
    label = expr if expr is not None else f"{cls.__name__}(**{kwargs!r})"
    try:
        if expr is not None:
            module = eval(compile(expr, "<--build>", "eval"), {"torch": torch, **_namespace_of(cls)})  # noqa: S307 - the user's own expression
        else:
            module = cls(**kwargs)
    except Exception as exc:
        raise BuildError(f"{label} raised {one_line(exc)}{at(traceback_location(exc))}") from None
    if not isinstance(module, nn.Module):
        what = f"--build {expr!r} returned a {type(module).__name__}" if expr is not None else f"{cls.__name__} is"
        raise UsageError(f"{what} not a torch.nn.Module" + ("" if expr is not None else " subclass"))
    return module


def _namespace_of(cls: type) -> dict[str, Any]:
    """The globals of the file that defines `cls`, read off its own functions: the old version of a
    file runs under the same module name as the new one, so `sys.modules` would give the new."""
    for value in vars(cls).values():
        func = getattr(value, "__func__", None) or getattr(value, "fget", None) or value
        func = getattr(func, "__wrapped__", func)  # `@torch.no_grad()` and other decorators keep the original
        namespace = getattr(func, "__globals__", None)
        # a function defined elsewhere (`act = staticmethod(F.silu)`) carries its own module's globals
        if isinstance(namespace, dict) and getattr(func, "__module__", None) == cls.__module__:
            return namespace
    module = sys.modules.get(cls.__module__)
    return dict(vars(module)) if module is not None else {}


def make_input(expr: str) -> tuple:
    """Evaluate the example-input expression (seeded, `torch` in scope). A tuple is spread
    into positional arguments; anything else is the single argument."""
    torch.manual_seed(SEED)
    try:
        value = eval(compile(expr, "<input>", "eval"), {"torch": torch})  # noqa: S307 - user's own expression
    except Exception as exc:
        raise UsageError(f"input expression {expr!r} failed: {one_line(exc)}") from None
    return value if isinstance(value, tuple) else (value,)
