"""The engine: parse a file once, run the enabled rules, place and filter findings, apply fixes.

A fix is kept only when every round's output parses (libcst and CPython), re-linting it no longer
reports the findings that round fixed, and the bytes libcst does not reproduce are put back as
they were (`source.splice_untouched`); otherwise the file is reported with `fix_error` and left
alone. Input too deeply nested for the analysis is a BUF999 finding; any other exception raised
while processing a file is wrapped in `InternalError`, which names the file.
"""

from __future__ import annotations

import contextlib
import os
import sys
import traceback
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Callable, Iterator, Mapping, Optional, Union

import libcst as cst

from bufferlint.analysis.file import FileAnalysis
from bufferlint import prechecked, prefilter
from bufferlint.config import Settings
from bufferlint.fixes.apply import EditApplier, apply_fixes, compatible_fixes
from bufferlint.fixes.dead_imports import orphaned_import_edits
from bufferlint.fixes.dead_locals import orphaned_local_edits
from bufferlint.model import Finding, Fix, Position, Replace, without_fixes
from bufferlint.noqa import NoqaMap
from bufferlint.prechecked import CheckedFile
from bufferlint.source import TOO_DEEP, SourceError, check_syntax, first_difference_row, parse, splice_untouched

MAX_FIX_ROUNDS = 10
PARSE_ERROR_CODE = "BUF999"
# libcst's visitors take several Python frames per level of nesting: CPython's default limit (1,000)
# stops them at 150-450 levels. Measured: with 2,000 every construct at 497-499 levels (just under
# `source.MAX_NESTING`) checks and fixes; 3,000 leaves a margin. Not more: CPython's own AST
# construction recurses in C up to 3x this limit, and the C stack must hold that too.
RECURSION_LIMIT = 3000


@dataclass
class FileResult:
    filename: str
    findings: list[Finding] = field(default_factory=list)
    fixed: int = 0
    new_data: Optional[Source] = None  # set when fixing changed the file (same type as the input)
    fix_error: Optional[str] = None
    read_digest: Optional[bytes] = None  # with new_data: what the fix was computed from (source.digest)


class InternalError(Exception):
    """A bug in bufferlint met while processing one file (never a property of the input)."""

    def __init__(self, filename: str, description: str) -> None:
        super().__init__(filename, description)  # plain args: picklable across worker processes
        self.filename = filename
        self.description = description

    def __str__(self) -> str:
        return f"while processing {self.filename}: {self.description}"


def error_finding(filename: str, error: SourceError) -> Finding:
    position = Position(error.row, error.column)
    return Finding(PARSE_ERROR_CODE, "parse-error", error.message, filename, None, position, position)


Source = Union[bytes, str]


def may_have_findings(data: Source, settings: Settings, known: Optional[CheckedFile] = None) -> bool:
    """The prefilter: a trigger word of an enabled rule, and a class that may be an nn.Module
    (checked on CPython's ast, see prefilter.py). A file CPython rejects goes on, to be reported.
    `known`: the pre-pass already summarised this file's classes (prechecked.py)."""
    if known is not None:  # the regex (the plain path's shortcut) last: it reads the whole text
        return prefilter.text_gate(data, settings.triggers(), settings.module_bases) and (
            known.summary.has_module_class(settings.module_bases) or prefilter.likely_module(data)
        )
    return prefilter.may_have_findings(data, settings.triggers(), settings.module_bases)


