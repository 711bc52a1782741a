"""Text and JSON rendering of a VerifyResult (torch-free)."""
from __future__ import annotations

import json

from bufferlint.verify.result import AgainstResult, DeviceError, StrayTensor, VerifyResult

_MODE_TEXT = {
    "cuda": "mode: cuda (real GPU)",
    "meta-emulated": "mode: meta-emulated (no usable GPU: meta tensors under a checker that applies CUDA's device rules)",
}


def to_json(result: VerifyResult) -> str:
    data = result.to_dict()
    data.pop("timings", None)  # machine-dependent; the benchmark reads them from the worker directly
    return json.dumps(data, indent=2)


def _shape(shape: list[int]) -> str:
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def stray_line(stray: StrayTensor) -> str:
    note = f"  [{stray.note}]" if stray.note else ""
    made = f", made at {stray.created}" if stray.created else ""
    also = f" (also as {', '.join(stray.also)})" if stray.also else ""
    return f"  {stray.path}: {stray.dtype} {_shape(stray.shape)} on {stray.device}{made}{also}{note}"


def error_line(error: DeviceError) -> str:
    source = f": {error.source}" if error.source else ""
    return f"  {error.op} mixes {' and '.join(error.devices)} at {error.location}{source}"


def _against_lines(against: AgainstResult) -> list[str]:
    lines = [f"against {against.old}: {against.status}"]
    lines += [f"  {message}" for message in against.messages]
    if against.status == "pass":
        lines.append(f"  state_dict keys equal; old state_dict loads with strict=True; outputs: {against.outputs}")
    return lines


def to_text(result: VerifyResult) -> str:
    lines = [f"bufferlint verify {result.target}"]
    if result.mode:
        lines.append(_MODE_TEXT.get(result.mode, f"mode: {result.mode}"))
    fatal = [s for s in result.stray_tensors if s.fatal]
    scalars = [s for s in result.stray_tensors if not s.fatal and not s.note]
    rehomed = [s for s in result.stray_tensors if not s.fatal and s.note]
    if fatal:
        lines.append(f"stray tensors (not parameters or buffers, so .to()/.cuda() leave them behind): {len(fatal)}")
        lines += [stray_line(s) for s in fatal]
    elif result.mode:
        lines.append("stray tensors: none")
    if scalars:
        lines.append(f"0-dim tensors left on their device (allowed: CUDA takes them as scalars): {len(scalars)}")
        lines += [stray_line(s) for s in scalars]
    if rehomed:
        lines.append(f"left behind by .to(), put back by forward itself (allowed): {len(rehomed)}")
        lines += [stray_line(s) for s in rehomed]
    if result.device_errors:
        lines.append(f"ops mixing devices: {len(result.device_errors)}")
        lines += [error_line(e) for e in result.device_errors]
    elif result.forward == "ran":
        lines.append("forward: ran, no op mixed devices")
    lines += result.messages
    if result.against is not None:
        lines += _against_lines(result.against)
    lines.append(f"status: {result.status}")
    return "\n".join(lines)
