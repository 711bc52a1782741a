"""`--output-format full`: each finding with a source snippet, the fix's message and its diff."""

from __future__ import annotations

import difflib
from typing import Optional

import libcst as cst

from bufferlint.config import Settings
from bufferlint.fixes.apply import apply_fixes
from bufferlint.lint import check_module
from bufferlint.model import Finding
from bufferlint.notebook import display_path, notebook_cell_source
from bufferlint.output.concise import summary_lines
from bufferlint.output.style import Painter
from bufferlint.output.summary import RunSummary
from bufferlint.source import SourceError, parse

CONTEXT = 2  # lines shown before and after the flagged ones
MAX_FLAGGED = 8  # longer statements are cut after this many lines


class _Sources:
    """Source text and parsed findings per file, loaded once for all of its findings."""

    def __init__(self, summary: RunSummary) -> None:
        self.summary = summary
        self._text: dict[str, Optional[str]] = {}
        self._parsed: dict[str, Optional[tuple[cst.Module, list[Finding]]]] = {}

    def text(self, finding: Finding) -> Optional[str]:
        cell = getattr(finding, "cell", 0)
        if cell:
            return notebook_cell_source(finding.filename, cell)
        name = finding.filename
        if name not in self._text:
            self._text[name] = self.summary.sources.get(name) or _read(name)
        return self._text[name]

    def fix_diff(self, finding: Finding) -> list[tuple[str, int, str]]:
        """(sign, row, line) of this one fix applied alone to the file; [] when not available."""
        notebook_cell: int = getattr(finding, "cell", 0)
        if finding.fix is None or notebook_cell:
            return []  # a notebook's fix edits the virtual module of all its cells: no preview
        parsed = self._parse(finding.filename)
        if parsed is None:
            return []
        module, findings = parsed
        same = [f for f in findings if (f.code, f.location) == (finding.code, finding.location) and f.fix is not None]
        if not same:
            return []
        fixed = apply_fixes(module, [same[0].fix])  # type: ignore[list-item]
        return _changed_lines(module.code, fixed.code)

    def _parse(self, name: str) -> Optional[tuple[cst.Module, list[Finding]]]:
        if name not in self._parsed:
            text = self._text.get(name) or _read(name)
            try:
                module = parse(text) if text is not None else None
            except SourceError:
                module = None
            settings = self.summary.settings or Settings()
            self._parsed[name] = None if module is None else (module, check_module(module, name, settings))
        return self._parsed[name]


def _read(path: str) -> Optional[str]:
    try:
        with open(path, encoding="utf-8", errors="replace", newline="") as handle:
            return handle.read()
    except OSError:
        return None


def _changed_lines(old: str, new: str) -> list[tuple[str, int, str]]:
    old_lines, new_lines = old.splitlines(), new.splitlines()
    changed: list[tuple[str, int, str]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        changed += [("-", row + 1, old_lines[row]) for row in range(i1, i2)]
        changed += [("+", row + 1, new_lines[row]) for row in range(j1, j2)]
    return changed


def _snippet(finding: Finding, text: str, paint: Painter) -> list[str]:
    lines = text.splitlines()
    start, end = finding.location.row, max(finding.end_location.row, finding.location.row)
    last = min(end, start + MAX_FLAGGED - 1)
    first_shown, last_shown = max(1, start - CONTEXT), min(len(lines), last + CONTEXT)
    width = len(str(last_shown))
    gutter = " " * width + " |"
    out = [paint(gutter, "blue")]
    for row in range(first_shown, last_shown + 1):
        out.append(f"{paint(f'{row:>{width}} |', 'blue')} {lines[row - 1]}".rstrip())
        if row == start:
            line_text = lines[row - 1]
            stop = finding.end_location.column if end == start else len(line_text) + 1
            carets = "^" * max(1, stop - finding.location.column)
            out.append(f"{paint(gutter, 'blue')} {' ' * (finding.location.column - 1)}{paint(carets, 'red')}")
    out.append(paint(gutter, "blue"))
    return out


def _fix_lines(finding: Finding, sources: _Sources, summary: RunSummary, paint: Painter) -> list[str]:
    if finding.fix is None:
        return []
    note = "" if finding.fix_applicable(summary.unsafe_enabled) else " (unsafe fix: enable with `--unsafe-fixes`)"
    out = [f"{paint('help', 'bold', 'cyan')}: {finding.fix.message}{note}"]
    changed = sources.fix_diff(finding)
    if changed:
        width = len(str(max(row for _, row, _ in changed)))
        gutter = paint(" " * width + " |", "blue")
        out.append(gutter)
        for sign, row, text in changed:
            colour = "red" if sign == "-" else "green"
            out.append(f"{paint(f'{row:>{width}}', 'blue')} {paint(f'{sign} {text}'.rstrip(), colour)}")
        out.append(gutter)
    return out


def render_one(finding: Finding, sources: _Sources, summary: RunSummary, paint: Painter) -> list[str]:
    marker = " " + paint("[*]", "cyan") if finding.fix_applicable(summary.unsafe_enabled) else ""
    loc = finding.location
    out = [f"{paint(finding.code, 'bold', 'red')}{marker} {paint(finding.message, 'bold')}"]
    out.append(f"{paint(' -->', 'blue')} {display_path(finding)}:{loc.row}:{loc.column}")
    text = sources.text(finding)
    if text is not None and 1 <= loc.row <= len(text.splitlines()):
        out += _snippet(finding, text, paint)
    out += _fix_lines(finding, sources, summary, paint)
    return out


def render(findings: list[Finding], summary: RunSummary) -> str:
    paint = Painter(summary.color)
    sources = _Sources(summary)
    blocks = ["\n".join(render_one(f, sources, summary, paint)) + "\n" for f in findings]
    tail = summary_lines(findings, summary)
    return "\n".join([*blocks, *tail]) + ("\n" if tail else "")
