"""Reading, parsing and writing source files without changing a byte we did not mean to.

Parsing goes through CPython's own parser first: it is fast, written in C with its own limits
(200 nested brackets, a bounded AST depth), and its messages are the ones users know. libcst's
native parser only sees files CPython accepts and that are not nested deeper than `MAX_NESTING`:
on deeper input it takes seconds to minutes or overflows its stack (a segfault no `except` can
catch), measured at 3,000 nested brackets or 100,000 `and` operands.
"""

from __future__ import annotations

import ast
import codecs
import contextlib
import errno
import hashlib
import io
import itertools
import os
import re
import signal
import stat
import tempfile
import threading
import tokenize
import warnings
from dataclasses import dataclass
from typing import Iterator, Optional, TypeVar, Union

import libcst as cst

Source = Union[bytes, str]
S = TypeVar("S", bytes, str)

# Levels of nesting (AST depth, an `and`/`or` chain counting one level per operand as libcst nests
# it) above which a file is reported instead of parsed. Real code stays below 50; libcst's
# Python-side visitors hit the recursion limit somewhere between 150 and 500 levels anyway.
MAX_NESTING = 500
TOO_DEEP = "too deeply nested to analyse (Python's recursion limit reached)"
TEMP_PREFIX = ".bufferlint-"
TEMP_SUFFIX = ".tmp"


@dataclass
class SourceError(Exception):
    """A file that cannot be read or parsed; reported as BUF999, never modified."""

    message: str
    row: int = 1
    column: int = 1

    def __str__(self) -> str:
        return self.message


class WriteError(Exception):
    """A fixed file that could not be written; the original is left as it was."""


# --- reading ---


