"""The `bufferlint` command: check (also spelt `bufferlint check`), fix, diff; `verify` and `rule` are sub-commands."""

from __future__ import annotations

import argparse
import contextlib
import difflib
import gc
import sys
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Iterator, Optional, Sequence

from bufferlint import __version__
from bufferlint import prechecked
from bufferlint.analysis.project import scan_project
from bufferlint.config import ConfigError, FileConfig, Overrides, Settings
from bufferlint.discovery import Candidate, discover
from bufferlint.file_configs import FileConfigs
from bufferlint.filters import FileFilter
from bufferlint.lint import PARSE_ERROR_CODE, FileResult, InternalError, check_bytes, fix_bytes
from bufferlint.model import Finding, without_fixes
from bufferlint.notebook import is_notebook, process_notebook
from bufferlint.output import FORMATS, formatter
from bufferlint.output import fixes_report, statistics
from bufferlint.output.style import use_color
from bufferlint.output.summary import RunSummary
from bufferlint.project_context import context_paths
from bufferlint.runner import RunOptions, index_cache_dir, run
from bufferlint.runner import add_arguments as add_runner_arguments
from bufferlint.fix_verification import DEFAULT_TIMEOUT, verify_fixed_file
from bufferlint.fix_verification import report as report_verification
from bufferlint.add_noqa import add_noqa
from bufferlint.noqa import NoqaMap
from bufferlint.source import SourceError, WriteError, check_syntax, decode, digest, write_atomic, write_new

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
REPORT_URL = "https://github.com/bufferlint/bufferlint/issues"
COLOR_FORMATS = ("concise", "full")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bufferlint",
        description="Find tensors that nn.Modules keep outside PyTorch's bookkeeping, and fix them.",
        epilog="Sub-commands: `bufferlint verify TARGET` (runtime check), `bufferlint rule [CODE]` (rule docs).",
    )
    parser.add_argument("paths", nargs="*", metavar="PATH", help="files or folders (.py, .pyi, .ipynb; default: the current folder); `-` reads stdin")
    fixing = parser.add_argument_group("fixing")
    fixing.add_argument("--fix", action="store_true", help="apply safe fixes")
    fixing.add_argument("--unsafe-fixes", action="store_true", default=None, help="also apply (and count) unsafe fixes")
    fixing.add_argument("--no-unsafe-fixes", action="store_false", dest="unsafe_fixes", help="override `unsafe-fixes = true`")
    fixing.add_argument("--diff", action="store_true", help="print the fixes as a unified diff, write nothing (exit 1 only if there is a diff)")
    fixing.add_argument("--verify", action="store_true", help="with --fix: verify each rewritten class against the original at runtime (imports your code, needs torch); revert files that fail")
    fixing.add_argument("--verify-timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS", help="per-class limit for --verify (default: %(default)s)")
    fixing.add_argument("--show-fixes", action="store_true", help="after --fix, list what was fixed per file")
    report = parser.add_argument_group("reporting")
    report.add_argument("--output-format", choices=FORMATS, default="concise")
    report.add_argument("--statistics", action="store_true", help="count findings per rule instead of listing them")
    report.add_argument("-q", "--quiet", action="store_true", help="print findings only, no summary")
    report.add_argument("--exit-zero", action="store_true", help="exit 0 even when findings remain")
    report.add_argument("--exit-non-zero-on-fix", action="store_true", help="with --fix: exit 1 when a file was fixed, even if nothing remains")
    report.add_argument("-o", "--output-file", metavar="FILE", help="write the report to FILE instead of stdout")
    report.add_argument("--add-noqa", action="store_true", help="add `# noqa: CODE` where each current finding is, so that only new code is held to the rules")
    report.add_argument("--show-files", action="store_true", help="list the files that would be checked, and exit")
    report.add_argument("--show-settings", action="store_true", help="show the configuration file and settings of the first path, and exit")
    report.add_argument("--stdin-filename", help="the name to report for source read from stdin")
    report.add_argument("--list-rules", action="store_true", help="list the rules and exit")
    rules = parser.add_argument_group("rule selection (override [tool.bufferlint])")
    rules.add_argument("--config", metavar="FILE", help="a pyproject.toml (or a bufferlint TOML file) instead of the nearest one")
    rules.add_argument("--select", type=_codes, help="comma-separated codes, prefixes or names to enable (replaces `select`)")
    rules.add_argument("--extend-select", type=_codes, default=(), help="codes to enable on top")
    rules.add_argument("--ignore", type=_codes, default=(), help="codes to disable")
    rules.add_argument("--module-bases", type=_codes, default=(), help="extra base classes to treat as nn.Module")
    rules.add_argument("--fixable", type=_codes, help="codes whose fixes --fix may apply (replaces `fixable`; default: all)")
    rules.add_argument("--unfixable", type=_codes, default=(), help="codes whose findings are reported without a fix")
    rules.add_argument("--ignore-noqa", action="store_true", help="report findings even where `# noqa` suppresses them")
    rules.add_argument(
        "--check-tests", action="store_true", default=None,
        help="also report device findings in tests and benchmarks (tests/, test_*.py), which are skipped by default",
    )
    files = parser.add_argument_group("file selection")
    files.add_argument("--exclude", type=_codes, help="gitignore-style patterns to skip (replaces `exclude`)")
    files.add_argument("--extend-exclude", type=_codes, default=(), help="patterns to skip on top of `exclude`")
    files.add_argument("--force-exclude", action="store_true", default=None, help="apply exclusions to files named on the command line too")
    parser.add_argument("--version", action="version", version=f"bufferlint {__version__}")
    add_runner_arguments(parser)
    return parser


