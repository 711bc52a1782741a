"""What the fixture harness cannot express for BUF002, BUF003, BUF004 and BUF011: one-round fixes
shared with BUF001, the hidden-fix summary, and hard-coded-CUDA fixes that run on a CPU."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import libcst as cst
import pytest

from tests.module_loading import load_module
import torch

from bufferlint.cli import main
from bufferlint.config import Settings
from bufferlint.fixes.apply import compatible_fixes
from bufferlint.lint import check_bytes, check_module, fix_bytes
from bufferlint.model import Applicability, Fix, Replace
from bufferlint.source import parse

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

CONSTANT_ONLY = b"""import torch
from torch import nn


class Causal(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        mask = torch.triu(torch.ones(8, 8), 1).bool().to(x.device)
        return self.proj(x).masked_fill(mask, 0.0)
"""


def _statement(code: str) -> tuple[cst.Module, cst.BaseSmallStatement, cst.BaseSmallStatement]:
    module = cst.parse_module(code)
    lines = [s for s in module.body if isinstance(s, cst.SimpleStatementLine)]
    return module, lines[0].body[0], lines[1].body[0]


def _small(code: str) -> cst.BaseSmallStatement:
    return cst.ensure_type(cst.parse_statement(code), cst.SimpleStatementLine).body[0]


def _fix(*edits: Replace) -> Fix:
    return Fix(Applicability.SAFE, "test", edits)


def test_equal_edit_on_a_shared_target_is_not_a_conflict() -> None:
    _, first, second = _statement("a = 1\nb = 2\n")
    registration = Replace(first, _small("c = 3\n"))
    same_registration = Replace(first, _small("c = 3\n"))
    one = _fix(registration)
    two = _fix(same_registration, Replace(second, None))
    assert compatible_fixes([one, two]) == [one, two]


def test_different_edit_on_a_shared_target_still_conflicts() -> None:
    _, first, second = _statement("a = 1\nb = 2\n")
    one = _fix(Replace(first, _small("c = 3\n")))
    two = _fix(Replace(first, _small("c = 4\n")), Replace(second, None))
    assert compatible_fixes([one, two]) == [one]


def test_buf001_and_buf002_fixes_land_in_the_same_round() -> None:
    source = (FIXTURES / "buf002" / "positional_encoding.py").read_bytes()
    findings = check_module(parse(source), "pe.py", Settings())
    assert [f.code for f in findings] == ["BUF001", "BUF002"]
    fixes = [f.fix for f in findings if f.fix is not None]
    assert compatible_fixes(fixes) == fixes
    # The module holds no parameters, so dropping the move is unsafe (its users may not move it).
    result = fix_bytes(source, "pe.py", Settings(unsafe_fixes=True))
    assert result.fixed == 2
    assert result.new_data is not None and b".to(x.device)" not in result.new_data


def test_every_finding_of_one_attribute_shares_its_edits() -> None:
    source = b"""import torch
from torch import nn


class Two(nn.Module):
    def __init__(self):
        super().__init__()
        self.t = torch.ones(3)
        self.proj = nn.Linear(3, 3)

    def forward(self, x):
        a = self.t.to(x.device)
        return self.proj(x) + a + self.t.to(x.device)
"""
    findings = [f for f in check_module(parse(source), "two.py", Settings(select=("BUF002",)))]
    assert [f.location.row for f in findings] == [12, 13]
    result = fix_bytes(source, "two.py", Settings(select=("BUF002",)))
    assert result.fixed == 2
    assert result.new_data is not None
    assert b"a = self.t\n        return self.proj(x) + a + self.t\n" in result.new_data


def test_constant_only_file_reports_hidden_unsafe_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "causal.py"
    path.write_bytes(CONSTANT_ONLY)
    assert main([str(path), "--no-cache"]) == 1
    out = capsys.readouterr().out
    assert f"{path}:11:16: BUF003 " in out
    assert "No fixes available (1 hidden fix can be enabled with the `--unsafe-fixes` option)." in out


def test_unsafe_fixes_flag_applies_the_hoist(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "causal.py"
    path.write_bytes(CONSTANT_ONLY)
    assert main([str(path), "--fix", "--unsafe-fixes", "--no-cache"]) == 0
    text = path.read_text()
    assert 'self.register_buffer("mask", torch.triu(torch.ones(8, 8), 1).bool(), persistent=False)' in text
    assert "mask = self.mask\n" in text
    assert "1 fixed" in capsys.readouterr().out


def _load(path: Path, name: str) -> ModuleType:
    return load_module(path, prefix=name)


def test_unpinned_module_runs_on_cpu_and_follows_to_meta() -> None:
    """The original needs a GPU; the unsafe fix makes the same module build and run on a CPU."""
    module = _load(FIXTURES / "buf004" / "pins.unsafe.py", "bufferlint_buf004_pins_unsafe")
    torch.manual_seed(0)
    decoder = module.Decoder(8)
    out = decoder(torch.randn(2, 8))
    assert out.shape == (2, 8) and out.device.type == "cpu"
    assert list(decoder.state_dict()) == ["scale", "proj.weight", "proj.bias"]
    # `k` stays built in forward: the class keeps `self.device`, so BUF003 does not hoist it
    assert {name for name, _ in decoder.named_buffers()} == {"scale", "shift"}
    moved = decoder.to("meta")
    assert all(b.device.type == "meta" for b in moved.buffers())


def test_hidden_state_gets_the_input_device() -> None:
    module = _load(FIXTURES / "buf011" / "cuda_move_selected.unsafe.py", "bufferlint_buf011_cuda_move_selected_unsafe")
    torch.manual_seed(0)
    rnn = module.RNN(4)
    x = torch.randn(3, 2, 4)
    with torch.no_grad():
        expected = torch.zeros(2, 4)
        for step in x:
            expected = rnn.cell(step, expected)
        assert torch.equal(rnn(x), expected)


# -- what the survey of real code taught the forward rules ----------------------------------------
def _findings(source: str, *codes: str) -> list[tuple[int, str]]:
    found = check_module(parse(source.encode()), "case.py", Settings(select=codes))
    return [(f.location.row, f.code) for f in found]


@pytest.mark.parametrize(
    ("expression", "numel"),
    [
        ("torch.tensor(-math.inf)", 1),
        ("torch.tensor([0.0])", 1),
        ("torch.tensor([self.floor])", 1),
        ("torch.Tensor([0]).float()", 1),
        ("torch.zeros((), dtype=torch.float32)", 1),
        ("torch.zeros((0, 2))", 0),
        ("torch.zeros(n, 0)", 0),
        ("torch.tensor([[1, 2], [3, 4]])", 4),
        ("torch.full((2, 3), 7.0)", 6),
        ("torch.zeros(1, n, 1)", None),
        ("torch.arange(8)", 8),
        ("torch.arange(0, 0)", 0),
        ("torch.arange(1, 9, 2)", 4),
        ("torch.arange(5, 0, -1)", 5),
        ("torch.arange(n)", None),
        ("torch.arange(0, 1, 0.25)", None),
        ("torch.tensor(values)", None),
    ],
)
def test_static_numel_reads_literal_sizes_only(expression: str, numel: object) -> None:
    from bufferlint.analysis.factory_sizes import static_numel
    from bufferlint.analysis.file import FileAnalysis

    module = parse(f"import math\nimport torch\nvalue = {expression}\n".encode())
    analysis = FileAnalysis(module, "sizes.py")
    statement = module.body[-1]
    assert isinstance(statement, cst.SimpleStatementLine) and isinstance(statement.body[0], cst.Assign)
    assert static_numel(statement.body[0].value, analysis.inference.qualify) == numel


def test_buf003_reports_constants_with_more_than_one_element_only() -> None:
    source = """import torch
from torch import nn


class Gate(nn.Module):
    def forward(self, x):
        one = torch.tensor([1.0]).to(x.device)
        two = torch.tensor([1.0, 2.0]).to(x.device)
        return x * one + two[0]
"""
    assert _findings(source, "BUF003") == [(8, "BUF003")]


def test_buf004_device_parameter_default_is_silent_but_an_attribute_pin_is_not() -> None:
    source = """import torch
from torch import nn


class Sampler(nn.Module):
    def sample(self, n, device=None, index=0):
        if device is None:
            device = torch.device("cuda")
        self.device = torch.device("cuda")
        a = torch.zeros(n).cuda(index)
        b = torch.zeros(n).cuda(self.weight.device)
        return torch.randn(n, device=device), a, b
"""
    assert _findings(source, "BUF004") == [(9, "BUF004"), (10, "BUF004")]


def test_buf004_early_exit_guards_only_the_statements_after_it() -> None:
    source = """import torch
from torch import nn


class Probe(nn.Module):
    def __init__(self):
        super().__init__()
        self.before = torch.zeros(2, device="cuda")
        if not torch.cuda.is_available():
            return
        self.after = torch.zeros(2, device="cuda")
"""
    assert _findings(source, "BUF004") == [(8, "BUF004")]


@pytest.mark.parametrize(
    "filename,expected",
    [
        ("model.py", [(8, "BUF004")]), ("tests/test_model.py", []), ("pkg/model_test.py", []), ("conftest.py", []),
        ("benchmarks/bench_model.py", []), ("pkg/benchmark_model.py", []),
    ],
)
def test_buf004_is_silent_in_test_and_benchmark_modules(filename: str, expected: list[tuple[int, str]]) -> None:
    """A test or benchmark that builds its model on the GPU is a GPU test by design."""
    source = """import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(2, device="cuda"))

    def forward(self, x):
        return x * self.weight
