"""Re-run the accuracy survey (issue 9): bufferlint over real PyTorch repositories.

For each repository: locate its working tree under the corpus folder (or extract the `.py` files
of a fetched mirror, `<mirror>/<owner>+<name>/repo`), run bufferlint with every rule and JSON
output, run `--fix --unsafe-fixes` on a temporary copy and check that every fixed file parses,
then join the findings with the reviewed verdicts in `scripts/survey_verdicts.json`.

    python scripts/survey.py                     # table on stdout, raw results in --out
    python scripts/survey.py --repos CLIP,kornia --unreviewed   # list findings lacking a verdict
    python scripts/survey.py --write-doc         # also refresh the table in docs/survey.md

The corpus is never modified and never part of this repository.
"""

from __future__ import annotations

import argparse
import ast
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parent.parent
VERDICTS = ROOT / "scripts" / "survey_verdicts.json"
DOC = ROOT / "docs" / "survey.md"
TABLE_START, TABLE_END = "<!-- survey-table:start -->", "<!-- survey-table:end -->"

# (folder name under the corpus, GitHub owner/name)
REPOSITORIES = [
    ("pytorch-image-models", "huggingface/pytorch-image-models"),
    ("kornia", "kornia/kornia"),
    ("speechbrain", "speechbrain/speechbrain"),
    ("fairseq", "facebookresearch/fairseq"),
    ("detectron2", "facebookresearch/detectron2"),
    ("whisper", "openai/whisper"),
    ("CLIP", "openai/CLIP"),
    ("open_clip", "mlfoundations/open_clip"),
    ("litgpt", "Lightning-AI/litgpt"),
    ("x-transformers", "lucidrains/x-transformers"),
    ("vit-pytorch", "lucidrains/vit-pytorch"),
    ("denoising-diffusion-pytorch", "lucidrains/denoising-diffusion-pytorch"),
    ("yolov5", "ultralytics/yolov5"),
    ("stable-diffusion", "CompVis/stable-diffusion"),
    ("segment-anything", "facebookresearch/segment-anything"),
    ("nanoGPT", "karpathy/nanoGPT"),
]


@dataclass
class RepoResult:
    name: str
    files: int = 0
    findings: list[dict] = field(default_factory=list)
    fixes_applied: int = 0
    fixed_files: int = 0
    fixed_files_parsed: int = 0
    unparsed: list[str] = field(default_factory=list)
    seconds: float = 0.0
    missing: bool = False


def locate(name: str, github: str, corpus: Path, mirror: Path) -> Optional[Path]:
    """The working tree, extracting the `.py` files of a fetched mirror when there is none yet."""
    tree = corpus / name
    if tree.is_dir() and any(tree.rglob("*.py")):
        return tree
    git_dir = mirror / github.replace("/", "+") / "repo"
    if not git_dir.is_dir():
        return None
    listing = subprocess.run(["git", f"--git-dir={git_dir}", "ls-tree", "-r", "HEAD"], capture_output=True, text=True, check=True)
    for line in listing.stdout.splitlines():
        meta, _, path = line.partition("\t")
        if not path.endswith((".py", ".toml", ".cfg")):
            continue
        blob = subprocess.run(["git", f"--git-dir={git_dir}", "cat-file", "blob", meta.split()[2]], capture_output=True)
        if blob.returncode == 0:
            target = tree / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(blob.stdout)
    return tree


def bufferlint(paths: list[str], *extra: str) -> list[dict]:
    command = [sys.executable, "-m", "bufferlint", "--output-format", "json", "--exit-zero", "--no-cache", "--select", "BUF", *extra, *paths]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise RuntimeError(f"bufferlint failed on {paths}: {done.stderr[-2000:]}")
    return json.loads(done.stdout)


def survey_repo(name: str, tree: Path) -> RepoResult:
    result = RepoResult(name, files=sum(1 for _ in tree.rglob("*.py")))
    started = time.monotonic()
    result.findings = bufferlint([str(tree)])
    result.seconds = time.monotonic() - started
    for finding in result.findings:
        finding["relpath"] = os.path.relpath(finding["filename"], tree)
    _check_fixes(tree, result)
    return result


def _check_fixes(tree: Path, result: RepoResult) -> None:
    """`--fix --unsafe-fixes` on a copy: count what changed and parse every changed file."""
    with tempfile.TemporaryDirectory(prefix="bufferlint-survey-") as scratch:
        copy = Path(scratch) / tree.name
        shutil.copytree(tree, copy, symlinks=True, ignore=lambda folder, names: [n for n in names if n.startswith(".bufferlint")])
        before = {p: p.read_bytes() for p in copy.rglob("*.py")}
        remaining = bufferlint([str(copy)], "--fix", "--unsafe-fixes")
        fixable_before = sum(1 for f in result.findings if f["fix"] is not None)
        fixable_after = sum(1 for f in remaining if f["fix"] is not None)
        result.fixes_applied = fixable_before - fixable_after
        for path, old in before.items():
            new = path.read_bytes()
            if new == old:
                continue
            result.fixed_files += 1
            try:
                ast.parse(new, filename=str(path))
                result.fixed_files_parsed += 1
            except SyntaxError as error:
                result.unparsed.append(f"{path.relative_to(copy)}: {error}")


