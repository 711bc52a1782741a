"""Statements that run only when a cache the method keeps on self is missing or stale.

`if self.cos_cached is not None and n <= len(self.cos_cached): return`, then the table is
rebuilt: the code after such an exit (or under `if self.cache is None:`) runs on a cache miss,
not on every call. What it builds is a lazily grown cache, not a constant rebuilt per call.
"""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from bufferlint.analysis.flow import StatementSite, body_statements
from bufferlint.analysis.walk import is_name, nodes_of


def cache_guard(func: cst.FunctionDef, me: str, site: StatementSite) -> Optional[str]:
    """The attribute whose cache check decides whether `site` runs, or None. The check reads
    `self.<attr>`, which the method itself assigns: an early exit before the statement, or an
    `if` holding it."""
    kept = _assigned_attrs(func, me)
    if not kept:
        return None
    for stmt in body_statements(func.body)[: site.top_index]:
        if isinstance(stmt, cst.If) and _exits(stmt.body):
            read = _reads(stmt.test, me, kept)
            if read is not None:
                return read
    for branch in nodes_of(site.top, cst.If):
        if any(line is site.line for line in nodes_of(branch.body, cst.SimpleStatementLine)):
            read = _reads(branch.test, me, kept)
            if read is not None:
                return read
    return None


def filled_beside(func: cst.FunctionDef, me: str, site: StatementSite, attr: str) -> tuple[str, ...]:
    """The other attributes the cache check that guards `site` fills with it (`if self.mean_gpu
    is None:` setting `mean_gpu` and `std_gpu`): a cache of several parts, kept in step."""
    kept = _assigned_attrs(func, me)
    for branch in nodes_of(site.top, cst.If):
        if not any(line is site.line for line in nodes_of(branch.body, cst.SimpleStatementLine)):
            continue
        if _reads(branch.test, me, kept) is not None:
            filled = {
                node.attr.value
                for assign in nodes_of(branch.body, cst.Assign)
                for target in assign.targets
                for node in nodes_of(target.target, cst.Attribute)
                if is_name(node.value, me)
            }
            return tuple(sorted(filled - {attr}))
    return ()


def _assigned_attrs(func: cst.FunctionDef, me: str) -> frozenset[str]:
    """What the method stores on self: assignment targets, and the names it registers
    (`self.register_buffer("bias", bias)` keeps the cache as a buffer)."""
    found: set[str] = set(_registered_names(func, me))
    for assign in nodes_of(func.body, (cst.Assign, cst.AnnAssign)):
        targets = [t.target for t in assign.targets] if isinstance(assign, cst.Assign) else [assign.target]  # type: ignore[attr-defined]
        for target in targets:
            for node in nodes_of(target, cst.Attribute):
                if is_name(node.value, me):
                    found.add(node.attr.value)
    return frozenset(found)


def _registered_names(func: cst.FunctionDef, me: str) -> Iterator[str]:
    for call in nodes_of(func.body, cst.Call):
        callee = call.func
        if isinstance(callee, cst.Attribute) and is_name(callee.value, me) and callee.attr.value in _REGISTRATIONS and call.args:
            name = call.args[0].value
            if isinstance(name, cst.SimpleString):
                yield name.evaluated_value if isinstance(name.evaluated_value, str) else ""


_REGISTRATIONS = ("register_buffer", "register_parameter")


def _exits(block: cst.BaseSuite) -> bool:
    statements = body_statements(block)
    last = statements[-1] if statements else None
    return isinstance(last, cst.SimpleStatementLine) and any(isinstance(s, cst.Return) for s in last.body)


def _reads(test: cst.BaseExpression, me: str, kept: frozenset[str]) -> Optional[str]:
    for node in nodes_of(test, cst.Attribute):
        if is_name(node.value, me) and node.attr.value in kept:
            return node.attr.value
    return None
