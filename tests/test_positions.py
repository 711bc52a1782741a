"""Targeted positions equal libcst's PositionProvider for every kind of node asked for."""

from __future__ import annotations

import random
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from bench.synth import generate
from bufferlint.analysis.forward import nodes_of
from bufferlint.analysis.positions import NodePositions, positions_of

FIXTURES = sorted(p for p in (Path(__file__).resolve().parent.parent / "fixtures").rglob("*.py") if "verify" not in p.parts)
TRICKY = (
    "@decorator\n# comment\nclass A(B):  # trailing\n    x: int = 1\n\n    @property\n    def f(self): return (\n        1 +\n        2)\n",
    "if a:\r\n    b = 1\r\nelse:\r\n    c = [\r\n        1,\r\n    ]\r\n",
    "x = 1; y = 2\nz = lambda q: q\\\n    + 1\n",
)


def sources() -> list[str]:
    texts = [p.read_text(encoding="utf-8") for p in FIXTURES]
    synthetic = [t for t in generate(12, seed=5).values() if "class Broken" not in t]  # synth's syntax errors
    return texts + synthetic[:8] + list(TRICKY)


@pytest.mark.parametrize("index", range(len(sources())))
def test_targeted_positions_match_position_provider(index: int) -> None:
    source = sources()[index]
    module = cst.parse_module(source)
    full = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    nodes = list(nodes_of(module, cst.CSTNode))
    rng = random.Random(index)
    for wanted in (rng.sample(nodes, min(5, len(nodes))), nodes[::3], [module]):
        got = positions_of(module, wanted)
        assert {n: got[n] for n in wanted} == {n: full[n] for n in wanted}


def test_node_positions_adds_nodes_lazily() -> None:
    module = cst.parse_module("a = 1\n\n\nclass A:\n    b = 2\n")
    positions = NodePositions(module)
    statement = module.body[1]
    found = positions.get(statement)
    assert found is not None and (found.start.line, found.end.line) == (4, 5)
    assert len(positions.ranges) == 1
