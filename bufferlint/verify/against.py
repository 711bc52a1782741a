"""Compare the original module with its rewrite on the CPU: same state_dict keys, the old
checkpoint loads with strict=True, and the same seed and input give the same outputs."""
from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.utils._pytree import tree_flatten, tree_map_only

from bufferlint.verify.inputs import SEED, BuildError, build
from bufferlint.verify.location import at, one_line, traceback_location
from bufferlint.verify.result import AgainstResult

RTOL, ATOL = 1e-6, 1e-7  # a buffer rewrite must not change arithmetic; allow only reordering noise


def compare(old_cls: type, new_cls: type, kwargs: dict[str, Any], inputs: tuple | None, old_label: str) -> AgainstResult:
    result = AgainstResult(old=old_label, status="pass")
    try:
        old = build(old_cls, kwargs)
    except BuildError as exc:
        return _inconclusive(result, f"the old version could not be built: {exc}")
    try:
        new = build(new_cls, kwargs)
    except BuildError as exc:
        return _failed(result, f"the new version could not be built: {exc}")
    _compare_keys(old, new, result)
    _load_old_checkpoint(old, new, result)
    if inputs is not None:
        _compare_outputs(old, new, inputs, result)
    if result.status == "pass" and (result.missing_keys or result.extra_keys or result.load_error):
        result.status = "fail"
    if inputs is None and result.status == "pass":
        # what was proved, and what was not: never "pass" (or "verified") without outputs compared
        _inconclusive(result, "outputs not compared: no example input (give `input`); proved: both versions build, "
                      "their state_dict keys are the same, and the old checkpoint loads with strict=True")
    return result


def _failed(result: AgainstResult, message: str) -> AgainstResult:
    result.status = "fail"
    result.messages.append(message)
    return result


def _inconclusive(result: AgainstResult, message: str) -> AgainstResult:
    result.status = "inconclusive"
    result.messages.append(message)
    return result


def _compare_keys(old: nn.Module, new: nn.Module, result: AgainstResult) -> None:
    old_keys, new_keys = list(old.state_dict()), list(new.state_dict())
    result.missing_keys = [k for k in old_keys if k not in set(new_keys)]
    result.extra_keys = [k for k in new_keys if k not in set(old_keys)]
    if result.missing_keys:
        result.messages.append(f"state_dict keys missing in the new version: {', '.join(result.missing_keys)}")
    if result.extra_keys:
        result.messages.append(f"state_dict keys only in the new version: {', '.join(result.extra_keys)}")


def _load_old_checkpoint(old: nn.Module, new: nn.Module, result: AgainstResult) -> None:
    try:
        new.load_state_dict(old.state_dict(), strict=True)
    except Exception as exc:  # RuntimeError listing keys/sizes, or a user hook failing
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        result.load_error = " ".join(lines)[:500]
        result.messages.append(f"the old state_dict does not load into the new version with strict=True: {result.load_error}")


def _forward(module: nn.Module, inputs: tuple) -> Any:
    args = tree_map_only(torch.Tensor, torch.clone, inputs)  # forward may modify its input in place
    torch.manual_seed(SEED)  # dropout and other random ops draw the same numbers in both runs
    with torch.no_grad():
        return module.eval()(*args)


def _compare_outputs(old: nn.Module, new: nn.Module, inputs: tuple, result: AgainstResult) -> None:
    try:
        old_out = _forward(old, inputs)
    except Exception as exc:
        where = at(traceback_location(exc))
        _inconclusive(result, f"outputs not compared: the old version's forward raised {one_line(exc)}{where}")
        return
    try:
        new_out = _forward(new, inputs)
    except Exception as exc:
        _failed(result, f"the new version's forward raised {one_line(exc)}{at(traceback_location(exc))}")
        return
    verdict, diff = outputs_verdict(old_out, new_out)
    result.outputs, result.max_abs_diff = verdict, diff
    if verdict == "differ":
        detail = f" (max abs diff {diff:.6g})" if diff is not None else " (structure, shape or dtype)"
        _failed(result, f"outputs differ{detail}")
    elif verdict == "close":
        result.messages.append(f"outputs equal within rtol={RTOL}, atol={ATOL} (max abs diff {diff:.3g})")


def outputs_verdict(old_out: Any, new_out: Any) -> tuple[str, float | None]:
    """("equal" | "close" | "differ", max abs diff over all tensors; None when the structure,
    a shape or a dtype differs, which no number describes)."""
    old_leaves, old_spec = tree_flatten(old_out)
    new_leaves, new_spec = tree_flatten(new_out)
    if old_spec != new_spec:
        return "differ", None
    differs, close, worst = False, False, 0.0
    for a, b in zip(old_leaves, new_leaves):
        if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
            if a != b:
                return "differ", None
            continue
        if a.shape != b.shape or a.dtype != b.dtype:
            return "differ", None
        if torch.equal(a, b):
            continue
        worst = max(worst, _max_abs_diff(a, b))
        if a.is_floating_point() and torch.allclose(a, b, rtol=RTOL, atol=ATOL, equal_nan=True):
            close = True
        else:
            differs = True
    if differs:
        return "differ", worst
    return ("close", worst) if close else ("equal", 0.0)


def _max_abs_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    a64, b64 = a.double(), b.double()
    diff = (a64 - b64).abs()
    both_nan = a64.isnan() & b64.isnan()  # NaN in the same place is agreement
    diff = torch.where(both_nan, torch.zeros_like(diff), diff).nan_to_num(nan=float("inf"))
    return diff.max().item() if diff.numel() else 0.0
