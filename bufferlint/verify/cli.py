"""`bufferlint verify TARGET ...`: the main CLI calls `main(argv)` with the arguments after
`verify`; `python -m bufferlint.verify.cli ...` works the same way.

Everything here is torch-free: arguments are checked in this process, and the user's code (and
torch) run in the worker subprocess. Exit codes: 0 pass, 1 fail or inconclusive, 2 usage error.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from bufferlint.verify import report
from bufferlint.verify.errors import UsageError, torch_missing
from bufferlint.verify.result import VerifyResult
from bufferlint.verify.runner import run_jobs
from bufferlint.verify.target import check_class_statically, parse_target

EXIT_PASS, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
DEFAULT_TIMEOUT = 120.0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bufferlint verify",
        description="Build an nn.Module, find tensors that .to()/.cuda() would leave behind, and run forward "
        "on CUDA (or on the meta device under a CUDA device-rule checker when no GPU is present). "
        "Imports and runs the target's code in a subprocess.",
    )
    parser.add_argument("target", help="path/to/file.py::Class or package.module:Class")
    parser.add_argument("--kwargs", metavar="JSON", help="constructor keyword arguments as a JSON object")
    parser.add_argument("--build", metavar="EXPR",
                        help="build the module with this expression instead, evaluated in the target's file with torch "
                        "in scope, e.g. 'GPT(GPTConfig(n_layer=2))'")
    parser.add_argument("--input", metavar="EXPR",
                        help="example input: a Python expression with torch in scope; a tuple is spread into arguments")
    parser.add_argument("--device", choices=("auto", "cuda", "meta"), default="auto",
                        help="auto: CUDA when available, else meta emulation (default)")
    parser.add_argument("--against", metavar="REV_OR_FILE",
                        help="compare with an original version: a file, or a git revision of the target's file")
    parser.add_argument("--train", action="store_true",
                        help="run forward in training mode for the device check and --against alike (default: eval)")
    parser.add_argument("--output-format", choices=("text", "json"), default="text")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                        help=f"limit for the user's code (default {DEFAULT_TIMEOUT:g})")
    return parser


def _parse_kwargs(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--kwargs is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise UsageError("--kwargs must be a JSON object, e.g. '{\"d\": 64}'")
    return value


def _check_expression(flag: str, expr: str | None) -> None:
    if expr is None:
        return
    try:
        compile(expr, f"<{flag}>", "eval")
    except SyntaxError as exc:
        raise UsageError(f"{flag} is not a Python expression: {exc.msg}") from None


def make_job(args: argparse.Namespace) -> dict[str, Any]:
    """Validate everything that can be checked without importing user code."""
    check_class_statically(parse_target(args.target))
    if args.timeout <= 0:
        raise UsageError("--timeout must be positive")
    _check_expression("--input", args.input)
    _check_expression("--build", args.build)
    if args.build is not None and args.kwargs is not None:
        raise UsageError("give either --kwargs or --build, not both")
    return {
        "kind": "verify",
        "target": args.target,
        "kwargs": _parse_kwargs(args.kwargs),
        "build": args.build,
        "input": args.input,
        "device": args.device,
        "against": args.against,
        "train": args.train,
    }


def _result_of(record: dict[str, Any], target: str) -> VerifyResult:
    if "result" in record:
        return VerifyResult.from_dict(record["result"])
    # timeout or crash in user code: a failure, reported in the normal format
    return VerifyResult(target=target, status="fail", forward="crashed", messages=[record.get("error", "unknown failure")])


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as exc:  # argparse: --help (0) or a bad flag (2, message already printed)
        return int(exc.code or 0)
    missing = torch_missing()
    if missing is not None:
        print(f"bufferlint verify: error: {missing}", file=sys.stderr)
        return EXIT_USAGE
    try:
        job = make_job(args)
    except UsageError as exc:
        print(f"bufferlint verify: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    [record] = run_jobs([job], args.timeout)
    if "usage_error" in record:
        print(f"bufferlint verify: error: {record['usage_error']}", file=sys.stderr)
        return EXIT_USAGE
    result = _result_of(record, args.target)
    print(report.to_json(result) if args.output_format == "json" else report.to_text(result))
    return EXIT_PASS if result.status == "pass" else EXIT_FAIL


if __name__ == "__main__":
    sys.exit(main())
