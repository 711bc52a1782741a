"""The nesting guard skips one-line statements too short to be deep (`source._cannot_reach`).
These tests check the bound it relies on (depth <= 2n + 4 for n bytes on one line) on real code
and on the constructs that nest fastest per character, and that a deep one-liner is still caught."""

from __future__ import annotations

import ast
import pathlib

import pytest

from bufferlint.source import MAX_NESTING, SourceError, check_nesting

ROOT = pathlib.Path(__file__).resolve().parent.parent

# The densest nestings per character Python allows on one line.
DENSE = [
    "x = " + "-" * 300 + "1",
    "x = " + "~" * 300 + "y",
    "x = " + "not " * 100 + "y",
    "x = a" + ".b" * 200,
    "x = f" + "()" * 200,
    "x = a" + "[0]" * 150,
    "x = " + "+".join(["a"] * 200),
    "x = " + " or ".join(["a"] * 150),
    "x = " + "lambda: " * 80 + "0",
    "x = " + "[" * 150 + "]" * 150,
    "x = " + "*".join(["a"] * 100) + " ** b ** c",
    "f(" + ", ".join(f"k{i}=v" for i in range(50)) + ")",
    "x = [" + "y for y in " * 20 + "z]",
    "if a: b = " + "c." * 50 + "d",
]


def _depth(node: ast.AST) -> int:
    """Depth of the deepest node under `node`, counted as check_nesting counts."""
    deepest = 0
    stack = [(node, 0)]
    while stack:
        current, depth = stack.pop()
        if isinstance(current, ast.BoolOp):
            depth += len(current.values) - 1
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(current))
    return deepest


def _one_line_statements(tree: ast.AST) -> list[ast.stmt]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.stmt) and n.lineno == n.end_lineno]


def _assert_bound(tree: ast.AST) -> None:
    for stmt in _one_line_statements(tree):
        length = stmt.end_col_offset - stmt.col_offset  # type: ignore[operator]
        assert _depth(stmt) <= 2 * length + 4, ast.unparse(stmt)[:80]


@pytest.mark.parametrize("line", DENSE, ids=lambda line: line[:24])
def test_dense_one_liners_stay_within_the_bound(line: str) -> None:
    _assert_bound(ast.parse(line))


def test_every_fixture_and_source_file_stays_within_the_bound() -> None:
    files = sorted((ROOT / "fixtures").rglob("*.py")) + sorted((ROOT / "bufferlint").rglob("*.py"))
    assert len(files) > 100
    for path in files:
        _assert_bound(ast.parse(path.read_bytes()))


def test_a_deep_one_liner_is_still_reported() -> None:
    line = "x = " + "-" * (MAX_NESTING + 10) + "1\n"
    with pytest.raises(SourceError, match="too deeply nested") as caught:
        check_nesting(ast.parse("def f():\n    pass\n" + line))
    assert caught.value.row == 3


def test_a_deep_statement_inside_a_class_is_reported_at_its_line() -> None:
    source = "class A:\n    def f(self):\n        y = 1\n        return " + " or ".join(["a"] * (MAX_NESTING + 5)) + "\n"
    with pytest.raises(SourceError) as caught:
        check_nesting(ast.parse(source))
    assert caught.value.row == 4


def test_a_deep_decorator_over_a_one_line_def_is_reported() -> None:
    """A decorator sits on its own line, outside the one-line `def` it decorates."""
    deep = " and ".join(["a"] * (MAX_NESTING + 50))
    source = f"class M:\n    @torch.no_grad({deep})\n    def g(self): pass\n"
    with pytest.raises(SourceError) as caught:
        check_nesting(ast.parse(source))
    assert caught.value.row == 2
