"""Statement order inside a function body, without descending into nested scopes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator, Optional, Sequence, cast

import libcst as cst

from bufferlint.analysis.walk import child_nodes, iter_nodes  # noqa: F401  (re-exported)


@dataclass(frozen=True)
class StatementSite:
    """A simple statement, the line holding it, and the top-level statement of the body it sits in."""

    small: cst.BaseSmallStatement
    line: cst.SimpleStatementLine
    top_index: int
    top: cst.BaseStatement
    nested: bool  # inside an if/for/while/with/try rather than directly in the body


def body_statements(node: cst.BaseSuite) -> Sequence[cst.BaseStatement]:
    # Exact type tests throughout this module: the walks here run over every statement, and
    # `isinstance` on libcst's (abstract-based) node classes goes through ABCMeta; none of the
    # classes tested has subclasses.
    kind = type(node)
    if kind is cst.IndentedBlock:
        return node.body  # type: ignore[attr-defined,return-value]
    if kind is cst.SimpleStatementSuite:
        return [cst.SimpleStatementLine(body=node.body)]  # type: ignore[arg-type]
    return []


def iter_sites(function: cst.FunctionDef) -> Iterator[StatementSite]:
    """Every simple statement of `function` in source order (nested defs and classes skipped)."""
    suite = function.body
    if isinstance(suite, cst.SimpleStatementSuite):
        line = cst.SimpleStatementLine(body=suite.body)
        for small in suite.body:
            yield StatementSite(small, line, 0, line, False)
        return
    for index, top in enumerate(cast(cst.IndentedBlock, suite).body):
        yield from _walk(top, index, top, nested=False)
        if _ends_block(top):
            return  # what follows a `return` or `raise` in the same block never runs


def _ends_block(stmt: cst.BaseStatement) -> bool:
    return type(stmt) is cst.SimpleStatementLine and any(type(s) in _JUMPS for s in stmt.body)  # type: ignore[attr-defined]


_JUMPS = (cst.Return, cst.Raise, cst.Continue, cst.Break)


def _walk(stmt: cst.BaseStatement, index: int, top: cst.BaseStatement, nested: bool) -> Iterator[StatementSite]:
    kind = type(stmt)
    if kind is cst.SimpleStatementLine:
        for small in stmt.body:  # type: ignore[attr-defined]
            yield StatementSite(small, stmt, index, top, nested)  # type: ignore[arg-type]
        return
    if kind is cst.FunctionDef or kind is cst.ClassDef:
        return
    for child in child_suites(stmt):
        for inner in body_statements(child):
            yield from _walk(inner, index, top, nested=True)
            if _ends_block(inner):
                break


Arms = tuple[tuple[int, int], ...]  # (id of an `if`, which arm of it: 0 the body, 1 the rest)


def branch_arms(function: cst.FunctionDef) -> dict[int, Arms]:
    """For each simple statement of `function` (by id), the arms of the `if`s it sits in: two
    statements in different arms of one `if` never both run (`if trainable: w = nn.Parameter(w)`
    / `else: register_buffer("w", w)`)."""
    found: dict[int, Arms] = {}
    stack: list[tuple[cst.BaseStatement, Arms]] = [(statement, ()) for statement in body_statements(function.body)]
    while stack:
        statement, arms = stack.pop()
        kind = type(statement)
        if kind is cst.SimpleStatementLine:
            for small in statement.body:  # type: ignore[attr-defined]
                found[id(small)] = arms
        elif kind is cst.If:
            stack.extend((inner, (*arms, (id(statement), 0))) for inner in body_statements(statement.body))  # type: ignore[attr-defined]
            orelse = statement.orelse  # type: ignore[attr-defined]
            rest = [orelse] if type(orelse) is cst.If else body_statements(orelse.body) if orelse is not None else []
            stack.extend((inner, (*arms, (id(statement), 1))) for inner in rest)
        elif kind is not cst.FunctionDef and kind is not cst.ClassDef:
            stack.extend((inner, arms) for child in child_suites(statement) for inner in body_statements(child))
    return found


def exclusive(first: Arms, second: Arms) -> bool:
    """Whether statements in these arms sit in different arms of one `if`."""
    taken = dict(first)
    return any(taken.get(node, arm) != arm for node, arm in second)


def child_suites(stmt: cst.BaseStatement) -> Iterator[cst.BaseSuite]:
    """The blocks of a compound statement, in source order."""
    for attr in ("body", "orelse", "finalbody"):
        child: Optional[cst.CSTNode] = getattr(stmt, attr, None)
        kind = type(child)
        if kind is cst.IndentedBlock or kind is cst.SimpleStatementSuite:
            yield child  # type: ignore[misc]
        elif kind is cst.Else or kind is cst.Finally:
            yield child.body  # type: ignore[union-attr]
        elif kind is cst.If:  # elif chain
            yield from _child_suites_of_if(child)  # type: ignore[arg-type]
    for handler in getattr(stmt, "handlers", ()):
        yield handler.body
    for case in getattr(stmt, "cases", ()):
        yield case.body


def _child_suites_of_if(node: cst.If) -> Iterator[cst.BaseSuite]:
    yield node.body
    orelse = node.orelse
    if isinstance(orelse, cst.If):
        yield from _child_suites_of_if(orelse)
    elif isinstance(orelse, cst.Else):
        yield orelse.body


def is_self_attr(node: cst.BaseExpression, me: Optional[str], attr: Optional[str] = None) -> bool:
    """`self.<attr>` (any attribute when `attr` is None), `me` being the method's self name."""
    return (
        isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Name)
        and node.value.value == me
        and (attr is None or node.attr.value == attr)
    )


