"""`bufferlint --fix --verify`: rewritten classes are built from both versions with real torch."""

from __future__ import annotations

from pathlib import Path

import pytest

from bufferlint.cli import main

GOOD = '''import torch
import torch.nn as nn


class Window(nn.Module):
    def __init__(self):
        super().__init__()
        self.window = torch.hann_window(4)

    def forward(self, x):
        return x * self.window
'''

# Counting buffers in forward, through a helper the analysis does not follow: the rewrite
# changes the output, so verification must revert it.
BAD = '''import torch
import torch.nn as nn


class Counted(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = torch.ones(4)

    def forward(self, x):
        return x * count(self) + self.table


def count(module):
    return len(list(module.buffers()))
'''

NEEDS_ARGS = '''import torch
import torch.nn as nn


class Sized(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.table = torch.ones(n)

    def forward(self, x):
        return x + self.table
'''


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "model.py"
    path.write_text(text)
    (tmp_path / "pyproject.toml").write_text('[tool.bufferlint.verify."model.py::Window"]\ninput = "torch.randn(2, 4)"\n'
                                            '[tool.bufferlint.verify."model.py::Counted"]\ninput = "torch.randn(2, 4)"\n')
    return path


def test_good_fix_is_verified_and_kept(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, GOOD)
    assert main(["--fix", "--verify", str(path)]) == 0
    err = capsys.readouterr().err
    assert f"verified: {path}::Window (built, state_dict keys equal, old checkpoint loads, outputs equal)" in err
    assert 'self.register_buffer("window", torch.hann_window(4), persistent=False)' in path.read_text()


def test_fix_that_changes_outputs_is_reverted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, BAD)
    assert main(["--fix", "--verify", str(path)]) == 1
    captured = capsys.readouterr()
    assert path.read_text() == BAD
    assert f"verification failed: {path}::Counted" in captured.err
    assert "outputs differ" in captured.err
    assert f"reverted: {path}" in captured.err
    assert f"{path}:8:9: BUF001 Tensor attribute" in captured.out and "fixable" not in captured.out  # reverted: not offered again


def test_class_that_cannot_be_built_is_listed_unverified(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The fix stays written, but a run asked to verify does not succeed without proof."""
    path = _write(tmp_path, NEEDS_ARGS)
    assert main(["--fix", "--verify", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"unverified: {path}::Sized" in err and f"kept unverified: {path}" in err
    assert 'self.register_buffer("table", torch.ones(n), persistent=False)' in path.read_text()


def test_a_class_without_an_input_is_not_called_verified(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Built and loaded, but forward never ran: the report says what was proved, and not `verified`."""
    path = tmp_path / "model.py"
    path.write_text(GOOD)
    assert main(["--fix", "--verify", str(path)]) == 1
    err = capsys.readouterr().err
    assert "verified: " + str(path) not in err.replace("unverified: ", "")
    assert f"unverified: {path}::Window: outputs not compared: no example input" in err
    assert "proved: both versions build, their state_dict keys are the same" in err
    assert 'self.register_buffer("window", torch.hann_window(4), persistent=False)' in path.read_text()


def test_verify_needs_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, GOOD)
    assert main(["--verify", str(path)]) == 2
    assert "use it together with --fix" in capsys.readouterr().err
    assert path.read_text() == GOOD


def test_a_package_that_does_not_import_leaves_the_fix_unverified_not_failed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The package's `__init__` needs a module missing here; each version of the file runs on
    its own, so the fix is not to blame: it stays applied, unverified."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("import module_missing_here_for_bufferlint\n")
    path = package / "model.py"
    path.write_text(GOOD)
    assert main(["--fix", "--verify", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"unverified: {path}::Window" in err and "the package does not import here" in err
    assert "verification failed" not in err
    assert 'self.register_buffer("window", torch.hann_window(4), persistent=False)' in path.read_text()


CONFIGURED = '''import dataclasses

import torch
import torch.nn as nn


@dataclasses.dataclass
class Options:
    n: int = 4


class Gated(nn.Module):
    def __init__(self, options):
        super().__init__()
        self.gate = torch.linspace(0.0, 1.0, options.n)

    def forward(self, x):
        return x * self.gate
'''


def test_a_build_expression_in_pyproject_verifies_a_class_that_takes_a_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "model.py"
    path.write_text(CONFIGURED)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.bufferlint.verify."model.py::Gated"]\nbuild = "Gated(Options(n=4))"\ninput = "torch.randn(2, 4)"\n'
    )
    assert main(["--fix", "--verify", str(path)]) == 0
    assert f"verified: {path}::Gated (built, state_dict keys equal" in capsys.readouterr().err
    (tmp_path / "pyproject.toml").write_text(
        '[tool.bufferlint.verify."model.py::Gated"]\nbuild = "Gated(Options(n=4))"\nkwargs = { options = 1 }\n'
    )
    path.write_text(CONFIGURED)
    assert main(["--fix", "--verify", str(path)]) == 1
    assert "give either kwargs or build, not both" in capsys.readouterr().err