def read_bytes(path: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as error:
        raise SourceError(_read_problem(path, error)) from None


def _read_problem(path: str, error: OSError) -> str:
    """Why `path` cannot be read, in words that name the actual problem (a link, a folder...)."""
    if error.errno == errno.ELOOP:
        return "cannot read file: symlink loop"
    if os.path.islink(path) and not os.path.exists(path):
        return f"cannot read file: dangling symlink to {os.readlink(path)!r}"
    if error.errno == errno.ENOENT:
        return "cannot read file: no such file or directory"
    if os.path.isdir(path):  # only reached for folders that discovery could not list
        try:
            os.listdir(path)
        except OSError as list_error:
            return f"cannot read directory: {_reason(list_error)}"
        return "cannot read file: is a directory"
    return f"cannot read file: {_reason(error)}"


def _reason(error: OSError) -> str:
    return (error.strerror or str(error)).lower()


# --- decoding and parsing ---


def decode(data: bytes) -> str:
    """The text of `data` as CPython reads it (BOM and coding cookie honoured)."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:
        if "unknown encoding" in str(error) or "encoding problem" in str(error):
            raise SourceError(f"cannot decode source: {error}", _cookie_row(data)) from None
        encoding = "utf-8"  # undecodable first lines: decoding says where
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as error:
        row, column = _offset_position(data, error.start)
        bad = data[error.start : error.start + 1].hex()
        raise SourceError(f"cannot decode source as {encoding}: invalid byte 0x{bad}", row, column) from None


# Encodings that write every ASCII character as its ASCII byte (`codecs.lookup` names): in those a
# name found among a file's bytes is a name of its text. (Not so in UTF-7 or UTF-16.)
_ASCII_SPELLING = frozenset(("utf-8", "utf-8-sig", "ascii", "iso8859-1", "cp1252"))


def ascii_spelled(encoding: str) -> bool:
    try:
        return codecs.lookup(encoding).name in _ASCII_SPELLING
    except LookupError:
        return False


def _cookie_row(data: bytes) -> int:
    for row, line in enumerate(data.splitlines()[:2], start=1):
        if re.match(rb"^[ \t\f]*#.*?coding[:=]", line):
            return row
    return 1


def _offset_position(data: Source, offset: int) -> tuple[int, int]:
    newline = b"\n" if isinstance(data, bytes) else "\n"
    row = data.count(newline, 0, offset) + 1  # type: ignore[arg-type]
    return row, offset - (data.rfind(newline, 0, offset) + 1) + 1  # type: ignore[arg-type]


def check_syntax(data: Source, filename: str = "<source>") -> ast.Module:
    """CPython's AST of `data`, or a SourceError saying where and why CPython rejects it."""
    nul = b"\0" if isinstance(data, bytes) else "\0"
    if nul in data:  # type: ignore[operator]
        raise SourceError("source contains NUL bytes", *_offset_position(data, data.index(nul)))  # type: ignore[arg-type]
    text = decode(data) if isinstance(data, bytes) else data
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(text, filename=filename)
    except SyntaxError as error:  # IndentationError and TabError included
        raise SourceError(f"syntax error: {error.msg}", error.lineno or 1, error.offset or 1) from None
    except (RecursionError, MemoryError):
        raise SourceError("too deeply nested for Python's parser") from None
    except (ValueError, UnicodeError) as error:
        raise SourceError(f"cannot parse: {error}") from None


def check_nesting(tree: ast.AST, limit: int = MAX_NESTING, text: Optional[Source] = None) -> None:
    """Raise SourceError at the first place nested deeper than `limit` (see MAX_NESTING).
    `text`: the source `tree` was parsed from; with it, nodes over several lines can be skipped
    too (see `_cannot_reach`)."""
    starts = _ascii_line_starts(text) if text is not None else None
    # (node, depth, whether its span may bound it: not inside an f-string, whose inner positions
    # CPython before 3.12 does not always report right)
    stack: list[tuple[ast.AST, int, bool]] = [(tree, 0, True)]
    pop, push, node_class = stack.pop, stack.append, ast.AST
    while stack:
        node, depth, measured = pop()
        kind = type(node)
        if kind is ast.BoolOp:  # flat in ast, one level per operand in libcst
            depth += len(node.values) - 1  # type: ignore[attr-defined]
        if depth > limit:
            row = getattr(node, "lineno", 1)
            column = getattr(node, "col_offset", 0) + 1
            raise SourceError(f"too deeply nested: more than {limit} levels; not analysed", row, column)
        if measured and _cannot_reach(node, depth, limit, starts):
            continue
        inner = measured and kind is not ast.JoinedStr
        # `ast.iter_child_nodes`, inlined (the same children in the same order): this walk runs
        # over every file a class of the project may make a module.
        for name in kind._fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, node_class):
                        push((item, depth + 1, inner))
            elif isinstance(value, node_class):
                push((value, depth + 1, inner))


def _cannot_reach(node: ast.AST, depth: int, limit: int, starts: Optional[list[int]] = None) -> bool:
    """Whether a node is too short to hold `limit` levels below `depth`.

    Going down an AST, at most every second node spans as much source as its parent (an `Expr`
    and its value, a name and its `Load` context); the others span at least one character less,
    and an `and`/`or` chain counts one level per operand, each longer than a character. So a
    node spanning n bytes is at most 2n + 4 levels deep. Walking only the nodes that could be
    deep cuts the guard's cost on real files (1,328 files of 7 repositories: 0.87 s -> 0.24 s, with
    the walk inlined).
    A node over several lines is measured with `starts` (line offsets of an ASCII text, where
    ast's byte columns are offsets into the text), else only one-line nodes are; nodes without a
    position are walked.
    """
    end_col = getattr(node, "end_col_offset", None)
    end_row = getattr(node, "end_lineno", None)
    if end_col is None or end_row is None or getattr(node, "decorator_list", None):
        return False  # decorators sit on lines of their own, outside the statement's span
    row, col = node.lineno, node.col_offset  # type: ignore[attr-defined]
    if end_row == row:
        length = end_col - col
    elif starts is not None and end_row <= len(starts):
        length = starts[end_row - 1] + end_col - starts[row - 1] - col
    else:
        return False
    return depth + 2 * length + 4 <= limit


