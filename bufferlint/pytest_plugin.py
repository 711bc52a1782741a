"""pytest plugin (entry point `pytest11`): check device consistency inside your own tests.

    from bufferlint.pytest_plugin import assert_device_consistent

    def test_attention_moves_with_the_module():
        assert_device_consistent(CausalSelfAttention(d=64), torch.randn(2, 16, 64))

    def test_with_the_fixture(device_consistency):
        device_consistency(CausalSelfAttention(d=64), torch.randn(2, 16, 64))

pytest loads entry-point plugins for every project, so this module imports torch only when the
helper is called. The check runs in-process (the test suite already imports the user's code).
"""
from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

__all__ = ["assert_device_consistent", "device_consistency"]


def assert_device_consistent(
    module: Any, *inputs: Any, device: str = "auto", inplace: bool = False, inconclusive: str = "fail"
) -> None:
    """Fail with an AssertionError naming every tensor `.to()` leaves behind and every op that
    mixes devices in `module(*inputs)`; pass silently otherwise.

    Runs on CUDA when available (`device="auto"`), else on the meta device under a checker with
    CUDA's device rules. Without inputs only the stray-tensor walk runs. A run the emulation could
    not finish (forward needs tensor values, e.g. `.item()`, or a step meta cannot run) is no pass:
    it fails as "could not be checked", or, with `inconclusive="skip"`, skips the test with the
    reason. The module is deep-copied first unless `inplace=True`, since moving it to meta
    discards its weights.
    """
    __tracebackhide__ = True  # pytest shows the caller's line, not this helper's frames
    if inconclusive not in ("fail", "skip"):
        raise ValueError(f'inconclusive must be "fail" or "skip", not {inconclusive!r}')
    from bufferlint.verify.check import check_module  # torch is imported here, not at plugin load

    probe = module if inplace else _copy(module)
    outcome = check_module(probe, inputs if inputs else None, None, device)
    name = type(module).__name__
    problems = _problems(outcome)
    if problems:
        raise AssertionError(f"{name} is not device-consistent (mode: {outcome.mode}):\n" + "\n".join(problems))
    if outcome.forward == "inconclusive":
        reason = f"{name} could not be checked (mode: {outcome.mode}), which is no pass:\n" + "\n".join(
            f"  {m}" for m in outcome.messages)
        if inconclusive == "skip":
            pytest.skip(reason)
        raise AssertionError(reason)


def _copy(module: Any) -> Any:
    try:
        return copy.deepcopy(module, _recomputed_memo(module))
    except Exception as exc:  # locks, open files, generators held by the module
        raise TypeError(
            f"assert_device_consistent: cannot deep-copy {type(module).__name__} ({exc}); "
            "pass a fresh module with inplace=True"
        ) from exc


def _recomputed_memo(module: Any) -> dict[int, Any]:
    """Detached copies of what weight_norm, spectral_norm and pruning recompute before every
    forward: those tensors are results of autograd (no graph leaves), which deepcopy refuses."""
    from bufferlint.verify.walk import recomputed_attributes

    memo: dict[int, Any] = {}
    for sub in module.modules():
        for name in recomputed_attributes(sub):
            value = vars(sub).get(name)
            if value is not None:
                memo[id(value)] = value.detach().clone()
    return memo


def _problems(outcome: Any) -> list[str]:
    from bufferlint.verify.report import error_line, stray_line

    lines = [f"  stray tensor {stray_line(s).strip()} (not a parameter or buffer: .to() leaves it behind)"
             for s in outcome.strays if s.fatal]
    lines += [f"  op {error_line(e).strip()}" for e in outcome.errors]
    if outcome.forward == "crashed" or (lines and outcome.forward == "inconclusive"):
        lines += [f"  {message}" for message in outcome.messages]
    return lines


@pytest.fixture
def device_consistency() -> Callable[..., None]:
    """The `assert_device_consistent` helper as a fixture."""
    return assert_device_consistent