def check_module(
    module: cst.Module,
    filename: str,
    settings: Settings,
    text: Optional[Source] = None,
    functions: Optional[Mapping[str, cst.FunctionDef]] = None,
    regions: Optional[Mapping[str, tuple[int, int]]] = None,
    row_in_text: Optional[Callable[[int], int]] = None,
) -> list[Finding]:
    """Findings of `module`; `text`: the source it was parsed from (comments are read from it, and
    analyses skip looking for names it lacks); `functions`: top-level functions left out of
    `module` (pruning.py); `regions`: lines of its top-level classes in `text`, by name;
    `row_in_text`: the line in `text` of a line of `module`, when pruning left lines out."""
    analysis = FileAnalysis(
        module, filename, settings.module_bases, text, functions, regions, settings.project, partial=row_in_text is not None
    )
    rules = settings.enabled_rules()
    analysis.enabled = frozenset(rule.code for rule in rules)  # a rule may leave a case to another that runs
    if analysis.export_format is not None:
        rules = [rule for rule in rules if not rule.skips_export_files]
    if analysis.is_test_suite and not settings.check_tests:
        rules = [rule for rule in rules if not rule.skips_test_files]
    try:
        raw = [finding for rule in rules for finding in rule().check(analysis)]
        if not raw:
            return []
        noqa = NoqaMap() if settings.ignore_noqa else NoqaMap.from_text(_as_str(module, text))
        analysis.prepare_positions(f.node for f in raw if f.node is not None)  # one pass for all
        placed = [f for f in (_place(analysis, f, row_in_text) for f in raw) if not noqa.suppresses(f.code, f.noqa_rows)]
        for finding in placed:
            if finding.fix is not None and not settings.fix_allowed(finding.code):
                finding.fix = None  # `unfixable`: reported, never rewritten
        return sorted(placed, key=lambda f: f.sort_key)
    finally:
        analysis.release()


def _as_str(module: cst.Module, text: Optional[Source]) -> str:
    """The source the comments are read from: the text as given (a check may have parsed it with
    definitions blanked, see pruning.py), else the module printed back."""
    if text is None:
        return module.code
    return text if isinstance(text, str) else text.decode(module.encoding, errors="replace")


def _place(analysis: FileAnalysis, finding: Finding, row_in_text: Optional[Callable[[int], int]] = None) -> Finding:
    if finding.node is not None:
        code_range = analysis.position(finding.node)
        if code_range is not None:
            start, end = code_range.start.line, code_range.end.line
            if row_in_text is not None:
                start, end = row_in_text(start), row_in_text(end)
            finding.location = Position(start, code_range.start.column + 1)
            finding.end_location = Position(end, code_range.end.column + 1)
            finding.noqa_rows = (start, end)
    return finding


def _skipped(data: Source, filename: str, known: Optional[CheckedFile]) -> FileResult:
    """A file the prefilter rules out still has its syntax checked, with the cheap ast parser,
    so a broken file is reported rather than silently skipped."""
    try:
        if known is None and not prefilter.known_valid(data):  # else an ast parse already checked it
            check_syntax(data, filename)
    except SourceError as error:
        return FileResult(filename, [error_finding(filename, error)])
    return FileResult(filename)


@dataclass
class _Opened:
    module: cst.Module
    functions: Optional[Mapping[str, cst.FunctionDef]] = None  # top-level functions blanked before parsing
    regions: Optional[Mapping[str, tuple[int, int]]] = None  # lines of top-level classes, by name
    row_in_text: Optional[Callable[[int], int]] = None  # lines left out before parsing: where each is


def _opened(data: Source, filename: str, settings: Settings, prune: bool = False) -> Union[_Opened, FileResult]:
    """The parsed module, or the final result when the file is skipped or does not parse.
    `prune` (checks only): leave out what a check need not parse up front (pruning.py)."""
    known = prechecked.recall(data)
    if not may_have_findings(data, settings, known):
        return _skipped(data, filename, known)
    if known is not None and known.shallow:
        if prune and isinstance(data, bytes):
            with contextlib.suppress(SourceError):  # the full text below reports any problem
                part = known.for_check(data, settings.module_bases)
                row_in_text = part.original_row if part.rows is not None else None
                return _Opened(parse(part.text, checked=True), part.functions, known.class_regions, row_in_text)
        checked = True
    else:
        checked = False
    try:
        return _Opened(parse(data, checked=checked))
    except SourceError as error:
        return FileResult(filename, [error_finding(filename, error)])


