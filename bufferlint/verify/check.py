"""Device check of one built module: move it, walk for stragglers, run forward under the checker.

Shared by the worker subprocess (`bufferlint verify`) and the in-process pytest helper.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
import torch
from torch import nn
from torch.utils._pytree import tree_map_only

from bufferlint.verify.device_check import CudaAliasMode, DataDependentOp, DeviceCheckMode
from bufferlint.verify.errors import UsageError
from bufferlint.verify.location import at, one_line, traceback_location
from bufferlint.verify.result import DeviceError, StrayTensor
from bufferlint.verify.walk import find_stray_tensors

DEVICE_CHOICES = ("auto", "cuda", "meta")


@dataclass
class CheckOutcome:
    mode: str  # "cuda" | "meta-emulated"
    strays: list[StrayTensor] = field(default_factory=list)
    errors: list[DeviceError] = field(default_factory=list)
    forward: str = "skipped"  # "ran" | "skipped" | "inconclusive" | "crashed"
    messages: list[str] = field(default_factory=list)


def choose_target(requested: str) -> tuple[torch.device, str]:
    """Real CUDA when there is one (unless meta is asked for), else meta under the checker."""
    if requested not in DEVICE_CHOICES:
        raise UsageError(f"--device must be one of {', '.join(DEVICE_CHOICES)}, not {requested!r}")
    if requested != "meta" and torch.cuda.is_available():
        return torch.device("cuda", torch.cuda.current_device()), "cuda"
    if requested == "cuda":
        raise UsageError("--device cuda: torch.cuda.is_available() is False on this machine")
    return torch.device("meta"), "meta-emulated"


def move_inputs(args: tuple, kwargs: dict, target: torch.device) -> tuple[tuple, dict]:
    return tree_map_only(torch.Tensor, lambda t: t.to(target), (tuple(args), dict(kwargs)))


def check_module(
    module: nn.Module, args: tuple | None, kwargs: dict | None = None, device: str = "auto",
    site: Callable[[torch.Tensor], str] | None = None,
) -> CheckOutcome:
    """`args=None` skips forward (only the walk runs). The module is moved in place. `site(t)`:
    where tensor `t` was made, when the caller recorded the construction (`CreationSites`)."""
    target, mode = choose_target(device)
    outcome = CheckOutcome(mode=mode)
    module.to(target)
    outcome.strays = find_stray_tensors(module, site)
    if args is None:
        outcome.messages.append("forward skipped: no example input (give --input); only the stray-tensor walk ran")
        return outcome
    moved_args, moved_kwargs = move_inputs(args, kwargs or {}, target)
    _run_forward(module, moved_args, moved_kwargs, target, outcome)
    return outcome


# What the meta device cannot run, as torch words it (lower case): ops on meta tensors (`.numpy()`
# fails on the tensor, or where numpy is missing, which torch does not require, before it),
# `torch.autocast(device_type="meta")` ("unsupported scalarType"), `torch.Generator(device=meta)`
# ("META device type not an accelerator"). None of these says anything about the user's code.
_META_CANNOT = ("meta", "numpy is not available", "unsupported scalartype", "not an accelerator")


def _meta_cannot_run(exc: Exception) -> bool:
    text = str(exc).lower()
    return any(marker in text for marker in _META_CANNOT)


def _run_forward(module: nn.Module, args: tuple, kwargs: dict, target: torch.device, outcome: CheckOutcome) -> None:
    checker = DeviceCheckMode(target)
    alias = CudaAliasMode(target) if target.type == "meta" else contextlib.nullcontext()
    try:
        with torch.no_grad(), alias, checker:
            module(*args, **kwargs)
        outcome.forward = "ran"
    except DataDependentOp as exc:
        outcome.forward = "inconclusive"
        outcome.messages.append(
            f"inconclusive: forward stopped at {exc.op} ({exc.location}: {exc.source}); it needs tensor "
            "values, which meta tensors do not have; run on a CUDA machine to finish the check"
        )
    except Exception as exc:  # user code failed; report it, never our traceback
        if target.type == "meta" and _meta_cannot_run(exc):
            outcome.forward = "inconclusive"
            where = at(traceback_location(exc))
            outcome.messages.append(
                f"inconclusive: the meta device cannot run this step of forward: {one_line(exc)}{where}; the emulation "
                "stopped there, not your code: run with a GPU (--device cuda) to finish the check"
            )
        else:
            outcome.forward = "crashed"
            outcome.messages.append(f"forward raised {one_line(exc)}{at(traceback_location(exc))}")
    finally:
        outcome.errors = checker.errors
