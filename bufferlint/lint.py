"""The engine: parse a file once, run the enabled rules, place and filter findings, apply fixes."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Optional, Union

import libcst as cst

from bufferlint.analysis.file import FileAnalysis
from bufferlint import prefilter
from bufferlint.config import Settings
from bufferlint.fixes.apply import apply_fixes, compatible_fixes
from bufferlint.model import Finding, Fix, Position, Replace
from bufferlint.noqa import NoqaMap
from bufferlint.source import SourceError, check_compiles, check_syntax, parse

MAX_FIX_ROUNDS = 10
PARSE_ERROR_CODE = "BUF999"


@dataclass
class FileResult:
    filename: str
    findings: list[Finding] = field(default_factory=list)
    fixed: int = 0
    new_data: Optional[Source] = None  # set when fixing changed the file (same type as the input)
    fix_error: Optional[str] = None


def error_finding(filename: str, error: SourceError) -> Finding:
    position = Position(error.row, error.column)
    return Finding(PARSE_ERROR_CODE, "parse-error", error.message, filename, None, position, position)


Source = Union[bytes, str]


def may_have_findings(data: Source, settings: Settings) -> bool:
    """The prefilter: a trigger word of an enabled rule, and a class that may be an nn.Module
    (checked on CPython's ast, see prefilter.py). A file CPython rejects goes on, to be reported."""
    return prefilter.may_have_findings(data, settings.triggers(), settings.module_bases)


def check_module(module: cst.Module, filename: str, settings: Settings) -> list[Finding]:
    analysis = FileAnalysis(module, filename, settings.module_bases)
    raw = [finding for rule in settings.enabled_rules() for finding in rule().check(analysis)]
    if not raw:
        return []
    noqa = NoqaMap() if settings.ignore_noqa else NoqaMap.from_text(module.code)
    placed = [f for f in (_place(analysis, f) for f in raw) if not noqa.suppresses(f.code, f.noqa_rows)]
    return sorted(placed, key=lambda f: f.sort_key)


def _place(analysis: FileAnalysis, finding: Finding) -> Finding:
    if finding.node is not None:
        code_range = analysis.position(finding.node)
        if code_range is not None:
            finding.location = Position(code_range.start.line, code_range.start.column + 1)
            finding.end_location = Position(code_range.end.line, code_range.end.column + 1)
            finding.noqa_rows = (code_range.start.line, code_range.end.line)
    return finding


def _skipped(data: Source, filename: str) -> FileResult:
    """A file the prefilter rules out still has its syntax checked, with the cheap ast parser,
    so a broken file is reported rather than silently skipped."""
    try:
        if not prefilter.known_valid(data):  # the prefilter's ast parse already checked it
            check_syntax(data, filename)
    except SourceError as error:
        return FileResult(filename, [error_finding(filename, error)])
    return FileResult(filename)


def check_bytes(data: Source, filename: str, settings: Settings) -> FileResult:
    if not may_have_findings(data, settings):
        return _skipped(data, filename)
    try:
        module = parse(data)
    except SourceError as error:
        return FileResult(filename, [error_finding(filename, error)])
    return FileResult(filename, check_module(module, filename, settings))


def fix_bytes(data: Source, filename: str, settings: Settings) -> FileResult:
    """Fix until no applicable fix is left; the result is only kept when CPython parses it."""
    if not may_have_findings(data, settings):
        return _skipped(data, filename)
    try:
        module = parse(data)
    except SourceError as error:
        return FileResult(filename, [error_finding(filename, error)])
    fixed = 0
    for _ in range(MAX_FIX_ROUNDS):
        findings = check_module(module, filename, settings)
        fixable = [f for f in findings if f.fix_applicable(settings.unsafe_fixes)]
        if not fixable:
            break
        fixes = compatible_fixes([f.fix for f in fixable if f.fix is not None])
        fixed += _count_fixed(fixable, fixes)
        module = _reparse(apply_fixes(module, fixes), as_text=isinstance(data, str))
        if module is None:
            return _failed(data, filename, settings, "the fixed code did not parse; file left unchanged")
    else:
        return _failed(data, filename, settings, f"fixes did not converge after {MAX_FIX_ROUNDS} rounds; file left unchanged")
    new_data: Source = module.bytes if isinstance(data, bytes) else module.code
    problem = check_compiles(module.code, filename)
    if problem is not None:
        return _failed(data, filename, settings, f"the fixed code does not compile ({problem}); file left unchanged")
    result = FileResult(filename, findings, fixed)
    if new_data != data:
        result.new_data = new_data
    return result


def _count_fixed(fixable: list[Finding], chosen: list[Fix]) -> int:
    """Findings settled by the chosen fixes, counting those that share a chosen registration."""
    chosen_ids = {id(fix) for fix in chosen}
    chosen_targets = {id(t) for fix in chosen for t in _replace_targets(fix)}
    count = 0
    for finding in fixable:
        assert finding.fix is not None
        targets = {id(t) for t in _replace_targets(finding.fix)}
        if id(finding.fix) in chosen_ids or (targets and targets <= chosen_targets):
            count += 1
    return count


def _replace_targets(fix: Fix) -> list[cst.CSTNode]:
    return [edit.target for edit in fix.edits if isinstance(edit, Replace)]


def _reparse(module: cst.Module, as_text: bool) -> Optional[cst.Module]:
    """Parse the fixed text again: this proves it parses and gives fresh nodes for the next round."""
    try:
        return parse(module.code if as_text else module.bytes)
    except SourceError:
        return None


def _failed(data: Source, filename: str, settings: Settings, reason: str) -> FileResult:
    result = check_bytes(data, filename, settings)
    result.fix_error = reason
    return result


def lint_source(code: Source, filename: str = "<string>", settings: Optional[Settings] = None) -> list[Finding]:
    """Findings for one source text (the Python API)."""
    return check_bytes(code, filename, settings or Settings()).findings


def fix_source(code: Source, filename: str = "<string>", settings: Optional[Settings] = None, unsafe: bool = False) -> Source:
    """The fixed source (same type as given); unchanged when nothing applies or the fix failed."""
    settings = settings or Settings()
    if unsafe:
        settings = replace(settings, unsafe_fixes=True)
    result = fix_bytes(code, filename, settings)
    return code if result.new_data is None else result.new_data
