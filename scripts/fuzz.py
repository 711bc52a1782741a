"""Run the fuzz properties of tests/test_fuzz.py with many more examples and print counts.

    python scripts/fuzz.py --examples 2000            # every strategy, random seeds
    python scripts/fuzz.py --examples 500 --only module-programs mutated-fixtures

Each strategy runs `check_properties` (lint never raises; a fix parses, re-lints to what it
reported, and is idempotent) with all rules and unsafe fixes on; `module-programs` runs once more
with safe fixes only. Exit status 1 when a property fails (hypothesis prints the smallest input).
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hypothesis import given  # noqa: E402

from tests import test_fuzz as fuzz  # noqa: E402


def run_one(name: str, examples: int, safe_only: bool) -> bool:
    strategy = fuzz.STRATEGIES[name]
    config = fuzz.ALL_RULES if safe_only else fuzz.ALL_RULES_UNSAFE

    @fuzz.fuzz_settings(examples)
    @given(strategy)
    def run(data: bytes) -> None:
        fuzz.check_properties(data, config)

    fuzz.STATS.clear()
    start = time.monotonic()
    try:
        run()
        ok = True
    except Exception:  # a falsified property: report it, go on with the other strategies
        traceback.print_exc()
        ok = False
    label = f"{name}{' (safe fixes only)' if safe_only else ''}"
    counts = ", ".join(f"{key} {value}" for key, value in sorted(fuzz.STATS.items()))
    print(f"{'ok  ' if ok else 'FAIL'} {label}: {examples} examples in {time.monotonic() - start:.0f} s; {counts}", flush=True)
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=1000, help="examples per strategy (default: 1000)")
    parser.add_argument("--only", nargs="+", choices=sorted(fuzz.STRATEGIES), help="run these strategies only")
    args = parser.parse_args()
    names = args.only or list(fuzz.STRATEGIES)
    results = [run_one(name, args.examples, safe_only=False) for name in names]
    if "module-programs" in names:
        results.append(run_one("module-programs", args.examples, safe_only=True))
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
