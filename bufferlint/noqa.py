"""`# noqa`, `# noqa: BUF001, BUF002` and the file-level `# bufferlint: noqa`."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Za-z]+[0-9]+(?:\s*,?\s*[A-Za-z]+[0-9]+)*))?", re.IGNORECASE)
_FILE_NOQA = re.compile(r"#\s*bufferlint\s*:\s*noqa\b", re.IGNORECASE)
_CODE = re.compile(r"[A-Za-z]+[0-9]+")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


@dataclass
class NoqaMap:
    """Row -> suppressed codes (None means every code) for one file."""

    rows: dict[int, Optional[frozenset[str]]] = field(default_factory=dict)
    whole_file: bool = False

    @classmethod
    def from_text(cls, text: str) -> "NoqaMap":
        result = cls()
        if "noqa" not in text.lower():
            return result
        for row, line in enumerate(_LINE_BREAK.split(text), start=1):
            if "#" not in line:
                continue
            if _FILE_NOQA.search(line):
                result.whole_file = True
                continue
            match = _NOQA.search(line)
            if match:
                codes = match.group("codes")
                result.rows[row] = None if codes is None else frozenset(c.upper() for c in _CODE.findall(codes))
        return result

    def suppresses(self, code: str, rows: tuple[int, ...]) -> bool:
        if self.whole_file:
            return True
        for row in rows:
            if row in self.rows:
                codes = self.rows[row]
                if codes is None or code in codes:
                    return True
        return False
