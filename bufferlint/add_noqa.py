"""`--add-noqa`: suppress every current finding with a `# noqa: CODE` comment, so that adopting
bufferlint on a large codebase starts green and only new code is held to it (as ruff's
`--add-noqa` does).

The comment goes on the last line of the flagged statement, or on its first line when the last
cannot take one; a line that already has `# noqa: CODES` gets the new codes added there. A line
inside a multi-line string or ending in a backslash continuation cannot take a comment. Only the
text of those lines changes (encoding, BOM and line endings stay). The result must parse and must
no longer report the suppressed findings; otherwise the file is left as it was.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable, Optional

from bufferlint.model import Finding
from bufferlint.source import SourceError, ascii_spelled, decode

_LINES = re.compile(rb"[^\r\n]*(?:\r\n|\r|\n)?")
_NOQA_CODES = re.compile(rb"#\s*noqa:\s*(?P<codes>[A-Za-z]+[0-9]+(?:\s*,?\s*[A-Za-z]+[0-9]+)*)", re.IGNORECASE)
_BARE_NOQA = re.compile(rb"#\s*noqa(?!:)", re.IGNORECASE)


@dataclass(frozen=True)
class Added:
    data: Optional[bytes]  # the new file, or None when nothing changes
    directives: int  # lines that got a comment or new codes
    refused: Optional[str] = None  # why the file is left alone


def add_noqa(data: bytes, findings: Iterable[Finding]) -> Added:
    """`data` with a `# noqa` for each of `findings` (one file's)."""
    try:
        text = decode(data)
        encoding = tokenize.detect_encoding(io.BytesIO(data).readline)[0]
    except (SourceError, SyntaxError) as error:
        return Added(None, 0, f"cannot read it: {error}")
    if not ascii_spelled(encoding) or re.search(r"\r(?!\n)", text):
        return Added(None, 0, "its encoding or lone carriage returns keep its lines apart from Python's")
    blocked = _rows_without_room(text)
    if blocked is None:
        return Added(None, 0, "it does not tokenize")
    codes_by_row: dict[int, set[str]] = defaultdict(set)
    for finding in findings:
        row = _row_for(finding, blocked)
        if row is None:
            return Added(None, 0, f"no line of the statement at row {finding.location.row} can take a comment")
        codes_by_row[row].add(finding.code)
    lines = _LINES.findall(data)[:-1] if data else []
    for row, codes in codes_by_row.items():
        lines[row - 1] = _with_codes(lines[row - 1], codes)
    new = b"".join(lines)
    return Added(None if new == data else new, len(codes_by_row))


def _row_for(finding: Finding, blocked: frozenset[int]) -> Optional[int]:
    """The last row of the statement if it can take a comment, else the first (both count for `# noqa`)."""
    rows = finding.noqa_rows or (finding.location.row,)
    for row in sorted(set(rows), reverse=True):
        if row not in blocked:
            return row
    return None


def _rows_without_room(text: str) -> Optional[frozenset[int]]:
    """Rows where a comment cannot be appended: inside a multi-line string, or continued by `\\`."""
    blocked: set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.STRING or token.type in _FSTRING_PARTS:
                blocked.update(range(token.start[0], token.end[0]))
    except (tokenize.TokenError, SyntaxError):
        return None
    for row, line in enumerate(text.split("\n"), start=1):
        if line.rstrip("\r \t").endswith("\\"):
            blocked.add(row)
    return frozenset(blocked)


# Python 3.12 splits f-strings into parts; a part spanning lines blocks them like a string does.
_FSTRING_PARTS = frozenset(getattr(tokenize, name) for name in ("FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END") if hasattr(tokenize, name))


def _with_codes(line: bytes, codes: set[str]) -> bytes:
    body = line.rstrip(b"\r\n")
    ending = line[len(body) :]
    existing = _NOQA_CODES.search(body)
    if existing is not None:
        known = re.findall(rb"[A-Za-z]+[0-9]+", existing.group("codes"))
        merged = sorted({c.decode().upper() for c in known} | codes)
        return body[: existing.start("codes")] + ", ".join(merged).encode() + body[existing.end("codes") :] + ending
    if _BARE_NOQA.search(body):
        return line  # suppresses every code already
    return body.rstrip(b" \t") + b"  # noqa: " + ", ".join(sorted(codes)).encode() + ending
