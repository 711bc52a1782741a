"""BUF005-BUF010: what the fixtures cannot express. Rule metadata, BUF006 being off by default,
fix messages, and torch-backed checks of the BUF005 and BUF008 fixes (the buffer is no longer
None; a frozen parameter becomes a persistent buffer with the same state_dict)."""

from __future__ import annotations

import io
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch

from bufferlint.config import Settings
from bufferlint.lint import fix_bytes, lint_source
from bufferlint.rules import all_rules, rule_by_code_or_name
from tests.module_loading import load_text
from tests.fixture_cases import ROOT, Case


DESIGN_TABLE = {
    "BUF005": "register-buffer-result-used",
    "BUF006": "register-buffer-outside-init",
    "BUF007": "buffer-requires-grad",
    "BUF008": "frozen-parameter",
    "BUF009": "tensor-container-attribute",
    "BUF010": "class-level-tensor",
}


def _load_text(text: str, tmp_path: Path) -> ModuleType:
    return load_text(text, tmp_path)


def _fixed(relative: str, unsafe: bool) -> str:
    case = Case(ROOT / relative)  # the fixture's own rule selection
    result = fix_bytes(case.source, case.path.name, case.settings(unsafe))
    assert result.fix_error is None
    assert result.new_data is not None, "the fixture should have something to fix"
    return result.new_data.decode() if isinstance(result.new_data, bytes) else result.new_data


def _original(relative: str) -> str:
    return (ROOT / relative).read_text()


# --- metadata -------------------------------------------------------------------------------


@pytest.mark.parametrize("code,name", sorted(DESIGN_TABLE.items()))
def test_rule_code_and_name_match_the_design(code: str, name: str) -> None:
    rule = rule_by_code_or_name(code)
    assert rule is not None and rule.name == name
    assert rule_by_code_or_name(name) is rule
    docs = rule.docs()
    for section in ("## Why it matters", "## Example", "## Instead", "## Fix safety"):
        assert section in docs, f"{code} docs lack {section}"


def test_the_rules_below_95_percent_on_fresh_code_are_off_by_default() -> None:
    """The rules that did not reach 95% precision on fresh repositories (docs/survey.md) are opt-in."""
    enabled = {rule.code for rule in Settings().enabled_rules()}
    assert {rule.code for rule in all_rules()} - enabled == {"BUF004", "BUF006", "BUF007", "BUF009", "BUF010", "BUF011"}


def test_buf006_reports_only_when_selected() -> None:
    code = (ROOT / "buf006" / "in_forward.py").read_text()
    assert [f for f in lint_source(code, "m.py", Settings()) if f.code == "BUF006"] == []
    selected = lint_source(code, "m.py", Settings(extend_select=("BUF006",)))
    assert [f.location.row for f in selected if f.code == "BUF006"] == [14, 26]
    by_name = lint_source(code, "m.py", Settings(select=("register-buffer-outside-init",)))
    assert len(by_name) == 2


# --- BUF005 ---------------------------------------------------------------------------------


def test_buf005_unsafe_fix_message_names_the_buffer_to_read() -> None:
    findings = lint_source(_original("buf005/different_names.py"), "m.py", Settings(select=("BUF005",)))
    fix = findings[0].to_dict()["fix"]
    assert fix == {
        "applicability": "unsafe",
        "message": "Keep only the register_buffer() call (code reading `self.my_buffer` must read `self.B`)",
    }


def test_buf005_safe_fix_restores_non_persistent_buffers_and_keeps_state_dict(tmp_path: Path) -> None:
    old = _load_text(_original("buf005/same_name.py"), tmp_path).Masked(4)
    new = _load_text(_fixed("buf005/same_name.py", unsafe=False), tmp_path).Masked(4)
    for name in ("pos", "scale", "offset", "bias"):
        assert getattr(old, name) is None, f"the bug: {name} was None before the fix"
        assert isinstance(getattr(new, name), torch.Tensor), f"{name} is a tensor after the fix"
    assert torch.equal(new.pos, torch.arange(4)) and torch.equal(new.scale, torch.ones(1))
    assert new.cache is None  # registered as None: nothing to restore
    assert new.mask is None  # persistent: only the unsafe fix touches it
    assert list(new.state_dict()) == list(old.state_dict()) == []
    new.load_state_dict(old.state_dict(), strict=True)