def _ascii_line_starts(text: Source) -> Optional[list[int]]:
    """Offsets of each line's start, for an ASCII text with LF line ends (else None: ast's
    columns are UTF-8 offsets of the decoded text, and a lone CR also ends a line)."""
    cr = b"\r" if isinstance(text, bytes) else "\r"
    if not text.isascii() or cr in text:  # type: ignore[operator]
        return None
    if isinstance(text, bytes) and b"coding" in b"\n".join(text.split(b"\n", 2)[:2]):
        return None  # a cookie may name an encoding that reads ASCII bytes otherwise (UTF-7)
    return line_starts(text)


def line_starts(text: Source) -> list[int]:
    """Offset of each LF-separated line's start, then one past the end of the last line."""
    newline = b"\n" if isinstance(text, bytes) else "\n"
    return [0, *itertools.accumulate(len(line) + 1 for line in text.split(newline))]  # type: ignore[arg-type]


def parse(data: Source, checked: bool = False) -> cst.Module:
    """Parse with libcst after CPython accepted the file; every failure becomes a SourceError.
    `checked`: CPython already parsed this very text and `check_nesting` passed (prechecked.py)."""
    if not checked:
        check_nesting(check_syntax(data), text=data)
    try:
        with _unvalidated_nodes():
            return cst.parse_module(data)
    except cst.ParserSyntaxError as error:
        raise SourceError(f"libcst cannot parse this file (CPython can): {error.message}", max(error.raw_line, 1), error.raw_column + 1) from None
    except (RecursionError, MemoryError):
        raise SourceError(TOO_DEEP) from None
    except Exception as error:  # libcst raises bare exceptions on some input
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise SourceError(f"libcst cannot parse this file: {first}") from None


@contextlib.contextmanager
def _unvalidated_nodes() -> Iterator[None]:
    """Skip libcst's per-node `_validate()` while its parser builds a tree.

    Every node's `__post_init__` validates the node, which the parser's own output (of a file
    CPython accepted) never fails; it is a tenth of the parse time (measured on 711 files:
    11.1 s -> 9.9 s). libcst's own comment on `__post_init__` says as much. Nodes built by fixes
    are still validated: the switch is only off inside `parse_module`. One thread per process
    parses (workers are processes), so swapping the class attribute is safe here.
    """
    node_class = cst.CSTNode
    original = node_class.__dict__.get("__post_init__")
    if original is None:  # a libcst without it: nothing to skip
        yield
        return
    node_class.__post_init__ = _no_validation  # type: ignore[method-assign]
    try:
        yield
    finally:
        node_class.__post_init__ = original  # type: ignore[method-assign]


def _no_validation(self: cst.CSTNode) -> None:
    return None


def splice_untouched(original: S, roundtrip: S, fixed: S) -> Optional[S]:
    """`fixed` with the stretch that libcst does not reproduce byte for byte taken from `original`.

    libcst drops a few things when it prints a tree back (a form feed at the top, whitespace-only
    lines at the end, a last lone CR). `roundtrip` is the unfixed tree printed back: it differs
    from `original` in one stretch at most here (a common prefix, one changed stretch, a common
    suffix). When the fix edited only text before (or only after) that stretch, the stretch is put
    back as it was; otherwise None, and the caller leaves the file alone.
    """
    if roundtrip == original:
        return fixed
    prefix = _common_prefix(original, roundtrip)
    suffix = _common_suffix(original[prefix:], roundtrip[prefix:])
    tail = roundtrip[prefix:]
    if fixed.endswith(tail):  # every edit lies before the stretch
        return fixed[: len(fixed) - len(tail)] + original[prefix:]
    head = roundtrip[: len(roundtrip) - suffix]
    if fixed.startswith(head):  # every edit lies after it
        return original[: len(original) - suffix] + fixed[len(head) :]
    return None


