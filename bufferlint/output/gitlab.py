"""GitLab Code Quality JSON (the `codeclimate` report artifact): a list of issues with
`description`, `check_name`, `fingerprint`, `severity` and `location` (`path`, `lines.begin`,
`lines.end`). The fingerprint hashes the file, the code and the message, not the line, so an
issue keeps its identity when code above it moves (as ruff does)."""

from __future__ import annotations

import hashlib
import json
from collections import Counter

from bufferlint.model import Finding
from bufferlint.output.summary import RunSummary


def render(findings: list[Finding], summary: RunSummary) -> str:
    seen: Counter[str] = Counter()
    issues = []
    for finding in findings:
        base = f"{finding.filename}\0{finding.code}\0{finding.message}"
        seen[base] += 1  # identical findings in one file stay distinct
        issues.append(
            {
                "description": f"{finding.code} {finding.message}",
                "check_name": finding.code,
                "fingerprint": hashlib.sha256(f"{base}\0{seen[base]}".encode()).hexdigest()[:32],
                "severity": "major",
                "location": {"path": finding.filename, "lines": {"begin": finding.location.row, "end": finding.end_location.row}},
            }
        )
    return json.dumps(issues, indent=2) + "\n"
