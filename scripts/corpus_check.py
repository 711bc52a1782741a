"""Lint and fix real PyTorch repositories end to end, on copies, and check the guarantees.

    python scripts/corpus_check.py                       # every repository under /work/corpus
    python scripts/corpus_check.py whisper open_clip     # some of them
    python scripts/corpus_check.py --corpus DIR --select ALL

For each repository: its Python files are copied to a temporary folder (the corpus is never
touched), then `bufferlint` (a subprocess, as a user runs it) checks the copy, fixes it with
`--fix --unsafe-fixes`, and fixes it again. It counts files, findings, fixed findings, changed
files, refused fixes and BUF999 files, and fails on any crash (exit 2, a traceback, a signal), a
changed file CPython cannot parse, or a second fix run that changes anything. Not a CI test: it
needs the corpus (extract working trees under /work/corpus/<name>).
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUFFIXES = (".py", ".pyi")


@dataclass
class Report:
    name: str
    files: int = 0
    findings: int = 0
    parse_errors: int = 0
    fixed: int = 0
    changed: int = 0
    refused: int = 0
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0


def copy_sources(source: Path, target: Path) -> int:
    count = 0
    for directory, dirnames, filenames in os.walk(source):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            path = Path(directory) / name
            if name.endswith(SUFFIXES) and path.is_file() and not path.is_symlink():
                destination = target / path.relative_to(source)
                destination.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, destination)
                count += 1
    return count


def snapshot(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


def bufferlint(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "bufferlint", "--no-cache", *args], capture_output=True, text=True, env=env, timeout=3600)


def crashed(done: subprocess.CompletedProcess[str]) -> bool:
    return done.returncode not in (0, 1) or "Traceback" in done.stderr or "internal error" in done.stderr


def check_repository(name: str, source: Path, select: list[str]) -> Report:
    report = Report(name)
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"corpus-{name}-") as temp:
        copy = Path(temp) / name
        report.files = copy_sources(source, copy)
        original = snapshot(copy)

        checked = bufferlint(*select, "--unsafe-fixes", "--output-format", "json", str(copy))
        if crashed(checked):
            report.problems.append(f"check crashed (exit {checked.returncode}): {checked.stderr.strip()[-500:]}")
            return report
        findings = json.loads(checked.stdout)
        report.findings = len(findings)
        report.parse_errors = sum(f["code"] == "BUF999" for f in findings)

        fixed = bufferlint(*select, "--fix", "--unsafe-fixes", str(copy))
        if crashed(fixed):
            report.problems.append(f"fix crashed (exit {fixed.returncode}): {fixed.stderr.strip()[-500:]}")
            return report
        summary = re.search(r"\((\d+) fixed, (\d+) remaining\)", fixed.stdout)
        report.fixed = int(summary.group(1)) if summary else 0
        report.refused = sum(1 for line in fixed.stderr.splitlines() if line.startswith("error: "))
        after = snapshot(copy)
        changed = [path for path, digest in after.items() if original.get(path) != digest]
        report.changed = len(changed)
        if set(after) != set(original):
            report.problems.append(f"files appeared or vanished: {sorted(set(after) ^ set(original))[:5]}")
        for path in changed:
            try:
                ast.parse((copy / path).read_bytes(), filename=path)
            except SyntaxError as error:
                report.problems.append(f"{path}: fixed file does not parse: {error}")

        again = bufferlint(*select, "--fix", "--unsafe-fixes", str(copy))
        if crashed(again):
            report.problems.append(f"second fix crashed (exit {again.returncode}): {again.stderr.strip()[-500:]}")
        moved = [path for path, digest in snapshot(copy).items() if after.get(path) != digest]
        if moved:
            report.problems.append(f"second fix run changed {len(moved)} files, e.g. {moved[:3]}")
    report.seconds = time.monotonic() - start
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help="repositories under the corpus folder (default: all)")
    parser.add_argument("--corpus", type=Path, default=Path("/work/corpus"))
    parser.add_argument("--select", help="rules to run, e.g. ALL (default: the default rules)")
    args = parser.parse_args()
    names = args.names or sorted(p.name for p in args.corpus.iterdir() if p.is_dir())
    select = ["--select", args.select] if args.select else []
    reports = []
    print(f"{'repository':<28} {'files':>6} {'findings':>8} {'BUF999':>6} {'fixed':>6} {'changed':>7} {'refused':>7} {'crashes':>7} {'seconds':>7}")
    for name in names:
        report = check_repository(name, args.corpus / name, select)
        reports.append(report)
        crashes = sum("crashed" in p for p in report.problems)
        print(f"{name:<28} {report.files:>6} {report.findings:>8} {report.parse_errors:>6} {report.fixed:>6} {report.changed:>7} {report.refused:>7} {crashes:>7} {report.seconds:>7.0f}", flush=True)
        for problem in report.problems:
            print(f"    PROBLEM: {problem}", flush=True)
    totals = [sum(getattr(r, key) for r in reports) for key in ("files", "findings", "parse_errors", "fixed", "changed", "refused")]
    crashes = sum("crashed" in p for r in reports for p in r.problems)
    print(f"{'total':<28} {totals[0]:>6} {totals[1]:>8} {totals[2]:>6} {totals[3]:>6} {totals[4]:>7} {totals[5]:>7} {crashes:>7}")
    return 1 if any(r.problems for r in reports) else 0


if __name__ == "__main__":
    sys.exit(main())
