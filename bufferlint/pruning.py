"""Top-level definitions a check does not need to parse up front, blanked before libcst runs.

libcst's parse is most of a check's cost, and a good part of the bytes of files that hold module
classes are helpers and plain classes. When checking (never when fixing), the lines of a top-level
`def` or `class` are left out of the text libcst parses; `Pruned.rows` keeps the file's line
number of every line left, and findings are placed on those (columns do not move: whole lines go).
Never blanked:
- a class that may be an nn.Module: the prefilter's test over every class of the file, nested
  ones included, with same-file chains, and every binding of a name that is imported twice;
- anything holding another class (a module class defined inside a function is still one) or
  `requires_grad` (BUF008 looks for unfreezing anywhere in the file);
- the imports inside a blanked definition: imports anywhere in the file qualify names everywhere,
  so each stays on its own lines, moved to the line's start (a top-level statement); a definition
  whose imports share a line with other code (`if x: import y`, `import a; b = 1`) stays whole;
- a definition whose header does not spell CPython's name for it (NFKC-normalised identifiers),
  or that a backslash continuation joins to the line before or after;
- anything in a file with CR line ends or an encoding that does not write ASCII as ASCII bytes.

- A plain class is blanked when its name appears nowhere else in the file (a base class or a
  constructed class is named where it is used).
- Other top-level statements (`if`/`try`/`for`/`with` blocks, expression statements, model-config
  tables such as `default_cfgs = {...}`) are blanked when they share no line with another
  statement and the file has no `requires_grad` (BUF008 follows names bound to parameters). Of an
  assignment the analysis reads one thing: whether each name it binds is bound once, to a literal
  (`forward.py`'s module constants). So an assignment stays when its value may be such a literal
  (a number, a string, a tuple, a sign) or a name it binds is bound by another top-level
  assignment too. One that picks a device stays too (`device = torch.device("cuda" if
  torch.cuda.is_available() else "cpu")`, `HOST = torch.device("cpu")`: a device fixed at import,
  `analysis/named_device.py`);
  imports never go.
- A function stays when a module class calls it by name (`name(` anywhere in the class's lines,
  or in those of a definition holding a nested class) and its text may move a tensor (`.to`,
  `.cuda`, `device`, ...): forward may run it, and the forward path walks it
  (`analysis/path_functions.py`); without such text it gives the forward rules nothing to report. Any other function is blanked whatever uses it: the
  only other thing the analysis reads of a top-level function is whether it returns a tensor
  (`analysis/returns.py`), and it asks by name. The blanked functions are handed over as
  `BlankedFunctions`, which parses one the first time it is asked for (unless two top-level
  functions share the name: then both stay).

`tests/test_pruning.py` compares pruned and full checks on every fixture, on sources a review
found tricky, and through the CLI; over 17 real repositories (4,142 files) findings and
`--fix --diff` output are byte-identical. On 527 files of 7 repositories libcst's parse takes
8.6 s instead of 11.2 s.
"""

from __future__ import annotations

import ast
import io
import itertools
import warnings
import re
import tokenize
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Optional

import libcst as cst

from bufferlint.prefilter import ClassSummary, class_bases
from bufferlint.source import ascii_spelled

# Text that keeps a definition whatever else holds (see the module docstring).
_KEEP = re.compile(rb"\bimport\b|requires_grad")
_CLASS = re.compile(rb"\bclass\b")


@dataclass(frozen=True)
class TopDefinition:
    """A top-level `def` or `class`: its lines (decorators included) and, for a class, its bases."""

    first: int
    last: int
    name: str
    bases: Optional[tuple[Optional[str], ...]]  # None for a function
    header: tuple[int, int] = (0, 0)  # row and byte column of its `def`/`class` (or `async`)
    statement: bool = False  # another kind of statement: blanked whole, never looked up by name


def top_definitions(tree: ast.Module) -> tuple[TopDefinition, ...]:
    found = []
    bound = _constant_candidates(tree.body)
    for index, node in enumerate(tree.body):
        if node.end_lineno is None:
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            bases = tuple(class_bases(node)) if isinstance(node, ast.ClassDef) else None
            found.append(TopDefinition(first, node.end_lineno, node.name, bases, (node.lineno, node.col_offset)))
        elif _blankable_statement(node, bound) and _own_lines(tree.body, index):
            found.append(TopDefinition(node.lineno, node.end_lineno, "", None, (node.lineno, node.col_offset), True))
    return tuple(found)


