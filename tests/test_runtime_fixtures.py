"""Torch-backed checks of fixed fixtures: same state_dict keys, same CPU outputs, buffers that follow
the module, and nothing left behind after `.to("meta")` once every finding is fixed."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch

from bufferlint.lint import check_bytes
from tests.module_loading import load_module
from tests.fixture_cases import Case, Runtime, all_cases

CASES = [(c, r, unsafe) for c in all_cases() for r in c.runtimes() for unsafe in (False, True)]


def _load(path: Path) -> ModuleType:
    return load_module(path, prefix="bufferlint_fixture")


def _build(module: ModuleType, runtime: Runtime) -> Any:
    torch.manual_seed(0)
    return eval(runtime.build, {"torch": torch, **vars(module)})


def _inputs(module: ModuleType, runtime: Runtime) -> tuple[Any, ...]:
    torch.manual_seed(1)
    value = eval(runtime.input, {"torch": torch, **vars(module)})
    return value if isinstance(value, tuple) else (value,)


def _plain_tensors(root: Any) -> dict[str, Any]:
    """Tensors held in a module tree's `__dict__` outside `_parameters` and `_buffers`."""
    found = {}
    for prefix, sub in root.named_modules():
        for key, value in vars(sub).items():
            if isinstance(value, torch.Tensor) and not isinstance(value, torch.nn.Parameter):
                found[f"{prefix}.{key}".lstrip(".")] = value
    return found


def _assert_same_output(old: Any, new: Any) -> None:
    if isinstance(old, torch.Tensor):
        assert torch.equal(old, new), "outputs differ after the fix"
    elif isinstance(old, (tuple, list)):
        assert len(old) == len(new)
        for a, b in zip(old, new):
            _assert_same_output(a, b)
    else:
        assert old == new


@pytest.mark.parametrize(
    "case,runtime,unsafe", CASES, ids=[f"{c.id}-{r.build}-{'unsafe' if u else 'safe'}" for c, r, u in CASES]
)
def test_fixed_module_behaves_the_same(case: Case, runtime: Runtime, unsafe: bool, tmp_path: Path) -> None:
    fixed_text = case.expected_fixed(unsafe)
    if fixed_text is None:
        fixed_text = case.source
    fixed_path = tmp_path / case.path.name
    fixed_path.write_bytes(fixed_text)
    old_module, new_module = _load(case.path), _load(fixed_path)
    old, new = _build(old_module, runtime), _build(new_module, runtime)

    assert list(old.state_dict()) == list(new.state_dict()), "state_dict keys changed"
    new.load_state_dict(old.state_dict(), strict=True)
    with torch.no_grad():
        _assert_same_output(old(*_inputs(old_module, runtime)), new(*_inputs(new_module, runtime)))

    new_buffers = {name for name, _ in new.named_buffers()}
    old_buffers = {name for name, _ in old.named_buffers()}
    persistent_new = set(new.state_dict())
    old_parameters = {name for name, _ in old.named_parameters()}  # BUF008: a parameter keeps its key as a buffer
    for name in new_buffers - old_buffers - old_parameters:
        assert name not in persistent_new, f"new buffer {name} must be non-persistent"

    settings = replace(case.settings(unsafe), ignore_noqa=True)  # suppressed findings still stay behind
    remaining = check_bytes(fixed_text, case.path.name, settings).findings
    if not remaining:
        moved = new.to("meta")
        left = {k: v.device for k, v in _plain_tensors(moved).items() if v.device.type != "meta"}
        assert left == {}, f"tensors left behind after .to('meta'): {left}"
        for name in _plain_tensors(old):
            assert name in new_buffers, f"{name} did not become a buffer"