def check_bytes(data: Source, filename: str, settings: Settings) -> FileResult:
    return _guarded(filename, lambda: _check(data, filename, settings))


def fix_bytes(data: Source, filename: str, settings: Settings) -> FileResult:
    """Fix until no applicable fix is left; see the module docstring for when a fix is kept."""
    return _guarded(filename, lambda: _fix(data, filename, settings))


def _guarded(filename: str, work: Callable[[], FileResult]) -> FileResult:
    try:
        with _recursion_limit(RECURSION_LIMIT):
            return work()
    except RecursionError:  # libcst's visitors recurse once per level of nesting
        return FileResult(filename, [error_finding(filename, SourceError(TOO_DEEP))])
    except InternalError:
        raise
    except Exception as error:
        raise InternalError(filename, _describe(error)) from error


@contextlib.contextmanager
def _recursion_limit(limit: int) -> Iterator[None]:
    """Allow `limit` frames while one file is processed (never lowers a higher limit)."""
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(max(previous, limit))
    try:
        yield
    finally:
        sys.setrecursionlimit(previous)


def _describe(error: BaseException) -> str:
    """`Type: message (at file:line)`, the innermost frame: enough for a useful bug report."""
    frames = traceback.extract_tb(error.__traceback__)
    where = f" (at {os.path.basename(frames[-1].filename)}:{frames[-1].lineno})" if frames else ""
    return f"{type(error).__name__}: {error}{where}"


def _check(data: Source, filename: str, settings: Settings) -> FileResult:
    opened = _opened(data, filename, settings, prune=True)
    if isinstance(opened, FileResult):
        return opened
    findings = check_module(opened.module, filename, settings, data, opened.functions, opened.regions, opened.row_in_text)
    return FileResult(filename, findings)


class _FixFailed(Exception):
    """Why the fixed text is not kept; the file is then reported as checked, with this reason."""


def _fix(data: Source, filename: str, settings: Settings) -> FileResult:
    opened = _opened(data, filename, settings)
    if isinstance(opened, FileResult):
        return opened
    module = opened.module
    as_text = isinstance(data, str)
    original = module
    try:
        module, findings, fixed = _fix_rounds(module, data, filename, settings, as_text)
        new_data = _final_text(data, _text(original, as_text), _text(module, as_text), filename)
    except RecursionError:  # the fix rounds visit every node again; checking may still succeed
        return _unfixed(data, filename, settings, "too deeply nested to fix (Python's recursion limit reached)")
    except _FixFailed as failure:
        return _unfixed(data, filename, settings, str(failure))
    result = FileResult(filename, findings, fixed)
    if new_data != data:
        result.new_data = new_data
    return result


def _unfixed(data: Source, filename: str, settings: Settings, reason: str) -> FileResult:
    result = _check(data, filename, settings)
    result.fix_error = f"{reason}; file left unchanged"
    without_fixes(result.findings)  # --fix just refused it: the summary must not offer it again
    return result


def _fix_rounds(
    module: cst.Module, data: Source, filename: str, settings: Settings, as_text: bool
) -> tuple[cst.Module, list[Finding], int]:
    """Apply compatible fixes round by round; each round's output is parsed and re-linted."""
    findings = check_module(module, filename, settings, data)
    found, fixed = len(findings), 0
    for _ in range(MAX_FIX_ROUNDS):
        fixable = [f for f in findings if f.fix_applicable(settings.unsafe_fixes)]
        if not fixable:
            # as ruff counts: what was found, less what remains (a fix also settles the findings
            # it makes moot, such as the per-call move of an attribute it registered)
            return module, findings, max(fixed, found - len(findings))
        fixes = compatible_fixes([f.fix for f in fixable if f.fix is not None])
        settled = _settled(fixable, fixes)
        allowed = _allowed_after(module, findings, settled)
        text = _text(_without_orphans(module, apply_fixes(module, fixes), _is_package(filename)), as_text)
        try:
            module = parse(text)
        except SourceError as error:
            raise _FixFailed(f"the fixed code does not parse ({error.message}, line {error.row})") from None
        findings = check_module(module, filename, settings, text)
        _check_fixed_gone(module, findings, allowed)
        fixed += len(settled)
    if any(f.fix_applicable(settings.unsafe_fixes) for f in findings):
        raise _FixFailed(f"fixes did not converge after {MAX_FIX_ROUNDS} rounds")
    return module, findings, max(fixed, found - len(findings))


