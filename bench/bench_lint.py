"""Benchmark bufferlint against a bare libcst parse of the same files, in one run.

    python bench/bench_lint.py CORPUS_DIR [CORPUS_DIR ...] [--jobs 1,2,4] [--check-prefilter]
    python bench/bench_lint.py --synthetic 300 --quick          # the CI smoke run (seconds)

Every measurement runs in a fresh subprocess (imports included, as a user pays them) and reports
wall seconds and CPU seconds (user + system of that process tree); ratios are taken against the
bare `libcst.parse_module` of every file. On a busy machine trust the CPU ratios: wall time then
includes waiting for a core. Phases: bare libcst parse, `ast.parse`, bufferlint cold (`-j 1
--no-cache`), warm (cache filled, nothing changed), one small file (the pre-commit case),
`-j N` scaling, peak RSS at `-j 1` over 25/50/100% of the files, and optionally TorchFix.
`--pairs K` repeats the bare parse and the cold run alternately K times and prints each pair's
CPU ratio with the median. `--check-prefilter` lints every file the prefilter drops without the prefilter and counts those
with findings: it must be 0.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Sequence

if TYPE_CHECKING:
    from bufferlint.config import Settings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

SMALL_FILE = os.path.join(ROOT, "fixtures", "buf001", "dct_matrix.py")


@dataclass
class Timing:
    wall: float
    cpu: float
    max_rss_kb: int
    output: str


def run_measured(argv: Sequence[str], env: Optional[dict[str, str]] = None) -> Timing:
    """Wall time, CPU time and peak RSS of one child process (os.wait4 gives its own rusage)."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        child = subprocess.Popen(list(argv), stdout=out, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        output = out.read().decode("utf-8", "replace")
    if child.returncode not in (0, 1):
        raise SystemExit(f"command failed ({child.returncode}): {' '.join(argv[:6])} ...\n{output[-2000:]}")
    # A child's own children (worker processes) are included in its rusage once it waited for them.
    return Timing(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, output)


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    return env


# --- phases run inside a child process -------------------------------------------------------


def phase_parse(list_file: str, parser: str) -> None:
    paths = _read_list(list_file)
    if parser == "libcst":
        import libcst

        def parse(data: bytes) -> object:
            return libcst.parse_module(data)
    else:
        import ast

        def parse(data: bytes) -> object:
            return ast.parse(data)

    failed = 0
    for path in paths:
        with open(path, "rb") as handle:
            data = handle.read()
        try:
            parse(data)
        except Exception:
            failed += 1
    print(json.dumps({"failed": failed}))


def phase_prefilter(list_file: str, jobs: int) -> None:
    """Lint every file the prefilter drops as if it had passed; count those with findings."""
    from concurrent.futures import ProcessPoolExecutor

    paths = _read_list(list_file)
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(_dropped_with_findings, paths, chunksize=8))
    dropped = [r for r in results if r is not None]
    bad = [path for path, count in dropped if count]
    print(json.dumps({"files": len(paths), "dropped": len(dropped), "dropped_with_findings": bad}))


def _dropped_with_findings(path: str) -> Optional[tuple[str, int]]:
    """For a file the prefilter drops (default rules, or every rule), its findings without it."""
    from bufferlint.config import Settings
    from bufferlint.lint import check_module
    from bufferlint.source import SourceError, parse

    every_rule, default = Settings(select=("ALL",)), Settings()
    with open(path, "rb") as handle:
        data = handle.read()
    dropped_all = _dropped(data, every_rule)
    dropped_default = _dropped(data, default)
    if not (dropped_all or dropped_default):
        return None
    try:
        module = parse(data)
    except SourceError:
        return (path, 0)  # a syntax error is reported on the skipped path too
    findings = check_module(module, path, every_rule)
    enabled = {rule.code for rule in default.enabled_rules()}
    missed = [f for f in findings if dropped_all or f.code in enabled]
    return (path, len(missed))


def _dropped(data: bytes, settings: "Settings") -> bool:
    """Dropped by either gate: the one of a plain file check (which passes `class X(...Module...)`
    on sight) or the one of a CLI run, where the project scan's ast summary decides."""
    from bufferlint.lint import may_have_findings
    from bufferlint.prechecked import examine
    from bufferlint.prefilter import parse_quietly

    tree = parse_quietly(data)
    known = examine(data, tree, settings.module_bases) if tree is not None else None
    return not may_have_findings(data, settings) or not may_have_findings(data, settings, known)


def _read_list(list_file: str) -> list[str]:
    with open(list_file, encoding="utf-8") as handle:
        return [line.rstrip("\n") for line in handle if line.strip()]


# --- the driver -----------------------------------------------------------------------------


