"""--against: the rewrite keeps state_dict keys, loads old checkpoints strictly, same outputs."""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import NamedTuple

import pytest
import torch

from bufferlint.verify.against import compare, outputs_verdict
from bufferlint.verify.target import get_class, import_target_module, parse_target
from tests.module_loading import load_module
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


def _result_types() -> tuple[type, type, type]:
    """What a target file defines for its outputs; each version of the file defines its own."""
    class Pair(NamedTuple):
        logits: torch.Tensor
        aux: torch.Tensor

    @dataclasses.dataclass
    class Output:
        hidden: torch.Tensor
        steps: int

    class Bag:
        def __init__(self, mask: torch.Tensor) -> None:
            self.mask = mask

    return Pair, Output, Bag


def test_outputs_of_classes_each_version_defines_are_compared_field_by_field() -> None:
    """Old and new file each define their own NamedTuple or dataclass (different classes, equal
    structure); a dataclass of tensors has no truth value for `==`. Neither is a difference."""
    old_pair, old_output, old_bag = _result_types()
    new_pair, new_output, new_bag = _result_types()
    assert old_pair is not new_pair
    x = torch.arange(6.0).view(2, 3)  # exact, so x + 1 differs from x by exactly 1 on every machine
    assert outputs_verdict(old_pair(x, x * 2), new_pair(x.clone(), x * 2)) == ("equal", 0.0)
    assert outputs_verdict(old_output(x, 3), new_output(x.clone(), 3)) == ("equal", 0.0)
    assert outputs_verdict(old_output(x, 3), old_output(x.clone(), 3)) == ("equal", 0.0)  # one shared class
    assert outputs_verdict([old_bag(x > 0)], [new_bag(x.clone() > 0)]) == ("equal", 0.0)
    assert outputs_verdict(old_pair(x, x), new_pair(x, x + 1)) == ("differ", 1.0)
    assert outputs_verdict(old_output(x, 3), new_output(x, 4)) == ("differ", None)
    assert outputs_verdict((x, x), [x, x]) == ("differ", None)  # a tuple became a list


FROZEN_OLD = '''import torch
from torch import nn


class Scale(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.scale = nn.Parameter(torch.full((3,), 2.0), requires_grad=False)

    def forward(self, x):
        return self.lin(x).cuda() * self.scale.cuda()
'''
FROZEN_NEW = FROZEN_OLD.replace(
    "self.scale = nn.Parameter(torch.full((3,), 2.0), requires_grad=False)",
    'self.register_buffer("scale", torch.full((3,), 2.0))',
)


def _classes(tmp_path: Path) -> tuple[type, type]:
    found = []
    for name, text in (("frozen_old.py", FROZEN_OLD), ("frozen_new.py", FROZEN_NEW)):
        (tmp_path / name).write_text(text)
        found.append(load_module(tmp_path / name).Scale)
    return found[0], found[1]


def test_a_parameter_turned_buffer_is_named_and_not_a_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """BUF008's rewrite keeps the key and the outputs, but parameters() changes: an optimizer or an
    unfreezing helper no longer reaches `scale`. Said by name; inconclusive, never a pass. The
    forward's hard-coded .cuda() runs on the CPU here, for both versions alike."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    old, new = _classes(tmp_path)
    result = compare(old, new, {}, (torch.randn(2, 3),), "old")
    assert (result.status, result.outputs, result.missing_keys, result.extra_keys) == ("inconclusive", "equal", [], [])
    assert result.messages == [
        "no longer parameters: scale (frozen before); an optimizer over parameters(), a resumed optimizer state and "
        "a helper that unfreezes them by name no longer reach them: confirm nothing in the project does"
    ]
    same = compare(old, old, {}, (torch.randn(2, 3),), "old")
    assert (same.status, same.outputs, same.messages) == ("pass", "equal", [])


def test_leaves_whose_equality_is_no_plain_truth_value() -> None:
    import enum

    old_mode, new_mode = enum.Enum("Mode", "FAST SLOW"), enum.Enum("Mode", "FAST SLOW")  # each file's own class
    y = torch.arange(4.0)
    assert outputs_verdict((y, float("nan")), (y, float("nan"))) == ("equal", 0.0)
    assert outputs_verdict((y, old_mode.FAST), (y, new_mode.FAST)) == ("equal", 0.0)
    assert outputs_verdict((y, old_mode.FAST), (y, new_mode.SLOW)) == ("differ", None)


def test_numpy_array_leaves_compare_element_by_element() -> None:
    import numpy as np  # a test dependency: torch does not require it, users' forwards may return arrays
    y = torch.arange(4.0)
    assert outputs_verdict((y, np.arange(4.0)), (y.clone(), np.arange(4.0))) == ("equal", 0.0)
    assert outputs_verdict((y, np.ones(2)), (y, np.zeros(2))) == ("differ", None)


TRAIN_OVERRIDE = FROZEN_OLD.replace(
    "    def forward(self, x):",
    "    def train(self, mode=True):\n        super().train(mode)  # returns nothing, as mmdet backbones do\n\n    def forward(self, x):",
).replace("self.lin(x).cuda() * self.scale.cuda()", "self.lin(x) * self.scale")


def test_a_train_override_that_returns_nothing(tmp_path: Path) -> None:
    (tmp_path / "override.py").write_text(TRAIN_OVERRIDE)
    cls = load_module(tmp_path / "override.py").Scale
    result = compare(cls, cls, {}, (torch.randn(2, 3),), "old")
    assert (result.status, result.outputs) == ("pass", "equal")
