"""Compare the original module with its rewrite on the CPU: same state_dict keys, the old
checkpoint loads with strict=True, and the same seed and input give the same outputs."""
from __future__ import annotations

import contextlib
import dataclasses
import enum
from typing import Any

import torch
from torch import nn
from torch.utils._pytree import tree_map_only

from bufferlint.verify.device_check import CudaAliasMode
from bufferlint.verify.inputs import SEED, BuildError, build
from bufferlint.verify.location import at, one_line, traceback_location
from bufferlint.verify.result import AgainstResult

RTOL, ATOL = 1e-6, 1e-7  # a buffer rewrite must not change arithmetic; allow only reordering noise


def compare(
    old_cls: type, new_cls: type, kwargs: dict[str, Any], inputs: tuple | None, old_label: str, expr: str | None = None,
    train: bool = False,
) -> AgainstResult:
    """`expr` (`--build`): the expression each version is built with, in its own file's namespace;
    `train`: both forwards in training mode (dropout drawn from the same seed), else eval."""
    result = AgainstResult(old=old_label, status="pass")
    with _on_the_cpu():
        try:
            old = build(old_cls, kwargs, expr)
        except BuildError as exc:
            return _inconclusive(result, f"the old version could not be built: {exc}")
        try:
            new = build(new_cls, kwargs, expr)
        except BuildError as exc:
            return _failed(result, f"the new version could not be built: {exc}")
        _compare_keys(old, new, result)
        _load_old_checkpoint(old, new, result)
        _compare_parameters(old, new, result)
        if inputs is not None:
            old.train(train)  # not chained: an override of train() may not return the module
            new.train(train)
            _compare_outputs(old, new, inputs, result)
    if result.status == "pass" and (result.missing_keys or result.extra_keys or result.load_error):
        result.status = "fail"
    if inputs is None and result.status != "fail":
        # what was proved, and what was not: never "pass" (or "verified") without outputs compared
        _inconclusive(result, "outputs not compared: no example input (give `input`); proved: both versions build, "
                      "their state_dict keys are the same, and the old checkpoint loads with strict=True")
    return result


def _on_the_cpu() -> Any:
    """The comparison runs on the CPU: hard-coded `.cuda()` / `device="cuda"` in the user's code
    are sent there too where no GPU is (both versions alike), instead of ending the check."""
    if torch.cuda.is_available():
        return contextlib.nullcontext()
    return CudaAliasMode(torch.device("cpu"))


def _compare_parameters(old: nn.Module, new: nn.Module, result: AgainstResult) -> None:
    """What an optimizer over `parameters()` and an unfreezing helper see: a parameter that became a
    buffer (BUF008) keeps its state_dict key, but training no longer reaches it. Not a failure of
    the rewrite's mechanics, and not proved harmless: named, and the result is inconclusive."""
    old_params = {name: p.requires_grad for name, p in old.named_parameters()}
    new_params = {name: p.requires_grad for name, p in new.named_parameters()}
    gone = [name for name in old_params if name not in new_params]
    changed = [name for name in old_params if name in new_params and old_params[name] != new_params[name]]
    added = [name for name in new_params if name not in old_params]
    if changed or added:
        _failed(result, "parameters changed: " + ", ".join(
            [f"{n} requires_grad {old_params[n]} -> {new_params[n]}" for n in changed] + [f"{n} is new" for n in added]))
    if gone:
        frozen = all(not old_params[name] for name in gone)
        _inconclusive(result, f"no longer parameters: {', '.join(gone)} ({'frozen' if frozen else 'trainable'} before); "
                      "an optimizer over parameters(), a resumed optimizer state and a helper that unfreezes them by "
                      "name no longer reach them: confirm nothing in the project does")


def _failed(result: AgainstResult, message: str) -> AgainstResult:
    result.status = "fail"
    result.messages.append(message)
    return result


def _inconclusive(result: AgainstResult, message: str) -> AgainstResult:
    if result.status != "fail":
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
        return module(*args)


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
    old_leaves, new_leaves = output_leaves(old_out), output_leaves(new_out)
    if [path for path, _ in old_leaves] != [path for path, _ in new_leaves]:
        return "differ", None
    differs, close, worst = False, False, 0.0
    for (_, a), (_, b) in zip(old_leaves, new_leaves):
        if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
            if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor) or not _same_value(a, b):
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


def output_leaves(value: Any, path: str = "") -> list[tuple[str, Any]]:
    """A forward's result as (path, leaf) pairs, read by structure and field names, never by class
    identity: the old and the new file each define their own NamedTuple or dataclass, and a
    dataclass holding tensors cannot be compared with `==`."""
    if isinstance(value, (torch.Tensor, int, float, bool, str, bytes, complex, enum.Enum)) or value is None:
        return [(path, value)]
    if hasattr(value, "__array__") and not isinstance(value, (list, tuple, dict)):  # a numpy array
        return [(path, value)]
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a NamedTuple
        items: list[tuple[str, Any]] = [(f".{name}", getattr(value, name)) for name in value._fields]
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        items = [(f".{f.name}", getattr(value, f.name)) for f in dataclasses.fields(value)]
    elif isinstance(value, dict):
        items = [(f"[{key!r}]", item) for key, item in value.items()]
    elif isinstance(value, (list, tuple)):
        items = [(f"[{index}]", item) for index, item in enumerate(value)]
    elif isinstance(value, nn.Module):
        return [(f"{path}<{type(value).__name__}>", None)]  # a module handed back: its own state is compared above
    elif isinstance(getattr(value, "__dict__", None), dict):
        items = [(f".{name}", item) for name, item in vars(value).items()]
    else:
        return [(path, value)]
    kind = f"{path}<{type(value).__name__}:{len(items)}>"  # a list against a tuple, or a shorter one, differs
    return [(kind, None)] + [leaf for suffix, item in items for leaf in output_leaves(item, path + suffix)]


def _same_value(a: Any, b: Any) -> bool:
    """Equal leaves: NaN agrees with NaN, arrays compare element by element, and an Enum member of
    the old file's class matches the same member of the new file's."""
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    if isinstance(a, enum.Enum) and isinstance(b, enum.Enum):
        return (type(a).__name__, a.name) == (type(b).__name__, b.name)
    if hasattr(a, "__array__") and hasattr(b, "__array__"):
        return _same_array(a, b)
    try:
        return bool(a == b)
    except Exception:  # objects whose == is not a truth value
        return False


def _same_array(a: Any, b: Any) -> bool:
    try:
        left, right = torch.as_tensor(a), torch.as_tensor(b)
    except Exception:
        return False
    return left.shape == right.shape and left.dtype == right.dtype and bool(torch.equal(left, right) or (
        left.is_floating_point() and torch.allclose(left, right, rtol=RTOL, atol=ATOL, equal_nan=True)))


def _max_abs_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    a64, b64 = a.double(), b.double()
    diff = (a64 - b64).abs()
    both_nan = a64.isnan() & b64.isnan()  # NaN in the same place is agreement
    diff = torch.where(both_nan, torch.zeros_like(diff), diff).nan_to_num(nan=float("inf"))
    return diff.max().item() if diff.numel() else 0.0
