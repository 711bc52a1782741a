"""Counts for the closing summary line, as ruff prints it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class RunSummary:
    files: int = 0
    fixed: int = 0
    fixing: bool = False
    show_unsafe_hint: bool = True
    unsafe_enabled: bool = False
    diff_mode: bool = False
