"""verify_against, the entry point of `bufferlint --fix --verify`: one worker, many classes."""
from __future__ import annotations

from pathlib import Path

from bufferlint.verify.api import ClassResult, verify_against

ORIGINAL = '''
import torch
from torch import nn


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.scale = torch.full((4,), 0.5)

    def forward(self, x):
        return self.lin(x) * self.scale.to(x.device)


class Masked(nn.Module):
    def __init__(self):
        super().__init__()
        self.mask = torch.tril(torch.ones(4, 4))

    def forward(self, x):
        return x @ self.mask


class Window(nn.Module):
    def __init__(self):
        super().__init__()
        self.window = torch.hann_window(4)

    def forward(self, x):
        return x * self.window


class Sized(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.table = torch.ones(n)

    def forward(self, x):
        return x * self.table
'''

REWRITTEN = (
    ORIGINAL
    # correct: non-persistent buffer, the per-call move dropped
    .replace("self.scale = torch.full((4,), 0.5)", 'self.register_buffer("scale", torch.full((4,), 0.5), persistent=False)')
    .replace("self.scale.to(x.device)", "self.scale")
    # wrong: a persistent buffer adds a state_dict key
    .replace("self.mask = torch.tril(torch.ones(4, 4))",
             'self.register_buffer("mask", torch.tril(torch.ones(4, 4)), persistent=True)')
    # wrong: the constant changed
    .replace("self.window = torch.hann_window(4)", 'self.register_buffer("window", torch.hamming_window(4), persistent=False)')
    .replace("self.table = torch.ones(n)", 'self.register_buffer("table", torch.ones(n), persistent=False)')
)


def test_verify_against_reports_each_class(tmp_path: Path) -> None:
    assert REWRITTEN.count("register_buffer") == 4
    new_file = tmp_path / "layers.py"
    new_file.write_text(REWRITTEN)
    # Window's input comes from pyproject.toml, the others' from the caller
    (tmp_path / "pyproject.toml").write_text('[tool.bufferlint.verify."layers:Window"]\ninput = "torch.randn(2, 4)"\n')
    started: list[str] = []
    config = {name: {"input": "torch.randn(3, 4)"} for name in ("Scaled", "Masked")}
    results = verify_against(str(new_file), ORIGINAL, ["Scaled", "Masked", "Window", "Sized"], config, timeout=60,
                             on_class_start=started.append)
    by_name = {r.class_name: r for r in results}
    assert started == ["Scaled", "Masked", "Window", "Sized"]
    assert by_name["Scaled"] == ClassResult("Scaled", "pass", [])
    assert by_name["Masked"].status == "fail"
    assert "state_dict keys only in the new version: mask" in by_name["Masked"].reasons
    assert by_name["Window"].status == "fail"
    assert by_name["Window"].reasons[0].startswith("outputs differ (max abs diff ")
    assert by_name["Sized"].status == "unverified"
    assert by_name["Sized"].reasons == [
        'cannot build Sized: it needs argument(s) n; add [tool.bufferlint.verify."layers:Sized"] kwargs (or build) to pyproject.toml'
    ]


def test_no_classes_starts_nothing() -> None:
    assert verify_against("missing.py", "", [], None, 1.0) == []


def test_a_hanging_class_times_out_and_the_rest_still_run(tmp_path: Path) -> None:
    hang = (
        "\n\nclass Hang(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        import time\n        time.sleep(60)\n"
    )
    (tmp_path / "layers.py").write_text(REWRITTEN + hang)
    hung, scaled = verify_against(str(tmp_path / "layers.py"), ORIGINAL + hang, ["Hang", "Scaled"], None, timeout=1.5)
    assert hung.status == "fail" and hung.reasons[0].startswith("timed out after 1.5 s")
    assert scaled.status == "inconclusive" and scaled.reasons[0].startswith("outputs not compared: no example input")
