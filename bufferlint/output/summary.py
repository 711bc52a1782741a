"""What a formatter needs to know about the run besides the findings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from bufferlint.config import Settings


@dataclass
class RunSummary:
    files: int = 0
    fixed: int = 0
    fixing: bool = False
    show_unsafe_hint: bool = True
    unsafe_enabled: bool = False
    diff_mode: bool = False
    color: bool = False  # ANSI colours: only on a terminal (see output.style)
    quiet: bool = False  # diagnostics only, no summary lines
    settings: Optional["Settings"] = None  # to rebuild a fix preview in `full`
    sources: dict[str, str] = field(default_factory=dict)  # text of files not on disk (stdin)
