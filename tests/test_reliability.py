"""Never corrupt a file: atomic writes that keep mode, owner and symlinks; interrupts that leave
every file either as it was or fully fixed; fixes kept only when the output parses and re-linting
shows the fixed findings gone; untouched files byte-identical; internal errors reported (exit 2)
without a traceback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import libcst as cst
import libcst.matchers as m
import pytest

from bufferlint import source
from bufferlint.analysis.file import FileAnalysis
from bufferlint.cli import REPORT_URL, main
from bufferlint.config import Settings
from bufferlint.lint import MAX_FIX_ROUNDS, InternalError, check_bytes, fix_bytes, fix_source, lint_source
from bufferlint.model import Applicability, Finding, Fix, Replace
from bufferlint.rules.base import Rule
from bufferlint.source import WriteError, splice_untouched, write_atomic
from tests.samples import ONE_TENSOR_ATTRIBUTE

ROOT = Path(__file__).resolve().parent.parent
MODEL = ONE_TENSOR_ATTRIBUTE
FIXED = MODEL.replace(b"self.t = torch.zeros(3)", b'self.register_buffer("t", torch.zeros(3), persistent=False)')


@pytest.fixture(autouse=True)
def in_tmp(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)


def temp_files(folder: Path) -> list[str]:
    return [name for name in os.listdir(folder) if name.startswith(source.TEMP_PREFIX)]


# --- write_atomic ---


def test_write_keeps_mode_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_bytes(MODEL)
    path.chmod(0o754)
    write_atomic(str(path), FIXED)
    assert path.read_bytes() == FIXED
    assert (path.stat().st_mode & 0o7777) == 0o754
    assert temp_files(tmp_path) == []


def test_write_keeps_the_owner(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_bytes(MODEL)
    if os.geteuid() == 0:  # only root can hand a file to someone else; the fix must keep it theirs
        os.chown(path, 4321, 4321)
    owner = (path.stat().st_uid, path.stat().st_gid)
    write_atomic(str(path), FIXED)
    assert (path.stat().st_uid, path.stat().st_gid) == owner


def test_write_goes_through_a_symlink_and_keeps_the_link(tmp_path: Path) -> None:
    real = tmp_path / "src" / "model.py"
    real.parent.mkdir()
    real.write_bytes(MODEL)
    link = tmp_path / "link.py"
    link.symlink_to(Path("src") / "model.py")
    write_atomic(str(link), FIXED)
    assert link.is_symlink() and os.readlink(link) == os.path.join("src", "model.py")
    assert real.read_bytes() == FIXED
    assert temp_files(tmp_path) == [] and temp_files(real.parent) == []


def test_fix_through_a_symlink_on_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "real.py").write_bytes(MODEL)
    (tmp_path / "link.py").symlink_to("real.py")
    assert main(["--no-cache", "-j", "1", "--select", "BUF001", "--fix", "link.py"]) == 0
    assert (tmp_path / "link.py").is_symlink() and (tmp_path / "real.py").read_bytes() == FIXED


def test_read_only_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_bytes(MODEL)
    path.chmod(0o444)
    with pytest.raises(WriteError, match="^file is read-only; fix not written$"):
        write_atomic(str(path), FIXED)
    assert path.read_bytes() == MODEL and temp_files(tmp_path) == []


def test_interrupt_while_writing_keeps_the_original(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "m.py"
    path.write_bytes(MODEL)

    def interrupted(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(str(path), FIXED)
    assert path.read_bytes() == MODEL and temp_files(tmp_path) == []


def test_sigint_is_deferred_even_with_other_threads_alive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel may hand a process signal to any thread; the write must still finish first."""
    import threading

    stop = threading.Event()
    helper = threading.Thread(target=stop.wait)
    helper.start()
    try:
        test_sigint_during_a_write_is_delivered_after_the_rename(tmp_path, monkeypatch)
    finally:
        stop.set()
        helper.join()


