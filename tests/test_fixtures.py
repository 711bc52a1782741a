"""Every case under fixtures/: exact findings, exact fixed text, idempotent fixes."""

from __future__ import annotations

import ast

import pytest

from bufferlint.lint import check_bytes, fix_bytes
from tests.fixture_cases import UPDATE, Case, all_cases, finding_line

CASES = all_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_findings(case: Case) -> None:
    result = check_bytes(case.source, case.path.name, case.settings())
    lines = [finding_line(f) for f in result.findings]
    expected_path = case.sibling(".expected")
    if UPDATE:
        expected_path.write_text("".join(line + "\n" for line in lines))
    expected = expected_path.read_text().splitlines() if expected_path.exists() else []
    assert lines == expected


@pytest.mark.parametrize("unsafe", [False, True], ids=["safe", "unsafe"])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_fix(case: Case, unsafe: bool) -> None:
    settings = case.settings(unsafe=unsafe)
    result = fix_bytes(case.source, case.path.name, settings)
    assert result.fix_error is None
    fixed = result.new_data if result.new_data is not None else case.source
    if UPDATE:
        _update_fixed(case, unsafe, fixed)
    expected = case.expected_fixed(unsafe)
    assert fixed == (expected if expected is not None else case.source)
    ast.parse(fixed)
    again = fix_bytes(fixed, case.path.name, settings)
    assert again.new_data is None, "fixing twice changed the file again"
    remaining = [f for f in again.findings if f.fix_applicable(unsafe)]
    assert remaining == [], "fixable findings are left after fixing"


def _update_fixed(case: Case, unsafe: bool, fixed: bytes) -> None:
    safe_path, unsafe_path = case.sibling(".fixed.py"), case.sibling(".unsafe.py")
    if not unsafe:
        if fixed != case.source:
            safe_path.write_bytes(fixed)
        elif safe_path.exists():
            safe_path.unlink()
        return
    safe = safe_path.read_bytes() if safe_path.exists() else case.source
    if fixed != safe:
        unsafe_path.write_bytes(fixed)
    elif unsafe_path.exists():
        unsafe_path.unlink()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_every_finding_says_why_its_fix_is_unsafe_or_absent(case: Case) -> None:
    """A user reads the tier off the message: an unsafe fix names what was not proved
    (`; unsafe: ...`), a finding without a fix says why (`; no fix: ...`), a safe fix says neither."""
    for finding in check_bytes(case.source, case.path.name, case.settings()).findings:
        tier = "none" if finding.fix is None else finding.fix.applicability.value
        said = "none" if "; no fix: " in finding.message else "unsafe" if "; unsafe: " in finding.message else "safe"
        assert said == tier, finding_line(finding)
