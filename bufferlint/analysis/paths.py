"""Whether a statement of a function body runs on every path through it.

A registration put in one branch of `if in_chans == 3: ... else: ...` leaves the other branch's
tensor a plain attribute; a fix must register where every path passes, or prove that every
path assigns the name.
"""

from __future__ import annotations

from typing import Callable, Sequence

import libcst as cst

from bufferlint.analysis.flow import body_statements, child_suites

# A simple statement line -> whether it assigns the name in question.
Assigns = Callable[[cst.SimpleStatementLine], bool]


def enclosing(top: cst.BaseStatement, line: cst.SimpleStatementLine) -> list[cst.BaseCompoundStatement]:
    """The compound statements from `top` down to `line` (empty when `line` is `top`)."""
    if top is line:
        return []
    if not isinstance(top, cst.BaseCompoundStatement):
        return []
    for block in child_suites(top):
        for stmt in body_statements(block):
            inner = enclosing(stmt, line)
            if inner or stmt is line:
                return [top, *inner]
    return []


def always_runs(top: cst.BaseStatement, line: cst.SimpleStatementLine) -> bool:
    """`line` runs whenever `top` does: nothing but `with` blocks lies between them."""
    return all(isinstance(node, cst.With) for node in enclosing(top, line))


def every_path_assigns(statements: Sequence[cst.BaseStatement], assigns: Assigns) -> bool:
    """Every way through `statements` passes an assignment: directly, in a `with` block, or in
    each branch of an `if` that has an `else`."""
    for stmt in statements:
        if isinstance(stmt, cst.SimpleStatementLine) and assigns(stmt):
            return True
        if isinstance(stmt, cst.With) and every_path_assigns(body_statements(stmt.body), assigns):
            return True
        if isinstance(stmt, cst.If) and _every_branch_assigns(stmt, assigns):
            return True
    return False


def _every_branch_assigns(node: cst.If, assigns: Assigns) -> bool:
    if not every_path_assigns(body_statements(node.body), assigns):
        return False
    orelse = node.orelse
    if isinstance(orelse, cst.If):
        return _every_branch_assigns(orelse, assigns)
    if isinstance(orelse, cst.Else):
        return every_path_assigns(body_statements(orelse.body), assigns)
    return False
