"""Jupyter notebooks: lint and fix the code cells of an `.ipynb` file.

The code cells are joined into one virtual module (so imports in one cell and classes in
another are seen together), each preceded by a marker comment. Findings are mapped back to
`cell N, row, column`: N counts every cell of the notebook from 1 (markdown too), the row
counts from the cell's first line. Fixing rewrites only the `source` of the cells whose text
changed, in place in the JSON text, so outputs, metadata and formatting stay byte-for-byte.

IPython syntax: a cell starting with a cell magic (`%%time`, `%%bash`...) is skipped; line
magics, shell escapes (`!pip ...`, `x = !ls`) and help lines (`obj?`) are masked as `pass`
while linting and restored after fixing. A code cell that does not parse is reported as
BUF999 and the notebook is not modified.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional, Union

from bufferlint.config import Settings
from bufferlint.lint import FileResult, PARSE_ERROR_CODE, check_bytes, fix_bytes
from bufferlint.model import Finding, Fix, Position
from bufferlint.source import SourceError, check_syntax

NOTEBOOK_SUFFIX = ".ipynb"
_MARKER = "# bufferlint-cell {index}\n"
_MARKER_LINE = re.compile(r"^# bufferlint-cell (\d+)$", re.MULTILINE)
_MAGIC_MASK = "pass  # bufferlint-magic"
_MASK_LINE = re.compile(r"^[ \t]*pass  # bufferlint-magic$", re.MULTILINE)
_CELL_MAGIC = re.compile(r"\A\s*%%")
# A whole line that is IPython syntax: `%magic`, `!shell`, `x = !shell`, `x = %magic`, `obj?`, `?obj`.
# A shell escape or magic ending in a backslash goes on over the next physical lines.
_MAGIC_LINE = re.compile(
    r"^(?P<indent>[ \t]*)(?:[%!]|[\w.]+[ \t]*=[ \t]*[%!]|\?\??[\w.]+[ \t]*$|[\w.]+\?\??[ \t]*$)(?:[^\n]*\\\n)*[^\n]*$",
    re.MULTILINE,
)
# IPython strips the leading indentation of a cell whose first line is indented.
_INDENTED_START = re.compile(r"\A(?:[ \t]*(?:#[^\n]*)?\n)*[ \t]+\S")
_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


def is_notebook(path: str) -> bool:
    return path.endswith(NOTEBOOK_SUFFIX)


@dataclass
class NotebookFinding(Finding):
    """A finding in a notebook: `location` and `end_location` count from the cell's first line."""

    cell: int = 0

    @property
    def sort_key(self) -> tuple[str, int, int, str]:  # type: ignore[override]
        # Same shape as Finding.sort_key so mixed lists still sort; cells never reach 10**6 rows.
        return (self.filename, self.cell * 10**6 + self.location.row, self.location.column, self.code)

    def to_dict(self) -> dict[str, object]:
        return {**super().to_dict(), "cell": self.cell}


def display_path(finding: Finding) -> str:
    """`path` or, in a notebook, `path:cell N`."""
    cell = getattr(finding, "cell", 0)
    return f"{finding.filename}:cell {cell}" if cell else finding.filename


@dataclass
class CodeCell:
    index: int  # 1-based, counting every cell of the notebook
    span: tuple[int, int]  # where the `source` value is in the JSON text
    text: str
    as_list: bool  # `source` stored as a list of lines (nbformat's usual form) or one string
    masked: Optional[str] = None  # what the linter sees; None: the cell is skipped
    magics: list[str] = field(default_factory=list)  # the masked lines, in order


@dataclass
class Notebook:
    text: str
    cells: list[CodeCell]

    @property
    def linted(self) -> list[CodeCell]:
        return [cell for cell in self.cells if cell.masked is not None]

    def virtual_source(self) -> str:
        parts = []
        for cell in self.linted:
            assert cell.masked is not None
            body = cell.masked if cell.masked.endswith("\n") or not cell.masked else cell.masked + "\n"
            parts.append(_MARKER.format(index=cell.index) + body)
        return "".join(parts)


