"""`nodes_of` finds what libcst's own `m.findall` finds, in the same order, on every fixture.

The walk skips fields that only hold whitespace and punctuation, and fields declared as text
(`Name.value`, `Arg.star`); this checks that nothing it skips ever held a node it was asked for.
"""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import libcst.matchers as m
import pytest

from bench.synth import generate
from bufferlint.analysis.walk import child_nodes, nodes_of, visit_in_order

FIXTURES = sorted((Path(__file__).resolve().parent.parent / "fixtures").rglob("*.py"))
# Stars, keywords, f-strings, decorators, lambdas, match statements and walrus: fields of many kinds.
AWKWARD = """\
@decorate(*args, **kwargs)
def f(a, /, b=1, *c, d: int = 2, **e) -> "T":
    g = lambda *h, **i: (h, i)
    print(f"{a!r:>{b}} {g(*c)}", sep="")
    match a:
        case [1, *rest] if (n := len(rest)):
            return {**e, "k": n}
        case {"x": x, **others}:
            return x
    return [y async for y in c] if b else (yield from c)
"""


def sources() -> list[str]:
    synthetic = [text for text in generate(12, seed=5).values() if "class Broken" not in text]  # synth's syntax errors
    return [AWKWARD, *synthetic, *(path.read_text(encoding="utf-8") for path in FIXTURES)]


@pytest.mark.parametrize("kind", [cst.Name, cst.Call, cst.Attribute, cst.SimpleString, cst.Arg, cst.Param, cst.Integer])
def test_nodes_of_matches_findall(kind: type[cst.CSTNode]) -> None:
    matcher = getattr(m, kind.__name__)()
    for source in sources():
        module = cst.parse_module(source)
        assert [id(n) for n in nodes_of(module, kind)] == [id(n) for n in m.findall(module, matcher)]


def test_leaves_have_no_children() -> None:
    module = cst.parse_module("x = f(*a, 'b', 1.5)\n")
    call = nodes_of(module, cst.Call)[0]
    assert [type(n).__name__ for n in child_nodes(call)] == ["Name", "Arg", "Arg", "Arg"]
    assert [child_nodes(arg.value) for arg in call.args] == [[], [], []]


class _Recorder(cst.CSTVisitor):
    """Records the syntax nodes it enters and leaves; skips every lambda's body."""

    def __init__(self) -> None:
        self.events: list[tuple[str, int]] = []

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        self.events.append(("visit", id(node)))
        return False

    def leave_Lambda(self, original_node: cst.Lambda) -> None:
        self.events.append(("leave", id(original_node)))

    for _kind in ("ClassDef", "FunctionDef", "Assign", "Call", "For", "ListComp", "Name", "Attribute"):
        locals()[f"visit_{_kind}"] = lambda self, node: self.events.append(("visit", id(node)))
        locals()[f"leave_{_kind}"] = lambda self, node: self.events.append(("leave", id(node)))


def test_visit_in_order_calls_handlers_as_libcst_does() -> None:
    for source in sources():
        module = cst.parse_module(source)
        ours, libcsts = _Recorder(), _Recorder()
        visit_in_order(module, ours)
        module.visit(libcsts)
        assert ours.events == libcsts.events
        assert ours.events  # every source has a call
