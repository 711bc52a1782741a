"""The `bufferlint` command: check, fix, diff; `verify` and `rule` are sub-commands."""

from __future__ import annotations

import argparse
import difflib
import sys
from dataclasses import dataclass
from typing import Optional, Sequence

from bufferlint import __version__
from bufferlint.config import ConfigError, Settings
from bufferlint.discovery import Candidate, discover
from bufferlint.lint import FileResult, check_bytes, fix_bytes
from bufferlint.model import Finding
from bufferlint.output import FORMATS, formatter
from bufferlint.output.summary import RunSummary
from bufferlint.runner import RunOptions, run
from bufferlint.runner import add_arguments as add_runner_arguments
from bufferlint.source import write_atomic

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
REPORT_URL = "https://github.com/bufferlint/bufferlint/issues"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bufferlint",
        description="Find tensors that nn.Modules keep outside PyTorch's bookkeeping, and fix them.",
        epilog="Sub-commands: `bufferlint verify TARGET` (runtime check), `bufferlint rule CODE` (rule docs).",
    )
    parser.add_argument("paths", nargs="*", metavar="PATH", help="files or folders; `-` reads stdin")
    parser.add_argument("--fix", action="store_true", help="apply safe fixes")
    parser.add_argument("--unsafe-fixes", action="store_true", default=None, help="also apply unsafe fixes")
    parser.add_argument("--diff", action="store_true", help="print the fixes as a diff, write nothing")
    parser.add_argument("--output-format", choices=FORMATS, default="concise")
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 even when findings remain")
    parser.add_argument("--stdin-filename", help="the name to report for source read from stdin")
    parser.add_argument("--select", type=_codes, help="comma-separated codes or prefixes to enable")
    parser.add_argument("--extend-select", type=_codes, default=(), help="codes to enable on top")
    parser.add_argument("--ignore", type=_codes, default=(), help="codes to disable")
    parser.add_argument("--module-bases", type=_codes, default=(), help="extra base classes to treat as nn.Module")
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
        print(f"bufferlint: internal error: {type(error).__name__}: {error}", file=sys.stderr)
        print(f"Please report this at {REPORT_URL} with the file that triggered it.", file=sys.stderr)
        return EXIT_ERROR


def _dispatch(argv: list[str]) -> int:
    if argv[:1] == ["verify"]:
        from bufferlint.verify.cli import main as verify_main

        return verify_main(argv[1:])
    if argv[:1] == ["rule"]:
        return _rule_docs(argv[1:])
    args = build_parser().parse_args(argv)
    if not args.paths:
        build_parser().error("no PATH given (use `.` for the current folder, `-` for stdin)")
    settings = _settings(args)
    settings.enabled_rules()  # unknown selectors fail here, before any file is read
    fixing = args.fix or args.diff
    if args.paths == ["-"]:
        outcome = _run_stdin(args, settings, fixing)
    else:
        outcome = _run_paths(args, settings, fixing)
    summary = RunSummary(fixed=outcome.fixed, fixing=fixing and not args.diff, unsafe_enabled=settings.unsafe_fixes)
    if not (args.diff and args.output_format == "concise" and not outcome.findings):
        sys.stdout.write(formatter(args.output_format)(outcome.findings, summary))
    return _exit_code(args, outcome)


def _settings(args: argparse.Namespace) -> Settings:
    return Settings(
        select=args.select,
        ignore=args.ignore,
        extend_select=args.extend_select,
        unsafe_fixes=bool(args.unsafe_fixes),
        module_bases=args.module_bases,
    )


def _run_paths(args: argparse.Namespace, settings: Settings, fixing: bool) -> Outcome:
    candidates: list[Candidate] = list(discover(args.paths))
    result = run(candidates, settings, RunOptions.from_args(args, fix=fixing))
    outcome = Outcome([], 0, 0, 0)
    for file in result.files:
        _report_fix_error(file, outcome)
        outcome.findings.extend(file.findings)
        if file.new_data is None:
            continue
        outcome.fixed += file.fixed
        outcome.changed += 1
        if args.diff:
            sys.stdout.write(_diff(file))
        else:
            write_atomic(file.filename, file.new_data)  # type: ignore[arg-type]
    outcome.findings.sort(key=lambda f: f.sort_key)
    return outcome


def _run_stdin(args: argparse.Namespace, settings: Settings, fixing: bool) -> Outcome:
    """`-`: findings for stdin; with --fix the fixed source goes to stdout, findings to stderr."""
    name = args.stdin_filename or "-"
    data = sys.stdin.buffer.read()
    file = fix_bytes(data, name, settings) if fixing else check_bytes(data, name, settings)
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


def _diff(file: FileResult, original: Optional[bytes] = None) -> str:
    if original is None:
        with open(file.filename, "rb") as handle:
            original = handle.read()
    new = file.new_data
    assert isinstance(new, bytes)
    old_text = original.decode("utf-8", errors="surrogateescape").splitlines(keepends=True)
    new_text = new.decode("utf-8", errors="surrogateescape").splitlines(keepends=True)
    return "".join(difflib.unified_diff(old_text, new_text, f"a/{file.filename}", f"b/{file.filename}"))


def _exit_code(args: argparse.Namespace, outcome: Outcome) -> int:
    if args.exit_zero:
        return EXIT_CLEAN
    if outcome.findings or (args.diff and outcome.changed) or outcome.errors:
        return EXIT_FINDINGS
    return EXIT_CLEAN


def _rule_docs(argv: list[str]) -> int:
    from bufferlint.rules import all_rules, rule_by_code_or_name

    if not argv:
        for rule in all_rules():
            print(f"{rule.code}  {rule.name:<32} {rule.summary}")
        return EXIT_CLEAN
    rule = rule_by_code_or_name(argv[0])
    if rule is None:
        print(f"bufferlint: error: unknown rule {argv[0]!r}", file=sys.stderr)
        return EXIT_ERROR
    print(f"# {rule.code} {rule.name}\n\n{rule.docs()}")
    return EXIT_CLEAN


if __name__ == "__main__":
    sys.exit(main())
