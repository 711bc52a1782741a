"""Plain-data results passed from the worker to the parent as JSON (torch-free)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Status = Literal["pass", "fail", "inconclusive"]


@dataclass
class StrayTensor:
    """A tensor reachable from the module that `.to()` does not move."""

    path: str  # e.g. "blocks.0.attn.mask", "cache[0]", "helper.table"
    device: str  # where it is after the move
    shape: list[int]
    dtype: str = ""
    fatal: bool = True  # 0-dim tensors are listed but pass: CUDA accepts 0-dim CPU operands
    note: str = ""  # e.g. "class attribute of Model"
    created: str = ""  # "file.py:LINE" that made it, when the verifier built the module
    also: list[str] = field(default_factory=list)  # other paths that reach the same tensor


@dataclass
class DeviceError:
    """One op that received tensors on more than one device."""

    op: str
    devices: list[str]
    location: str  # "file.py:LINE" of the user's code
    source: str = ""  # the text of that line


@dataclass
class AgainstResult:
    old: str  # "HEAD:models.py" or a file path
    status: Status
    missing_keys: list[str] = field(default_factory=list)  # in old state_dict, not in new
    extra_keys: list[str] = field(default_factory=list)  # in new state_dict, not in old
    load_error: str | None = None
    outputs: str = "not compared"  # "equal" | "close" | "differ" | "not compared"
    max_abs_diff: float | None = None
    messages: list[str] = field(default_factory=list)


@dataclass
class VerifyResult:
    target: str
    mode: str = ""  # "cuda" | "meta-emulated"
    status: Status = "fail"
    stray_tensors: list[StrayTensor] = field(default_factory=list)
    device_errors: list[DeviceError] = field(default_factory=list)
    against: AgainstResult | None = None
    messages: list[str] = field(default_factory=list)
    forward: str = "skipped"  # "ran" | "skipped" | "inconclusive" | "crashed"
    timings: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> VerifyResult:
        against = data.get("against")
        return cls(
            target=data["target"],
            mode=data.get("mode", ""),
            status=data.get("status", "fail"),
            stray_tensors=[StrayTensor(**s) for s in data.get("stray_tensors", [])],
            device_errors=[DeviceError(**e) for e in data.get("device_errors", [])],
            against=AgainstResult(**against) if against else None,
            messages=list(data.get("messages", [])),
            forward=data.get("forward", "skipped"),
            timings=dict(data.get("timings", {})),
        )


def overall_status(
    strays: list[StrayTensor], errors: list[DeviceError], forward: str, against: AgainstResult | None
) -> Status:
    """A definite problem anywhere is a failure; otherwise anything unproven is inconclusive."""
    if any(s.fatal for s in strays) or errors or forward == "crashed":
        return "fail"
    if against is not None and against.status == "fail":
        return "fail"
    if forward in ("inconclusive", "skipped") or (against is not None and against.status == "inconclusive"):
        return "inconclusive"  # a forward that never ran proves nothing about the ops it would run
    return "pass"
