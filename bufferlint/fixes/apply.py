"""Apply the edits of several fixes to one tree in a single transformer pass."""

from __future__ import annotations

from typing import Iterable, Sequence, Union

import libcst as cst

from bufferlint.model import Edit, Fix, Insert, Replace


class EditApplier(cst.CSTTransformer):
    """Replaces, removes and inserts around nodes of the original tree, matched by identity."""

    def __init__(self, edits: Iterable[Edit]) -> None:
        super().__init__()
        self.replacements: dict[int, Replace] = {}
        self.before: dict[int, list[cst.BaseStatement]] = {}
        self.after: dict[int, list[cst.BaseStatement]] = {}
        for edit in edits:
            if isinstance(edit, Replace):
                self.replacements[id(edit.target)] = edit
            else:
                side = self.after if edit.after else self.before
                side.setdefault(id(edit.anchor), []).extend(edit.statements)

    # libcst types a replacement as the original's own type; an edit may replace an expression with
    # another kind of expression, or a statement with several.
    def on_leave(  # type: ignore[override]
        self, original_node: cst.CSTNode, updated_node: cst.CSTNode
    ) -> Union[cst.CSTNode, cst.RemovalSentinel, cst.FlattenSentinel[cst.CSTNode]]:
        key = id(original_node)
        replace = self.replacements.get(key)
        result: Union[cst.CSTNode, cst.RemovalSentinel] = updated_node
        if replace is not None:
            result = cst.RemovalSentinel.REMOVE if replace.replacement is None else replace.replacement
        before, after = self.before.get(key, []), self.after.get(key, [])
        if (before or after) and isinstance(result, cst.CSTNode):
            return cst.FlattenSentinel([*before, result, *after])
        return result


def subtree_ids(node: cst.CSTNode) -> set[int]:
    ids: set[int] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        ids.add(id(current))
        stack.extend(current.children)
    return ids


def compatible_fixes(fixes: Sequence[Fix]) -> list[Fix]:
    """Fixes whose replaced subtrees do not overlap; the rest wait for the next round.

    Identical edits (two findings sharing one registration) are applied once. A fix whose
    other edits are new is still compatible when its edits on already-replaced targets are
    equal to the chosen ones (BUF002 registers the same buffer as BUF001, then drops a move).
    """
    chosen: list[Fix] = []
    taken: set[int] = set()
    seen_targets: set[int] = set()
    chosen_replaces: dict[int, Replace] = {}
    for fix in fixes:
        replaces = [e for e in fix.edits if isinstance(e, Replace)]
        targets = [e.target for e in replaces]
        if targets and all(id(t) in seen_targets for t in targets):
            continue  # the same registration, already chosen for another finding
        touched: set[int] = set()
        for edit in replaces:
            if not _same_replace(chosen_replaces.get(id(edit.target)), edit):
                touched |= subtree_ids(edit.target)
        if touched & taken:
            continue
        taken |= touched
        seen_targets.update(id(t) for t in targets)
        chosen_replaces.update((id(e.target), e) for e in replaces)
        chosen.append(fix)
    return chosen


def _same_replace(chosen: "Replace | None", edit: Replace) -> bool:
    """Whether `edit` does exactly what an already chosen edit does to the same node."""
    if chosen is None or chosen.target is not edit.target:
        return False
    if chosen is edit or (chosen.replacement is None and edit.replacement is None):
        return True
    return chosen.replacement is not None and edit.replacement is not None and chosen.replacement.deep_equals(edit.replacement)


def apply_fixes(module: cst.Module, fixes: Sequence[Fix]) -> cst.Module:
    edits = [edit for fix in fixes for edit in fix.edits]
    _dedupe_inserts(edits)
    return module.visit(EditApplier(edits))


def _dedupe_inserts(edits: list[Edit]) -> None:
    """Two findings may ask for the same inserted line; keep one of each text."""
    seen: set[tuple[int, bool, str]] = set()
    for index in reversed(range(len(edits))):
        edit = edits[index]
        if isinstance(edit, Insert):
            key = (id(edit.anchor), edit.after, "".join(cst.Module([]).code_for_node(s) for s in edit.statements))
            if key in seen:
                del edits[index]
            seen.add(key)
