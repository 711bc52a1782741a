"""`path:row:col: CODE [*] message` (notebooks: `path:cell N:row:col: ...`), then ruff's summary lines."""

from __future__ import annotations

from bufferlint.model import Applicability, Finding
from bufferlint.notebook import display_path
from bufferlint.output.style import Painter
from bufferlint.output.summary import RunSummary


def line(finding: Finding, unsafe_enabled: bool, paint: Painter = Painter(False)) -> str:
    marker = " " + paint("[*]", "cyan") if finding.fix_applicable(unsafe_enabled) else ""
    loc = finding.location
    where = f"{paint(display_path(finding), 'bold')}:{loc.row}:{loc.column}:"
    return f"{where} {paint(finding.code, 'bold', 'red')}{marker} {finding.message}"


def summary_lines(findings: list[Finding], summary: RunSummary) -> list[str]:
    if summary.quiet:
        return []
    total = len(findings)
    if total == 0 and summary.fixed == 0:
        return ["All checks passed!"]
    lines = []
    if summary.fixing:
        noun = "error" if total + summary.fixed == 1 else "errors"
        lines.append(f"Found {total + summary.fixed} {noun} ({summary.fixed} fixed, {total} remaining).")
    else:
        lines.append(f"Found {total} error{'' if total == 1 else 's'}.")
    safe = sum(1 for f in findings if f.fix is not None and f.fix.applicability is Applicability.SAFE)
    unsafe = sum(1 for f in findings if f.fix is not None and f.fix.applicability is Applicability.UNSAFE)
    fixable = safe + (unsafe if summary.unsafe_enabled else 0)
    hidden = 0 if summary.unsafe_enabled else unsafe
    if fixable and hidden:
        lines.append(f"[*] {fixable} fixable with the `--fix` option ({hidden} hidden {'fix' if hidden == 1 else 'fixes'} can be enabled with the `--unsafe-fixes` option).")
    elif fixable:
        option = "--fix --unsafe-fixes" if summary.unsafe_enabled and unsafe else "--fix"
        lines.append(f"[*] {fixable} fixable with the `{option}` option.")
    elif hidden:
        lines.append(f"No fixes available ({hidden} hidden {'fix' if hidden == 1 else 'fixes'} can be enabled with the `--unsafe-fixes` option).")
    return lines


def render(findings: list[Finding], summary: RunSummary) -> str:
    paint = Painter(summary.color)
    body = [line(f, summary.unsafe_enabled, paint) for f in findings]
    lines = [*body, *summary_lines(findings, summary)]
    return "\n".join(lines) + "\n" if lines else ""
