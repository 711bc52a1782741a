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


LAYERS = '''import torch
from torch import nn


class Wide(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(2048, 2048)
        self.hidden = [nn.Linear(4, 4)]  # out of .to()'s sight
        self.scale = torch.ones(2048)

    def forward(self, x):
        return self.proj(x) * self.scale


class Measured(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.norm = float(self.proj.weight.abs().sum().item())  # needs the weights' values

    def forward(self, x):
        return self.proj(x) / self.norm
'''


def test_the_emulated_check_builds_layer_weights_on_meta(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """torch.nn's own weights are made on meta (a 16 MB Linear costs nothing); the user's tensors
    stay where the code puts them, a layer out of .to()'s sight is still a stray on the host, and a
    constructor that reads weight values is built on the CPU instead."""
    from torch import nn

    (tmp_path / "layers.py").write_text(LAYERS)
    made: list[str] = []
    original = nn.Linear.__init__

    def spy(self: nn.Linear, *args: object, **kwargs: object) -> None:
        original(self, *args, **kwargs)  # type: ignore[arg-type]
        made.append(self.weight.device.type)

    monkeypatch.setattr(nn.Linear, "__init__", spy)
    result = run_job(verify_job(f"{tmp_path / 'layers.py'}::Wide", input="torch.randn(2, 2048)"))["result"]
    assert made == ["meta", "meta"]
    assert [(s["path"], s["device"]) for s in result["stray_tensors"]] == [
        ("hidden[0].weight", "cpu"), ("hidden[0].bias", "cpu"), ("scale", "cpu"),
    ]
    assert [e["op"] for e in result["device_errors"]] == ["aten.mul.Tensor"] and result["status"] == "fail"
    made.clear()
    result = run_job(verify_job(f"{tmp_path / 'layers.py'}::Measured", input="torch.randn(2, 4)"))["result"]
    assert made == ["meta", "cpu"] and (result["status"], result["forward"]) == ("pass", "ran")


NOISY = '''import torch
from torch import nn


class Noisy(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        if self.training:
            x = x + torch.randn(x.shape)  # made on the host: only training mode mixes devices
        return self.lin(x)
'''


def test_one_switch_picks_training_or_eval_mode_for_both_checks(tmp_path: Path) -> None:
    (tmp_path / "noisy.py").write_text(NOISY)
    target = f"{tmp_path / 'noisy.py'}::Noisy"
    evaluated = run_job(verify_job(target, input="torch.randn(2, 4)", against=str(tmp_path / "noisy.py")))["result"]
    assert (evaluated["status"], evaluated["device_errors"], evaluated["against"]["outputs"]) == ("pass", [], "equal")
    trained = run_job(verify_job(target, input="torch.randn(2, 4)", against=str(tmp_path / "noisy.py"), train=True))["result"]
    assert [e["op"] for e in trained["device_errors"]] == ["aten.add.Tensor"] and trained["status"] == "fail"
    assert trained["against"]["outputs"] == "equal"  # the same seed draws the same noise in both versions


HIDDEN = '''import torch
from torch import nn


class ListLinear(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = [nn.Linear(4, 4)]  # out of .to()'s sight: the classic bug

    def forward(self, x):
        return self.layers[0](x)
'''


def test_a_layer_out_of_sight_fails_although_the_light_build_made_it_on_meta(tmp_path: Path) -> None:
    """The light build makes that Linear's weights on meta, the target: forward then mixes nothing,
    and the weights sit on the target after it. Only a stray that forward moved from elsewhere
    counts as put back by forward; these stay failures."""
    (tmp_path / "hidden.py").write_text(HIDDEN)
    result = run_job(verify_job(f"{tmp_path / 'hidden.py'}::ListLinear", input="torch.randn(2, 4)"))["result"]
    assert [(s["path"], s["device"], s["fatal"]) for s in result["stray_tensors"]] == [
        ("layers[0].weight", "cpu", True), ("layers[0].bias", "cpu", True),
    ]
    assert result["status"] == "fail"
