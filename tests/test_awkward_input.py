"""Awkward input through the command line: each case gets one clear line naming the path (and the
line where there is one), the run goes on with the other files, exit codes follow DESIGN.md
(0 clean, 1 findings or errors, 2 internal error), nothing is modified that should not be, and a
fix keeps the file's BOM, line endings, encoding, tabs and missing trailing newline.

Unreadable files: the tests run as root on CI, where `chmod 000` does not stop a read, so an
unreadable file or folder is emulated by making `open`/`os.scandir` raise the error the kernel
would (EACCES) for that one path.
"""

from __future__ import annotations

import builtins
import errno
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bufferlint.cli import main
from tests.samples import ONE_FINDING, ONE_TENSOR_ATTRIBUTE

ROOT = Path(__file__).resolve().parent.parent

MODEL = ONE_TENSOR_ATTRIBUTE
BEFORE = b"self.t = torch.zeros(3)"
AFTER = b'self.register_buffer("t", torch.zeros(3), persistent=False)'
FINDING = ONE_FINDING
ONE_FIXED = "Found 1 error (1 fixed, 0 remaining)."


@pytest.fixture(autouse=True)
def plain_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.chdir(tmp_path)


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], list[str]]:
    code = main(["--no-cache", "-j", "1", "--select", "BUF001", *args])
    captured = capsys.readouterr()
    return code, captured.out.splitlines(), captured.err.splitlines()


def put(name: str, data: bytes) -> Path:
    path = Path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def check_then_fix(capsys: pytest.CaptureFixture[str], name: str, data: bytes, row_col: str) -> bytes:
    """Check reports the one finding at `row_col`; --fix rewrites exactly the flagged statement."""
    path = put(name, data)
    assert cli(capsys, name) == (1, [f"{name}:{row_col}: {FINDING}", "Found 1 error.", "[*] 1 fixable with the `--fix` option."], [])
    assert cli(capsys, "--fix", name) == (0, [ONE_FIXED], [])
    fixed = path.read_bytes()
    assert fixed == data.replace(BEFORE, AFTER)
    assert cli(capsys, "--fix", name) == (0, ["All checks passed!"], [])  # idempotent
    assert path.read_bytes() == fixed
    return fixed


# --- text encodings and layout: found, and fixed without changing anything else ---


def test_empty_file(capsys: pytest.CaptureFixture[str]) -> None:
    path = put("empty.py", b"")
    assert cli(capsys, "empty.py") == (0, ["All checks passed!"], [])
    assert cli(capsys, "--fix", "empty.py") == (0, ["All checks passed!"], [])
    assert path.read_bytes() == b""


def test_bom_is_kept(capsys: pytest.CaptureFixture[str]) -> None:
    fixed = check_then_fix(capsys, "bom.py", b"\xef\xbb\xbf" + MODEL, "11:9")
    assert fixed.startswith(b"\xef\xbb\xbfimport torch\n")


def test_crlf_is_kept(capsys: pytest.CaptureFixture[str]) -> None:
    fixed = check_then_fix(capsys, "crlf.py", MODEL.replace(b"\n", b"\r\n"), "11:9")
    assert fixed.count(b"\r\n") == fixed.count(b"\n") == 11


def test_mixed_line_endings_are_kept_line_by_line(capsys: pytest.CaptureFixture[str]) -> None:
    lines = MODEL.splitlines(keepends=True)
    mixed = b"".join(line.replace(b"\n", b"\r\n") if i % 2 else line for i, line in enumerate(lines))
    fixed = check_then_fix(capsys, "mixed.py", mixed, "11:9")
    assert fixed.endswith(AFTER + b"\n") and fixed.count(b"\r\n") == 5


def test_missing_trailing_newline_stays_missing(capsys: pytest.CaptureFixture[str]) -> None:
    fixed = check_then_fix(capsys, "nonl.py", MODEL.rstrip(b"\n"), "11:9")
    assert fixed.endswith(AFTER)


def test_tab_indentation_is_kept(capsys: pytest.CaptureFixture[str]) -> None:
    tabbed = MODEL.replace(b"        ", b"\t\t").replace(b"    ", b"\t")
    fixed = check_then_fix(capsys, "tabs.py", tabbed, "11:3")
    assert b"\n\t\t" + AFTER + b"\n" in fixed


def test_latin1_cookie_file_is_written_back_in_latin1(capsys: pytest.CaptureFixture[str]) -> None:
    data = b"# -*- coding: latin-1 -*-\n# caf\xe9 cr\xe8me\n" + MODEL
    fixed = check_then_fix(capsys, "latin.py", data, "13:9")
    assert b"# caf\xe9 cr\xe8me\n" in fixed  # latin-1 bytes, not UTF-8 (which would be \xc3\xa9)


