"""Name the user's source line that is running right now (innermost frame outside torch and
outside this package). Called only when something is reported, so walking frames is cheap."""
from __future__ import annotations

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
            line = linecache.getline(filename, frame.f_lineno).strip()
            return f"{display_path(filename)}:{frame.f_lineno}", line
        frame = frame.f_back
    return "<unknown>", ""


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