# Top-level statements the analysis never reads (see the module docstring), assignments aside.
_STATEMENTS: tuple[type[ast.stmt], ...] = (
    ast.Expr, ast.AugAssign, ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith,
    ast.Try, ast.Delete, ast.Assert, ast.Raise, ast.Pass,
    *(getattr(ast, kind) for kind in ("Match", "TryStar") if hasattr(ast, kind)),  # 3.10, 3.11
)
# Values that are never a literal as `forward._is_literal` reads one (a number, a string, a
# tuple of them, a sign in front, True/False/None).
_NOT_LITERAL = (
    ast.Call, ast.Dict, ast.List, ast.Set, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp,
    ast.Lambda, ast.Subscript, ast.Attribute, ast.Name, ast.BinOp, ast.BoolOp, ast.Compare, ast.IfExp,
    ast.JoinedStr,
)
# One-line statements shorter than this are not worth an entry: blanking saves next to nothing.
_MIN_STATEMENT_BYTES = 40


def _constant_candidates(body: list[ast.stmt]) -> Counter[str]:
    """How many top-level assignments bind each plain name (what the module constants count)."""
    bound: Counter[str] = Counter()
    for node in body:
        for target in _assignment_targets(node):
            if isinstance(target, ast.Name):
                bound[target.id] += 1
    return bound


def _assignment_targets(node: ast.stmt) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        return node.targets
    if isinstance(node, ast.AnnAssign) and node.value is not None:
        return [node.target]
    return []


def _blankable_statement(node: ast.stmt, bound: Counter[str]) -> bool:
    assert node.end_lineno is not None and node.end_col_offset is not None
    if node.end_lineno == node.lineno and node.end_col_offset - node.col_offset < _MIN_STATEMENT_BYTES:
        return False
    if isinstance(node, _STATEMENTS):
        return True
    if isinstance(node, ast.AnnAssign) and node.value is None:
        return True  # `x: int` binds nothing
    targets = _assignment_targets(node)
    value = getattr(node, "value", None)
    return bool(targets) and isinstance(value, _NOT_LITERAL) and not _picks_device(value) and all(
        bound[t.id] == 1 for t in targets if isinstance(t, ast.Name)
    )


def _picks_device(value: ast.expr) -> bool:
    """What `named_device.fixed_device_names` reads: a string naming CUDA, `torch.cuda...`, or
    a `torch.device(...)` built at import."""
    for node in ast.walk(value):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "device":
            return True
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "cuda" in node.value:
            return True
        if isinstance(node, ast.Attribute) and node.attr in ("cuda", "is_available", "current_device"):
            return True
    return False


def _own_lines(body: list[ast.stmt], index: int) -> bool:
    """Whether statement `index` shares no line with its neighbours (`a = 1; b = f()`)."""
    node = body[index]
    before = body[index - 1].end_lineno if index > 0 else 0
    after = _first_line(body[index + 1]) if index + 1 < len(body) else None
    return (before or 0) < node.lineno and (after is None or node.end_lineno is None or node.end_lineno < after)


def _first_line(node: ast.stmt) -> int:
    return min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])


@dataclass
class Pruned:
    text: bytes  # what libcst parses
    functions: "BlankedFunctions"  # the blanked top-level functions, parsed on demand
    rows: Optional["Rows"] = None  # the line in `data` of each line of `text`, when lines were left out

    def original_row(self, row: int) -> int:
        """The line of the file that line `row` of `text` is."""
        if self.rows is None:
            return row
        if row <= len(self.rows):
            return self.rows[row - 1]
        return row + self.rows[-1] - len(self.rows)  # past the last line (an end of file)


def pruned(data: bytes, definitions: Iterable[TopDefinition], summary: ClassSummary, extra_bases: Iterable[str]) -> Pruned:
    """`data` with the definitions a check need not parse up front blanked (see the module docstring)."""
    if not _plain_lines(data):
        return Pruned(data, BlankedFunctions(data, {}))
    definitions = tuple(definitions)
    modules = summary.module_class_names(extra_bases)  # classes at any depth, chains followed
    function_names = Counter(d.name for d in definitions if d.bases is None and not d.statement)
    starts: Optional[list[int]] = None
    drop: list[tuple[int, int]] = []
    hoisted: list[tuple[int, int]] = []
    functions: dict[str, tuple[int, int]] = {}
    statements = b"requires_grad" not in data
    called: Optional[frozenset[bytes]] = None
    for definition in definitions:
        if definition.statement:
            if not statements:
                continue
        elif definition.name in modules or function_names[definition.name] > 1:
            continue
        starts = starts or _line_starts(data)
        if definition.bases is None and _MAY_MOVE.search(data, starts[definition.first - 1], _line_end(starts, definition.last)):
            called = _called_by_classes(data, starts, definitions, modules) if called is None else called
            if definition.name.encode() in called:
                continue  # forward may run it, and it may move a tensor (analysis/path_functions.py)
        imports = _blankable(data, starts, definition)
        if imports is None:
            continue
        drop.append((definition.first, definition.last))
        hoisted.extend(imports)
        if definition.bases is None and not definition.statement:
            functions[definition.name] = (definition.first, definition.last)
    if not drop:
        return Pruned(data, BlankedFunctions(data, functions))
    text, rows = _without(data, drop, hoisted)
    return Pruned(text, BlankedFunctions(data, functions), rows)


