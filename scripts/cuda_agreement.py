"""Does the verifier's meta emulation agree with a real GPU? One case at a time.

For every fixture with `# runtime...: Build(args) -> input` lines, and for each of its three
texts (as written, after `--fix`, after `--fix --unsafe-fixes`), the module is built from the same
seed three times and checked three ways:
- `emulated`: `check_module(..., device="meta")`, what a user without a GPU gets;
- `checked`: `check_module(..., device="cuda")`, the same walk and checker on the real device;
- `plain`: moved with `.cuda()` and run with no checker at all: does CUDA itself refuse forward?

A case agrees when the emulation reports the same stray tensors (paths) and the same mixed-device
ops (op and source line) as the real device, and when "the emulation found a mixed-device op"
matches "plain CUDA raised a device error". A meta forward that stops as `inconclusive` (an op
that needs values) is counted apart: it never claims a pass.

Needs a CUDA machine. `--real-device cpu` runs the same plumbing on a CPU machine (every
comparison then means nothing; it only shows the script runs).

    python scripts/cuda_agreement.py --out agreement.json
"""
from __future__ import annotations

import argparse
import json
import sys
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bufferlint.verify.check import CheckOutcome, check_module, move_inputs  # noqa: E402
from tests.fixture_cases import Case, Runtime, all_cases  # noqa: E402
from tests.module_loading import load_module  # noqa: E402

# how CUDA words a refusal to mix devices (generic ops, cuDNN arguments, indexing)
_DEVICE_ERROR = ("same device", "two devices", "is on cpu", "expected it to be on gpu", "device as the indexed")


@dataclass
class Side:
    """What one way of checking saw."""

    forward: str = ""
    strays: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    note: str = ""


@dataclass
class Row:
    case: str
    text: str  # "original" | "fixed" | "unsafe"
    build: str
    emulated: Side
    checked: Side
    plain: Side
    verdict: str = ""


def _texts(case: Case) -> dict[str, Path]:
    texts = {"original": case.path}
    for name, suffix in (("fixed", ".fixed.py"), ("unsafe", ".unsafe.py")):
        if case.sibling(suffix).exists():
            texts[name] = case.sibling(suffix)
    return texts


def _build(path: Path, runtime: Runtime) -> tuple[Any, tuple]:
    module = load_module(path, prefix="bufferlint_agreement")
    scope = {"torch": torch, **vars(module)}
    torch.manual_seed(0)
    built = eval(runtime.build, scope)
    torch.manual_seed(1)
    value = eval(runtime.input, scope)
    return built, value if isinstance(value, tuple) else (value,)


def _side(outcome: CheckOutcome) -> Side:
    return Side(
        forward=outcome.forward,
        strays=sorted(s.path for s in outcome.strays if s.fatal),
        errors=sorted(f"{e.op} @ {e.location.rpartition('/')[2]}" for e in outcome.errors),
        note="; ".join(outcome.messages)[:300],
    )


def _checked(path: Path, runtime: Runtime, device: str) -> Side:
    try:
        module, args = _build(path, runtime)
        return _side(check_module(module, args, device=device))
    except Exception as exc:  # a build that fails is a result, not a crash of the survey
        return Side(forward="build failed", note=f"{type(exc).__name__}: {exc}"[:300])


def _plain(path: Path, runtime: Runtime, real: str) -> Side:
    try:
        module, args = _build(path, runtime)
    except Exception as exc:
        return Side(forward="build failed", note=f"{type(exc).__name__}: {exc}"[:300])
    return _plain_run(module, args, real)


def _plain_run(module: Any, args: tuple, real: str) -> Side:
    try:
        module.to(real)
        moved, kwargs = move_inputs(args, {}, torch.device(real))
        with torch.no_grad():
            module(*moved, **kwargs)
        return Side(forward="ran")
    except Exception as exc:
        text = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
        kind = "device error" if any(m in text.lower() for m in _DEVICE_ERROR) else "crashed"
        return Side(forward=kind, note=text + " | " + traceback.format_exc().splitlines()[-3][:120])


def _verdict(row: Row) -> str:
    emulated, checked, plain = row.emulated, row.checked, row.plain
    if "build failed" in (emulated.forward, checked.forward):
        return "build failed"
    if emulated.forward == "inconclusive":
        return "meta inconclusive"
    if emulated.strays != checked.strays:
        return "strays differ"
    if emulated.errors != checked.errors or emulated.forward != checked.forward:
        return "checker differs"
    if bool(emulated.errors) != (plain.forward == "device error"):
        return "plain CUDA differs"
    return "agree"


def _timm_rows(names: list[str], real: str) -> list[Row]:
    """Real architectures: timm models (random weights) on one image of their default size."""
    if not names:
        return []
    import timm  # type: ignore[import-not-found]  # only where asked for: the GPU image has it

    rows = []
    for name in names:
        runtime = Runtime(f"timm.create_model({name!r}, pretrained=False).eval()", "")
        sides = [_timm_side(timm, name, device) for device in ("meta", real if real != "cpu" else "meta")]
        row = Row(f"timm/{name}", "original", runtime.build, sides[0], sides[1], _timm_side(timm, name, "plain:" + real))
        row.verdict = _verdict(row)
        rows.append(row)
        print(f"{row.verdict}: timm/{name}" + ("" if row.verdict == "agree" else f"\n  {asdict(row)}"), flush=True)
    return rows


def _timm_side(timm: Any, name: str, device: str) -> Side:
    try:
        torch.manual_seed(0)
        model = timm.create_model(name, pretrained=False).eval()
        size = model.pretrained_cfg.get("input_size", (3, 224, 224))
        torch.manual_seed(1)
        image = torch.randn(1, *size)
    except Exception as exc:
        return Side(forward="build failed", note=f"{type(exc).__name__}: {exc}"[:300])
    if device.startswith("plain:"):
        return _plain_run(model, (image,), device.partition(":")[2])
    return _side(check_module(model, (image,), device=device))


def survey(real: str) -> list[Row]:
    rows = []
    for case in all_cases():
        runtimes = {(r.build, r.input): r for r in case.runtimes()}
        for runtime in runtimes.values():
            for text, path in _texts(case).items():
                row = Row(case.id, text, runtime.build, _checked(path, runtime, "meta"),
                          _checked(path, runtime, real if real != "cpu" else "meta"), _plain(path, runtime, real))
                row.verdict = _verdict(row)
                rows.append(row)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="JSON file for every row")
    parser.add_argument("--real-device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--timm", nargs="*", default=[], metavar="MODEL", help="also these timm architectures")
    parser.add_argument("--no-fixtures", action="store_true", help="only the --timm models")
    options = parser.parse_args()
    if options.real_device == "cuda" and not torch.cuda.is_available():
        parser.error("no CUDA device here (use --real-device cpu to try the plumbing only)")
    rows = [] if options.no_fixtures else survey(options.real_device)
    rows += _timm_rows(options.timm, options.real_device)
    options.out.write_text(json.dumps([asdict(r) for r in rows], indent=1) + "\n")
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.verdict] = counts.get(row.verdict, 0) + 1
    device = torch.cuda.get_device_name() if options.real_device == "cuda" else "cpu (plumbing only)"
    print(f"torch {torch.__version__} on {device}: {len(rows)} cases")
    for verdict, count in sorted(counts.items()):
        print(f"  {verdict}: {count}")
    for row in rows:
        if row.verdict not in ("agree", "meta inconclusive"):
            print(f"{row.verdict}: {row.case} [{row.text}] {row.build}\n  emulated={row.emulated}\n  checked={row.checked}\n  plain={row.plain}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
