"""`bufferlint verify` end to end: bufferlint.verify.cli.main with its real worker subprocess."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from bufferlint.verify.cli import main
from verify_support import AGAINST, MODELS, ROOT, line_of, models_target, run_python


@pytest.fixture(autouse=True)
def at_repo_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def test_nested_strays_and_device_errors_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    code = main([models_target("TinyGPT"), "--input", "torch.randn(2, 5, 8)", "--device", "meta", "--output-format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1
    assert (report["target"], report["mode"], report["status"]) == (models_target("TinyGPT"), "meta-emulated", "fail")
    assert report["against"] is None
    assert [(s["path"], s["device"], s["shape"]) for s in report["stray_tensors"]] == [
        ("blocks.0.attn.mask", "cpu", [16, 16]), ("blocks.1.attn.mask", "cpu", [16, 16]),
    ]
    assert [(e["op"], e["devices"], e["location"]) for e in report["device_errors"]] == [
        ("aten.masked_fill.Scalar", ["cpu", "meta"], f"fixtures/verify/verify_models.py:{line_of(MODELS, 'MASK-LINE')}")
    ]


def test_constructor_kwargs_flag_and_text_report(capsys: pytest.CaptureFixture[str]) -> None:
    """Without an input only the walk ran: that proves no stray, not that forward mixes no devices,
    so the status is inconclusive (exit 1), never a pass."""
    code = main([models_target("RMSNorm"), "--kwargs", '{"d": 4}', "--device", "meta"])
    assert code == 1
    assert capsys.readouterr().out.splitlines() == [
        f"bufferlint verify {models_target('RMSNorm')}",
        "mode: meta-emulated (no usable GPU: meta tensors under a checker that applies CUDA's device rules)",
        "stray tensors: none",
        "forward skipped: no example input (give --input); only the stray-tensor walk ran",
        "status: inconclusive",
    ]
    code = main([models_target("RMSNorm"), "--kwargs", '{"d": 4}', "--device", "meta", "--input", "torch.randn(2, 4)"])
    assert code == 0 and capsys.readouterr().out.splitlines()[-1] == "status: pass"


def test_against_file_with_changed_constant_fails_on_outputs(capsys: pytest.CaptureFixture[str]) -> None:
    code = main([f"{AGAINST / 'rotary_changed_base.py'}::Rotary", "--against", str(AGAINST / "rotary_old.py"),
                 "--input", "torch.randn(2, 6, 8)", "--device", "meta", "--output-format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1
    assert (report["status"], report["stray_tensors"], report["device_errors"]) == ("fail", [], [])
    against = report["against"]
    assert (against["status"], against["outputs"], against["extra_keys"], against["missing_keys"]) == ("fail", "differ", [], [])
    assert f"outputs differ (max abs diff {against['max_abs_diff']:.6g})" in against["messages"]


def test_against_git_revision_with_persistent_rewrite_names_the_keys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = tmp_path / "models" / "rotary.py"
    model.parent.mkdir()
    shutil.copy(AGAINST / "rotary_old.py", model)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-C", str(tmp_path)]
    for args in (["init", "-q"], ["add", "models/rotary.py"], ["commit", "-qm", "original"]):
        subprocess.run([*git, *args], check=True, capture_output=True)
    shutil.copy(AGAINST / "rotary_persistent.py", model)
    code = main([f"{model}::Rotary", "--against", "HEAD", "--device", "meta"])
    out = capsys.readouterr().out
    assert code == 1
    assert "against HEAD:models/rotary.py: fail" in out  # the path from the repository's root, as git spells it
    assert "state_dict keys only in the new version: cos, sin" in out
    assert 'Missing key(s) in state_dict: "cos", "sin"' in out


def test_missing_class_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([models_target("NoSuchModel")]) == 2
    assert capsys.readouterr().err.strip() == "bufferlint verify: error: no class NoSuchModel in " + str(MODELS)


def test_import_error_in_user_code_is_exit_2_naming_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = tmp_path / "model.py"
    model.write_text("import torch\nimport flash_attn_not_installed\n\nclass Net(torch.nn.Module):\n    pass\n")
    assert main([f"{model}::Net"]) == 2
    assert capsys.readouterr().err == (
        f"bufferlint verify: error: cannot import {model}: ModuleNotFoundError: "
        f"No module named 'flash_attn_not_installed' (at {model}:2)\n"
    )


@pytest.mark.parametrize("argv, message", [
    (["models.py"], "bad target 'models.py'"),
    (["nope/model.py::Net"], "no such file nope/model.py"),
    ([f"{MODELS}::NoSuchModel"], "no class NoSuchModel in"),
    ([models_target("Buffered"), "--kwargs", "{d: 1}"], "--kwargs is not valid JSON"),
    ([models_target("Buffered"), "--kwargs", "[1]"], "--kwargs must be a JSON object"),
    ([models_target("Buffered"), "--input", "torch.randn(2,"], "--input is not a Python expression"),
    ([models_target("Buffered"), "--timeout", "0"], "--timeout must be positive"),
])
def test_usage_errors_are_exit_2_before_running_anything(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("bufferlint verify: error: ") and message in err and len(err.strip().splitlines()) == 1


def test_bad_flag_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([models_target("Buffered"), "--device", "tpu"]) == 2
    assert "invalid choice: 'tpu'" in capsys.readouterr().err


def test_hanging_user_code_times_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "slow.py").write_text(
        "import time\nfrom torch import nn\nclass Slow(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        time.sleep(60)\n"
    )
    code = main([f"{tmp_path / 'slow.py'}::Slow", "--timeout", "1.5"])
    out = capsys.readouterr().out
    assert code == 1
    assert "timed out after 1.5 s" in out and out.rstrip().endswith("status: fail")


def test_real_subprocess_reports_inconclusive_never_pass() -> None:
    target = models_target("DataDependent")
    done = run_python(["-m", "bufferlint.verify.cli", target, "--input", "torch.randn(3)", "--device", "meta"])
    assert done.returncode == 1, done.stderr
    assert "inconclusive: forward stopped at aten._local_scalar_dense.default" in done.stdout
    assert done.stdout.rstrip().endswith("status: inconclusive")
    assert done.stderr == ""


CONFIGURED = '''import dataclasses

import torch
from torch import nn


@dataclasses.dataclass
class Config:
    width: int = 8
    layers: int = 3


class Net(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(config.width, config.width) for _ in range(config.layers))
        self.scale = torch.linspace(0.5, 1.5, config.width)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x * self.scale
'''


def test_build_expression_constructs_what_kwargs_cannot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """nanoGPT-style `GPT(GPTConfig(...))`: --build is evaluated in the target's file, so its own
    classes are in scope; with --against each version is built by its own file's classes."""
    path = tmp_path / "net.py"
    path.write_text(CONFIGURED)
    target = f"{path}::Net"
    assert main([target, "--device", "meta"]) == 2
    assert "Net() needs argument(s) config" in capsys.readouterr().err
    code = main([target, "--build", "Net(Config(width=4, layers=2))", "--input", "torch.randn(2, 4)",
                 "--device", "meta", "--output-format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert (code, report["status"], [(s["path"], s["shape"]) for s in report["stray_tensors"]]) == (1, "fail", [("scale", [4])])
    fixed = tmp_path / "fixed.py"
    fixed.write_text(CONFIGURED.replace(
        "self.scale = torch.linspace(0.5, 1.5, config.width)",
        'self.register_buffer("scale", torch.linspace(0.5, 1.5, config.width), persistent=False)'))
    code = main([f"{fixed}::Net", "--against", str(path), "--build", "Net(Config(width=4, layers=2))",
                 "--input", "torch.randn(2, 4)", "--device", "meta", "--output-format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert (code, report["status"], report["against"]["status"], report["against"]["outputs"]) == (0, "pass", "pass", "equal")


@pytest.mark.parametrize(("args", "message"), [
    (["--build", "Net(", "--device", "meta"], "--build is not a Python expression"),
    (["--build", "Net(Config())", "--kwargs", "{}"], "give either --kwargs or --build, not both"),
    (["--build", "Config()", "--device", "meta"], "--build 'Config()' returned a Config not a torch.nn.Module"),
], ids=["syntax", "both", "not-a-module"])
def test_build_expression_errors(args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "net.py"
    path.write_text(CONFIGURED)
    assert main([f"{path}::Net", *args]) == 2
    assert message in capsys.readouterr().err


def test_each_stray_names_the_line_that_made_it(capsys: pytest.CaptureFixture[str]) -> None:
    made = f"fixtures/verify/verify_models.py:{line_of(MODELS, 'MASK-MADE')}"
    main([models_target("TinyGPT"), "--input", "torch.randn(2, 5, 8)", "--device", "meta", "--output-format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert [(s["path"], s["created"], s["also"]) for s in report["stray_tensors"]] == [
        ("blocks.0.attn.mask", made, []), ("blocks.1.attn.mask", made, []),
    ]
    main([models_target("TinyGPT"), "--input", "torch.randn(2, 5, 8)", "--device", "meta"])
    assert f"  blocks.0.attn.mask: bool (16, 16) on cpu, made at {made}" in capsys.readouterr().out.splitlines()


DECORATED = '''import torch
import torch.nn.functional as F
from torch import nn


class Act(nn.Module):
    act = staticmethod(F.silu)  # a function of another module, before __init__

    @torch.no_grad()
    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, n)

    def forward(self, x):
        return self.act(self.lin(x))
'''


def test_build_evaluates_in_the_targets_own_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Not in torch.nn.functional's namespace (a staticmethod of F.silu) nor in a decorator's
    (`@torch.no_grad()` on __init__): `Act` is found."""
    path = tmp_path / "act.py"
    path.write_text(DECORATED)
    code = main([f"{path}::Act", "--build", "Act(4)", "--input", "torch.randn(2, 4)", "--device", "meta"])
    assert (code, capsys.readouterr().out.splitlines()[-1]) == (0, "status: pass")
