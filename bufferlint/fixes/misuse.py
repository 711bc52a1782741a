"""Fix builders for register_buffer and parameter misuse (BUF005, BUF008)."""

from __future__ import annotations

import libcst as cst

from bufferlint.fixes.register_buffer import register_call
from bufferlint.model import Applicability, Fix, Replace


def keep_call_only(statement: cst.BaseSmallStatement, call: cst.Call, applicability: Applicability, message: str) -> Fix:
    """`x = self.register_buffer(...)` -> `self.register_buffer(...)` (the call's formatting and
    the statement's semicolon kept)."""
    semicolon = getattr(statement, "semicolon", cst.MaybeSentinel.DEFAULT)
    return Fix(applicability, message, (Replace(statement, cst.Expr(value=call, semicolon=semicolon)),))


def parameter_to_buffer(
    statement: cst.BaseSmallStatement, self_name: str, attr: str, data: cst.BaseExpression
) -> Fix:
    """`self.w = nn.Parameter(t, requires_grad=False)` -> `self.register_buffer("w", t)`: a
    persistent buffer, so `state_dict()` keeps the key `w` and old checkpoints still load."""
    call = register_call(self_name, attr, data, persistent=True)
    semicolon = getattr(statement, "semicolon", cst.MaybeSentinel.DEFAULT)
    message = (
        f"Register `{attr}` as a persistent buffer (same state_dict key; it leaves parameters(), so an "
        "optimizer built over parameters() changes, and resuming one saved before the change fails)"
    )
    return Fix(Applicability.UNSAFE, message, (Replace(statement, cst.Expr(value=call, semicolon=semicolon)),))
