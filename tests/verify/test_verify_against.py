"""--against: the rewrite keeps state_dict keys, loads old checkpoints strictly, same outputs."""
from __future__ import annotations

import torch

from bufferlint.verify.against import compare, outputs_verdict
from bufferlint.verify.target import get_class, import_target_module, parse_target
from verify_support import AGAINST

INPUT = (torch.randn(2, 6, 8),)


def rotary(file: str) -> type:
    target = parse_target(f"{AGAINST / file}::Rotary")
    return get_class(import_target_module(target), target)


def test_equal_rewrite_passes() -> None:
    result = compare(rotary("rotary_old.py"), rotary("rotary_buffers.py"), {}, INPUT, "old")
    assert (result.status, result.missing_keys, result.extra_keys, result.load_error) == ("pass", [], [], None)
    assert result.outputs == "equal" and result.max_abs_diff == 0.0


def test_persistent_buffers_fail_on_keys() -> None:
    result = compare(rotary("rotary_old.py"), rotary("rotary_persistent.py"), {}, INPUT, "old")
    assert result.status == "fail"
    assert result.extra_keys == ["cos", "sin"] and result.missing_keys == []
    assert result.load_error is not None and '"cos", "sin"' in result.load_error
    assert "state_dict keys only in the new version: cos, sin" in result.messages


def test_changed_constant_fails_on_outputs() -> None:
    result = compare(rotary("rotary_old.py"), rotary("rotary_changed_base.py"), {}, INPUT, "old")
    assert result.status == "fail" and result.extra_keys == [] and result.load_error is None
    assert result.outputs == "differ" and result.max_abs_diff is not None and result.max_abs_diff > 1e-3
    assert result.messages == [f"outputs differ (max abs diff {result.max_abs_diff:.6g})"]


NOT_COMPARED = (
    "outputs not compared: no example input (give `input`); proved: both versions build, their state_dict keys "
    "are the same, and the old checkpoint loads with strict=True"
)


def test_without_input_only_keys_are_compared() -> None:
    """What was proved is said; with outputs unseen the comparison is no pass."""
    result = compare(rotary("rotary_old.py"), rotary("rotary_changed_base.py"), {}, None, "old")
    assert result.status == "inconclusive" and result.outputs == "not compared"
    assert result.messages == [NOT_COMPARED]


def test_old_forward_failing_is_inconclusive() -> None:
    result = compare(rotary("rotary_old.py"), rotary("rotary_buffers.py"), {}, (torch.randn(2, 6, 5),), "old")
    assert result.status == "inconclusive"
    assert result.messages[0].startswith("outputs not compared: the old version's forward raised RuntimeError")


def test_output_verdicts() -> None:
    a = torch.tensor([1.0, float("nan")])
    assert outputs_verdict((a, 3), (a.clone(), 3)) == ("close", 0.0)  # NaN in the same place agrees
    assert outputs_verdict((a, 3), (a.clone(), 4)) == ("differ", None)
    assert outputs_verdict(torch.ones(2), torch.ones(2)) == ("equal", 0.0)
    assert outputs_verdict(torch.ones(2), torch.ones(2) + 1e-7)[0] == "close"
    assert outputs_verdict(torch.ones(2), torch.ones(2) * 2) == ("differ", 1.0)
    assert outputs_verdict(torch.ones(2), torch.ones(3)) == ("differ", None)
    assert outputs_verdict({"a": torch.ones(1)}, {"b": torch.ones(1)}) == ("differ", None)
