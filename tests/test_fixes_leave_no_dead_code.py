"""A fix must not leave code the next linter in the hook reports: an import or a local whose last
reader the rewrite removed (pyflakes' F401 and F841, in ruff's default rules too). Checked on the
fixed output of every fixture, against what the original already had."""

from __future__ import annotations

from collections import Counter

import pytest
from pyflakes import checker, messages

from tests.fixture_cases import Case, all_cases

_DEAD = (messages.UnusedImport, messages.UnusedVariable)
FIXED = [(case, unsafe) for case in all_cases() for unsafe in (False, True) if case.expected_fixed(unsafe) is not None]


def _dead_names(source: bytes, filename: str) -> Counter[tuple[str, str]]:
    import ast

    tree = ast.parse(source, filename)
    found = checker.Checker(tree, filename=filename).messages
    return Counter((type(m).__name__, str(m.message_args[0])) for m in found if isinstance(m, _DEAD))


@pytest.mark.parametrize("case,unsafe", FIXED, ids=[f"{c.id}-{'unsafe' if u else 'safe'}" for c, u in FIXED])
def test_a_fix_leaves_no_unused_import_or_local(case: Case, unsafe: bool) -> None:
    fixed = case.expected_fixed(unsafe)
    assert fixed is not None
    added = _dead_names(fixed, case.path.name) - _dead_names(case.source, case.path.name)
    assert not added, f"the fix left {sorted(added)} unused"
