"""The prefilter never drops a file that has findings (fixtures and a synthetic corpus), and a
file it drops still has its syntax checked."""

from __future__ import annotations

import ast
from typing import Optional

import pytest

from bench.synth import generate
from bufferlint import prechecked, prefilter
from bufferlint.config import Settings
from bufferlint.lint import check_bytes, check_module, error_finding, may_have_findings
from bufferlint.model import Finding
from bufferlint.rules import all_rules
from bufferlint.source import SourceError, parse
from tests.fixture_cases import Case, all_cases, finding_line

CASES = all_cases()
EVERY_RULE = Settings(select=("ALL",))


def unfiltered(data: bytes, filename: str, settings: Settings) -> list[Finding]:
    """What check_bytes would report if the prefilter let every file through."""
    try:
        module = parse(data)
    except SourceError as error:
        return [error_finding(filename, error)]
    return check_module(module, filename, settings)


def lines(findings: list[Finding]) -> list[str]:
    return [finding_line(f) for f in findings]


@pytest.mark.parametrize("settings", [None, EVERY_RULE], ids=["fixture-settings", "all-rules"])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_fixture_findings_identical_without_prefilter(case: Case, settings: Optional[Settings]) -> None:
    chosen = settings or case.settings()
    assert lines(check_bytes(case.source, case.path.name, chosen).findings) == lines(unfiltered(case.source, case.path.name, chosen))


SYNTHETIC = generate(80, seed=7)


def test_synthetic_corpus_identical_without_prefilter() -> None:
    dropped = 0
    total_findings = 0
    for name, text in SYNTHETIC.items():
        data = text.encode()
        expected = lines(unfiltered(data, name, EVERY_RULE))
        total_findings += len(expected)
        dropped += not may_have_findings(data, EVERY_RULE)
        assert lines(check_bytes(data, name, EVERY_RULE).findings) == expected, name
        tree = prefilter.parse_quietly(data)
        if tree is not None:  # the gate of a CLI run: the project scan's summary (prechecked.py)
            with prechecked.in_effect({prechecked.digest(data): prechecked.examine(data, tree, ())}):
                assert lines(check_bytes(data, name, EVERY_RULE).findings) == expected, name
    assert total_findings > 100 and dropped > 20  # the corpus exercises both sides of the filter


def _finding_sources() -> list[tuple[str, bytes, Finding]]:
    found = []
    for case in CASES:
        found.extend((case.id, case.source, f) for f in unfiltered(case.source, case.path.name, EVERY_RULE))
    for name, text in SYNTHETIC.items():
        found.extend((name, text.encode(), f) for f in unfiltered(text.encode(), name, EVERY_RULE))
    return [item for item in found if item[2].code != "BUF999"]


def test_every_finding_file_contains_one_of_its_rules_triggers() -> None:
    triggers = {rule.code: rule.triggers for rule in all_rules()}
    checked = set()
    for name, data, finding in _finding_sources():
        assert any(t.encode() in data for t in triggers[finding.code]), f"{name}: {finding.code} without a trigger"
        checked.add(finding.code)
    assert len(checked) >= 8  # most rules have findings in the material above


def test_every_finding_file_has_a_possible_module_class() -> None:
    for name, data, _ in _finding_sources():
        assert prefilter.has_module_class(ast.parse(data)), name


@pytest.mark.parametrize(
    "source",
    [
        "import torch.nn as tnn\nclass A(tnn.Module): pass\n",
        "from torch import nn\nclass A(nn.Linear): pass\n",
        "from torch.nn import *\nclass A(Conv2d): pass\n",
        "from os import *\nfrom torch.nn import *\nclass A(Module): pass\n",
        "import torch\ndef make():\n    class Inner(torch.nn.Module): pass\n    return Inner\n",
        "try:\n    from torch.nn import Module as M\nexcept ImportError:\n    M = object\nclass A(M): pass\n",
        "import lightning as L\nclass A(L.LightningModule): pass\n",
        "import torch\nbases = (torch.nn.Module,)\nclass A(*bases, torch.nn.Module): pass\n",
        "import torch\nif True:\n    with open('x') as f:\n        class A(torch.nn.Sequential): pass\n",
        "import torch\nmatch 1:\n    case 1:\n        class A(torch.nn.Module): pass\n",
    ],
)
def test_module_classes_are_seen(source: str) -> None:
    assert prefilter.has_module_class(ast.parse(source))