def _without_orphans(before: cst.Module, after: cst.Module, package: bool) -> cst.Module:
    """`after` without the locals and imports that the round's fixes left unread
    (fixes/dead_locals.py, fixes/dead_imports.py)."""
    edits = [*orphaned_local_edits(before, after), *orphaned_import_edits(before, after, package)]
    return after.visit(EditApplier(edits)) if edits else after


def _is_package(filename: str) -> bool:
    return os.path.basename(filename) == "__init__.py"


def _settled(fixable: list[Finding], chosen: list[Fix]) -> list[Finding]:
    """Findings settled by the chosen fixes, counting those that share a chosen registration."""
    chosen_ids = {id(fix) for fix in chosen}
    chosen_targets = {id(t) for fix in chosen for t in _replace_targets(fix)}
    settled = []
    for finding in fixable:
        assert finding.fix is not None
        targets = {id(t) for t in _replace_targets(finding.fix)}
        if id(finding.fix) in chosen_ids or (targets and targets <= chosen_targets):
            settled.append(finding)
    return settled


def _replace_targets(fix: Fix) -> list[cst.CSTNode]:
    return [edit.target for edit in fix.edits if isinstance(edit, Replace)]


FindingKey = tuple[str, str]


def _key(module: cst.Module, finding: Finding) -> FindingKey:
    """What a finding is about, stable across a round: its code and the text it points at."""
    if finding.node is None:
        return finding.code, finding.message
    return finding.code, module.code_for_node(finding.node)


def _allowed_after(module: cst.Module, findings: list[Finding], settled: list[Finding]) -> Counter[FindingKey]:
    """For each settled finding's key, how many findings with that key may remain after the round."""
    before = Counter(_key(module, f) for f in findings)
    gone = Counter(_key(module, f) for f in settled)
    return Counter({key: before[key] - count for key, count in gone.items()})


def _check_fixed_gone(module: cst.Module, findings: list[Finding], allowed: Counter[FindingKey]) -> None:
    after = Counter(_key(module, f) for f in findings)
    for finding in findings:
        key = _key(module, finding)
        if key in allowed and after[key] > allowed[key]:
            loc = finding.location
            raise _FixFailed(f"re-linting the fixed code still reports {finding.code} at {loc.row}:{loc.column}")


def _text(module: cst.Module, as_text: bool) -> Source:
    if as_text:
        return module.code
    try:
        return module.bytes
    except UnicodeEncodeError:  # a fix brought in a character the file's encoding cannot hold
        raise _FixFailed(f"the fixed code cannot be written in the file's encoding ({module.encoding})") from None


def _final_text(data: Source, roundtrip: Source, fixed: Source, filename: str) -> Source:
    """The bytes to write: the fixed text, with what libcst does not reproduce taken from `data`."""
    if fixed == roundtrip:
        return data  # nothing changed: byte-identical, whatever libcst would print
    new = splice_untouched(data, roundtrip, fixed)  # type: ignore[type-var]
    if new is None:
        row = first_difference_row(data, roundtrip)  # type: ignore[type-var]
        raise _FixFailed(f"libcst does not reproduce line {row} byte for byte and the fix touches it")
    if new != fixed:
        try:
            check_syntax(new, filename)
        except SourceError as error:
            raise _FixFailed(f"the fixed code does not parse ({error.message}, line {error.row})") from None
    return new


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