"""
    result = check_bytes(source.encode(), filename, Settings(select=("BUF004",)))
    assert [(f.location.row, f.code) for f in result.findings] == expected


def test_buf011_silences_rest_on_what_torch_allows() -> None:
    """The silences claim that 0-dim CPU tensors, `.type_as(t)` and `torch.normal` of placed
    tensors never trip a device check, and that a 1-element 1-dim CPU tensor does. On the meta
    device (a stand-in for CUDA on this machine) torch agrees."""
    x = torch.zeros(3, device="meta")
    assert (x + torch.randint(0, 5, (1,))[0]).device.type == "meta"
    assert (x - torch.rand(2).max()).device.type == "meta"
    assert torch.normal(torch.zeros_like(x), torch.ones_like(x)).device.type == "meta"
    assert torch.zeros(2, 3).type_as(x).device.type == "meta"
    with pytest.raises(RuntimeError):
        x + torch.zeros(1)


def test_buf011_still_flags_a_one_element_vector() -> None:
    source = """import torch
from torch import nn


class Offset(nn.Module):
    def forward(self, x):
        step = torch.ones(1)
        picked = torch.arange(4)[1:]
        return x + step + picked
"""
    assert _findings(source, "BUF011") == [(7, "BUF011"), (8, "BUF011")]


def test_buf002_a_module_moved_in_place_is_not_a_tensor_but_a_rebound_tensor_is() -> None:
    source = """import torch