@pytest.mark.parametrize(
    "source",
    [
        "import torch\nclass A:\n    t = torch.zeros(3)\n",
        "import torch\nclass A(object): pass\nclass B(A): pass\n",
        "import torch\nfrom .layers import Block\nclass A(Block): pass\n",
        "import torch\nclass A(torch.nn.Parameter): pass\n",
        "import torch\nclass A(torch.nn.functional.Thing): pass\n",
        "import torch\ndef f():\n    return torch.zeros(3)\n",
    ],
)
def test_files_without_module_classes_are_skipped(source: str) -> None:
    assert not prefilter.has_module_class(ast.parse(source))
    assert not may_have_findings(source, EVERY_RULE)


def test_configured_module_bases_pass_the_filter() -> None:
    source = (
        "import torch\nfrom mylib import Layer\nclass A(Layer):\n    def __init__(self):\n        super().__init__()\n"
        "        self.t = torch.zeros(3)\n\n    def forward(self, x):\n        return x + self.t\n"
    )
    assert not may_have_findings(source, Settings())
    settings = Settings(module_bases=("mylib.Layer",))
    assert may_have_findings(source, settings)
    assert [f.code for f in check_bytes(source, "a.py", settings).findings] == ["BUF001"]


@pytest.mark.parametrize(
    "source",
    [
        "def f(:\n    pass\n",  # no trigger word at all
        "import torch\ndef f(:\n    pass\n",  # trigger, no class
        "import torch\nclass A(torch.nn.Module):\n    def f(self):\n        return (\n",
    ],
)
def test_broken_files_are_reported_whatever_the_filter_says(source: str) -> None:
    findings = check_bytes(source.encode(), "broken.py", Settings()).findings
    assert [(f.code, f.location.row) for f in findings] == [("BUF999", findings[0].location.row)]
    assert findings[0].message.startswith("syntax error")


def test_a_valid_file_does_not_vouch_for_the_next_one() -> None:
    assert check_bytes(b"import torch\nx = 1\n", "ok.py", Settings()).findings == []
    broken = b"x = (\n"
    assert [f.code for f in check_bytes(broken, "broken.py", Settings()).findings] == ["BUF999"]


def test_a_lightning_module_without_the_word_torch_is_checked() -> None:
    """A module class can be spelled without `torch` (a LightningModule): the prefilter keeps it."""
    source = (
        b"import lightning as L\nfrom helpers import make_table\n\n\nclass M(L.LightningModule):\n"
        b"    def __init__(self):\n        super().__init__()\n        self.table = make_table()\n\n"
        b"    def forward(self, x):\n        return x * self.table.to(x.device)\n"
    )
    assert b"torch" not in source
    assert may_have_findings(source, Settings())
    assert [f.code for f in check_bytes(source, "m.py", Settings()).findings] == ["BUF002"]


@pytest.mark.parametrize("as_bytes", [False, True])
def test_a_project_base_counts_only_as_a_whole_name(as_bytes: bool) -> None:
    """A project's module bases are looked for as whole identifiers (a class names its base so):
    a file without `torch` that subclasses `Layer` passes the text gate, one that only spells
    `LayerNormConfig` does not."""
    bases = ("pkg.layers.Layer",)
    subclass = "from pkg.layers import Layer\n\n\nclass Head(Layer):\n    pass\n"
    lookalike = "from pkg.config import LayerNormConfig\n\n\nclass Head(LayerNormConfig):\n    pass\n"

    def text(source: str) -> prefilter.Source:
        return source.encode() if as_bytes else source
    assert prefilter.text_gate(text(subclass), ("torch",), bases)
    assert not prefilter.text_gate(text(lookalike), ("torch",), bases)
    assert prefilter.text_gate(text(lookalike), ("Config",), bases)  # a rule's own trigger is still a substring
    assert not prefilter.text_gate(text(subclass), ("torch",))


@pytest.mark.parametrize("base", ["मॉडल", "Net\u203fBase", "Base\u00b7X", "Modél"])
@pytest.mark.parametrize("as_bytes", [False, True])
def test_a_non_ascii_project_base_passes_the_text_gate(base: str, as_bytes: bool) -> None:
    """Combining marks, connector punctuation and `·` are part of a Python name: the identifier
    runs the gate reads keep such a base whole, in text and in UTF-8 bytes."""
    source = f"from proj.nets import {base}\n\n\nclass Head({base}):\n    pass\n"
    data: prefilter.Source = source.encode() if as_bytes else source
    assert prefilter.text_gate(data, ("torch",), (f"proj.nets.{base}",))