def read_notebook(text: str) -> Notebook:
    """Parse the JSON, keeping where each code cell's source sits in the text."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise SourceError(f"invalid notebook JSON: {error.msg}", error.lineno, error.colno) from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise SourceError("not a Jupyter notebook: no `cells` list")
    cells_start = next(start for key, start, _, _ in _members(text, _skip(text, 0)) if key == "cells")
    cells: list[CodeCell] = []
    for index, (start, _end, cell) in enumerate(_elements(text, cells_start), start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        span = next(((s, e) for key, s, e, _ in _members(text, start) if key == "source"), None)
        source = cell.get("source", "")
        if span is None or not (isinstance(source, str) or all(isinstance(line, str) for line in source)):
            raise SourceError(f"cell {index}: `source` must be a string or a list of strings")
        joined = source if isinstance(source, str) else "".join(source)
        cells.append(_masked(CodeCell(index, span, joined, isinstance(source, list))))
    return Notebook(text, cells)


def _masked(cell: CodeCell) -> CodeCell:
    if _CELL_MAGIC.match(cell.text) or _INDENTED_START.match(cell.text):
        # Another interpreter (`%%bash`), or code IPython dedents before running: not linted.
        return cell
    # One mask line per physical line, so rows in the cell keep their numbers.
    cell.magics = [line for match in _MAGIC_LINE.finditer(cell.text) for line in match.group(0).split("\n")]
    cell.masked = _MAGIC_LINE.sub(lambda match: _mask(match.group("indent"), match.group(0).count("\n") + 1), cell.text)
    return cell


def _mask(indent: str, lines: int) -> str:
    return "\n".join([indent + _MAGIC_MASK] * lines)


# --- minimal JSON walking with positions (json.loads gives values, not where they are) ---


def _skip(text: str, index: int) -> int:
    match = _WS.match(text, index)
    assert match is not None
    return match.end()


def _members(text: str, index: int) -> Iterator[tuple[str, int, int, Any]]:
    """(key, value start, value end, value) of the JSON object starting at `index`."""
    index = _skip(text, index + 1)
    while text[index] != "}":
        key, index = json.decoder.scanstring(text, index + 1)  # type: ignore[attr-defined]
        index = _skip(text, _skip(text, index) + 1)  # past the colon
        value, end = _DECODER.raw_decode(text, index)
        yield key, index, end, value
        index = _skip(text, end)
        if text[index] == ",":
            index = _skip(text, index + 1)


def _elements(text: str, index: int) -> Iterator[tuple[int, int, Any]]:
    """(start, end, value) of each element of the JSON array starting at `index`."""
    index = _skip(text, index + 1)
    while text[index] != "]":
        value, end = _DECODER.raw_decode(text, index)
        yield index, end, value
        index = _skip(text, end)
        if text[index] == ",":
            index = _skip(text, index + 1)


# --- linting and fixing ---


def _syntax_errors(notebook: Notebook, filename: str) -> list[Finding]:
    errors: list[Finding] = []
    for cell in notebook.linted:
        try:
            # Not the notebook's own name: CPython reads that file to place the error column.
            check_syntax(cell.masked or "", f"<{filename} cell {cell.index}>")
        except SourceError as error:
            position = Position(error.row, error.column)
            errors.append(NotebookFinding(PARSE_ERROR_CODE, "parse-error", error.message, filename, None, position, position, cell=cell.index))
    return errors


def _cell_rows(virtual: str) -> list[tuple[int, int]]:
    """(row of the marker, cell index) for each marker of a virtual source."""
    return [(virtual.count("\n", 0, m.start()) + 1, int(m.group(1))) for m in _MARKER_LINE.finditer(virtual)]


def _map_finding(finding: Finding, markers: list[tuple[int, int]]) -> Finding:
    marker_row, cell = max(((r, c) for r, c in markers if r < finding.location.row), default=(0, 0))
    if not cell:
        return finding
    start = Position(finding.location.row - marker_row, finding.location.column)
    end = Position(max(finding.end_location.row - marker_row, 1), finding.end_location.column)
    # Without the CST node and the edits (they belong to the virtual module): picklable for -j.
    fix = None if finding.fix is None else Fix(finding.fix.applicability, finding.fix.message, ())
    values = {k: getattr(finding, k) for k in ("code", "name", "message", "filename", "url", "noqa_rows")}
    return NotebookFinding(**values, node=None, fix=fix, location=start, end_location=end, cell=cell)


def process_notebook(data: Union[bytes, str], filename: str, settings: Settings, fix: bool) -> FileResult:
    """Check (or fix) one notebook; `new_data` holds the rewritten JSON when a cell changed."""
    as_bytes = isinstance(data, bytes)
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        notebook = read_notebook(text)
    except UnicodeDecodeError as error:
        return _error(filename, SourceError(f"cannot decode notebook: {error}"))
    except SourceError as error:
        return _error(filename, error)
    errors = _syntax_errors(notebook, filename)
    if errors:
        return FileResult(filename, errors)
    virtual = notebook.virtual_source()
    result = fix_bytes(virtual, filename, settings) if fix else check_bytes(virtual, filename, settings)
    fixed_virtual = result.new_data if isinstance(result.new_data, str) else virtual
    mapped = FileResult(filename, [_map_finding(f, _cell_rows(fixed_virtual)) for f in result.findings], result.fixed, None, result.fix_error)
    if fixed_virtual != virtual:
        try:
            new_text = rewrite_cells(notebook, fixed_virtual)
        except ValueError as error:
            check = process_notebook(data, filename, settings, fix=False)
            check.fix_error = f"{error}; notebook left unchanged"
            return check
        if new_text != text:
            mapped.new_data = new_text.encode("utf-8") if as_bytes else new_text
    return mapped


def _error(filename: str, error: SourceError) -> FileResult:
    position = Position(error.row, error.column)
    return FileResult(filename, [Finding(PARSE_ERROR_CODE, "parse-error", error.message, filename, None, position, position)])


def rewrite_cells(notebook: Notebook, fixed_virtual: str) -> str:
    """The notebook text with the changed cells' `source` replaced, everything else untouched."""
    new_texts = _split_virtual(notebook, fixed_virtual)
    text = notebook.text
    escape = "\\u" in text and text.isascii()  # keep the file's choice of escaping non-ASCII
    replaced: dict[int, str] = {}
    for cell in sorted(notebook.linted, key=lambda c: c.span[0], reverse=True):
        new = new_texts[cell.index]
        if new == cell.text:
            continue
        start, end = cell.span
        text = text[:start] + _encode_source(new, cell.as_list, text[start:end], escape) + text[end:]
        replaced[cell.index] = new
    _check_rewrite(notebook.text, text, replaced)
    return text