class Report:
    def __init__(self, files: int) -> None:
        self.files = files
        self.base: Optional[Timing] = None
        print(f"{'measurement':<38} {'files':>6} {'wall s':>8} {'cpu s':>8} {'files/s':>8} {'x parse (wall)':>14} {'x parse (cpu)':>13}")

    def row(self, name: str, timing: Timing, files: Optional[int] = None) -> None:
        files = self.files if files is None else files
        rate = files / timing.wall if timing.wall else float("inf")
        ratio_wall = ratio_cpu = ""
        if self.base is not None:
            ratio_wall = f"{timing.wall / self.base.wall:.3f}"
            ratio_cpu = f"{timing.cpu / self.base.cpu:.3f}"
        print(f"{name:<38} {files:>6} {timing.wall:>8.2f} {timing.cpu:>8.2f} {rate:>8.0f} {ratio_wall:>14} {ratio_cpu:>13}", flush=True)


def report_parallel(report: Report, name: str, timing: Timing, one_job: Timing) -> None:
    report.row(name, timing)
    same = "identical to -j 1" if timing.output == one_job.output else "ERROR: output differs from -j 1"
    print(f"  speed-up over -j 1: {one_job.wall / timing.wall:.2f}x (wall); {same}")
    if timing.output != one_job.output:
        raise SystemExit(1)


def report_pairs(base: Timing, cold: Timing, pairs: int, bare_argv: list[str], cold_argv: list[str], env: dict[str, str]) -> None:
    """The cold/bare CPU ratio over `pairs` runs of each, alternating: on a machine whose speed
    drifts between runs, one pair can land a few percent either way."""
    ratios = [cold.cpu / base.cpu]
    for _ in range(pairs - 1):
        bare = run_measured(bare_argv, env)
        again = run_measured(cold_argv, env)
        if again.output != cold.output:
            raise SystemExit("ERROR: a repeated cold run printed different output")
        ratios.append(again.cpu / bare.cpu)
    listed = ", ".join(f"{r:.3f}" for r in ratios)
    print(f"  cold/bare CPU ratio, {pairs} alternating pairs: {listed}; median {statistics.median(ratios):.3f}, worst {max(ratios):.3f}")


def collect(paths: Sequence[str]) -> list[str]:
    from bufferlint.discovery import discover

    return [c.path for c in discover(list(paths))]


def write_list(paths: Sequence[str], directory: str, name: str) -> str:
    target = os.path.join(directory, name)
    with open(target, "w", encoding="utf-8") as handle:
        handle.write("".join(p + "\n" for p in paths))
    return target


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    if args.phase:
        if args.phase == "prefilter":
            phase_prefilter(args.corpus[0], args.prefilter_jobs)
        else:
            phase_parse(args.corpus[0], args.phase)
        return 0
    with tempfile.TemporaryDirectory(prefix="bufferlint-bench-") as work:
        corpus = args.corpus
        if args.synthetic:
            from bench.synth import write_corpus

            corpus = [os.path.join(work, "synthetic")]
            write_corpus(corpus[0], args.synthetic, seed=0)
        return benchmark(collect(corpus), work, args)