from torch import nn
from lib import Resample


class Mixed(nn.Module):
    def __init__(self):
        super().__init__()
        self.resample = Resample(8000, 16000)
        self.window = torch.ones(4)

    def forward(self, x):
        self.resample.to(x.device)
        window = self.window.to(x.device)
        return self.resample(x) * window
"""
    assert _findings(source, "BUF002") == [(14, "BUF002")]


@pytest.mark.parametrize(
    "move",
    ["self.table . to(x.device)", "self.table.\\\n            to(x.device)", "(self.table.\n            # on the input's device\n            cuda())",
     "(self.table.  # on the input's device\n            to(x.device))"],
    ids=["spaced", "continued", "commented", "comment-after-dot"],
)
def test_a_move_spelled_across_blanks_is_found(move: str) -> None:
    """BUF002 and BUF003 skip files whose text holds no move (forward.MOVE_TEXT); every spelling
    Python accepts between the dot and the method's name still counts as one."""
    source = (
        "import torch\nfrom torch import nn\n\n\nclass Table(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.lin = nn.Linear(3, 3)\n        self.table = torch.ones(3)\n\n"
        f"    def forward(self, x):\n        return self.lin(x) + {move}\n"
    )
    for line_end in ("\n", "\r"):  # a file with old Mac line ends too
        data = source.replace("\n", line_end).encode()
        found = check_bytes(data, "case.py", Settings(select=("BUF002",))).findings
        assert [(f.location.row, f.code) for f in found] == [(12, "BUF002")]


def test_a_dot_before_a_banner_of_hashes_is_read_in_one_pass() -> None:
    """MOVE_TEXT gives each character one way to match: a `.` before a comment banner of many `#`
    (`# done. ####...`) once made the pattern try every way to split the banner into comments."""
    banner = "    # setup done. " + "#" * 64 + "\n"
    source = (
        "import torch\nfrom torch import nn\n\n\nclass Table(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n" + banner + "        self.table = torch.ones(3)\n\n"
        "    def forward(self, x):\n        return x + self.table\n"
    )
    found = check_bytes(source.encode(), "case.py", Settings(select=("BUF002", "BUF003"))).findings
    assert found == []
