"""Device check of one built module: move it, walk for stragglers, run forward under the checker.

Shared by the worker subprocess (`bufferlint verify`) and the in-process pytest helper.
"""
from __future__ import annotations

import contextlib
import re
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
    site: Callable[[torch.Tensor], str] | None = None, train: bool | None = None,
) -> CheckOutcome:
    """`args=None` skips forward (only the walk runs). The module is moved in place. `site(t)`:
    where tensor `t` was made, when the caller recorded the construction (`CreationSites`).
    `train`: run forward in training (True) or eval (False) mode; None leaves the module's own."""
    target, mode = choose_target(device)
    outcome = CheckOutcome(mode=mode)
    module.to(target)
    if train is not None:
        module.train(train)
    outcome.strays = find_stray_tensors(module, site)
    if args is None:
        outcome.messages.append("forward skipped: no example input (give --input); only the stray-tensor walk ran")
        return outcome
    moved_args, moved_kwargs = move_inputs(args, kwargs or {}, target)
    _run_forward(module, moved_args, moved_kwargs, target, outcome)
    if outcome.forward in ("ran", "inconclusive"):  # what forward re-homed before meta stopped it counts too
        _rehomed_by_forward(module, target, outcome)
    return outcome


_REHOMED = "forward puts it on the module's device on every call (.to() still leaves it behind, and .half() skips it)"


def _rehomed_by_forward(module: nn.Module, target: torch.device, outcome: CheckOutcome) -> None:
    """A stray that forward itself moves where the module is (torchvision's anchor generator, a
    cache rebuilt on the weights' device) makes no op mix devices: listed, not a failure. One
    forward leaves behind stays a failure, and so does one that was on the target all along
    (made there by the constructor: nothing shows that forward would put it there)."""
    after = {s.path: s.device for s in find_stray_tensors(module)}
    for stray in outcome.strays:
        if stray.fatal and stray.device != str(target) and after.get(stray.path) == str(target):
            stray.fatal, stray.note = False, _REHOMED


# What the meta device cannot run, as torch words it (lower case): ops on meta tensors (`.numpy()`
# fails on the tensor, or where numpy is missing, which torch does not require, before it),
# `torch.autocast(device_type="meta")` ("unsupported scalarType"), `torch.Generator(device=meta)`
# ("META device type not an accelerator"), an op with no meta kernel. None of these says anything
# about the user's code; a message that merely contains "meta" (`metadata`) is not among them.
_META_CANNOT = (
    "meta tensor", "meta device", "'meta' backend", "device type meta", "meta device type",
    "numpy is not available", "unsupported scalartype", "not an accelerator",
)
_NO_META_KERNEL = re.compile(r"Could not run '([\w:.]+)' with arguments from the 'Meta' backend")
_MESSAGE_LIMIT = 240  # a dispatcher's message lists every backend: keep a report line readable


def _meta_cannot_run(exc: Exception) -> bool:
    text = str(exc).lower()
    return any(marker in text for marker in _META_CANNOT)


def _meta_cause(exc: Exception) -> str:
    """What stopped the emulation, in one short line: a missing meta kernel by name."""
    missing = _NO_META_KERNEL.search(str(exc))
    if missing is not None:
        return f"the meta device has no kernel for {missing.group(1)}"
    text = one_line(exc)
    return text if len(text) <= _MESSAGE_LIMIT else text[: _MESSAGE_LIMIT - 1] + "…"


def _run_forward(module: nn.Module, args: tuple, kwargs: dict, target: torch.device, outcome: CheckOutcome) -> None:
    checker = DeviceCheckMode(target)
    alias = CudaAliasMode(target) if target.type == "meta" else None
    try:
        _forward_under(module, args, kwargs, checker, alias, outcome)
    finally:
        outcome.errors = checker.errors
        if alias is not None and alias.is_cuda_reads:
            outcome.messages.append(
                f"note: forward reads .is_cuda ({', '.join(alias.is_cuda_reads)}), which is False under emulation: "
                "what the code does with CUDA tensors did not run; a GPU checks it"
            )


def _forward_under(
    module: nn.Module, args: tuple, kwargs: dict, checker: DeviceCheckMode, alias: CudaAliasMode | None, outcome: CheckOutcome
) -> None:
    target = checker.target
    try:
        with torch.no_grad(), alias or contextlib.nullcontext(), checker:
            module(*args, **kwargs)
        outcome.forward = "ran"
    except DataDependentOp as exc:
        outcome.forward = "inconclusive"
        cause = "torch has no meta kernel for it" if exc.no_kernel else "it needs tensor values, which meta tensors do not have"
        outcome.messages.append(
            f"inconclusive: forward stopped at {exc.op} ({exc.location}: {exc.source}); {cause}; the emulation "
            "stopped there, not your code: run on a CUDA machine to finish the check"
        )
    except Exception as exc:  # user code failed; report it, never our traceback
        if target.type == "meta" and _meta_cannot_run(exc):
            outcome.forward = "inconclusive"
            where = at(traceback_location(exc))
            outcome.messages.append(
                f"inconclusive: the meta device cannot run this step of forward: {_meta_cause(exc)}{where}; the "
                "emulation stopped there, not your code: run with a GPU (--device cuda) to finish the check"
            )
        else:
            outcome.forward = "crashed"
            outcome.messages.append(f"forward raised {one_line(exc)}{at(traceback_location(exc))}")
