"""Name the user's source line that is running right now (innermost frame outside torch and
outside this package). Called only when something is reported, so walking frames is cheap."""
from __future__ import annotations

import ast
import functools
import linecache
import os
import sys
from types import FrameType

import torch

from bufferlint.verify.paths import display_path

_SKIPPED_DIRS = (
    os.path.dirname(torch.__file__) + os.sep,
    os.path.dirname(os.path.abspath(__file__)) + os.sep,
)


def user_frame_location() -> tuple[str, str]:
    """("file.py:LINE", "source text") of the innermost user frame, or ("<unknown>", "")."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(_SKIPPED_DIRS) and not filename.startswith("<frozen"):
            return f"{display_path(filename)}:{frame.f_lineno}", statement_text(filename, frame.f_lineno)
        frame = frame.f_back
    return "<unknown>", ""


_STATEMENT_LIMIT = 200


def statement_text(filename: str, line: int) -> str:
    """The whole statement at `line`, on one line (a call spread over several lines is not cut
    mid-call), shortened to a readable length; the line alone where the file cannot be parsed."""
    text = linecache.getline(filename, line).strip()
    span = _statement_spans(filename).get(line)
    if span is not None and span[1] > span[0]:
        lines = (linecache.getline(filename, n).strip() for n in range(span[0], span[1] + 1))
        text = " ".join(part for part in lines if part and not part.startswith("#"))
    return text if len(text) <= _STATEMENT_LIMIT else text[: _STATEMENT_LIMIT - 1] + "…"


@functools.lru_cache(maxsize=64)
def _statement_spans(filename: str) -> dict[int, tuple[int, int]]:
    """Each line of the file -> (first, last) line of the innermost simple statement holding it."""
    try:
        tree = ast.parse("".join(linecache.getlines(filename)))
    except (SyntaxError, ValueError):
        return {}
    spans: dict[int, tuple[int, int]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and not isinstance(node, _COMPOUND) and node.end_lineno is not None:
            for n in range(node.lineno, node.end_lineno + 1):
                known = spans.get(n)
                if known is None or known[1] - known[0] > node.end_lineno - node.lineno:
                    spans[n] = (node.lineno, node.end_lineno)
    return spans


_COMPOUND = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If, ast.For, ast.AsyncFor, ast.While,
             ast.With, ast.AsyncWith, ast.Try, ast.Match)


def traceback_location(exc: BaseException) -> str:
    """"file.py:LINE" of the innermost user frame in an exception's traceback."""
    tb = exc.__traceback__
    found = ""
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if not filename.startswith(_SKIPPED_DIRS) and not filename.startswith("<frozen"):
            found = f"{display_path(filename)}:{tb.tb_lineno}"
        tb = tb.tb_next
    return found


def at(location: str) -> str:
    """" (file.py:LINE)" for messages, or nothing when no user frame was involved."""
    return f" ({location})" if location else ""


def one_line(exc: BaseException) -> str:
    """`Type: first line of the message`, for reports that must stay on one line."""
    first = (str(exc).strip().splitlines() or [""])[0]
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__