def benchmark(files: list[str], work: str, args: argparse.Namespace) -> int:
    size = sum(os.path.getsize(p) for p in files)
    lines = 0
    for path in files:
        with open(path, "rb") as handle:
            lines += handle.read().count(b"\n")
    print(f"corpus: {len(files)} files, {size / 1e6:.1f} MB, {lines / 1e3:.0f}k lines; python {sys.version.split()[0]}, {os.cpu_count()} cpus")
    list_file = write_list(files, work, "files.txt")
    me = [sys.executable, os.path.abspath(__file__)]
    env = child_env()
    lint = [sys.executable, "-m", "bufferlint", "--exit-zero", "--output-format", "json-lines"]
    report = Report(len(files))

    base = run_measured([*me, "--phase", "libcst", list_file], env)
    report.row("bare libcst.parse_module", base)
    report.base = base
    report.row("ast.parse", run_measured([*me, "--phase", "ast", list_file], env))

    cold = run_measured([*lint, "-j", "1", "--no-cache", *files], env)
    report.row("bufferlint cold -j 1 --no-cache", cold)
    findings = sum(1 for line in cold.output.splitlines() if line.startswith("{"))
    print(f"  findings: {findings}")
    if args.pairs > 1:
        report_pairs(base, cold, args.pairs, [*me, "--phase", "libcst", list_file], [*lint, "-j", "1", "--no-cache", *files], env)

    for jobs in args.jobs[1:-1]:
        timing = run_measured([*lint, "-j", str(jobs), "--no-cache", *files], env)
        report_parallel(report, f"bufferlint cold -j {jobs} --no-cache", timing, cold)
    # The widest run fills the cache: it is the cold -j N measurement and the warm run's set-up.
    cache_dir = os.path.join(work, "cache")
    widest = args.jobs[-1]
    filling = run_measured([*lint, "-j", str(widest), "--cache-dir", cache_dir, *files], env)
    report_parallel(report, f"bufferlint cold -j {widest} (fills cache)", filling, cold)
    warm = run_measured([*lint, "--cache-dir", cache_dir, *files], env)
    report.row("bufferlint warm (cache, unchanged)", warm)
    if warm.output != cold.output:
        print("  ERROR: warm output differs from cold output")
        return 1

    # One file on its own (a copy outside any project: nothing else is scanned), then one file of
    # this repository as pre-commit runs it: the rest of the project is scanned for context, from
    # the cache once a first run has filled it.
    alone = os.path.join(work, "alone.py")
    shutil.copyfile(SMALL_FILE, alone)
    small = [run_measured([sys.executable, "-m", "bufferlint", "--no-cache", alone], env) for _ in range(args.repeat)]
    best = min(small, key=lambda t: t.wall)
    print(f"{'one small file (pre-commit), s':<38} {1:>6} {best.wall:>8.3f} {best.cpu:>8.3f}   median wall {statistics.median(t.wall for t in small):.3f} s of {args.repeat} runs")
    context_cache = os.path.join(work, "context-cache")
    run_measured([sys.executable, "-m", "bufferlint", "--cache-dir", context_cache, SMALL_FILE], env)
    in_project = [run_measured([sys.executable, "-m", "bufferlint", "--cache-dir", context_cache, SMALL_FILE], env) for _ in range(args.repeat)]
    best = min(in_project, key=lambda t: t.wall)
    print(f"{'one file of a project, warm, s':<38} {1:>6} {best.wall:>8.3f} {best.cpu:>8.3f}   median wall {statistics.median(t.wall for t in in_project):.3f} s of {args.repeat} runs")
    version = [run_measured([sys.executable, "-m", "bufferlint", "--version"], env) for _ in range(args.repeat)]
    print(f"{'bufferlint --version (startup), s':<38} {'':>6} {min(t.wall for t in version):>8.3f} {min(t.cpu for t in version):>8.3f}")

    if not args.quick:
        for share in (25, 50):
            subset = files[: max(1, len(files) * share // 100)]
            timing = run_measured([*lint, "-j", "1", "--no-cache", *subset], env)
            print(f"{'peak RSS -j 1 at %d%% of files, MB' % share:<38} {len(subset):>6} {timing.max_rss_kb / 1024:>8.0f}")
        print(f"{'peak RSS -j 1 at 100% of files, MB':<38} {len(files):>6} {cold.max_rss_kb / 1024:>8.0f}")

    if args.torchfix:
        timing = run_measured([sys.executable, "-m", "torchfix", *files], env)
        report.row("TorchFix (for comparison)", timing)

    if args.check_prefilter:
        result = run_measured([*me, "--phase", "prefilter", "--prefilter-jobs", str(max(args.jobs)), list_file], env)
        data = json.loads(result.output.strip().splitlines()[-1])
        bad = data["dropped_with_findings"]
        print(f"prefilter: dropped {data['dropped']} of {data['files']} files; dropped files with findings: {len(bad)} (must be 0)")
        for path in bad:
            print(f"  {path}")
        if bad:
            return 1
    return 0


def parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="*", help="folders (or files) to lint")
    parser.add_argument("--synthetic", type=int, metavar="N", help="generate N synthetic modules instead (bench/synth.py)")
    parser.add_argument("--quick", action="store_true", help="skip the memory series (the CI smoke run)")
    parser.add_argument("--jobs", type=lambda v: [int(x) for x in v.split(",")], default=None,
                        help="comma-separated -j values for the scaling series (default: 1,2,4... up to the cores)")
    parser.add_argument("--repeat", type=int, default=5, help="runs of the small-file case (the best is reported)")
    parser.add_argument("--pairs", type=int, default=1, help="alternating bare-parse and cold runs for the cold ratio (median and worst reported)")
    parser.add_argument("--check-prefilter", action="store_true", help="prove the prefilter on this corpus (slow)")
    parser.add_argument("--torchfix", action="store_true", help="also time TorchFix (when installed)")
    parser.add_argument("--phase", choices=("libcst", "ast", "prefilter"), help=argparse.SUPPRESS)
    parser.add_argument("--prefilter-jobs", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if not args.phase and not args.corpus and not args.synthetic:
        parser.error("give a corpus folder or --synthetic N")
    if args.jobs is None:
        cores = os.cpu_count() or 1
        args.jobs = sorted({1, *[2**k for k in range(1, 8) if 2**k < cores], cores})
    return args


if __name__ == "__main__":
    sys.exit(main())