def test_sigint_during_a_write_is_delivered_after_the_rename(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real SIGINT sent half-way through the write: held back until the new file is in place."""
    path = tmp_path / "m.py"
    path.write_bytes(MODEL)
    real_fsync = os.fsync

    def fsync_with_ctrl_c(fd: int) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)  # an unmasked SIGINT would have raised KeyboardInterrupt by now
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync_with_ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(str(path), FIXED)
    assert path.read_bytes() == FIXED and temp_files(tmp_path) == []


# --- splicing back what libcst does not reproduce ---


def test_splice_keeps_the_original_stretch_when_edits_are_elsewhere() -> None:
    original = b"\x0cx = 1\ny = 2\n"
    roundtrip = b"x = 1\ny = 2\n"  # libcst drops a leading form feed
    assert splice_untouched(original, roundtrip, b"x = 1\ny = 3\n") == b"\x0cx = 1\ny = 3\n"
    original = b"x = 1\ny = 2\n  \n\t\n"
    roundtrip = b"x = 1\ny = 2\n\t\n"  # ... and whitespace-only lines at the end
    assert splice_untouched(original, roundtrip, b"x = 0\ny = 2\n\t\n") == b"x = 0\ny = 2\n  \n\t\n"
    assert splice_untouched("same\n", "same\n", "new\n") == "new\n"


def test_splice_refuses_when_the_edit_covers_the_stretch() -> None:
    assert splice_untouched(b"a\n\x0cb\nc\n", b"a\nb\nc\n", b"A\nB\nC\n") is None


# --- the fix loop keeps a fix only when it is proven ---


class _FakeRule(Rule):
    """BUF901: flags `x = <int>` at module level; `mode` says what its fix does."""

    code = "BUF901"
    name = "fake"
    summary = "test rule"
    mode = "invalid"

    def check(self, analysis: FileAnalysis) -> Iterator[Finding]:
        for assign in m.findall(analysis.module, m.Assign(targets=[m.AssignTarget(target=m.Name("x"))], value=m.Integer())):
            assert isinstance(assign, cst.Assign)
            value = assign.value
            assert isinstance(value, cst.Integer)
            if self.mode == "invalid":  # output that does not parse
                fix = Fix(Applicability.SAFE, "fix", [Replace(value, cst.Name("if"))])
                yield self.finding(analysis, assign.targets[0].target, "x is an int", fix)
            elif self.mode == "stays":  # the finding is still there after its fix
                if value.value == "1":
                    fix = Fix(Applicability.SAFE, "fix", [Replace(value, cst.Integer("2"))])
                    yield self.finding(analysis, assign.targets[0].target, "x is 1", fix)
                else:
                    yield self.finding(analysis, assign.targets[0].target, "x is still an int")
            elif self.mode == "greek":  # a character a latin-1 file cannot hold
                fix = Fix(Applicability.SAFE, "fix", [Replace(value, cst.Name("\u03c0"))])
                yield self.finding(analysis, assign.targets[0].target, "x is an int", fix)
            elif self.mode == "toggle":  # every fix invites the next one
                other = "2" if value.value == "1" else "1"
                fix = Fix(Applicability.SAFE, "fix", [Replace(value, cst.Integer(other))])
                yield self.finding(analysis, assign, f"x is {value.value}", fix)
            else:
                raise RuntimeError("rule exploded")


@pytest.fixture
def fake_rule(monkeypatch: pytest.MonkeyPatch) -> type[_FakeRule]:
    monkeypatch.setattr(Settings, "enabled_rules", lambda self: [_FakeRule])
    return _FakeRule


FAKE_SOURCE = MODEL + b"\nx = 1\n"


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("invalid", "the fixed code does not parse (syntax error: invalid syntax, line 13)"),
        ("stays", "re-linting the fixed code still reports BUF901 at 13:1"),
        ("toggle", f"fixes did not converge after {MAX_FIX_ROUNDS} rounds"),
    ],
)
def test_unproven_fix_is_not_kept(fake_rule: type[_FakeRule], monkeypatch: pytest.MonkeyPatch, mode: str, reason: str) -> None:
    monkeypatch.setattr(fake_rule, "mode", mode)
    result = fix_bytes(FAKE_SOURCE, "m.py", Settings())
    assert result.new_data is None and result.fixed == 0
    assert result.fix_error == f"{reason}; file left unchanged"
    assert [(f.code, f.location.row) for f in result.findings] == [("BUF901", 13)]


def test_fix_the_file_encoding_cannot_hold_is_not_kept(fake_rule: type[_FakeRule], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fake_rule, "mode", "greek")
    data = b"# -*- coding: latin-1 -*-\n" + FAKE_SOURCE
    result = fix_bytes(data, "m.py", Settings())
    assert result.new_data is None
    assert result.fix_error == "the fixed code cannot be written in the file's encoding (iso-8859-1); file left unchanged"
    assert fix_bytes(FAKE_SOURCE, "m.py", Settings()).new_data == FAKE_SOURCE.replace(b"x = 1", "x = \u03c0".encode())


def test_unproven_fix_on_the_command_line(fake_rule: type[_FakeRule], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "m.py"
    path.write_bytes(FAKE_SOURCE)
    assert main(["--no-cache", "-j", "1", "--fix", "m.py"]) == 1
    captured = capsys.readouterr()
    assert captured.err == "error: m.py: the fixed code does not parse (syntax error: invalid syntax, line 13); file left unchanged\n"
    assert captured.out.splitlines()[0] == "m.py:13:1: BUF901 x is an int"  # the refused fix is not offered again
    assert path.read_bytes() == FAKE_SOURCE


def test_internal_error_names_the_file_and_exits_2(fake_rule: type[_FakeRule], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(fake_rule, "mode", "raise")
    (tmp_path / "m.py").write_bytes(FAKE_SOURCE)
    assert main(["--no-cache", "-j", "1", "--fix", "m.py"]) == 2
    captured = capsys.readouterr()
    line = next(n for n, text in enumerate(Path(__file__).read_text().splitlines(), 1) if 'raise RuntimeError("rule exploded")' in text)
    assert captured.err.splitlines() == [
        f"bufferlint: internal error: while processing m.py: RuntimeError: rule exploded (at test_reliability.py:{line})",
        f"Please report this at {REPORT_URL} with the file that triggered it.",
    ]
    assert captured.out == "" and (tmp_path / "m.py").read_bytes() == FAKE_SOURCE


def test_internal_error_from_a_real_rule_in_a_subprocess_has_no_traceback(tmp_path: Path) -> None:
    """The same through the installed entry point, with worker processes: a rule module that
    raises is loaded from a sitecustomize on PYTHONPATH."""
    (tmp_path / "hook").mkdir()
    (tmp_path / "hook" / "sitecustomize.py").write_text(
        "import bufferlint.rules.buf001_tensor_attribute as r\n"
        "def boom(self, analysis):\n"
        "    raise ValueError('boom')\n"
        "r.TensorAttribute.check = boom\n"
    )
    for i in range(4):
        (tmp_path / f"m{i}.py").write_bytes(MODEL)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "hook"), str(ROOT)])}
    done = subprocess.run([sys.executable, "-m", "bufferlint", "--no-cache", "-j", "2", "--fix", "."], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines()[0].startswith("bufferlint: internal error: while processing m")
    assert "ValueError: boom (at sitecustomize.py:3)" in done.stderr
    assert all((tmp_path / f"m{i}.py").read_bytes() == MODEL for i in range(4))


def test_api_raises_internal_errors_with_the_cause(fake_rule: type[_FakeRule], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fake_rule, "mode", "raise")
    with pytest.raises(InternalError, match="^while processing m.py: RuntimeError: rule exploded") as caught:
        lint_source(FAKE_SOURCE, "m.py")
    assert isinstance(caught.value.__cause__, RuntimeError)


def test_fix_result_is_relinted_clean_and_idempotent() -> None:
    assert fix_bytes(MODEL, "m.py", Settings()).new_data == FIXED
    assert check_bytes(FIXED, "m.py", Settings()).findings == []
    assert fix_source(FIXED, "m.py") == FIXED
    assert lint_source(FIXED.decode(), "m.py") == []


# --- nothing to fix: not even rewritten ---


def test_file_with_nothing_to_fix_is_not_rewritten(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # CRLF, a BOM, trailing whitespace lines and an unsafe-only finding: nothing may change.
    data = b"\xef\xbb\xbf" + MODEL.replace(b"torch.zeros(3)", b"basis").replace(b"(self)", b"(self, basis: torch.Tensor)").replace(b"\n", b"\r\n") + b"  \r\n"
    path = tmp_path / "m.py"
    path.write_bytes(data)
    before = path.stat()
    assert main(["--no-cache", "-j", "1", "--select", "BUF001", "--fix", "m.py"]) == 1
    after = path.stat()
    assert path.read_bytes() == data
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert "remaining" in capsys.readouterr().out


# --- SIGINT against a real run ---

PADDED = MODEL + b"\n# padding\n" * 2000


def _states(folder: Path, fixed: bytes) -> dict[str, int]:
    counts: dict[str, int] = {}
    for name in sorted(os.listdir(folder)):
        data = (folder / name).read_bytes()
        state = "original" if data == PADDED else "fixed" if data == fixed else f"CORRUPT {name}"
        counts[state] = counts.get(state, 0) + 1
    return counts


def test_sigint_never_leaves_a_half_written_file(tmp_path: Path) -> None:
    """`bufferlint --fix` over 24 files, interrupted at moments spread over a full run's length:
    every file is the original or the complete fix, no temporary file remains, and when the
    interrupt reached bufferlint (exit 130) it said so in one line."""
    folder = tmp_path / "src"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "bufferlint", "--no-cache", "--select", "BUF001", "--fix", str(folder)]

    def fresh() -> None:
        folder.mkdir(exist_ok=True)
        for name in os.listdir(folder):
            os.unlink(folder / name)
        for i in range(24):
            (folder / f"m{i:02}.py").write_bytes(PADDED)

    fresh()
    start = time.monotonic()
    subprocess.run([*command, "-j", "1"], env=env, capture_output=True, check=False, timeout=300)
    full = time.monotonic() - start
    fixed = (folder / "m00.py").read_bytes()
    assert fixed == FIXED + b"\n# padding\n" * 2000
    seen_codes = set()
    for fraction, jobs in [(0.6, 1), (0.85, 1), (0.95, 1), (1.0, 1), (0.9, 2)]:
        fresh()
        process = subprocess.Popen([*command, "-j", str(jobs)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(full * fraction)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=300)
        seen_codes.add(process.returncode)
        states = _states(folder, fixed)
        assert set(states) <= {"original", "fixed"}, states
        assert temp_files(folder) == []
        if process.returncode == 130:
            assert err == "bufferlint: interrupted; files already written are complete, the rest untouched\n"
    assert 130 in seen_codes  # the interrupt did land inside bufferlint at least once


def test_a_file_edited_while_fix_runs_is_not_overwritten(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Fixes are written when the run ends; a file that changed since it was read (an editor
    saving, another hook) keeps its new content, and the run says so and exits 1."""
    import bufferlint.cli as cli

    edited, untouched = tmp_path / "edited.py", tmp_path / "untouched.py"
    edited.write_bytes(ONE_TENSOR_ATTRIBUTE)
    untouched.write_bytes(ONE_TENSOR_ATTRIBUTE)
    real_run = cli.run

    def run_then_edit(*args: object, **kwargs: object) -> object:
        result = real_run(*args, **kwargs)  # type: ignore[arg-type]
        edited.write_bytes(ONE_TENSOR_ATTRIBUTE + b"\n# saved by an editor meanwhile\n")
        return result

    monkeypatch.setattr(cli, "run", run_then_edit)
    monkeypatch.chdir(tmp_path)
    code = main(["--no-cache", "--fix", "edited.py", "untouched.py"])
    err = capsys.readouterr().err
    assert code == 1
    assert "error: edited.py: changed on disk while bufferlint ran; fix not written" in err
    assert edited.read_bytes() == ONE_TENSOR_ATTRIBUTE + b"\n# saved by an editor meanwhile\n"
    assert b"register_buffer" in untouched.read_bytes()
