"""The survey's repository lists (scripts/survey.py) read back as GitHub names: a name wrapped
across lines at a hyphen used to split into two broken entries, and `--set` then failed."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

SURVEY = Path(__file__).resolve().parent.parent / "scripts" / "survey.py"
_GITHUB_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.][A-Za-z0-9_.-]*")


def test_every_surveyed_repository_is_an_owner_and_a_name() -> None:
    spec = importlib.util.spec_from_file_location("survey_sets", SURVEY)
    assert spec is not None and spec.loader is not None
    survey = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = survey  # its dataclasses look their module up while it runs
    try:
        spec.loader.exec_module(survey)
    finally:
        del sys.modules[spec.name]
    names = [github for repositories in survey.SETS.values() for _, github in repositories]
    assert len(names) > 1000
    assert [name for name in names if not _GITHUB_NAME.fullmatch(name) or name.endswith("-")] == []
    for folder, github in (pair for repositories in survey.SETS.values() for pair in repositories):
        assert folder == github.split("/")[1]
