"""The nesting guard skips nodes too short to be deep (`source._cannot_reach`). These tests check
the bound it relies on (depth <= 2n + 4 for a node spanning n bytes, on one line or several) on
real code and on the constructs that nest fastest per character, and that deep code is still
caught."""

from __future__ import annotations

import ast
import pathlib

import pytest

from bufferlint.source import MAX_NESTING, SourceError, _ascii_line_starts, check_nesting

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


def _measured(tree: ast.AST) -> list[ast.AST]:
    """The nodes the guard may skip by their span: positioned, undecorated, not inside an f-string."""
    found, stack = [], [tree]
    while stack:
        node = stack.pop()
        if hasattr(node, "end_col_offset") and not getattr(node, "decorator_list", None):
            found.append(node)
        if not isinstance(node, ast.JoinedStr):
            stack.extend(ast.iter_child_nodes(node))
    return found


def _assert_bound(source: str) -> None:
    tree = ast.parse(source)
    starts = _ascii_line_starts(source)
    checked = 0
    for node in _measured(tree):
        row, col, end_row, end_col = node.lineno, node.col_offset, node.end_lineno, node.end_col_offset  # type: ignore[attr-defined]
        if end_row != row and starts is None:
            continue
        length = end_col - col if end_row == row else starts[end_row - 1] + end_col - starts[row - 1] - col  # type: ignore[index]
        assert _depth(node) <= 2 * length + 4, ast.unparse(node)[:80]
        checked += 1
    assert checked


@pytest.mark.parametrize("line", DENSE, ids=lambda line: line[:24])
def test_dense_one_liners_stay_within_the_bound(line: str) -> None:
    _assert_bound(line)


@pytest.mark.parametrize("line", DENSE, ids=lambda line: line[:24])
def test_dense_code_over_several_lines_stays_within_the_bound(line: str) -> None:
    """The same code, broken after every comma or operator inside brackets (`x = (-\n-\n1)`)."""
    head, _, rest = line.partition(" = ")
    if not rest:
        head, rest = "x", line
    spread = rest.replace(", ", ",\n").replace(" or ", " or\n").replace("+", "+\n").replace("-", "-\n")
    _assert_bound(f"{head} = (\n{spread}\n)\n")


def test_every_fixture_and_source_file_stays_within_the_bound() -> None:
    files = sorted((ROOT / "fixtures").rglob("*.py")) + sorted((ROOT / "bufferlint").rglob("*.py"))
    assert len(files) > 100
    for path in files:
        _assert_bound(path.read_text(encoding="utf-8"))


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


def test_a_deep_statement_over_several_lines_is_reported() -> None:
    source = "def f():\n    return (\n        " + " or\n        ".join(["a"] * (MAX_NESTING + 5)) + "\n    )\n"
    with pytest.raises(SourceError) as caught:
        check_nesting(ast.parse(source), text=source)
    assert (caught.value.row, caught.value.column) == (3, 9)  # where the `or` chain starts
    with pytest.raises(SourceError) as without_text:
        check_nesting(ast.parse(source))
    assert (without_text.value.row, without_text.value.column) == (3, 9)


def test_line_offsets_are_only_trusted_for_ascii_lf_text() -> None:
    assert _ascii_line_starts("a\nbc\n") == [0, 2, 5, 6]
    assert _ascii_line_starts("a\r\nb\n") is None  # CRLF: columns and offsets disagree
    assert _ascii_line_starts("é = 1\n") is None  # ast columns count UTF-8 bytes
    assert _ascii_line_starts(b"# -*- coding: utf-7 -*-\nx = 1\n") is None  # bytes read otherwise