def test_buf005_unsafe_fix_restores_the_persistent_buffer(tmp_path: Path) -> None:
    old_module = _load_text(_original("buf005/same_name.py"), tmp_path)
    new_module = _load_text(_fixed("buf005/same_name.py", unsafe=True), tmp_path)
    old, new = old_module.Masked(4), new_module.Masked(4)
    x = torch.randn(2, 4)
    with pytest.raises(TypeError):
        old(x)  # the original module cannot run: its buffers are None
    expected = (x @ torch.ones(4, 4).tril() + torch.arange(4) + 0.0) * torch.ones(1)
    assert torch.equal(new(x), expected)
    assert list(new.state_dict()) == ["mask"], "the persistent buffer now reaches state_dict"
    assert list(old.state_dict()) == []
    assert torch.equal(new.to(torch.float64).mask, torch.ones(4, 4, dtype=torch.float64).tril())


def test_buf005_different_names_keeps_the_buffer_and_drops_the_none_attribute(tmp_path: Path) -> None:
    torch.manual_seed(0)
    old = _load_text(_original("buf005/different_names.py"), tmp_path).Stats(3)
    torch.manual_seed(0)
    new = _load_text(_fixed("buf005/different_names.py", unsafe=True), tmp_path).Stats(3)
    assert old.my_buffer is None and old.table is None
    assert list(old.state_dict()) == list(new.state_dict()) == ["B"]
    assert torch.equal(old.B, new.B)
    x = torch.randn(2, 3)
    with torch.no_grad():
        assert torch.equal(new(x), x @ new.table @ torch.eye(3) + new.B)
    assert new.my_buffer is None and "my_buffer" in new._buffers  # registered as None by BUF001
    new.reset()
    buffers = dict(new.named_buffers())
    assert set(buffers) == {"my_buffer", "B", "table", "basis"}
    assert torch.equal(buffers["my_buffer"], torch.zeros(3)), "reset()'s assignment updates the registered buffer"
    assert list(new.state_dict()) == ["B"], "my_buffer is registered non-persistent"


def test_buf005_local_result_fix_keeps_the_registration(tmp_path: Path) -> None:
    old = _load_text(_original("buf005/local_result.py"), tmp_path).Model(3)
    new = _load_text(_fixed("buf005/local_result.py", unsafe=False), tmp_path).Model(3)
    assert list(new.state_dict()) == list(old.state_dict()) == ["a", "b"]
    x = torch.randn(3)
    assert torch.equal(new(x), old(x))


# --- BUF008 ---------------------------------------------------------------------------------


def _normalize_pair(tmp_path: Path) -> tuple[Any, Any]:
    old_module = _load_text(_original("buf008/frozen.py"), tmp_path)
    new_module = _load_text(_fixed("buf008/frozen.py", unsafe=True), tmp_path)
    torch.manual_seed(0)
    old = old_module.Normalize(3)
    torch.manual_seed(0)
    new = new_module.Normalize(3)
    return old, new


def test_buf008_fix_turns_frozen_parameters_into_persistent_buffers(tmp_path: Path) -> None:
    old, new = _normalize_pair(tmp_path)
    frozen = {"mean", "std", "gain", "shift"}
    assert frozen <= {name for name, _ in old.named_parameters()}
    assert {name for name, _ in new.named_parameters()} == {"lin.weight", "lin.bias"}
    assert {name for name, _ in new.named_buffers()} == frozen
    assert frozen <= set(new.state_dict()) and not new._non_persistent_buffers_set
    assert len(list(torch.optim.SGD(new.parameters(), lr=0.1).param_groups[0]["params"])) == 2


def test_buf008_fix_keeps_state_dict_and_loads_old_checkpoints_strictly(tmp_path: Path) -> None:
    old, new = _normalize_pair(tmp_path)
    assert list(old.state_dict()) == list(new.state_dict())
    with torch.no_grad():
        old.mean.add_(0.25)  # a trained checkpoint whose constants differ from the defaults
    saved = io.BytesIO()
    torch.save(old.state_dict(), saved)
    saved.seek(0)
    result = new.load_state_dict(torch.load(saved), strict=True)
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert torch.equal(new.mean, old.mean.detach())
    x = torch.randn(2, 3)
    with torch.no_grad():
        assert torch.equal(new(x), old(x))
    assert new.double().mean.dtype == torch.float64, "the buffer is cast with the module"


def test_buf008_is_not_reported_when_unfrozen() -> None:
    code = _original("buf008/unfrozen.py")
    rows = [f.location.row for f in lint_source(code, "m.py", Settings(select=("BUF008",)))]
    scoped_row = code.splitlines().index("class Scoped(nn.Module):") + 5
    assert rows == [scoped_row]
