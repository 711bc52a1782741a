"""Recall of the default rules against an independent scan's true positives.

    python scripts/recall.py scripts/recall_fresh28.json OUT   # OUT: survey.py --out folder of that set

The scan (`scripts/recall_fresh28.json`) was written by a reviewer who never read the rules: it
lists, per repository, the true positives found by searching the code and judging each candidate
under docs/accuracy.md. A true positive counts as found when a default-rule finding sits in the
same file within two lines of it, or names the same attribute.
"""

from __future__ import annotations

import collections
import glob
import json
import sys
from typing import Any

OPT_IN = {"BUF004", "BUF006", "BUF010", "BUF011"}


def findings_by_file(folder: str) -> dict[tuple[str, str], list[tuple[int, str]]]:
    found: dict[tuple[str, str], list[tuple[int, str]]] = collections.defaultdict(list)
    for path in glob.glob(f"{folder}/*.json"):
        with open(path) as handle:
            result = json.load(handle)
        for finding in result["findings"]:
            if finding["code"] not in OPT_IN:
                found[(result["name"], finding["relpath"])].append((finding["location"]["row"], finding["message"]))
    return found


def is_found(positive: dict[str, Any], found: dict[tuple[str, str], list[tuple[int, str]]]) -> bool:
    near = found.get((positive["repo"], positive["path"]), [])
    attr = str(positive.get("attr", "")).split()[0].strip("`.,()") if positive.get("attr") else ""
    return any(abs(row - int(positive["line"])) <= 2 for row, _ in near) or bool(
        attr and any(f"`{attr}`" in message or f"`self.{attr}`" in message for _, message in near)
    )


def main(scan_path: str, folder: str) -> None:
    with open(scan_path) as handle:
        scan = json.load(handle)
    found = findings_by_file(folder)
    hits: collections.Counter[str] = collections.Counter()
    totals: collections.Counter[str] = collections.Counter()
    for positive in scan["true"]:
        totals[positive["kind"]] += 1
        hits[positive["kind"]] += is_found(positive, found)
    print(f"recall {sum(hits.values())} / {sum(totals.values())}")
    for kind, total in totals.most_common():
        print(f"  {kind}: {hits[kind]} / {total}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