# Text a device move or a factory given `device=` needs (a superset of `forward.MOVE_TEXT`, a dot
# before a comment included): a function without it gives the forward rules nothing to report.
_MAY_MOVE = re.compile(rb"\.[ \t\f\r\n\\]*(?:to|cuda|type_as|type|#)|as_tensor|device")
# A name called: `name(`, blanks and line breaks allowed before the bracket.
_CALLED_NAME = re.compile(rb"(?<![\w.])([A-Za-z_]\w*)[ \t\r\n\\]*\(")


def _called_by_classes(data: bytes, starts: list[int], definitions: tuple[TopDefinition, ...], modules: set[str]) -> frozenset[bytes]:
    """The names called inside a module class, or inside any definition holding a nested class:
    a function of the file forward calls by name is read with the class (path_functions.py)."""
    names: set[bytes] = set()
    for definition in definitions:
        begin, end = starts[definition.first - 1], _line_end(starts, definition.last)
        own = 1 if definition.bases is not None else 0
        if (definition.bases is not None and definition.name in modules) or len(_CLASS.findall(data, begin, end)) > own:
            names.update(match.group(1) for match in _CALLED_NAME.finditer(data, begin, end))
    return frozenset(names)


def _plain_lines(data: bytes) -> bool:
    """LF line ends and an encoding that writes ASCII as ASCII: the byte-level tests below then
    read names as CPython does (in UTF-7, say, `import` need not be spelled with these bytes)."""
    if b"\r" in data:
        return False
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError:
        return False
    return ascii_spelled(encoding)


class BlankedFunctions(Mapping[str, cst.FunctionDef]):
    """Blanked top-level functions by name; each is parsed with libcst when first looked up."""

    def __init__(self, data: bytes, rows: dict[str, tuple[int, int]]) -> None:
        self._data = data
        self._rows = rows  # name -> its first and last line
        self._lines: Optional[list[str]] = None  # the file's text, decoded once when first needed
        self._parsed: dict[str, cst.FunctionDef] = {}

    def __getitem__(self, name: str) -> cst.FunctionDef:
        found = self._parsed.get(name)
        if found is None:
            first, last = self._rows[name]  # KeyError for a name that was not blanked
            found = self._parsed[name] = self._parse(first, last)
        return found

    def __contains__(self, name: object) -> bool:
        return name in self._rows

    def __iter__(self) -> Iterator[str]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)

    def _parse(self, first: int, last: int) -> cst.FunctionDef:
        from bufferlint.source import decode, parse

        if self._lines is None:
            self._lines = decode(self._data).split("\n")  # decoded as the whole file is (cookie, BOM)
        module = parse("\n".join(self._lines[first - 1 : last]) + "\n", checked=True)  # part of a file CPython parsed
        node = module.body[0]
        assert isinstance(node, cst.FunctionDef)
        return node


Rows = tuple[int, ...]  # line numbers
Spans = tuple[tuple[int, int], ...]  # first and last lines


def _blankable(data: bytes, starts: list[int], definition: TopDefinition) -> Optional[Spans]:
    """None when the definition stays in the text a check parses (see the module docstring);
    else the lines of the imports inside it, which stay (moved to the line's start)."""
    begin, end = starts[definition.first - 1], _line_end(starts, definition.last)
    if definition.first <= 2:
        return None  # blanking line 1 would put a coding cookie on line 2 in force
    if definition.statement:
        if (
            _continues(data, starts, definition.first - 1)
            or _continues(data, starts, definition.last)
            or _KEEP.search(data, begin, end) is not None
            or _CLASS.search(data, begin, end) is not None
        ):
            return None
        return ()
    row, column = definition.header
    if not definition.name.isascii() or not _header_at(data, starts[row - 1] + column, definition):
        return None  # written otherwise than CPython's (NFKC-normalised) name, or `\b` cannot tell
    if _continues(data, starts, definition.first - 1) or _continues(data, starts, definition.last):
        return None  # a backslash joins it to the line before, or the line after to it
    own_classes = 1 if definition.bases is not None else 0
    if b"requires_grad" in data[begin:end] or len(_CLASS.findall(data, begin, end)) > own_classes:
        return None
    if definition.bases is not None:
        name = definition.name.encode()
        if _word_in(data, name, 0, begin) or _word_in(data, name, end, len(data)):
            return None  # a class named elsewhere
    # A function is looked up by name when needed (BlankedFunctions).
    if _IMPORT.search(data, begin, end) is None:
        return ()
    return _hoistable_imports(data[begin:end], definition.first)


