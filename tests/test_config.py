"""`[tool.bufferlint]` in pyproject.toml (or --config): keys, precedence, errors with exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from bufferlint.cli import main
from bufferlint.config import ConfigError, FileConfig, Overrides, build_settings, config_at
from tests.samples import MOVED_EVERY_CALL

MODEL = """\
import torch
import torch.nn as nn


class M(nn.Module):
    def __init__(self, basis: torch.Tensor):
        super().__init__()
        self.t = torch.ones(3)
        self.basis = basis

    def forward(self, x):
        return x * self.t + self.basis
"""
CUSTOM_BASE = """\
import torch
from framework import Block


class M(Block):
    def __init__(self):
        super().__init__()
        self.t = torch.ones(3)

    def forward(self, x):
        return x * self.t
"""


@pytest.fixture(autouse=True)
def plain_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.chdir(tmp_path)


def project(tmp_path: Path, table: str, files: dict[str, str]) -> Path:
    (tmp_path / "pyproject.toml").write_text(f"[project]\nname = 'x'\n\n[tool.bufferlint]\n{table}\n")
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


def findings(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str]]:
    code = main(["-q", *args])
    out = capsys.readouterr().out
    return code, [":".join(line.split(":")[:2]) + " " + line.split(": ")[1].split()[0] for line in out.splitlines()]


def error(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(list(args)) == 2
    return capsys.readouterr().err


def test_select_and_ignore_from_pyproject(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project(tmp_path, 'ignore = ["BUF001"]', {"m.py": MODEL})
    assert findings(capsys, "m.py") == (0, [])
    # flags win: --select replaces the file's selection; --extend-select adds to it
    assert findings(capsys, "--extend-select", "BUF001", "m.py")[0] == 0  # ignore still applies
    project(tmp_path, 'select = ["BUF005"]', {})
    assert findings(capsys, "m.py") == (0, [])
    assert findings(capsys, "--select", "BUF001", "m.py") == (1, ["m.py:8 BUF001", "m.py:9 BUF001"])
    assert findings(capsys, "--extend-select", "tensor-attribute", "m.py")[0] == 1


def test_nearest_pyproject_up_from_the_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project(tmp_path, 'ignore = ["BUF001"]', {})
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "pyproject.toml").write_text('[tool.bufferlint]\nselect = ["BUF001"]\n')
    (tmp_path / "sub" / "m.py").write_text(MODEL)
    assert findings(capsys, "sub/m.py")[0] == 1  # sub/pyproject.toml, the nearest, wins
    (tmp_path / "sub" / "pyproject.toml").unlink()
    assert findings(capsys, "sub/m.py") == (0, [])


def test_unsafe_fixes_and_no_unsafe_fixes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project(tmp_path, 'select = ["BUF001"]\nunsafe-fixes = true', {"m.py": MODEL})
    main(["m.py"])
    assert capsys.readouterr().out.count("[*]") == 3
    main(["--no-unsafe-fixes", "m.py"])
    assert capsys.readouterr().out.count("[*]") == 2


def test_module_bases(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project(tmp_path, 'select = ["BUF001"]', {"m.py": CUSTOM_BASE})
    assert findings(capsys, "m.py") == (0, [])
    project(tmp_path, 'select = ["BUF001"]\nmodule-bases = ["framework.Block"]', {})
    assert findings(capsys, "m.py") == (1, ["m.py:8 BUF001"])


def test_exclude_and_extend_exclude(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = {"a.py": MODEL, "legacy/b.py": MODEL, "gen/c_pb2.py": MODEL, "build/d.py": MODEL}
    project(tmp_path, 'select = ["BUF001"]\nextend-exclude = ["legacy/", "*_pb2.py"]', files)
    assert {f.split(":")[0] for f in findings(capsys, ".")[1]} == {"a.py"}
    # `exclude` replaces the default patterns; folders such as build/ are still never walked
    project(tmp_path, 'select = ["BUF001"]\nexclude = ["legacy"]', {})
    assert {f.split(":")[0] for f in findings(capsys, ".")[1]} == {"a.py", "gen/c_pb2.py"}


def test_force_exclude_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project(tmp_path, 'select = ["BUF001"]\nextend-exclude = ["legacy/"]\nforce-exclude = true', {"legacy/b.py": MODEL})
    assert findings(capsys, "legacy/b.py") == (0, [])


def test_per_file_ignores(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = {"src/m.py": MODEL, "tests/test_m.py": MODEL, "tests/deep/x.py": MODEL}
    project(tmp_path, 'select = ["BUF001"]\n[tool.bufferlint.per-file-ignores]\n"tests/**" = ["BUF001"]', files)
    assert {f.split(":")[0] for f in findings(capsys, ".")[1]} == {"src/m.py"}
    # per-file ignores also stop the fixes
    assert main(["--fix", "--unsafe-fixes", "."]) == 0
    capsys.readouterr()
    assert (tmp_path / "tests" / "test_m.py").read_text() == MODEL
    assert "register_buffer" in (tmp_path / "src" / "m.py").read_text()


def test_explicit_config_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project(tmp_path, 'ignore = ["BUF001"]', {"m.py": MODEL})
    (tmp_path / "strict.toml").write_text('select = ["BUF001"]\n')
    assert findings(capsys, "--config", "strict.toml", "m.py")[0] == 1
    assert "no such file: nope.toml" in error(capsys, "--config", "nope.toml", "m.py")
    (tmp_path / "other.toml").write_text('[tool.other]\nline-length = 88\n')
    assert "other.toml: no [tool.bufferlint] table (it has [tool.other])" in error(capsys, "--config", "other.toml", "m.py")


@pytest.mark.parametrize(
    "table, message",
    [
        ('selcet = ["BUF001"]\nfoo = 1', "unknown keys: foo, selcet (`selcet`: did you mean `select`?)"),
        ('extend-exlude = ["legacy/"]', "unknown key: extend-exlude (`extend-exlude`: did you mean `extend-exclude`?)"),
        ('select = ["BUF001", "BUF0X"]', "unknown rule codes in `select`: 'BUF0X'"),
        ('ignore = ["XYZ123"]', "unknown rule codes in `ignore`: 'XYZ123'"),
        ('[tool.bufferlint.per-file-ignores]\n"t/*" = ["BUF777"]', "`per-file-ignores` 't/*': 'BUF777'"),
        ('select = "BUF001"', "`select` must be a list of strings"),
        ('unsafe-fixes = "yes"', "`unsafe-fixes` must be true or false"),
        ("select = [", "invalid TOML"),
    ],
)
def test_bad_configuration_exits_2_naming_the_problem(tmp_path: Path, capsys: pytest.CaptureFixture[str], table: str, message: str) -> None:
    project(tmp_path, table, {"m.py": MODEL})
    err = error(capsys, "m.py")
    assert message in err
    assert str(tmp_path / "pyproject.toml") in err


def test_verify_table_is_not_an_unknown_key(tmp_path: Path) -> None:
    project(tmp_path, '[tool.bufferlint.verify."m:M"]\nkwargs = { n = 3 }', {"m.py": MODEL})
    config = config_at(Path("m.py").resolve().parent)
    assert config.path == tmp_path / "pyproject.toml"


def test_build_settings_precedence(tmp_path: Path) -> None:
    config = FileConfig(tmp_path / "pyproject.toml", tmp_path, {"select": ["BUF001"], "ignore": ["BUF005"], "module-bases": ["a.B"], "unsafe-fixes": True})
    settings = build_settings(config, Overrides(ignore=("BUF006",), module_bases=("c.D",), unsafe_fixes=False, ignore_noqa=True))
    assert settings.select == ("BUF001",)
    assert settings.ignore == ("BUF005", "BUF006")
    assert settings.module_bases == ("a.B", "c.D")
    assert settings.unsafe_fixes is False and settings.ignore_noqa is True
    with pytest.raises(ConfigError, match="'NOPE'"):
        build_settings(config, Overrides(select=("NOPE",)))


def test_each_file_uses_its_nearest_table_whatever_the_order(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """As ruff: a pyproject.toml without [tool.bufferlint] is passed over, a nested table governs
    its folder, and `bufferlint a b` reports what `bufferlint b a` does."""
    project(tmp_path, 'extend-exclude = ["legacy/"]', {"m.py": MODEL, "legacy/old.py": MODEL})
    (tmp_path / "aaa").mkdir()
    (tmp_path / "aaa" / "pyproject.toml").write_text("[tool.black]\nline-length = 100\n")
    (tmp_path / "aaa" / "util.py").write_text(MODEL)
    (tmp_path / "own").mkdir()
    (tmp_path / "own" / "pyproject.toml").write_text('[tool.bufferlint]\nignore = ["BUF001"]\n')
    (tmp_path / "own" / "m.py").write_text(MODEL)
    files = lambda *paths: {f.split(":")[0] for f in findings(capsys, *paths)[1]}
    assert files("aaa/util.py", ".") == files(".", "aaa/util.py") == {"aaa/util.py", "m.py"}
    assert files("own", "m.py") == files("m.py", "own") == {"m.py"}
    assert files("own/m.py") == set()
    code, _ = findings(capsys, "--fix", "aaa/util.py", ".")
    assert (tmp_path / "legacy" / "old.py").read_text() == MODEL  # excluded by the root table
    assert (tmp_path / "own" / "m.py").read_text() == MODEL


def test_fixable_and_unfixable_choose_which_fixes_apply(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """As ruff: an unfixable rule's findings are reported without `[*]` and --fix leaves them;
    `fixable` narrows the fixes to the rules it names; flags add to (or replace) the file's lists."""
    pair = MOVED_EVERY_CALL
    project(tmp_path, 'unfixable = ["BUF002"]', {"m.py": pair})
    assert main(["m.py"]) == 1
    out = capsys.readouterr().out
    assert "m.py:9:9: BUF001 [*]" in out and "m.py:12:30: BUF002 `self.t`" in out
    assert main(["--fix", "m.py"]) == 0  # BUF001 registers `t`; BUF002 is left as written, now moot
    fixed = (tmp_path / "m.py").read_text()
    assert 'self.register_buffer("t", torch.ones(3), persistent=False)' in fixed and "self.t.to(x.device)" in fixed
    project(tmp_path, 'fixable = ["BUF002"]', {"m.py": pair})
    assert main(["--unfixable", "BUF002", "--fix", "m.py"]) == 1  # nothing fixable is left
    assert (tmp_path / "m.py").read_text() == pair
    capsys.readouterr()
    project(tmp_path, 'unfixable = ["BUF0X"]', {"m.py": pair})
    assert "unknown rule codes in `unfixable`: 'BUF0X'" in error(capsys, "m.py")


def test_buf999_is_named_not_unknown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "m.py").write_text(MODEL)
    assert "BUF999 (a file that cannot be read or parsed) is always reported; exclude such files instead" in error(capsys, "--ignore", "BUF999", "m.py")
