"""Reading, parsing and writing source files without changing a byte we did not mean to."""

from __future__ import annotations

import ast
import os
import stat
import tempfile
import warnings
from dataclasses import dataclass
from typing import Optional, Union

import libcst as cst


@dataclass
class SourceError(Exception):
    """A file that cannot be read or parsed; reported as BUF999, never modified."""

    message: str
    row: int = 1
    column: int = 1

    def __str__(self) -> str:
        return self.message


def read_bytes(path: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as error:
        raise SourceError(f"cannot read file: {error.strerror or error}") from error


def parse(data: Union[bytes, str]) -> cst.Module:
    """Parse with libcst, turning every failure into a one-line SourceError."""
    if isinstance(data, bytes) and b"\0" in data:
        raise SourceError("source contains NUL bytes", *_nul_position(data))
    try:
        return cst.parse_module(data)
    except cst.ParserSyntaxError as error:
        # CPython's message is the one users know; libcst's only when CPython accepts the file.
        check_syntax(data, "<source>")
        return _reraise(f"syntax error: {error.message}", error.raw_line, error.raw_column + 1)
    except (UnicodeDecodeError, LookupError, SyntaxError) as error:
        return _reraise(f"cannot decode source: {error}", 1, 1)
    except (RecursionError, MemoryError):
        return _reraise("source is nested too deeply to parse", 1, 1)
    except Exception as error:  # libcst raises bare exceptions on some invalid input
        return _reraise(f"cannot parse: {error}".splitlines()[0], 1, 1)


def _reraise(message: str, row: int, column: int) -> cst.Module:
    raise SourceError(message, max(row, 1), max(column, 1))


def _nul_position(data: bytes) -> tuple[int, int]:
    offset = data.index(b"\0")
    row = data.count(b"\n", 0, offset) + 1
    return row, offset - (data.rfind(b"\n", 0, offset) + 1) + 1


def check_syntax(data: Union[bytes, str], filename: str) -> None:
    """Raise SourceError when CPython cannot parse `data` (encoding cookie and BOM honoured)."""
    if isinstance(data, bytes) and b"\0" in data:
        raise SourceError("source contains NUL bytes", *_nul_position(data))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(data, filename=filename)
    except SyntaxError as error:
        raise SourceError(f"syntax error: {error.msg}", error.lineno or 1, error.offset or 1) from None
    except (UnicodeDecodeError, LookupError) as error:
        raise SourceError(f"cannot decode source: {error}") from None
    except (ValueError, RecursionError, MemoryError) as error:
        raise SourceError(f"cannot parse: {error or type(error).__name__}") from None


def check_compiles(code: str, filename: str) -> Optional[str]:
    """None when CPython accepts `code`, else the reason (libcst accepts a few things CPython does not)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(code, filename=filename)
    except SyntaxError as error:
        return f"{error.msg} (line {error.lineno})"
    except (ValueError, RecursionError, MemoryError) as error:
        return str(error) or type(error).__name__
    return None


def write_atomic(path: str, data: bytes) -> None:
    """Write through a temporary file in the same folder and rename it over the original.

    The rename is atomic, so an interrupted run leaves either the old or the new file, never half.
    """
    directory = os.path.dirname(os.path.abspath(path))
    mode = stat.S_IMODE(os.stat(path).st_mode)
    fd, temp = tempfile.mkstemp(prefix=".bufferlint-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