def verdict_key(repo: str, finding: dict) -> str:
    return f"{repo}/{finding['relpath']}:{finding['location']['row']}:{finding['code']}"


def table(results: list[RepoResult], verdicts: dict[str, dict]) -> str:
    codes = sorted({f["code"] for r in results for f in r.findings})
    header = ["repository", "files", "findings", *codes, "true", "false", "unreviewed", "fixes applied", "fixed files parsed"]
    rows = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    totals: collections.Counter[str] = collections.Counter()
    for result in results:
        per_code = collections.Counter(f["code"] for f in result.findings)
        judged = collections.Counter(verdicts.get(verdict_key(result.name, f), {}).get("verdict", "unreviewed") for f in result.findings)
        parsed = f"{result.fixed_files_parsed}/{result.fixed_files}"
        cells = [result.name, str(result.files), str(len(result.findings)), *(str(per_code[c]) for c in codes),
                 str(judged["true"]), str(judged["false"]), str(judged["unreviewed"]), str(result.fixes_applied), parsed]
        rows.append("| " + " | ".join(cells) + " |")
        totals.update({"files": result.files, "findings": len(result.findings), **per_code, **judged,
                       "fixes": result.fixes_applied, "fixed": result.fixed_files, "parsed": result.fixed_files_parsed})
    cells = ["**total**", str(totals["files"]), str(totals["findings"]), *(str(totals[c]) for c in codes),
             str(totals["true"]), str(totals["false"]), str(totals["unreviewed"]), str(totals["fixes"]),
             f"{totals['parsed']}/{totals['fixed']}"]
    rows.append("| " + " | ".join(cells) + " |")
    judged_total = totals["true"] + totals["false"]
    rate = 100.0 * totals["false"] / judged_total if judged_total else 0.0
    rows.append("")
    rows.append(f"False alarms: {totals['false']} of {judged_total} reviewed findings ({rate:.1f}%).")
    rows.append("")
    rows.extend(_per_rule(results, verdicts, codes))
    return "\n".join(rows)


def _per_rule(results: list[RepoResult], verdicts: dict[str, dict], codes: list[str]) -> list[str]:
    """False alarms per rule: each rule has its own owner and its own target."""
    rows = ["| rule | findings | false | false alarms |", "|---|---|---|---|"]
    for code in codes:
        found = [(r.name, f) for r in results for f in r.findings if f["code"] == code]
        false = sum(1 for name, f in found if verdicts.get(verdict_key(name, f), {}).get("verdict") == "false")
        rows.append(f"| {code} | {len(found)} | {false} | {100.0 * false / len(found):.1f}% |")
    return rows


def write_doc(text: str) -> None:
    doc = DOC.read_text()
    start, end = doc.index(TABLE_START) + len(TABLE_START), doc.index(TABLE_END)
    DOC.write_text(doc[:start] + "\n" + text + "\n" + doc[end:])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=Path("/work/corpus"))
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--repos", help="comma-separated folder names (default: all)")
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "bufferlint-survey")
    parser.add_argument("--unreviewed", action="store_true", help="list findings without a verdict")
    parser.add_argument("--write-doc", action="store_true", help="refresh the table in docs/survey.md")
    args = parser.parse_args()
    wanted = set(args.repos.split(",")) if args.repos else None
    verdicts = json.loads(VERDICTS.read_text()) if VERDICTS.exists() else {}
    args.out.mkdir(parents=True, exist_ok=True)
    results = []
    for name, github in REPOSITORIES:
        if wanted is not None and name not in wanted:
            continue
        tree = locate(name, github, args.corpus, args.mirror)
        if tree is None:
            print(f"skipped {name}: not in {args.corpus} and no mirror (use the fetch tool: github:{github})", file=sys.stderr)
            continue
        result = survey_repo(name, tree)
        (args.out / f"{name}.json").write_text(json.dumps(result.__dict__, indent=1))
        print(f"{name}: {len(result.findings)} findings, {result.seconds:.0f}s", file=sys.stderr)
        for problem in result.unparsed:
            print(f"  FIXED FILE DOES NOT PARSE: {problem}", file=sys.stderr)
        if args.unreviewed:
            for finding in result.findings:
                if verdict_key(name, finding) not in verdicts:
                    print(f"  unreviewed {verdict_key(name, finding)} {finding['message']}", file=sys.stderr)
        results.append(result)
    text = table(results, verdicts)
    print(text)
    if args.write_doc:
        write_doc(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
