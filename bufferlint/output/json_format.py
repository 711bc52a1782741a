"""`--output-format json` (one array) and `json-lines` (one object a line), keys as in DESIGN.md.

Findings in notebooks carry one more key, `cell` (1-based, counting every cell); their
`location` and `end_location` count rows from the cell's first line.
"""

from __future__ import annotations

import json

from bufferlint.model import Finding
from bufferlint.output.summary import RunSummary


def render(findings: list[Finding], summary: RunSummary) -> str:
    return json.dumps([f.to_dict() for f in findings], indent=2) + "\n"


def render_lines(findings: list[Finding], summary: RunSummary) -> str:
    return "".join(json.dumps(f.to_dict()) + "\n" for f in findings)
