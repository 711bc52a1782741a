"""Locals that a round of fixes left unread, removed so the next linter in the hook stays green.

Dropping a per-call move (`self.pe.to(device, dtype=dtype)` -> `self.pe.to(dtype=dtype)`) can leave
`device = img.device` with no reader, which pyflakes and ruff's default rules (F841) report. After
each round, a local of a function is removed when the round's edits took away its last read and
its assignment has no effect besides binding it: `name = <name, attribute or subscript>`, or one
element of a parallel tuple assignment (`b, device = x.shape[0], x.device` -> `b = x.shape[0]`).
Locals that were unread before the fix are left alone: that is the author's code, not ours.
"""

from __future__ import annotations

from collections import Counter
from typing import Iterator, Optional

import libcst as cst

from bufferlint.analysis.flow import iter_sites
from bufferlint.analysis.walk import nodes_of
from bufferlint.model import Replace

def orphaned_local_edits(before: cst.Module, after: cst.Module) -> list[Replace]:
    """Edits of `after` that remove the assignments of locals the fixes left unread."""
    old = dict(_functions(before))
    edits: list[Replace] = []
    for path, func in _functions(after):
        previous = old.get(path)
        if previous is None:
            continue
        reads_before, reads_after = _reads(previous), _reads(func)
        dead = {name for name, count in reads_before.items() if count and not reads_after.get(name)}
        if dead:
            edits.extend(_removals(func, dead))
    return _keep_block_openings(after, edits)


def _keep_block_openings(module: cst.Module, edits: list[Replace]) -> list[Replace]:
    """A statement removed from the top of a block hands its leading lines (usually none) to the
    one that follows, so the block does not open with a blank line."""
    removed = {id(e.target) for e in edits if e.replacement is None}
    if not removed:
        return edits
    extra: list[Replace] = []
    for block in nodes_of(module, cst.IndentedBlock):
        body = list(block.body)  # type: ignore[attr-defined]
        if len(body) > 1 and id(body[0]) in removed and id(body[1]) not in removed and isinstance(body[1], cst.SimpleStatementLine):
            extra.append(Replace(body[1], body[1].with_changes(leading_lines=body[0].leading_lines)))  # type: ignore[attr-defined]
    return edits + extra


def _functions(module: cst.Module) -> Iterator[tuple[tuple[str, ...], cst.FunctionDef]]:
    """Every function with its path of enclosing class and function names (and a counter for twins)."""
    seen: Counter[tuple[str, ...]] = Counter()
    stack: list[tuple[tuple[str, ...], cst.CSTNode]] = [((), module)]
    while stack:
        path, node = stack.pop()
        body = node.body if isinstance(node, cst.Module) else getattr(getattr(node, "body", None), "body", ())
        for stmt in body if isinstance(body, (list, tuple)) else ():
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                key = (*path, stmt.name.value)
                seen[key] += 1
                full = (*key, str(seen[key]))
                if isinstance(stmt, cst.FunctionDef):
                    yield full, stmt
                stack.append((full, stmt))


def _reads(func: cst.FunctionDef) -> Counter[str]:
    """How often each name is read in the function (stores, attribute and keyword names excluded)."""
    skipped: set[int] = set()
    for node in nodes_of(func, (cst.Attribute, cst.Arg, cst.AssignTarget, cst.Param, cst.AnnAssign)):
        if isinstance(node, cst.Attribute):
            skipped.add(id(node.attr))
        elif isinstance(node, cst.Arg):
            if node.keyword is not None:
                skipped.add(id(node.keyword))
        elif isinstance(node, cst.Param):
            skipped.add(id(node.name))
        else:
            skipped.update(id(n) for n in _stored(node.target))  # type: ignore[attr-defined]
    skipped.add(id(func.name))
    return Counter(n.value for n in nodes_of(func, cst.Name) if id(n) not in skipped)


def _stored(target: cst.BaseExpression) -> Iterator[cst.Name]:
    if isinstance(target, cst.Name):
        yield target
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _stored(element.value)


def _removals(func: cst.FunctionDef, dead: set[str]) -> Iterator[Replace]:
    for site in iter_sites(func):
        small = site.small
        if not isinstance(small, cst.Assign) or len(small.targets) != 1:
            continue
        target = small.targets[0].target
        if isinstance(target, cst.Name) and target.value in dead and _pure(small.value):
            yield _remove_statement(small, site.line)
        elif isinstance(target, cst.Tuple) and isinstance(small.value, cst.Tuple):
            replacement = _without_elements(small, target, small.value, dead)
            if replacement is not None:
                yield Replace(small, replacement)


def _remove_statement(small: cst.Assign, line: cst.SimpleStatementLine) -> Replace:
    if len(line.body) == 1:
        return Replace(line, None)
    return Replace(small, None)


def _without_elements(small: cst.Assign, target: cst.Tuple, value: cst.Tuple, dead: set[str]) -> Optional[cst.Assign]:
    """`b, device = x.shape[0], x.device` without its dead pairs; None when nothing is removed
    (or the tuples do not pair up one to one)."""
    names, values = list(target.elements), list(value.elements)
    if len(names) != len(values) or any(isinstance(e, cst.StarredElement) for e in (*names, *values)):
        return None
    keep = [i for i, e in enumerate(names) if not (isinstance(e.value, cst.Name) and e.value.value in dead and _pure(values[i].value))]
    if len(keep) == len(names) or not keep:
        return None  # nothing dead, or everything: a bare statement would still need a target
    if len(keep) == 1:
        only_target, only_value = names[keep[0]].value, values[keep[0]].value
        return small.with_changes(targets=[small.targets[0].with_changes(target=only_target)], value=only_value)
    kept_names = [names[i].with_changes(comma=cst.MaybeSentinel.DEFAULT if i == keep[-1] else names[i].comma) for i in keep]
    kept_values = [values[i].with_changes(comma=cst.MaybeSentinel.DEFAULT if i == keep[-1] else values[i].comma) for i in keep]
    return small.with_changes(
        targets=[small.targets[0].with_changes(target=target.with_changes(elements=kept_names))],
        value=value.with_changes(elements=kept_values),
    )


def _pure(expr: cst.BaseExpression) -> bool:
    """Reading it runs no code of consequence: a name, an attribute chain, a constant subscript."""
    if isinstance(expr, (cst.Name, cst.Integer, cst.Float, cst.SimpleString)):
        return True
    if isinstance(expr, cst.Attribute):
        return _pure(expr.value)
    if isinstance(expr, cst.Subscript):
        return _pure(expr.value) and all(
            isinstance(s.slice, cst.Index) and isinstance(s.slice.value, (cst.Integer, cst.UnaryOperation)) for s in expr.slice
        )
    return False
