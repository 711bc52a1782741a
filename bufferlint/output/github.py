"""GitHub Actions workflow commands: one `::error ...::message` line per finding (annotations)."""

from __future__ import annotations

from bufferlint.model import Finding
from bufferlint.output.summary import RunSummary


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(finding: Finding) -> str:
    start, end = finding.location, finding.end_location
    properties = {
        "file": finding.filename,
        "line": start.row,
        "col": start.column,
        "endLine": end.row,
        "endColumn": end.column,
        "title": finding.code,
    }
    joined = ",".join(f"{key}={_escape_property(str(value))}" for key, value in properties.items())
    cell = getattr(finding, "cell", 0)
    # Annotations cannot point into a notebook cell: the cell goes into the message.
    message = f"cell {cell}: {finding.message}" if cell else finding.message
    return f"::error {joined}::{_escape_data(message)}"


def render(findings: list[Finding], summary: RunSummary) -> str:
    return "".join(annotation(f) + "\n" for f in findings)
