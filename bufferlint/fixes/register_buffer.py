"""Build `self.register_buffer(...)` statements and choose where a new buffer gets registered."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import libcst as cst

from bufferlint.analysis.attributes import ClassAttributes
from bufferlint.analysis.classes import AttrAssignment, ClassInfo, ValueKind
from bufferlint.analysis.hazards import Hazards, ProofContext, buffer_hazards, meets_host_tensor
from bufferlint.analysis.paths import always_runs
from bufferlint.model import Applicability, Edit, Fix, Insert, Replace


def register_call(self_name: str, attr: str, value: cst.BaseExpression, persistent: bool = False) -> cst.Call:
    """`self.register_buffer("attr", value, persistent=False)`, keeping `value`'s own formatting."""
    suffix = "" if persistent else ", persistent=False"
    call = cst.ensure_type(cst.parse_expression(f'{self_name}.register_buffer("{attr}", __value__{suffix})'), cst.Call)
    args = list(call.args)
    args[1] = args[1].with_changes(value=value)
    return call.with_changes(args=args)


def as_register_statement(assignment: AttrAssignment, value: cst.BaseExpression, persistent: bool = False) -> cst.Expr:
    """The assignment's small statement, rewritten as a register_buffer call (semicolon kept)."""
    self_name = assignment.scope.self_name or "self"
    call = register_call(self_name, assignment.attr, value, persistent)
    return cst.Expr(value=call, semicolon=assignment.statement.semicolon)  # type: ignore[attr-defined]


def registration_edit(info: ClassInfo, attr: str, defining: AttrAssignment) -> Optional[Edit]:
    """Where `attr` becomes a buffer: at a `None` first assignment, at the defining assignment in
    `__init__` when it runs on every path, or as a `None` registration right after
    `super().__init__()` (which the assignments in every branch then fill)."""
    in_init = [a for a in info.assignments_to(attr) if a.in_init and not a.augmented]
    if in_init and in_init[0].kind is ValueKind.NONE and always_runs(in_init[0].site.top, in_init[0].site.line):
        return Replace(in_init[0].statement, as_register_statement(in_init[0], _none()))
    if defining.in_init and always_runs(defining.site.top, defining.site.line):
        assert defining.value is not None
        return Replace(defining.statement, as_register_statement(defining, defining.value))
    if info.init is not None and info.super_init_line is not None:
        self_name = defining.scope.self_name or "self"
        line = cst.SimpleStatementLine(body=[cst.Expr(register_call(self_name, attr, _none()))])
        return Insert(info.super_init_line, [line], after=True)
    if info.init is None and defining.value is not None:
        return Replace(defining.statement, as_register_statement(defining, defining.value))
    return None


@dataclass(frozen=True)
class Registration:
    """Where an attribute becomes a buffer (`edit`; None when there is nowhere to put it) and the
    proof obligations of doing so (`hazards`)."""

    edit: Optional[Edit]
    hazards: Hazards


def buffer_registration(attributes: ClassAttributes, attr: str) -> Registration:
    """The registration of `attr` (a plain tensor attribute of `attributes.info`), computed once."""
    cache: dict[str, Registration] = attributes.__dict__.setdefault("_registrations", {})
    known = cache.get(attr)
    if known is None:
        info, defining = attributes.info, attributes.defining[attr]
        edit = registration_edit(info, attr, defining)
        anchor = edit.target if isinstance(edit, Replace) else None
        assert anchor is None or isinstance(anchor, cst.BaseSmallStatement)
        hazards = buffer_hazards(info, attr, defining, ProofContext(attributes.analysis, attributes.family), anchor)
        meets_host_tensor(attributes.host_partner(attr), hazards)
        known = cache[attr] = Registration(edit, hazards)
    return known


def buffer_fix(edit: Edit, applicability: Applicability, attr: str) -> Fix:
    return Fix(applicability, f"Register `{attr}` as a non-persistent buffer", (edit,))


def _none() -> cst.Name:
    return cst.Name("None")