def _codes(value: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in value.split(",") if part.strip())


@dataclass
class Outcome:
    findings: list[Finding]
    fixed: int
    changed: int
    errors: int
    fixed_by_file: dict[str, Counter[str]] = field(default_factory=dict)
    settings_by_file: dict[str, Settings] = field(default_factory=dict)  # each file's, project facts included


def main(argv: Optional[Sequence[str]] = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    try:
        return _dispatch(args_list)
    except ConfigError as error:
        print(f"bufferlint: error: {error}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("bufferlint: interrupted; files already written are complete, the rest untouched", file=sys.stderr)
        return 130
    except Exception as error:  # the one place a traceback would otherwise reach the user
        detail = str(error) if isinstance(error, InternalError) else f"{type(error).__name__}: {error}"
        print(f"bufferlint: internal error: {detail}", file=sys.stderr)
        print(f"Please report this at {REPORT_URL} with the file that triggered it.", file=sys.stderr)
        return EXIT_ERROR


def _dispatch(argv: list[str]) -> int:
    if argv[:1] == ["verify"]:
        from bufferlint.verify.cli import main as verify_main

        return verify_main(argv[1:])
    if argv[:1] == ["rule"]:
        return _rule_docs(argv[1:])
    if argv[:1] == ["check"]:  # `ruff check .` habits: `check` is the default command
        argv = argv[1:]
    args = build_parser().parse_args(argv)
    if args.list_rules:
        return _rule_docs([])
    if not args.paths:
        args.paths = ["."]  # as ruff: no path checks the current folder
    configs = FileConfigs(args.config, _flags(args), lambda config, settings: _file_filter(args, config, settings))
    if args.show_files:
        sys.stdout.write("".join(f"{c.path}\n" for c in sorted(discover(args.paths), key=lambda c: c.path) if configs.keep(c)))
        return EXIT_CLEAN
    if args.show_settings:
        sys.stdout.write(configs.describe(args.paths[0]))
        return EXIT_CLEAN
    stdin = args.paths == ["-"]
    # the summary's settings (`--unsafe-fixes` hints): those of the stdin file, else of the working folder
    settings, file_filter = configs.at(args.stdin_filename if stdin and args.stdin_filename else ".")
    fixing = args.fix or args.diff
    if args.verify and not args.fix:
        raise ConfigError("--verify checks what --fix rewrites: use it together with --fix")
    if args.verify:
        from bufferlint.verify.errors import torch_missing

        missing = torch_missing()
        if missing is not None:  # refuse before any file is touched
            raise ConfigError(f"--verify: {missing}")
    if args.add_noqa:
        if fixing or stdin:
            raise ConfigError("--add-noqa edits files by itself: use it without --fix, --diff or stdin")
        return _add_noqa(_run_paths(args, configs, fixing=False))
    if stdin:
        outcome = _run_stdin(args, settings, file_filter, fixing)
    else:
        outcome = _run_paths(args, configs, fixing)
    _report(args, settings, outcome)
    return _exit_code(args, outcome)


def _flags(args: argparse.Namespace) -> Overrides:
    return Overrides(
        select=args.select,
        extend_select=args.extend_select,
        ignore=args.ignore,
        unsafe_fixes=args.unsafe_fixes,
        module_bases=args.module_bases,
        ignore_noqa=args.ignore_noqa,
        check_tests=args.check_tests,
        fixable=args.fixable,
        unfixable=args.unfixable,
    )


def _file_filter(args: argparse.Namespace, config: FileConfig, settings: Settings) -> FileFilter:
    values = dict(config.values)
    if args.exclude is not None:
        values["exclude"] = list(args.exclude)
    values["extend-exclude"] = list(values.get("extend-exclude", [])) + list(args.extend_exclude)
    return FileFilter.from_config(FileConfig(config.path, config.root, values), settings, args.force_exclude)


def _report(args: argparse.Namespace, settings: Settings, outcome: Outcome) -> None:
    summary = RunSummary(
        fixed=outcome.fixed,
        fixing=args.fix and not args.diff,
        unsafe_enabled=settings.unsafe_fixes,
        diff_mode=args.diff,
        color=args.output_format in COLOR_FORMATS and use_color(sys.stdout),
        quiet=args.quiet,
        settings=settings,
    )
    if args.diff:
        _diff_summary(args, outcome)
    elif args.statistics:
        _write_report(args, statistics.render(outcome.findings, summary, as_json=args.output_format in ("json", "json-lines")))
    else:
        _write_report(args, formatter(args.output_format)(outcome.findings, summary))
    if args.show_fixes and args.fix and not args.diff:
        names = {f.code: f.name for f in outcome.findings}
        names.update(_rule_names())
        sys.stdout.write(fixes_report.render(outcome.fixed_by_file, names))


def _write_report(args: argparse.Namespace, text: str) -> None:
    if args.output_file is None:
        sys.stdout.write(text)
        return
    try:
        write_new(args.output_file, text.encode("utf-8"))
    except WriteError as error:
        raise ConfigError(f"--output-file {args.output_file}: {error}") from None


def _diff_summary(args: argparse.Namespace, outcome: Outcome) -> None:
    """With --diff stdout carries only the diff; the counts go to stderr, as ruff does."""
    if args.quiet:
        return
    remaining = len(outcome.findings)
    line = f"Would fix {outcome.fixed} error{'' if outcome.fixed == 1 else 's'}" if outcome.fixed else "No errors would be fixed"
    line += f" ({remaining} remaining)." if remaining else "."
    print(line, file=sys.stderr)


def _rule_names() -> dict[str, str]:
    from bufferlint.rules import all_rules

    return {rule.code: rule.name for rule in all_rules()}


def _by_settings(candidates: list[Candidate], configs: FileConfigs) -> dict[Settings, list[Candidate]]:
    """Files grouped by their effective settings (configuration, per-file-ignores), in discovery order."""
    groups: dict[Settings, list[Candidate]] = {}
    for candidate in candidates:
        groups.setdefault(configs.settings_for(candidate.path), []).append(candidate)
    return groups


def _run_paths(args: argparse.Namespace, configs: FileConfigs, fixing: bool) -> Outcome:
    candidates = [c for c in discover(args.paths) if configs.keep(c)]
    groups = _by_settings(candidates, configs)  # reads every configuration before any file
    # Module classes whose base is defined in another file of the run (analysis/project.py).
    index_cache = index_cache_dir(RunOptions.from_args(args, fix=fixing))
    outcome = Outcome([], 0, 0, 0)
    with _fewer_collections():
        bases = tuple(dict.fromkeys(base for settings in groups for base in settings.module_bases))
        # Given only some files (pre-commit, an editor), the scan also reads the rest of the project.
        context = context_paths(args.paths, candidates, configs)
        scan = scan_project([c.path for c in candidates], bases, index_cache, context)
        with prechecked.in_effect(scan.checked):  # files the scan parsed are not parsed by ast again
            for group_settings, group in groups.items():
                file_settings = replace(group_settings, module_bases=tuple(dict.fromkeys(group_settings.module_bases + scan.bases)), project=scan.facts)
                result = run(group, file_settings, RunOptions.from_args(args, fix=fixing))
                for file in result.files:
                    _collect(args, file, file_settings, outcome)
    outcome.findings.sort(key=lambda f: f.sort_key)
    return outcome


@contextlib.contextmanager
def _fewer_collections() -> Iterator[None]:
    """Run the cyclic garbage collector less often while files are processed (worker processes
    inherit it). Syntax trees are millions of small objects without cycles, which the default
    threshold (700 allocations) has it rescan over and over: measured on 2,447 files at -j 1,
    25.8 s -> 23.9 s of CPU. Cycles are still collected."""
    previous = gc.get_threshold()
    gc.set_threshold(50_000, 50, 100)
    try:
        yield
    finally:
        gc.set_threshold(*previous)


def _collect(args: argparse.Namespace, file: FileResult, settings: Settings, outcome: Outcome) -> None:
    outcome.settings_by_file[file.filename] = settings
    _report_fix_error(file, outcome)
    if file.new_data is None:
        outcome.findings.extend(file.findings)
        return
    original = _read(file.filename)
    if file.read_digest is not None and digest(original) != file.read_digest:
        # edited while the run went on (an editor, another hook): never overwrite what was not read
        print(f"error: {file.filename}: changed on disk while bufferlint ran; fix not written", file=sys.stderr)
        outcome.errors += 1
        outcome.findings.extend(_check_data(original, file.filename, settings, fix=False).findings)
        return
    if args.diff:
        sys.stdout.write(_diff(file, original))
    else:
        if args.show_fixes:
            outcome.fixed_by_file[file.filename] = _fixed_codes(original, file, settings)
        try:
            write_atomic(file.filename, file.new_data)  # type: ignore[arg-type]
        except WriteError as error:  # reported like a failed fix; the file keeps its findings
            print(f"error: {file.filename}: {error}", file=sys.stderr)
            outcome.errors += 1
            outcome.fixed_by_file.pop(file.filename, None)
            outcome.findings.extend(_check_data(original, file.filename, settings, fix=False).findings)
            return
        if args.verify and not is_notebook(file.filename) and not _verified(args, file, original, outcome):
            outcome.errors += 1
            outcome.fixed_by_file.pop(file.filename, None)
            outcome.findings.extend(without_fixes(check_bytes(original, file.filename, settings).findings))
            return
    outcome.findings.extend(file.findings)
    outcome.fixed += file.fixed
    outcome.changed += 1


def _add_noqa(outcome: Outcome) -> int:
    """Suppress every finding of the run where it is; exit 0 unless a file could not be done."""
    files = dict.fromkeys(f.filename for f in outcome.findings if f.code != PARSE_ERROR_CODE and not is_notebook(f.filename))
    added, failed = 0, outcome.errors
    for filename in files:
        problem = _add_noqa_to(filename, outcome.settings_by_file[filename])
        if isinstance(problem, int):
            added += problem
        else:
            print(f"error: {filename}: no noqa added: {problem}", file=sys.stderr)
            failed += 1
    print(f"Added {added} noqa directive{'' if added == 1 else 's'}.")
    return EXIT_FINDINGS if failed else EXIT_CLEAN


def _add_noqa_to(filename: str, settings: Settings) -> "int | str":
    """The number of directives added to the file, or why it was left alone. The findings are
    taken again from the bytes that are edited, so an edit during the run cannot misplace one."""
    data = _read(filename)
    findings = [f for f in check_bytes(data, filename, settings).findings if f.code != PARSE_ERROR_CODE]
    result = add_noqa(data, findings)
    if result.refused is not None:
        return result.refused
    if result.data is None:
        return 0
    noqa = NoqaMap.from_text(decode(result.data))
    if not all(noqa.suppresses(f.code, f.noqa_rows or (f.location.row,)) for f in findings):
        return "a comment would not suppress every finding"
    try:
        check_syntax(result.data, filename)
    except SourceError as error:
        return f"the result would not parse ({error})"
    if digest(_read(filename)) != digest(data):
        return "changed on disk while bufferlint ran"
    try:
        write_atomic(filename, result.data)
    except WriteError as error:
        return str(error)
    return result.directives


def _verified(args: argparse.Namespace, file: FileResult, original: bytes, outcome: Outcome) -> bool:
    """Verify the written fix against the original; a failing file is written back as it was."""
    assert isinstance(file.new_data, bytes)
    verification = verify_fixed_file(file.filename, original, file.new_data, args.verify_timeout)
    report_verification(verification)
    if verification.unverified and not verification.reverted:
        outcome.errors += 1  # asked to verify: a fix kept without proof is no success (exit 1)
    return not verification.reverted


def _read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def _check_data(data: bytes, name: str, settings: Settings, fix: bool) -> FileResult:
    if is_notebook(name):
        return process_notebook(data, name, settings, fix=fix)
    return fix_bytes(data, name, settings) if fix else check_bytes(data, name, settings)


def _fixed_codes(original: bytes, file: FileResult, settings: Settings) -> Counter[str]:
    """Codes fixed in one file: the applicable findings before, less the ones still there."""
    before = _check_data(original, file.filename, settings, fix=False).findings
    fixable = Counter(f.code for f in before if f.fix_applicable(settings.unsafe_fixes))
    return fixable - Counter(f.code for f in file.findings)


def _run_stdin(args: argparse.Namespace, settings: Settings, file_filter: FileFilter, fixing: bool) -> Outcome:
    """`-`: findings for stdin; with --fix the fixed source goes to stdout, findings to stderr."""
    name = args.stdin_filename or "-"
    data = sys.stdin.buffer.read()
    excluded = args.stdin_filename is not None and not file_filter.keep(Candidate(name, explicit=True))
    if excluded:  # --force-exclude: pass the source through untouched, as ruff does
        file = FileResult(name)
    else:
        file = _check_data(data, name, file_filter.settings_for(name, settings), fix=fixing)
    outcome = Outcome(file.findings, file.fixed if file.new_data is not None else 0, 0, 0)
    _report_fix_error(file, outcome)
    if args.fix and not args.diff:
        sys.stdout.buffer.write(file.new_data if file.new_data is not None else data)  # type: ignore[arg-type]
        sys.stdout.flush()
        sys.stdout = sys.stderr  # the report must not mix with the fixed source
    elif args.diff and file.new_data is not None:
        outcome.changed = 1
        sys.stdout.write(_diff(file, original=data))
    return outcome


def _report_fix_error(file: FileResult, outcome: Outcome) -> None:
    if file.fix_error:
        outcome.errors += 1
        print(f"error: {file.filename}: {file.fix_error}", file=sys.stderr)


def _diff(file: FileResult, original: bytes) -> str:
    new = file.new_data
    assert isinstance(new, bytes)
    old_text = original.decode("utf-8", errors="surrogateescape").splitlines(keepends=True)
    new_text = new.decode("utf-8", errors="surrogateescape").splitlines(keepends=True)
    return "".join(difflib.unified_diff(old_text, new_text, f"a/{file.filename}", f"b/{file.filename}"))


def _exit_code(args: argparse.Namespace, outcome: Outcome) -> int:
    if args.exit_zero:
        return EXIT_CLEAN
    if args.fix and args.exit_non_zero_on_fix and outcome.changed and not args.diff:
        return EXIT_FINDINGS
    if args.diff:  # as ruff: 1 only when there is a diff (or a file could not be checked)
        return EXIT_FINDINGS if outcome.changed or outcome.errors else EXIT_CLEAN
    if outcome.findings or outcome.errors:
        return EXIT_FINDINGS
    return EXIT_CLEAN


def _rule_docs(argv: list[str]) -> int:
    from bufferlint.docs import rule_list, terminal_docs
    from bufferlint.rules import rule_by_code_or_name

    if not argv:
        sys.stdout.write(rule_list())
        return EXIT_CLEAN
    rule = rule_by_code_or_name(argv[0])
    if rule is None:
        print(f"bufferlint: error: unknown rule {argv[0]!r} (see `bufferlint --list-rules`)", file=sys.stderr)
        return EXIT_ERROR
    sys.stdout.write(terminal_docs(rule))
    return EXIT_CLEAN


if __name__ == "__main__":
    sys.exit(main())
