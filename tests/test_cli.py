"""The command line: exit codes, --diff, --quiet, --statistics, --show-fixes, stdin, rule docs,
file selection (exclude, .gitignore, --force-exclude) and colour."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bufferlint.cli import main
from tests.samples import MODEL, MOVED_EVERY_CALL

ROOT = Path(__file__).resolve().parent.parent

FIXED_T = '        self.register_buffer("t", torch.ones(3), persistent=False)\n'
FIXED_BASIS = '        self.register_buffer("basis", basis, persistent=False)\n'
CLEAN = "import torch\n\n\ndef f():\n    return torch.ones(3)\n"


@pytest.fixture(autouse=True)
def plain_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.chdir(tmp_path)  # no pyproject.toml above tmp_path: defaults


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["--select", "BUF001", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_concise_lines_summary_and_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path / "m.py", MODEL)
    code, out, _ = cli(capsys, "m.py")
    assert code == 1
    assert out.splitlines() == [
        "m.py:8:9: BUF001 [*] Tensor attribute `t` is not a registered buffer: .to()/.cuda() leave it behind, "
        "and forward() uses it with the input or the module's tensors",
        "m.py:9:9: BUF001 Tensor attribute `basis` is not a registered buffer: .to()/.cuda() leave it behind, "
        "and forward() uses it with the input or the module's tensors; "
        "unsafe: the value aliases `basis`: after .to() the buffer is a separate copy",
        "Found 2 errors.",
        "[*] 1 fixable with the `--fix` option (1 hidden fix can be enabled with the `--unsafe-fixes` option).",
    ]


def test_clean_file_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path / "ok.py", CLEAN)
    assert cli(capsys, "ok.py") == (0, "All checks passed!\n", "")


def test_quiet_prints_findings_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path / "m.py", MODEL)
    code, out, _ = cli(capsys, "--quiet", "m.py")
    assert code == 1
    assert [line.split(":")[1] for line in out.splitlines()] == ["8", "9"]
    write(tmp_path / "ok.py", CLEAN)
    assert cli(capsys, "-q", "ok.py") == (0, "", "")


def test_unsafe_fixes_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path / "m.py", MODEL)
    code, out, _ = cli(capsys, "--unsafe-fixes", "m.py")
    assert code == 1
    assert out.count("[*]") == 3  # both lines, plus the summary
    assert out.splitlines()[-1] == "[*] 2 fixable with the `--fix --unsafe-fixes` option."


def test_diff_prints_writes_nothing_and_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = write(tmp_path / "m.py", MODEL)
    code, out, err = cli(capsys, "--diff", "m.py")
    assert code == 1
    assert target.read_text() == MODEL
    assert out.startswith("--- a/m.py\n+++ b/m.py\n")
    assert "-        self.t = torch.ones(3)\n+" + FIXED_T in out
    assert "basis" not in "".join(l for l in out.splitlines() if l.startswith("+"))  # unsafe: not applied
    assert err == "Would fix 1 error (1 remaining).\n"


def test_diff_with_nothing_to_fix_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path / "ok.py", CLEAN)
    assert cli(capsys, "--diff", "ok.py") == (0, "", "No errors would be fixed.\n")


def test_diff_with_findings_but_no_fix_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """As ruff: `--diff` exits 1 only when there is a diff; a finding without a fix is not one."""
    unfixable = (
        "import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n    def __init__(self, t):\n"
        "        super().__init__()\n        self.t = t.clone()\n\n    def forward(self, x):\n"
        "        return x + self.t.to(x.device)\n"
    )
    write(tmp_path / "u.py", unfixable)
    assert main(["--select", "BUF002", "u.py"]) == 1  # the finding is there...
    capsys.readouterr()
    assert main(["--select", "BUF002", "--diff", "u.py"]) == 0  # ...but there is nothing to apply
    assert capsys.readouterr().out == ""


def test_no_path_checks_the_current_folder_and_check_is_the_default_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path / "pkg" / "m.py", MODEL)
    code, out, _ = cli(capsys)
    assert code == 1 and out.startswith("pkg/m.py:8:9: BUF001")
    assert main(["check", "--select", "BUF001"]) == 1
    assert capsys.readouterr().out == out
    assert main(["check", "--select", "BUF001", "pkg/m.py"]) == 1


def test_fix_writes_and_show_fixes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = write(tmp_path / "m.py", MODEL)
    code, out, _ = cli(capsys, "--fix", "--unsafe-fixes", "--show-fixes", "m.py")
    assert code == 0
    text = target.read_text()
    assert FIXED_T in text and FIXED_BASIS in text
    assert out == "Found 2 errors (2 fixed, 0 remaining).\nFixed 2 errors:\n- m.py:\n    2 × BUF001 (tensor-attribute)\n"


def test_fix_leaves_unsafe_and_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = write(tmp_path / "m.py", MODEL)
    code, out, _ = cli(capsys, "--fix", "m.py")
    assert code == 1
    assert FIXED_T in target.read_text() and "self.basis = basis" in target.read_text()
    assert out.splitlines()[-2:] == [
        "Found 2 errors (1 fixed, 1 remaining).",
        "No fixes available (1 hidden fix can be enabled with the `--unsafe-fixes` option).",
    ]


def test_statistics(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path / "a.py", MODEL)
    write(tmp_path / "b.py", MODEL)
    code, out, _ = cli(capsys, "--statistics", ".")
    assert code == 1
    assert out == "4\tBUF001\t[-] tensor-attribute\n"  # as ruff: [-] when only some are fixable
    assert cli(capsys, "--statistics", "--unsafe-fixes", ".")[1] == "4\tBUF001\t[*] tensor-attribute\n"


def test_exit_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path / "m.py", MODEL)
    assert cli(capsys, "--exit-zero", "m.py")[0] == 0


def test_stdin_fix_writes_source_to_stdout(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import io

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(MODEL.encode())))
    code = main(["--select", "BUF001", "--fix", "--stdin-filename", "m.py", "-"])
    monkeypatch.setattr(sys, "stdout", sys.__stdout__)
    captured = capsys.readouterr()
    assert code == 1  # the unsafe finding remains
    assert FIXED_T in captured.out and "self.basis = basis" in captured.out
    assert "m.py:9:9: BUF001" in captured.err


def test_unknown_selector_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path / "m.py", MODEL)
    code = main(["--select", "BUF9X", "m.py"])
    assert code == 2
    assert "unknown rule selector: 'BUF9X'" in capsys.readouterr().err


def test_ignore_noqa(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path / "m.py", MODEL.replace("torch.ones(3)", "torch.ones(3)  # noqa: BUF001"))
    assert [l.split(":")[1] for l in cli(capsys, "-q", "m.py")[1].splitlines()] == ["9"]
    assert [l.split(":")[1] for l in cli(capsys, "-q", "--ignore-noqa", "m.py")[1].splitlines()] == ["8", "9"]


def test_file_level_noqa(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path / "m.py", "# bufferlint: noqa\n" + MODEL)
    assert cli(capsys, "m.py")[0] == 0


# --- file selection ---


def test_gitignore_respected_for_walked_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / ".git").mkdir()
    write(tmp_path / ".gitignore", "generated/\n*_tmp.py\n!keep_tmp.py\n")
    write(tmp_path / "src" / "a.py", MODEL)
    write(tmp_path / "generated" / "b.py", MODEL)
    write(tmp_path / "src" / "c_tmp.py", MODEL)
    write(tmp_path / "src" / "keep_tmp.py", MODEL)
    write(tmp_path / "src" / "sub" / ".gitignore", "d.py\n")
    write(tmp_path / "src" / "sub" / "d.py", MODEL)
    files = {line.split(":")[0] for line in cli(capsys, "-q", ".")[1].splitlines()}
    assert files == {"src/a.py", "src/keep_tmp.py"}
    # a file named on the command line is linted even when ignored...
    assert cli(capsys, "-q", "generated/b.py")[0] == 1
    # ...unless --force-exclude (what the pre-commit hooks pass)
    assert cli(capsys, "-q", "--force-exclude", "generated/b.py") == (0, "", "")


def test_exclude_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path / "a.py", MODEL)
    write(tmp_path / "legacy" / "b.py", MODEL)
    write(tmp_path / ".ipynb_checkpoints" / "c.py", MODEL)
    files = lambda *a: {l.split(":")[0] for l in cli(capsys, "-q", *a, ".")[1].splitlines()}  # noqa: E731
    assert files() == {"a.py", "legacy/b.py"}
    assert files("--extend-exclude", "legacy") == {"a.py"}
    assert files("--exclude", "a.py") == {"legacy/b.py", ".ipynb_checkpoints/c.py"}


def test_fixed_file_keeps_mode(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = write(tmp_path / "m.py", MODEL)
    target.chmod(0o751)
    cli(capsys, "--fix", "m.py")
    assert target.stat().st_mode & 0o777 == 0o751


# --- colour ---


def test_colour_only_when_forced_or_on_a_terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path / "m.py", MODEL)
    assert "\x1b[" not in cli(capsys, "m.py")[1]  # captured output is not a terminal
    monkeypatch.setenv("FORCE_COLOR", "1")
    out = cli(capsys, "m.py")[1]
    assert "\x1b[1;31mBUF001\x1b[0m" in out
    assert "\x1b[" not in cli(capsys, "--output-format", "json", "m.py")[1]  # machine formats never
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in cli(capsys, "m.py")[1]


def test_colour_on_a_real_terminal(tmp_path: Path) -> None:
    """Through a pseudo-terminal the concise output is coloured; through a pipe it is not."""
    import os
    import pty

    write(tmp_path / "m.py", MODEL)
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR")}
    env["PYTHONPATH"] = str(ROOT)
    command = [sys.executable, "-m", "bufferlint", "--select", "BUF001", "m.py"]
    leader, follower = pty.openpty()
    proc = subprocess.run(command, cwd=tmp_path, env=env, stdout=follower, stderr=subprocess.PIPE)
    os.close(follower)
    tty_out = os.read(leader, 65536).decode()
    os.close(leader)
    piped = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert proc.returncode == piped.returncode == 1
    assert "\x1b[1;31mBUF001\x1b[0m" in tty_out
    assert "\x1b[" not in piped.stdout


# --- rule docs ---


def test_rule_docs_and_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rule", "BUF001"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# BUF001 tensor-attribute\n")
    for heading in ("## Why it matters", "## Example", "## Instead", "## Fix safety"):
        assert heading in out
    assert main(["rule", "tensor-attribute"]) == 0
    assert capsys.readouterr().out == out
    assert main(["--list-rules"]) == 0
    listed = capsys.readouterr().out
    assert main(["rule"]) == 0
    assert capsys.readouterr().out == listed
    assert listed.splitlines()[0].startswith("BUF001  tensor-attribute")
    assert main(["rule", "BUF4242"]) == 2
    assert "unknown rule 'BUF4242'" in capsys.readouterr().err


def test_console_entry_point_runs(tmp_path: Path) -> None:
    write(tmp_path / "m.py", MODEL)
    result = subprocess.run(
        [sys.executable, "-m", "bufferlint", "--select", "BUF001", "--output-format", "github", "m.py"],
        cwd=tmp_path, capture_output=True, text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 1, result.stderr
    assert result.stdout.startswith("::error file=m.py,line=8,col=9,endLine=8,endColumn=31,title=BUF001::Tensor attribute `t`")


def test_paths_of_a_walked_folder_are_relative_and_the_diff_applies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`bufferlint --diff .` names `vit/x.py`, not `./vit/x.py` (whose `a/./vit/x.py` headers
    `git apply` refuses); an absolute path inside the working folder is shown relative, as ruff does."""
    target = write(tmp_path / "vit" / "x.py", MODEL)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    code, out, _ = cli(capsys, "--diff", ".")
    assert code == 1 and out.startswith("--- a/vit/x.py\n+++ b/vit/x.py\n")
    (tmp_path / "fix.patch").write_text(out)
    subprocess.run(["git", "apply", "--check", "fix.patch"], cwd=tmp_path, check=True)
    assert cli(capsys, "--output-format", "github", ".")[1].startswith("::error file=vit/x.py,line=8,")
    assert cli(capsys, str(target))[1].startswith("vit/x.py:8:9: BUF001")
    assert json.loads(cli(capsys, "--output-format", "json", "./vit//x.py")[1])[0]["filename"] == "vit/x.py"