def _common_prefix(a: S, b: S) -> int:
    limit = min(len(a), len(b))
    i = 0
    while i < limit and a[i] == b[i]:
        i += 1
    return i


def _common_suffix(a: S, b: S) -> int:
    limit = min(len(a), len(b))
    i = 0
    while i < limit and a[len(a) - 1 - i] == b[len(b) - 1 - i]:
        i += 1
    return i


def first_difference_row(a: S, b: S) -> int:
    return _offset_position(a, _common_prefix(a, b))[0]


# --- writing ---


def digest(data: bytes) -> bytes:
    """What a file holds, in 16 bytes: the key of what the project scan learnt about it
    (prechecked.py), and compared again before a fix replaces the file."""
    return hashlib.blake2b(data, digest_size=16).digest()


def write_atomic(path: str, data: bytes) -> None:
    """Replace the file's content through a temporary file in the same folder and a rename.

    The rename is atomic, so a reader (or an interrupted run) sees the old or the new file, never
    half of one. A symlink is written through: its target gets the new content, the link stays.
    The file keeps its permission bits (and its owner, where allowed). SIGINT, SIGTERM and SIGHUP
    are held back while the file is written and delivered right after (`signals_deferred`), so
    Ctrl-C neither leaves a temporary file behind nor stops between writing and renaming. A read-only file (no write
    permission bit, or not writable by this user) is not replaced: WriteError.
    """
    real = os.path.realpath(path)
    try:
        info = os.stat(real)
    except OSError as error:
        raise WriteError(f"cannot write file: {_reason(error)}") from None
    if not info.st_mode & 0o222 or not os.access(real, os.W_OK):
        raise WriteError("file is read-only; fix not written")
    with signals_deferred():
        try:
            _replace(real, data, info)
        except OSError as error:
            raise WriteError(f"cannot write file: {_reason(error)}") from None


def write_new(path: str, data: bytes) -> None:
    """A report file (`--output-file`): replaced atomically when it exists, else created the same
    way, with the permissions a plain `open()` would give it."""
    if os.path.lexists(path):
        write_atomic(path, data)
        return
    umask = os.umask(0)
    os.umask(umask)
    folder = os.path.dirname(os.path.abspath(path))
    try:
        fd, temp = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=TEMP_SUFFIX, dir=folder)
    except OSError as error:
        raise WriteError(f"cannot write file: {_reason(error)}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(temp, 0o666 & ~umask)
        os.replace(temp, path)
    except OSError as error:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise WriteError(f"cannot write file: {_reason(error)}") from None


def _replace(real: str, data: bytes, info: os.stat_result) -> None:
    fd, temp = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=TEMP_SUFFIX, dir=os.path.dirname(real))
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
            _keep_owner(handle.fileno(), info)
        os.chmod(temp, stat.S_IMODE(info.st_mode))  # mkstemp made it 0600
        os.replace(temp, real)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def _keep_owner(fd: int, info: os.stat_result) -> None:
    if hasattr(os, "fchown") and (info.st_uid, info.st_gid) != (os.geteuid(), os.getegid()):
        with contextlib.suppress(OSError):  # only root may give a file away; others keep theirs
            os.fchown(fd, info.st_uid, info.st_gid)


_DEFERRED = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold back SIGINT, SIGTERM and SIGHUP until the block ends, then deliver them.

    Python-level handlers that only record the signal, not a signal mask: a mask is per thread,
    and with any other thread alive (a pool's, a library's) the kernel hands the signal to that
    one and Python still raises KeyboardInterrupt here. Python runs handlers in the main thread
    only, so elsewhere nothing can interrupt this thread's Python code and nothing is deferred.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = {number: signal.signal(number, lambda got, frame: received.append(got)) for number in _DEFERRED}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, signal.SIG_DFL if handler is None else handler)
        for number in dict.fromkeys(received):
            signal.raise_signal(number)  # now, with the handler the program had