def test_bytes_libcst_would_not_reproduce_are_kept(capsys: pytest.CaptureFixture[str]) -> None:
    # libcst prints these back without the leading form feed / the whitespace-only last lines /
    # the final lone CR: the fix must still change only the flagged statement.
    check_then_fix(capsys, "ff.py", b"\x0c" + MODEL, "11:9")
    check_then_fix(capsys, "blank_tail.py", MODEL + b"  \n\t\n", "11:9")
    check_then_fix(capsys, "cr.py", MODEL.replace(b"\n", b"\r"), "11:9")


# --- files that cannot be decoded or parsed: one BUF999 line each, never modified ---


@pytest.mark.parametrize(
    ("name", "data", "expected"),
    [
        ("undecodable.py", b"import torch\nx = '\xff\xfe'\n", "undecodable.py:2:6: BUF999 cannot decode source as utf-8: invalid byte 0xff"),
        ("badcookie.py", b"#!/usr/bin/env python\n# coding: klingon\nimport torch\n", "badcookie.py:2:1: BUF999 cannot decode source: unknown encoding: klingon"),
        ("nul.py", b"import torch\nx = 1\x00\n", "nul.py:2:6: BUF999 source contains NUL bytes"),
        ("py2.py", b'import torch\nprint "x"\n', "py2.py:2:1: BUF999 syntax error: Missing parentheses in call to 'print'. Did you mean print(...)?"),
        ("syntax.py", b"import torch\ndef f(:\n", "syntax.py:2:7: BUF999 syntax error: invalid syntax"),
        ("indent.py", b"import torch\nif x:\n    pass\n  pass\n", "indent.py:4:7: BUF999 syntax error: unindent does not match any outer indentation level"),
        ("taberror.py", b"import torch\nif x:\n\tpass\n        pass\n", "taberror.py:4:1: BUF999 syntax error: inconsistent use of tabs and spaces in indentation"),
        ("notes.txt", b"Remember to call torch.manual_seed.\n", "notes.txt:1:10: BUF999 syntax error: invalid syntax"),
    ],
    ids=lambda value: value if isinstance(value, str) and value.count(".") == 1 and ":" not in value else "",
)
def test_unparsable_file_is_reported_and_left_alone(capsys: pytest.CaptureFixture[str], name: str, data: bytes, expected: str) -> None:
    path = put(name, data)
    assert cli(capsys, name) == (1, [expected, "Found 1 error."], [])
    assert cli(capsys, "--fix", name) == (1, [expected, "Found 1 error (0 fixed, 1 remaining)."], [])
    assert path.read_bytes() == data


# --- nesting deep enough to break parsers: a clean BUF999, no crash, no hang ---

HEAD = MODEL + b"\n\n"


@pytest.mark.parametrize(
    ("name", "tail", "expected"),
    [
        # CPython's tokenizer stops at 200 brackets; libcst's parser overflows its stack at ~3,000.
        ("parens.py", b"x = " + b"(" * 1000 + b"1" + b")" * 1000 + b"\n", "parens.py:14:205: BUF999 syntax error: too many nested parentheses"),
        # CPython limits the depth of the AST it builds (3x the recursion limit, in C).
        ("chain.py", b"x = " + b"+".join([b"1"] * 20000) + b"\n", "chain.py:1:1: BUF999 too deeply nested for Python's parser"),
        # Flat for CPython, one level per operand for libcst (which crashes at 100,000): stopped first.
        ("andand.py", b"x = " + b" and ".join([b"a"] * 5000) + b"\n", "andand.py:14:5: BUF999 too deeply nested: more than 500 levels; not analysed"),
        ("elif.py", b"if a:\n  pass\n" + b"elif a:\n  pass\n" * 1000, "elif.py:1014:1: BUF999 too deeply nested: more than 500 levels; not analysed"),
        # One string for CPython, 3,000 nested nodes for libcst: its visitors hit the recursion limit.
        ("strings.py", b"x = " + b" ".join([b"'a'"] * 3000) + b"\n", "strings.py:1:1: BUF999 too deeply nested to analyse (Python's recursion limit reached)"),
    ],
    ids=lambda value: value if isinstance(value, str) and value.count(".") == 1 and ":" not in value else "",
)
def test_deep_nesting_is_a_clean_parse_error(capsys: pytest.CaptureFixture[str], name: str, tail: bytes, expected: str) -> None:
    path = put(name, HEAD + tail)
    assert cli(capsys, name) == (1, [expected, "Found 1 error."], [])
    assert cli(capsys, "--fix", name) == (1, [expected, "Found 1 error (0 fixed, 1 remaining)."], [])
    assert path.read_bytes() == HEAD + tail