def _split_virtual(notebook: Notebook, virtual: str) -> dict[int, str]:
    markers = list(_MARKER_LINE.finditer(virtual))
    if [int(m.group(1)) for m in markers] != [cell.index for cell in notebook.linted]:
        raise ValueError("a fix moved a cell boundary")
    texts: dict[int, str] = {}
    for position, (match, cell) in enumerate(zip(markers, notebook.linted)):
        stop = markers[position + 1].start() if position + 1 < len(markers) else len(virtual)
        body = virtual[match.end() + 1 : stop]
        if cell.masked and not cell.masked.endswith("\n") and body.endswith("\n"):
            body = body[:-1]  # the newline the virtual module added after the cell
        texts[cell.index] = _unmask(body, cell)
    return texts


def _unmask(body: str, cell: CodeCell) -> str:
    originals = iter(cell.magics)
    masks = _MASK_LINE.findall(body)
    if len(masks) != len(cell.magics):
        raise ValueError(f"a fix changed an IPython magic line in cell {cell.index}")
    return _MASK_LINE.sub(lambda _: next(originals), body)


def _encode_source(new: str, as_list: bool, old_json: str, escape: bool) -> str:
    """Encode like the original: a string, or a list laid out with the original's whitespace."""
    if not as_list:
        return json.dumps(new, ensure_ascii=escape)
    lines = [json.dumps(line, ensure_ascii=escape) for line in new.splitlines(keepends=True)]
    opening = re.match(r"\[(\s*)", old_json)
    closing = re.search(r"(\s*)\]$", old_json)
    if not lines or opening is None or closing is None or not old_json.strip("[] \t\r\n"):
        return json.dumps(new.splitlines(keepends=True), ensure_ascii=escape)
    separator = opening.group(1)
    return "[" + separator + ("," + separator).join(lines) + closing.group(1) + "]"


def _check_rewrite(old_text: str, new_text: str, replaced: dict[int, str]) -> None:
    """The rewritten JSON must equal the old one with exactly the replaced sources changed."""
    old, new = json.loads(old_text), json.loads(new_text)
    for index, source in replaced.items():
        cell = old["cells"][index - 1]
        cell["source"] = source.splitlines(keepends=True) if isinstance(cell["source"], list) else source
    if old != new:
        raise ValueError("rewriting the notebook JSON changed more than the cell sources")


def notebook_cell_source(path: str, cell: int) -> Optional[str]:
    """The text of cell `cell` (1-based) of a notebook on disk, for snippets in `--output-format full`."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
        source = data["cells"][cell - 1]["source"]
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return None
    return source if isinstance(source, str) else "".join(source)