def test_exit_non_zero_on_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    only_safe = MODEL.replace("        self.basis = basis\n", "")
    write(tmp_path / "m.py", only_safe)
    assert main(["--select", "BUF001", "--fix", "m.py"]) == 0  # fixed, nothing left
    write(tmp_path / "m.py", only_safe)
    assert main(["--select", "BUF001", "--fix", "--exit-non-zero-on-fix", "m.py"]) == 1
    assert main(["--select", "BUF001", "--fix", "--exit-non-zero-on-fix", "m.py"]) == 0  # nothing to fix now
    capsys.readouterr()


def test_show_files_lists_what_a_run_would_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path / "pyproject.toml", '[tool.bufferlint]\nextend-exclude = ["legacy/"]\n')
    write(tmp_path / "src" / "a.py", CLEAN)
    write(tmp_path / "legacy" / "b.py", CLEAN)
    write(tmp_path / "notes.txt", "x")
    assert main(["--show-files"]) == 0
    assert capsys.readouterr().out == "src/a.py\n"
    assert main(["--show-files", "legacy/b.py", "src"]) == 0  # named on the command line: kept
    assert capsys.readouterr().out == "legacy/b.py\nsrc/a.py\n"


def test_show_settings_names_the_file_and_what_it_resolves_to(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path / "pyproject.toml", '[tool.bufferlint]\nignore = ["BUF002"]\n[tool.bufferlint.per-file-ignores]\n"tests/*" = ["BUF001"]\n')
    write(tmp_path / "tests" / "t.py", CLEAN)
    assert main(["--show-settings", "--extend-select", "BUF006", "tests/t.py"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:3] == ["Path: tests/t.py", f"Configuration: {tmp_path / 'pyproject.toml'}", f"Project root: {tmp_path}"]
    assert "Enabled rules: BUF001, BUF003, BUF005, BUF006, BUF008" in lines
    assert "ignore for this path: ['BUF002', 'BUF001']" in lines


ADOPTION = (
    "import torch\r\nfrom torch import nn\r\n\r\n\r\nclass M(nn.Module):\r\n    def __init__(self):\r\n"
    "        super().__init__()\r\n"
    "        self.a = torch.ones(3)  # noqa: E501\r\n"
    "        self.b = torch.tensor(\r\n            [1.0, 2.0, 3.0]\r\n        )\r\n"
    '        self.c = torch.tensor([float(v) for v in """1\r\n2\r\n3""".split()])\r\n'
    "        self.d = \\\r\n            torch.zeros(3)\r\n"
    "        self.lin = nn.Linear(3, 3)\r\n\r\n"
    "    def forward(self, x):\r\n        return self.lin(x) + self.a + self.b + self.c + self.d\r\n"
)


def test_add_noqa_suppresses_every_finding_where_it_is(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Adoption starts green: each finding gets `# noqa: CODE` on a line of its statement that can
    take a comment (the last, else the first; never inside a string or after a backslash), an
    existing `# noqa: CODES` is extended, line endings stay, and a second run adds nothing."""
    target = tmp_path / "m.py"
    target.write_bytes(ADOPTION.encode())
    assert main(["--select", "BUF001", "-q", "m.py"]) == 1
    capsys.readouterr()
    assert main(["--select", "BUF001", "--add-noqa", "m.py"]) == 0
    assert capsys.readouterr().out == "Added 4 noqa directives.\n"
    lines = target.read_bytes().decode().split("\r\n")
    assert lines[7] == "        self.a = torch.ones(3)  # noqa: BUF001, E501"
    assert lines[10] == "        )  # noqa: BUF001"
    assert lines[11].endswith('for v in """1') and lines[13].endswith("  # noqa: BUF001")  # after the string ends
    assert lines[14] == "        self.d = \\" and lines[15] == "            torch.zeros(3)  # noqa: BUF001"
    assert target.read_bytes().count(b"\r\n") == ADOPTION.count("\r\n")
    assert main(["--select", "BUF001", "m.py"]) == 0
    assert main(["--select", "BUF001", "--add-noqa", "m.py"]) == 0
    assert capsys.readouterr().out.endswith("Added 0 noqa directives.\n")
    assert "--add-noqa edits files by itself" in (main(["--add-noqa", "--fix", "m.py"]), capsys.readouterr().err)[1]


def test_add_noqa_leaves_a_file_alone_when_a_finding_has_no_line_to_take_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = (
        "import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        '        self.c = torch.tensor([float(v) for v in """1\n2""".split()]); \\\n        self.k = 2\n\n'
        "    def forward(self, x):\n        return x + self.c\n"
    )
    write(tmp_path / "m.py", source)
    assert main(["--select", "BUF001", "--add-noqa", "m.py"]) == 1
    captured = capsys.readouterr()
    assert "error: m.py: no noqa added: no line of the statement at row 8 can take a comment" in captured.err
    assert (tmp_path / "m.py").read_text() == source


def test_fix_counts_what_check_found(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """As ruff: `--fix` reports the findings a check reports, as fixed plus remaining. Registering
    `t` also settles the per-call move BUF002 reports (unfixable here, so no fix of its own)."""
    pair = MOVED_EVERY_CALL
    write(tmp_path / "m.py", pair)
    assert main(["--unfixable", "BUF002", "m.py"]) == 1
    assert "Found 2 errors." in capsys.readouterr().out
    assert main(["--unfixable", "BUF002", "--fix", "m.py"]) == 0
    assert capsys.readouterr().out == "Found 2 errors (2 fixed, 0 remaining).\n"
