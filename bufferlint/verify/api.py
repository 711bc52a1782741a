"""Python entry point for `bufferlint --fix --verify` (torch-free in this process).

    results = verify_against("models/attn.py", original_text, ["Attention"], None, timeout=120)

Each class of the rewritten file is built from both versions with the same seed and compared on
the CPU: equal `state_dict()` keys, the original checkpoint loads with `strict=True`, and equal
outputs for the configured example input. All classes run in one worker subprocess.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from bufferlint.verify.runner import run_jobs

ClassStatus = Literal["pass", "fail", "unverified", "inconclusive"]


@dataclass
class ClassResult:
    class_name: str
    status: ClassStatus
    reasons: list[str] = field(default_factory=list)


def verify_against(
    new_source_path: str,
    old_source_text: str,
    class_names: list[str],
    config: dict[str, dict[str, Any]] | None = None,
    timeout: float = 120.0,
    *,
    on_class_start: Callable[[str], None] | None = None,
) -> list[ClassResult]:
    """Verify the rewritten classes in `new_source_path` against `old_source_text`.

    `config` maps a class name to {"kwargs": {...}, "input": "expr"}; classes without an entry
    use `[tool.bufferlint.verify."pkg.mod:Class"]` from the nearest pyproject.toml. Classes that
    cannot be built (required arguments, no kwargs) come back "unverified" with the reason.
    `timeout` is per class. `on_class_start(name)` drives a display such as `Progress.advance`.
    """
    if not class_names:
        return []
    path = str(Path(new_source_path).resolve())
    jobs = [
        {"kind": "against", "file": path, "class_name": name, "old_source": old_source_text,
         "config": (config or {}).get(name)}
        for name in class_names
    ]
    notify = (lambda index: on_class_start(class_names[index])) if on_class_start else None
    records = run_jobs(jobs, timeout, notify)
    return [_to_class_result(name, record) for name, record in zip(class_names, records)]


def _to_class_result(name: str, record: dict[str, Any]) -> ClassResult:
    if "result" in record:
        data = record["result"]
        return ClassResult(class_name=name, status=data["status"], reasons=list(data["reasons"]))
    if "usage_error" in record:
        return ClassResult(class_name=name, status="unverified", reasons=[record["usage_error"]])
    return ClassResult(class_name=name, status="fail", reasons=[record.get("error", "unknown failure")])