def locals_always(func: cst.FunctionDef, test: Callable[[cst.BaseExpression], bool]) -> frozenset[str]:
    """The locals of `func` every plain assignment of which (`name = value`, anywhere in its body)
    assigns a value that passes `test`."""
    verdicts: dict[str, bool] = {}
    for assign in iter_nodes(func.body):
        if type(assign) is cst.Assign:
            for target in assign.targets:  # type: ignore[attr-defined]
                if type(target.target) is cst.Name:
                    name = target.target.value
                    verdicts[name] = verdicts.get(name, True) and test(assign.value)  # type: ignore[attr-defined]
    return frozenset(name for name, ok in verdicts.items() if ok)


def exclusive_branches(first: StatementSite, second: StatementSite) -> bool:
    """Two statements in different branches of one top-level if/elif/else: never both run."""
    if first.top is not second.top or type(first.top) is not cst.If:
        return False
    a, b = branch_holding(first.top, first.line), branch_holding(first.top, second.line)  # type: ignore[arg-type]
    return a is not None and b is not None and a != b


def branch_holding(node: cst.If, line: cst.SimpleStatementLine) -> Optional[int]:
    """Which branch of the `if` holds `line`: 0 its body, then each `elif`/`else`; None if none."""
    for index, suite in enumerate(_child_suites_of_if(node)):
        if any(n is line for n in iter_nodes(suite)):
            return index
    return None


def iter_all_statements(node: cst.CSTNode) -> Iterator[cst.BaseStatement]:
    """Every statement of a module or block, nested defs and classes included, in source order.

    Statements only live in bodies, so walking bodies (never expressions) finds all of them for a
    fraction of the cost of a full-tree `m.findall`.
    """
    for stmt in _bodies_of(node):
        yield stmt
        kind = type(stmt)
        if kind is cst.FunctionDef or kind is cst.ClassDef:
            yield from iter_all_statements(stmt.body)  # type: ignore[attr-defined]
        elif kind is not cst.SimpleStatementLine:
            for child in child_suites(stmt):
                yield from iter_all_statements(child)


def _bodies_of(node: cst.CSTNode) -> Sequence[cst.BaseStatement]:
    if type(node) is cst.Module:
        return node.body  # type: ignore[attr-defined]
    return body_statements(node)  # type: ignore[arg-type]  # [] for anything but a suite


def free_names(root: cst.CSTNode) -> Iterator[str]:
    """Names read in an expression: not attribute names (`x.attr`) nor keyword names (`f(k=1)`)."""
    stack: list[cst.CSTNode] = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name):
            yield node.value
        elif isinstance(node, cst.Attribute):
            stack.append(node.value)
        elif isinstance(node, cst.Arg):
            stack.append(node.value)
        else:
            stack.extend(child_nodes(node))


def stored_names(target: cst.BaseExpression) -> Iterator[str]:
    """Names an assignment target binds (`a`, `a, *b`), not the bases of `a.b = ...` or `a[i] = ...`."""
    if isinstance(target, cst.Name):
        yield target.value
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from stored_names(element.value)  # a starred element's value is its target
    elif isinstance(target, cst.StarredElement):
        yield from stored_names(target.value)


def assignment_targets(small: cst.CSTNode) -> list[cst.BaseExpression]:
    """What an assignment (plain, annotated or augmented) stores to; nothing for other statements."""
    if isinstance(small, cst.Assign):
        return [t.target for t in small.targets]
    if isinstance(small, (cst.AnnAssign, cst.AugAssign)):
        return [small.target]
    return []


def is_static(function: cst.FunctionDef) -> bool:
    """A `@staticmethod`: called on the instance, it is given no instance."""
    return any(isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod" for d in function.decorators)


def self_name(function: cst.FunctionDef) -> Optional[str]:
    """The name of the instance parameter, or None for static and class methods."""
    for decorator in function.decorators:
        if isinstance(decorator.decorator, cst.Name) and decorator.decorator.value in ("staticmethod", "classmethod"):
            return None
    params = function.params.posonly_params or function.params.params
    return params[0].name.value if params else None
