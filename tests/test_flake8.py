"""The flake8 plugin, run through the real flake8 in a subprocess: `flake8 --select BUF` reports
what `bufferlint` reports (code, row, column, message)."""

from __future__ import annotations

import contextlib
import importlib.metadata
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bufferlint.cli import main

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"

MODEL = """\
import torch
import torch.nn as nn


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.t = torch.ones(3)
        self.u = torch.zeros(2)  # noqa: BUF001
        self.register_buffer("v", torch.ones(1))

    def forward(self, x):
        self.register_buffer("w", x.detach())
        return x + self.t + self.u
"""


def _declared_entry_point() -> str:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return data["project"]["entry-points"]["flake8.extension"]["BUF"]


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    """PYTHONPATH that makes flake8 find the plugin through the entry point pyproject.toml declares.

    An installed bufferlint already provides it; in a bare checkout a dist-info folder with the
    same entry point stands in for the installation."""
    declared = _declared_entry_point()
    installed = [ep.value for ep in importlib.metadata.entry_points(group="flake8.extension") if ep.name == "BUF"]
    if declared in installed:
        return str(ROOT)
    site = tmp_path_factory.mktemp("site")
    info = site / "bufferlint_checkout-0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: bufferlint-checkout\nVersion: 0.0\n")
    (info / "entry_points.txt").write_text(f"[flake8.extension]\nBUF = {declared}\n")
    return os.pathsep.join([str(ROOT), str(site)])


def flake8(plugin_path: str, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": plugin_path}
    command = [sys.executable, "-m", "flake8", "--jobs", "1", *args]  # one process: one plugin import
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)


def bufferlint_lines(cwd: Path, *args: str) -> list[str]:
    """bufferlint's JSON findings, written the way flake8 prints them."""
    previous = Path.cwd()
    os.chdir(cwd)
    try:
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            assert main(["--output-format", "json", *args]) in (0, 1)
    finally:
        os.chdir(previous)
    findings = json.loads(buffer.getvalue())
    return [f"{f['filename']}:{f['location']['row']}:{f['location']['column']}: {f['code']} {f['message']}" for f in findings]


def _fixture_sample() -> list[str]:
    """Per rule group, the default-settings fixture with the most expected findings."""
    chosen = []
    for group in sorted(FIXTURES.glob("buf*")):
        cases = [p for p in group.glob("*.py") if not p.name.endswith((".fixed.py", ".unsafe.py")) and "fixture-settings" not in p.read_text()]
        counted = [(len(p.with_suffix(".expected").read_text().splitlines()), str(p)) for p in cases if p.with_suffix(".expected").is_file()]
        if counted:
            chosen.append(max(counted)[1])
    return chosen


def test_same_findings_as_bufferlint(plugin_path: str, tmp_path: Path) -> None:
    """A model with `# noqa` and an off-by-default rule, plus the fixtures with the most findings
    per rule group: flake8 and bufferlint agree line for line."""
    (tmp_path / "m.py").write_text(MODEL)
    # Copied out of this repository: given files of a project, bufferlint also reads the rest of it
    # (project_context.py), while flake8 sees one file at a time; outside a project both see one.
    files = ["m.py"]
    for sample in _fixture_sample():
        copy = f"{Path(sample).parent.name}_{Path(sample).name}"
        shutil.copyfile(sample, tmp_path / copy)
        files.append(copy)
    expected = bufferlint_lines(tmp_path, *files)
    assert len({line.split()[1] for line in expected}) >= 4  # findings of several rules
    result = flake8(plugin_path, tmp_path, "--isolated", "--select", "BUF", *files)
    assert result.returncode == 1, result.stderr
    assert sorted(result.stdout.splitlines()) == sorted(expected)
    mine = [line for line in result.stdout.splitlines() if line.startswith("m.py:")]
    assert mine == [
        "m.py:8:9: BUF001 Tensor attribute `t` is not a registered buffer: .to()/.cuda() leave it behind, "
        "and forward() uses it with the input or the module's tensors"
    ]
    # line 9 has `# noqa: BUF001`; BUF006 (line 13) is off by default


def test_rules_enabled_in_pyproject_run_in_flake8(plugin_path: str, tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(MODEL)
    (tmp_path / "pyproject.toml").write_text('[tool.bufferlint]\nextend-select = ["BUF006"]\n')
    lines = flake8(plugin_path, tmp_path, "--select", "BUF", "m.py").stdout.splitlines()
    assert any(line.startswith("m.py:13:9: BUF006 ") for line in lines)
    assert lines == bufferlint_lines(tmp_path, "m.py")
    # flake8's own selection narrows it further
    only = flake8(plugin_path, tmp_path, "--select", "BUF006", "m.py").stdout.splitlines()
    assert [line.split()[1] for line in only] == ["BUF006"]
