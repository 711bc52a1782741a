"""`--statistics`: one line per rule with its count, most frequent first (as ruff prints it)."""

from __future__ import annotations

import json
from collections import Counter

from bufferlint.model import Finding
from bufferlint.output.summary import RunSummary


def _rows(findings: list[Finding], unsafe: bool) -> list[dict[str, object]]:
    counts = Counter(f.code for f in findings)
    names = {f.code: f.name for f in findings}
    fixable = Counter(f.code for f in findings if f.fix_applicable(unsafe))
    ordered = sorted(counts, key=lambda code: (-counts[code], code))
    return [{"code": c, "name": names[c], "count": counts[c], "fixable": fixable[c] > 0, "fixable_count": fixable[c]} for c in ordered]


def _mark(row: dict[str, object]) -> str:
    """As ruff: `[*]` every finding of the rule is fixable, `[-]` some are, `[ ]` none."""
    if not row["fixable_count"]:
        return "[ ]"
    return "[*]" if row["fixable_count"] == row["count"] else "[-]"


def render(findings: list[Finding], summary: RunSummary, as_json: bool = False) -> str:
    rows = _rows(findings, summary.unsafe_enabled)
    if as_json:
        return json.dumps(rows, indent=2) + "\n"
    width = max((len(str(row["count"])) for row in rows), default=1)
    lines = [f"{row['count']:>{width}}\t{row['code']}\t{_mark(row)} {row['name']}" for row in rows]
    return "".join(line + "\n" for line in lines)