@pytest.mark.parametrize(
    "tail",
    [
        b"x = " + b"+".join([b"1"] * 495),
        b"x = " + b" and ".join([b"a"] * 495),
        b"x = a" + b".b()" * 245,
        b"x = " + b"f(" * 195 + b"1" + b")" * 195,
        b"x = " + b"[" * 195 + b"1" + b"]" * 195,
        b"class N(nn.Module):\n    def forward(self, x):\n        return " + b" + ".join([b"x"] * 490),
    ],
    ids=["sum", "and", "call-chain", "calls", "lists", "in-forward"],
)
def test_deep_but_allowed_nesting_is_checked_and_fixed(capsys: pytest.CaptureFixture[str], tail: bytes) -> None:
    """Just under the nesting limit every construct is analysed and fixed, whatever the default
    recursion limit (processing a file raises it to RECURSION_LIMIT for its duration)."""
    check_then_fix(capsys, "deep.py", HEAD + tail + b"\n", "11:9")


def test_3000_class_file_finishes(tmp_path: Path) -> None:
    """A subprocess with a time limit: a hang (or a quadratic blow-up far beyond the ~20 s CPU this
    takes today) fails the test instead of stalling CI."""
    body = b"".join(
        b"\n\nclass Block%d(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.scale = torch.ones(%d)\n\n"
        b"    def forward(self, x):\n        return x * self.scale\n" % (i, i + 1)
        for i in range(3000)
    )
    put("big.py", b"import torch\nimport torch.nn as nn\n" + body)
    done = subprocess.run(
        [sys.executable, "-m", "bufferlint", "--no-cache", "--select", "BUF001", "--statistics", "big.py"],
        capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert (done.returncode, done.stderr) == (1, "")
    assert done.stdout.split()[:2] == ["3000", "BUF001"]


# --- paths: missing, links, folders, unreadable, non-.py ---


def test_missing_path_is_reported_and_the_run_goes_on(capsys: pytest.CaptureFixture[str]) -> None:
    put("m.py", MODEL)
    code, out, err = cli(capsys, "--fix", "missing.py", "m.py")
    assert (code, err) == (1, [])
    assert out == ["missing.py:1:1: BUF999 cannot read file: no such file or directory", "Found 2 errors (1 fixed, 1 remaining)."]
    assert Path("m.py").read_bytes() == MODEL.replace(BEFORE, AFTER)


def test_dangling_symlink_and_symlink_loop(capsys: pytest.CaptureFixture[str]) -> None:
    os.symlink("gone.py", "dangling.py")
    os.symlink("loop_b.py", "loop_a.py")
    os.symlink("loop_a.py", "loop_b.py")
    assert cli(capsys, "dangling.py", "loop_a.py") == (
        1,
        ["dangling.py:1:1: BUF999 cannot read file: dangling symlink to 'gone.py'", "loop_a.py:1:1: BUF999 cannot read file: symlink loop", "Found 2 errors."],
        [],
    )


def test_symlink_loop_as_the_first_path_is_one_finding_and_the_rest_is_checked(capsys: pytest.CaptureFixture[str]) -> None:
    """The first path also starts the search for pyproject.toml: a loop there is no internal error."""
    put("m.py", MODEL)
    os.symlink("loop", "loop")
    assert cli(capsys, "loop", "m.py") == (
        1,
        ["loop:1:1: BUF999 cannot read file: symlink loop", f"m.py:11:9: {FINDING}", "Found 2 errors.", "[*] 1 fixable with the `--fix` option."],
        [],
    )


def test_links_inside_a_walked_folder_are_reported_not_skipped(capsys: pytest.CaptureFixture[str]) -> None:
    put("pkg/m.py", MODEL)
    os.symlink("gone.py", "pkg/dangling.py")
    os.symlink("loop.py", "pkg/loop.py")
    os.symlink("..", "pkg/parent")  # a folder loop: symlinked folders are not followed
    code, out, _ = cli(capsys, "pkg")
    assert code == 1
    assert out == [
        "pkg/dangling.py:1:1: BUF999 cannot read file: dangling symlink to 'gone.py'",
        "pkg/loop.py:1:1: BUF999 cannot read file: symlink loop",
        f"pkg/m.py:11:9: {FINDING}",
        "Found 3 errors.",
        "[*] 1 fixable with the `--fix` option.",
    ]


def test_non_py_file_given_explicitly_is_linted_as_python(capsys: pytest.CaptureFixture[str]) -> None:
    put("train_script", MODEL)
    put("pkg/notes.txt", MODEL)  # in a walked folder only .py, .pyi and .ipynb count
    assert cli(capsys, "train_script", "pkg") == (1, [f"train_script:11:9: {FINDING}", "Found 1 error.", "[*] 1 fixable with the `--fix` option."], [])


def test_same_file_twice_is_processed_once(capsys: pytest.CaptureFixture[str]) -> None:
    put("m.py", MODEL)
    os.symlink("m.py", "alias.py")
    code, out, _ = cli(capsys, "m.py", "./m.py", "alias.py", ".")
    assert (code, out) == (1, [f"m.py:11:9: {FINDING}", "Found 1 error.", "[*] 1 fixable with the `--fix` option."])


def _deny(monkeypatch: pytest.MonkeyPatch, denied: Path) -> None:
    """Make reading `denied` fail as it would for a non-root user after `chmod 000`."""
    real_open, real_scandir, real_listdir = builtins.open, os.scandir, os.listdir

    def guard(path: Any) -> None:
        if isinstance(path, (str, os.PathLike)) and Path(path).resolve() == denied.resolve():
            raise PermissionError(errno.EACCES, "Permission denied", str(path))

    def fake_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        guard(file)
        return real_open(file, *args, **kwargs)

    def fake_scandir(path: Any = ".") -> Any:
        guard(path)
        return real_scandir(path)

    def fake_listdir(path: Any = ".") -> Any:
        guard(path)
        return real_listdir(path)

    monkeypatch.setattr(builtins, "open", fake_open)
    monkeypatch.setattr(os, "scandir", fake_scandir)
    monkeypatch.setattr(os, "listdir", fake_listdir)


def test_unreadable_file_is_reported_and_the_run_goes_on(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    put("secret.py", MODEL)
    put("m.py", MODEL)
    _deny(monkeypatch, Path("secret.py"))
    code, out, err = cli(capsys, "--fix", "secret.py", "m.py")
    assert (code, err) == (1, [])
    assert out == ["secret.py:1:1: BUF999 cannot read file: permission denied", "Found 2 errors (1 fixed, 1 remaining)."]
    assert Path("m.py").read_bytes() == MODEL.replace(BEFORE, AFTER)
    assert Path("secret.py").read_bytes() == MODEL  # Path.read_bytes goes through io.open, not patched


def test_unreadable_folder_is_reported(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    put("src/locked/a.py", MODEL)
    put("src/m.py", MODEL)
    _deny(monkeypatch, Path("src/locked"))
    assert cli(capsys, "src") == (
        1,
        ["src/locked:1:1: BUF999 cannot read directory: permission denied", f"src/m.py:11:9: {FINDING}", "Found 2 errors.", "[*] 1 fixable with the `--fix` option."],
        [],
    )


def test_read_only_file_is_reported_and_left_alone(capsys: pytest.CaptureFixture[str]) -> None:
    # No write permission bit: refused even as root (who could write it), as an editor would warn.
    path = put("ro.py", MODEL)
    path.chmod(0o444)
    code, out, err = cli(capsys, "--fix", "ro.py")
    assert code == 1
    assert err == ["error: ro.py: file is read-only; fix not written"]
    assert out == [f"ro.py:11:9: {FINDING}", "Found 1 error (0 fixed, 1 remaining).", "[*] 1 fixable with the `--fix` option."]
    assert path.read_bytes() == MODEL and (path.stat().st_mode & 0o777) == 0o444


def test_failed_write_is_reported_and_leaves_no_temporary_file(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    put("a.py", MODEL)
    put("b.py", MODEL)

    def refuse(src: str, dst: str) -> None:
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(os, "replace", refuse)  # e.g. a folder that became read-only mid-run
    code, out, err = cli(capsys, "--fix", "a.py", "b.py")
    assert code == 1
    assert err == ["error: a.py: cannot write file: permission denied", "error: b.py: cannot write file: permission denied"]
    assert out == [f"a.py:11:9: {FINDING}", f"b.py:11:9: {FINDING}", "Found 2 errors (0 fixed, 2 remaining).", "[*] 2 fixable with the `--fix` option."]
    assert sorted(os.listdir(".")) == ["a.py", "b.py"]
    assert Path("a.py").read_bytes() == MODEL


def test_everything_at_once_one_line_each(capsys: pytest.CaptureFixture[str]) -> None:
    put("good.py", MODEL)
    put("py2.py", b'import torch\nprint "x"\n')
    put("nul.py", b"import torch\x00\n")
    os.symlink("gone.py", "dangling.py")
    code, out, err = cli(capsys, "--fix", "py2.py", "good.py", "nul.py", "dangling.py", "missing.py")
    assert (code, err) == (1, [])
    assert out == [
        "dangling.py:1:1: BUF999 cannot read file: dangling symlink to 'gone.py'",
        "missing.py:1:1: BUF999 cannot read file: no such file or directory",
        "nul.py:1:13: BUF999 source contains NUL bytes",
        "py2.py:2:1: BUF999 syntax error: Missing parentheses in call to 'print'. Did you mean print(...)?",
        "Found 5 errors (1 fixed, 4 remaining).",
    ]
    assert Path("good.py").read_bytes() == MODEL.replace(BEFORE, AFTER)
