"""One-line progress display for long verifications: "verifying 3/10 Foo..." (torch-free).

Shown only when the stream is a terminal, so logs, pipes and CI output stay clean. Usage:

    with Progress(total=len(classes)) as progress:
        for name in classes:
            progress.advance(name)
            ...
or pass `progress.advance` as `verify_against(..., on_class_start=progress.advance)`.
"""
from __future__ import annotations

import sys
from types import TracebackType
from typing import TextIO

_CLEAR_LINE = "\r\x1b[K"


class Progress:
    def __init__(self, total: int, stream: TextIO | None = None, enabled: bool | None = None) -> None:
        self.total = total
        self.done = 0
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = _is_terminal(self.stream) if enabled is None else enabled
        self._shown = False

    def advance(self, name: str) -> None:
        """Announce the next item; call once per item, before working on it."""
        self.done += 1
        if self.enabled:
            self.stream.write(f"{_CLEAR_LINE}verifying {self.done}/{self.total} {name}...")
            self.stream.flush()
            self._shown = True

    def close(self) -> None:
        """Erase the line so the next output starts clean."""
        if self._shown:
            self.stream.write(_CLEAR_LINE)
            self.stream.flush()
            self._shown = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # closed or replaced streams
        return False
