"""The pytest plugin: assert_device_consistent and its fixture."""
from __future__ import annotations

import textwrap
from importlib.metadata import entry_points
from pathlib import Path

import pytest
import torch
from torch import nn

from bufferlint.pytest_plugin import assert_device_consistent
from verify_support import MODELS, ROOT, build, line_of, run_python


@pytest.fixture(autouse=True)
def emulated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


def test_names_stray_paths_and_mixing_ops() -> None:
    with pytest.raises(AssertionError) as info:
        assert_device_consistent(build("TinyGPT"), torch.randn(2, 5, 8))
    assert str(info.value).splitlines() == [
        "TinyGPT is not device-consistent (mode: meta-emulated):",
        "  stray tensor blocks.0.attn.mask: bool (16, 16) on cpu (not a parameter or buffer: .to() leaves it behind)",
        "  stray tensor blocks.1.attn.mask: bool (16, 16) on cpu (not a parameter or buffer: .to() leaves it behind)",
        f"  op aten.masked_fill.Scalar mixes cpu and meta at fixtures/verify/verify_models.py:{line_of(MODELS, 'MASK-LINE')}: "
        'att = att.masked_fill(~self.mask[:t, :t], float("-inf"))  # MASK-LINE',
    ]


def test_passes_and_leaves_the_module_untouched() -> None:
    module = build("Buffered")
    assert_device_consistent(module, torch.randn(2, 4))
    assert module.table.device.type == "cpu" and module.lin.weight.device.type == "cpu"


def test_forward_created_tensor_fails() -> None:
    with pytest.raises(AssertionError, match=r"op aten.add.Tensor mixes cpu and meta at .*ARANGE-LINE"):
        assert_device_consistent(build("ArangeInForward"), torch.randn(2, 4))


def test_inconclusive_is_not_a_pass() -> None:
    with pytest.raises(AssertionError, match="inconclusive: forward stopped at aten._local_scalar_dense.default") as info:
        assert_device_consistent(build("DataDependent"), torch.randn(3))
    assert str(info.value).startswith("DataDependent could not be checked (mode: meta-emulated), which is no pass:")
    assert "not device-consistent" not in str(info.value)


def test_inconclusive_can_skip_the_test_instead() -> None:
    with pytest.raises(pytest.skip.Exception, match="DataDependent could not be checked"):
        assert_device_consistent(build("DataDependent"), torch.randn(3), inconclusive="skip")
    with pytest.raises(ValueError, match='inconclusive must be "fail" or "skip"'):
        assert_device_consistent(build("DataDependent"), torch.randn(3), inconclusive="pass")


def test_a_failing_check_shows_the_callers_line_not_the_helpers(tmp_path: Path) -> None:
    test_file = tmp_path / "test_user.py"
    test_file.write_text(
        "import sys\nsys.path.insert(0, %r)\nimport torch\nfrom verify_models import TinyGPT\n"
        "from bufferlint.pytest_plugin import assert_device_consistent\n\n\n"
        "def test_model():\n    assert_device_consistent(TinyGPT(), torch.randn(2, 5, 8))  # CALLER\n" % str(MODELS.parent)
    )
    run = run_python(["-m", "pytest", "-q", "-p", "no:cacheprovider", str(test_file)], cwd=tmp_path)
    assert "1 failed" in run.stdout and "# CALLER" in run.stdout
    assert "probe = module if inplace" not in run.stdout and "def assert_device_consistent" not in run.stdout


def test_plugin_loads_without_torch_and_provides_the_fixture(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(textwrap.dedent("""
        import sys

        def pytest_configure(config):
            assert "bufferlint.pytest_plugin" in sys.modules
            assert "torch" not in sys.modules, "the plugin imported torch at load time"
    """))
    (tmp_path / "test_user.py").write_text(textwrap.dedent("""
        import pytest, torch
        from torch import nn

        class Leaky(nn.Module):
            def __init__(self):
                super().__init__()
                self.table = torch.ones(3)

        def test_ok(device_consistency):
            device_consistency(nn.Linear(3, 3))

        def test_leaky(device_consistency):
            with pytest.raises(AssertionError, match="stray tensor table: float32 \\\\(3,\\\\) on cpu"):
                device_consistency(Leaky())
    """))
    # installed, the pytest11 entry point loads the plugin; from a plain checkout, name it
    installed = any(ep.value == "bufferlint.pytest_plugin" for ep in entry_points(group="pytest11"))
    load = [] if installed else ["-p", "bufferlint.pytest_plugin"]
    done = run_python(["-m", "pytest", "-q", *load, "-p", "no:cacheprovider", str(tmp_path)], cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout


@pytest.mark.filterwarnings("ignore::FutureWarning")  # weight_norm's deprecation notice
def test_weight_normed_modules_are_copied_and_pass() -> None:
    """weight_norm keeps `weight` as a plain non-leaf tensor that deepcopy refuses; the helper copies
    the module anyway (that tensor is rebuilt by the next forward) and does not call it a stray."""
    net = nn.Sequential(nn.utils.weight_norm(nn.Linear(4, 4)), nn.ReLU())
    net(torch.randn(2, 4))
    assert_device_consistent(net, torch.randn(2, 4))
    assert net[0].weight_v.device.type == "cpu"  # the caller's module was not moved
