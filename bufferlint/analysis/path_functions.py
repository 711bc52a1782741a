"""Top-level functions of the file that a module's forward calls by name.

`timestep_embedding(t, self.dim)` called from `forward` runs the function's body on every call,
as much as a line of `forward` does: a table it builds from constants and moves to `t.device`
is rebuilt per step. The forward path (`forward.py`) walks such a function like a helper method,
one call away from the class only (a function it calls in turn is not followed), when calling it
is known to run the body written here:
- it is defined once at the top level of the file and bound by nothing else there (no import,
  assignment or class of that name: `f = torch.jit.script(f)` would call something else);
- it is not decorated (`functools.lru_cache` keeps one result per argument, `torch.jit.script`
  compiles it);
- it keeps no state between calls: no `global` or `nonlocal`, and no store into an item or
  attribute of a name it does not bind (`_CACHE[key] = table`, a memo that builds the table once).
A check parses every function a module class of the file calls by name whose text may move a
tensor (pruning.py); one it leaves out gives the forward rules nothing to report, so what they
find does not depend on what a check left out.
"""

from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from bufferlint.analysis.file import FileAnalysis
from bufferlint.analysis.flow import assignment_targets, stored_names
from bufferlint.analysis.walk import nodes_of

_FOUND_ATTR = "_bufferlint_path_functions"


def path_function(analysis: FileAnalysis, name: str) -> Optional[cst.FunctionDef]:
    """The top-level function `name` as a call from forward runs it, or None (see the module docstring)."""
    found: dict[str, Optional[cst.FunctionDef]] = analysis.__dict__.setdefault(_FOUND_ATTR, {})
    if name not in found:
        found[name] = _find(analysis, name)
    return found[name]


def _find(analysis: FileAnalysis, name: str) -> Optional[cst.FunctionDef]:
    defined = [stmt for stmt in analysis.module.body if _binds(stmt, name)]
    if len(defined) != 1 or not isinstance(defined[0], cst.FunctionDef):
        return None
    func = defined[0]
    if func.decorators or isinstance(func.asynchronous, cst.Asynchronous) or _rebound_at_top(analysis, name):
        return None
    return None if _keeps_state(func) else func


def _binds(stmt: cst.CSTNode, name: str) -> bool:
    """Whether a top-level statement binds `name` (a def, a class, an import, an assignment)."""
    if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
        return stmt.name.value == name
    if not isinstance(stmt, cst.SimpleStatementLine):
        return False
    for small in stmt.body:
        if isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(small.names, cst.ImportStar):
            if any(_import_binds(alias, name) for alias in small.names):
                return True
        elif isinstance(small, cst.Assign) and any(name in stored_names(t.target) for t in small.targets):
            return True
        elif isinstance(small, (cst.AnnAssign, cst.AugAssign)) and name in stored_names(small.target):
            return True
    return False


def _import_binds(alias: cst.ImportAlias, name: str) -> bool:
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value == name
    head: cst.BaseExpression = alias.name
    while isinstance(head, cst.Attribute):
        head = head.value
    return isinstance(head, cst.Name) and head.value == name


def _rebound_at_top(analysis: FileAnalysis, name: str) -> bool:
    """An assignment at the start of a line that a check left out of the tree (`_binds` read
    the statements it kept)."""
    if not analysis.partial:
        return False
    return analysis.may_match(re.compile(rb"(?m)^" + re.escape(name.encode()) + rb"[ \t]*(?:[:,]|=(?!=))"))


def _keeps_state(func: cst.FunctionDef) -> bool:
    if any(True for _ in nodes_of(func.body, (cst.Global, cst.Nonlocal))):
        return True
    bound = {p.name.value for p in nodes_of(func.params, cst.Param)}  # type: ignore[attr-defined]
    for node in nodes_of(func.body, (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.For, cst.WithItem, cst.NamedExpr)):
        for target in _targets(node):
            bound.update(stored_names(target))
    for node in nodes_of(func.body, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
        for target in _targets(node):
            root = target
            while isinstance(root, (cst.Subscript, cst.Attribute)):
                root = root.value
            if root is not target and not (isinstance(root, cst.Name) and root.value in bound):
                return True  # `_CACHE[key] = ...`, `holder.table = ...`: state kept outside the call
    return False


def _targets(node: cst.CSTNode) -> list[cst.BaseExpression]:
    """What an assignment, a `for` loop, a `with ... as` or a walrus binds or stores to."""
    if isinstance(node, cst.For):
        return [node.target]
    if isinstance(node, cst.WithItem):
        return [node.asname.name] if node.asname is not None else []
    if isinstance(node, cst.NamedExpr):
        return [node.target]
    return assignment_targets(node)
