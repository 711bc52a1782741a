"""The values every part of bufferlint passes around: findings, fixes and edits."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Optional, Sequence, Union

import libcst as cst


class Applicability(str, enum.Enum):
    """How far a fix can be trusted; mirrors ruff's safe/unsafe split."""

    SAFE = "safe"
    UNSAFE = "unsafe"


@dataclass(frozen=True)
class Replace:
    """Replace `target` (matched by identity) with `replacement`; `None` removes a statement."""

    target: cst.CSTNode
    replacement: Optional[cst.CSTNode]


@dataclass(frozen=True)
class Insert:
    """Insert statements next to `anchor`, a statement of the tree being fixed."""

    anchor: cst.BaseStatement
    statements: Sequence[cst.BaseStatement]
    after: bool = True


Edit = Union[Replace, Insert]


@dataclass(frozen=True)
class Fix:
    """A rewrite attached to a finding; `edits` point at nodes of the parsed tree."""

    applicability: Applicability
    message: str
    edits: Sequence[Edit]


@dataclass(frozen=True)
class Position:
    """1-based row and column, as printed to users."""

    row: int
    column: int


@dataclass
class Finding:
    """One diagnostic. `node` is the CST node it is about (dropped once positions are known)."""

    code: str
    name: str
    message: str
    filename: str
    node: Optional[cst.CSTNode] = None
    location: Position = Position(1, 1)
    end_location: Position = Position(1, 1)
    fix: Optional[Fix] = None
    url: Optional[str] = None
    # Lines on which a `# noqa` comment suppresses this finding (start and end of the statement).
    noqa_rows: tuple[int, ...] = field(default_factory=tuple)

    @property
    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.filename, self.location.row, self.location.column, self.code)

    def fix_applicable(self, unsafe: bool) -> bool:
        if self.fix is None:
            return False
        return unsafe or self.fix.applicability is Applicability.SAFE

    def to_dict(self) -> dict[str, object]:
        fix = None
        if self.fix is not None:
            fix = {"applicability": self.fix.applicability.value, "message": self.fix.message}
        return {
            "code": self.code,
            "name": self.name,
            "message": self.message,
            "filename": self.filename,
            "location": {"row": self.location.row, "column": self.location.column},
            "end_location": {"row": self.end_location.row, "column": self.end_location.column},
            "fix": fix,
            "url": self.url,
        }


def without_fixes(findings: list[Finding]) -> list[Finding]:
    """The findings with their fixes dropped: a fix `--fix` refused or `--verify` reverted is
    not offered again as fixable."""
    for finding in findings:
        finding.fix = None
    return findings