_IMPORT = re.compile(rb"\bimport\b")


def _hoistable_imports(segment: bytes, first: int) -> Optional[Spans]:
    """The lines (in the file) of every import in a definition's text, when each has its lines to
    itself (nothing before it on its first line, no `;`), so that it can stay as a top-level
    statement: the analysis reads imports wherever they are (`ImportMap`), in source order."""
    if not segment.isascii():
        return None  # a part of a file may not decode as the whole does
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(segment)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    lines = segment.split(b"\n")
    rows = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)) and node.end_lineno is not None:
            if lines[node.lineno - 1][: node.col_offset].strip(b" \t") or any(
                b";" in lines[row - 1] for row in range(node.lineno, node.end_lineno + 1)
            ):
                return None
            rows.append((first + node.lineno - 1, first + node.end_lineno - 1))
    return tuple(sorted(rows))


# What a bytes pattern's `\b` counts as a word character. (Plain searches instead of a pattern per
# definition: compiling one regex per definition was most of the pruning's cost.)
_WORD = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def _header_at(data: bytes, at: int, definition: TopDefinition) -> bool:
    """Whether `class NAME`, `def NAME` or `async def NAME` (then a non-word byte) starts at `at`."""
    keywords = (b"class",) if definition.bases is not None else (b"def", b"async")
    for keyword in keywords:
        if data.startswith(keyword, at):
            at = _after_blanks(data, at + len(keyword))
            if keyword == b"async":
                if not data.startswith(b"def", at):
                    return False
                at = _after_blanks(data, at + 3)
            break
    else:
        return False
    name = definition.name.encode()
    return data.startswith(name, at) and data[at - 1] in b" \t" and not _word_at(data, at + len(name))


def _after_blanks(data: bytes, at: int) -> int:
    while at < len(data) and data[at] in b" \t":
        at += 1
    return at


def _word_at(data: bytes, at: int) -> bool:
    return 0 <= at < len(data) and data[at] in _WORD


def _word_in(data: bytes, word: bytes, begin: int, end: int) -> bool:
    """Whether `word` occurs in data[begin:end] delimited as by `\b` (it starts and ends with a
    word character: an identifier)."""
    at = data.find(word, begin, end)
    while at != -1:
        if not _word_at(data, at - 1) and not _word_at(data, at + len(word)):
            return True
        at = data.find(word, at + 1, end)
    return False


def _continues(data: bytes, starts: list[int], row: int) -> bool:
    """Whether line `row` (1-based; 0: none) ends with a line-continuation backslash."""
    if row < 1 or row >= len(starts):
        return False
    return data[starts[row - 1] : _line_end(starts, row)].rstrip(b"\n").endswith(b"\\")


def _line_end(starts: list[int], row: int) -> int:
    return starts[min(row, len(starts) - 1)]


def _line_starts(data: bytes) -> list[int]:
    """Offset of each line's start, plus the end of the data (so `starts[n]` ends line n)."""
    starts = [0, *itertools.accumulate(len(line) + 1 for line in data.split(b"\n")[:-1])]
    if starts[-1] != len(data):
        starts.append(len(data))
    return starts


def _without(data: bytes, ranges: list[tuple[int, int]], kept: list[tuple[int, int]]) -> tuple[bytes, "Rows"]:
    """`data` without the lines of `ranges`, except those of `kept` (imports), whose first line
    loses its indentation; and the line in `data` of each line left. Lines are left out rather
    than emptied: libcst builds nodes for every empty line (on 709 files, about 0.23 s of 8 s), and
    findings get their lines back through `Pruned.original_row`. Lines 1 and 2 always stay, so a
    coding cookie cannot move into place."""
    lines = data.split(b"\n")
    dropped = bytearray(len(lines))
    for first, last in ranges:
        dropped[first - 1 : last] = b"\x01" * (min(last, len(lines)) - first + 1)
    for first, last in kept:
        dropped[first - 1 : last] = bytes(last - first + 1)
        lines[first - 1] = lines[first - 1].lstrip(b" \t")
    rows = tuple(row for row, gone in enumerate(dropped, start=1) if not gone)
    return b"\n".join(lines[row - 1] for row in rows), rows
