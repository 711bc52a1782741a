"""ANSI colours, used only on a terminal; NO_COLOR turns them off, FORCE_COLOR on (no-color.org)."""

from __future__ import annotations

import os
from typing import Mapping, Optional, TextIO

_CODES = {"bold": "1", "red": "31", "green": "32", "cyan": "36", "blue": "34", "dim": "2"}


def use_color(stream: TextIO, environ: Optional[Mapping[str, str]] = None) -> bool:
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR"):
        return False
    if env.get("FORCE_COLOR"):
        return True
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class Painter:
    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, text: str, *styles: str) -> str:
        if not self.enabled or not styles:
            return text
        return f"\x1b[{';'.join(_CODES[s] for s in styles)}m{text}\x1b[0m"
