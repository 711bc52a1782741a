"""The worker's job pipeline, run in-process (the CLI tests cover the subprocess around it)."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from bufferlint.verify.worker import run_job
from verify_support import MODELS, models_target


@pytest.fixture(autouse=True)
def emulated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


def verify_job(target: str, **extra: object) -> dict:
    return {"kind": "verify", "target": target, "kwargs": None, "input": None, "device": "auto", "against": None, **extra}


def test_kwargs_and_input_from_pyproject(tmp_path: Path) -> None:
    (tmp_path / "norm.py").write_text(MODELS.read_text())
    (tmp_path / "pyproject.toml").write_text(
        '[tool.bufferlint.verify."norm.py::RMSNorm"]\nkwargs = { d = 4 }\ninput = "torch.randn(3, 4)"\n'
    )
    record = run_job(verify_job(f"{tmp_path / 'norm.py'}::RMSNorm"))
    result = record["result"]
    assert (result["status"], result["forward"], result["mode"]) == ("pass", "ran", "meta-emulated")
    assert result["messages"][0] == f'kwargs/input from {tmp_path / "pyproject.toml"} [tool.bufferlint.verify."norm.py::RMSNorm"]'


def test_required_arguments_without_kwargs_are_a_usage_error() -> None:
    record = run_job(verify_job(models_target("RMSNorm")))
    assert record["usage_error"].startswith("RMSNorm() needs argument(s) d: pass --kwargs")


def test_constructor_crash_is_a_failure_not_a_usage_error() -> None:
    record = run_job(verify_job(models_target("RMSNorm"), kwargs={"d": "four"}))
    result = record["result"]
    assert result["status"] == "fail"
    assert result["messages"][0].startswith("could not build the module: RMSNorm(**{'d': 'four'}) raised TypeError")


def test_bad_input_expression_is_a_usage_error() -> None:
    record = run_job(verify_job(models_target("Buffered"), input="torch.randn(2, undefined)"))
    assert record["usage_error"] == (
        "input expression 'torch.randn(2, undefined)' failed: NameError: name 'undefined' is not defined"
    )


def test_tuple_input_is_spread_into_arguments(tmp_path: Path) -> None:
    (tmp_path / "two.py").write_text(
        "import torch\nfrom torch import nn\n"
        "class Add(nn.Module):\n    def forward(self, a, b):\n        return a + b + torch.ones(3)\n"
    )
    result = run_job(verify_job(f"{tmp_path / 'two.py'}::Add", input="(torch.randn(3), torch.randn(3))"))["result"]
    assert result["status"] == "fail"
    assert [(e["op"], e["location"].rsplit(":", 1)[1]) for e in result["device_errors"]] == [("aten.add.Tensor", "5")]


def test_against_missing_revision_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(MODELS.read_text())
    record = run_job(verify_job(f"{tmp_path / 'm.py'}::Buffered", against="no-such-rev-or-file"))
    assert record["usage_error"].startswith("--against no-such-rev-or-file: not a file and not a git revision of m.py")


def test_cuda_requested_without_a_gpu_is_a_usage_error() -> None:
    record = run_job(verify_job(models_target("Buffered"), device="cuda"))
    assert record == {"usage_error": "--device cuda: torch.cuda.is_available() is False on this machine"}
