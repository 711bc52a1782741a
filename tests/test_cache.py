"""The result cache: where it lives, what it keys on, exact round trips, fix runs, concurrency."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import bufferlint.runner as runner
from bufferlint.cache import CACHE_DIR_NAME, Cache, project_root
from bufferlint.cli import main

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
REPO = FIXTURES.parent
BROKEN = "import torch\nclass A(torch.nn.Module):\n    def f(self\n"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project (pyproject.toml) with fixtures holding safe, unsafe and no fixes, and a broken file."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    src = tmp_path / "src"
    src.mkdir()
    for name in ("dct_matrix", "hazard_alias", "hazard_before_super", "noqa", "not_modules"):
        (src / f"{name}.py").write_bytes((FIXTURES / "buf001" / f"{name}.py").read_bytes())
    (src / "broken.py").write_text(BROKEN)
    monkeypatch.chdir(src)  # the cache goes to the project root, not the cwd
    return tmp_path


def lint(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["--output-format", "json", "-j", "1", *args])
    return code, capsys.readouterr().out


def forbid_processing(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    processed: list[str] = []
    original = runner.process_path

    def spy(path: str, *args: object, **kwargs: object) -> object:
        processed.append(os.path.basename(path))
        return original(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(runner, "process_path", spy)
    return processed


def test_cache_folder_in_project_root_with_tag_and_gitignore(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lint(capsys, ".")
    cache = project / CACHE_DIR_NAME
    assert (cache / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    assert (cache / ".gitignore").read_text().splitlines()[-1] == "*"
    assert not (project / "src" / CACHE_DIR_NAME).exists()
    assert project_root(str(project / "src")) == str(project)


def test_warm_run_is_identical_and_processes_nothing(project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    no_cache = lint(capsys, "--no-cache", ".")
    cold = lint(capsys, ".")
    processed = forbid_processing(monkeypatch)
    warm = lint(capsys, ".")
    assert processed == []
    assert cold == warm == no_cache
    findings = json.loads(warm[1])
    assert {f["code"] for f in findings} == {"BUF001", "BUF999"}
    assert {(f["fix"] or {}).get("applicability") for f in findings} == {"safe", "unsafe", None}
    # concise output (fix markers, summary counts) rendered from cached findings is the same too
    assert lint(capsys, "--output-format", "concise", ".") == lint(capsys, "--output-format", "concise", "--no-cache", ".")


def test_changed_file_and_changed_settings_miss(project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    lint(capsys, ".")
    processed = forbid_processing(monkeypatch)
    target = project / "src" / "not_modules.py"
    target.write_text(target.read_text() + "\n# touched\n")
    lint(capsys, ".")
    assert processed == ["not_modules.py"]
    processed.clear()
    _, selected = lint(capsys, "--ignore", "BUF001", ".")
    assert sorted(processed) == sorted(os.listdir(project / "src"))
    assert {f["code"] for f in json.loads(selected)} == {"BUF999"}


def test_fix_run_reprocesses_files_with_fixable_findings(project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    lint(capsys, ".")
    processed = forbid_processing(monkeypatch)
    main(["--fix", "-j", "1", "."])
    capsys.readouterr()
    # Files with a safe fix are processed again; those with none (or only an unsafe one) come from the cache.
    assert sorted(processed) == ["dct_matrix.py", "hazard_alias.py", "noqa.py"]
    assert (project / "src" / "dct_matrix.py").read_bytes() == (FIXTURES / "buf001" / "dct_matrix.fixed.py").read_bytes()
    assert (project / "src" / "noqa.py").read_bytes() == (FIXTURES / "buf001" / "noqa.fixed.py").read_bytes()
    lint(capsys, ".")  # caches the fixed files (a run that rewrote a file stores nothing for it)
    processed.clear()
    safe_fixed = (project / "src" / "hazard_alias.py").read_bytes()
    main(["--fix", "--unsafe-fixes", "-j", "1", "."])
    capsys.readouterr()
    assert processed == ["hazard_alias.py"]  # its unsafe fix is wanted now
    assert (project / "src" / "hazard_alias.py").read_bytes() != safe_fixed


def test_no_cache_writes_nothing_and_cache_dir_moves_it(project: Path, tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]) -> None:
    lint(capsys, "--no-cache", ".")
    assert not (project / CACHE_DIR_NAME).exists()
    elsewhere = tmp_path_factory.mktemp("elsewhere") / "c"
    lint(capsys, "--cache-dir", str(elsewhere), ".")
    assert (elsewhere / "CACHEDIR.TAG").exists()
    assert not (project / CACHE_DIR_NAME).exists()


def test_damaged_entries_are_misses(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expected = lint(capsys, ".")
    entries = [p for p in (project / CACHE_DIR_NAME).rglob("*") if p.is_file() and p.parent.name != CACHE_DIR_NAME]
    assert len(entries) == 6
    for entry in entries:
        entry.write_text('{"findings": [{"code": ')
    assert lint(capsys, ".") == expected


def test_key_covers_bytes_path_version_and_settings(tmp_path: Path) -> None:
    base = Cache.open(str(tmp_path), "1.0", "Settings()")
    assert base.key("a.py", b"x") != base.key("a.py", b"y")
    assert base.key("a.py", b"x") != base.key("b.py", b"x")
    assert base.key("a.py", b"x") != Cache.open(str(tmp_path), "1.1", "Settings()").key("a.py", b"x")
    assert base.key("a.py", b"x") != Cache.open(str(tmp_path), "1.0", "Settings(x=1)").key("a.py", b"x")
    assert base.key("a.py", b"x") == Cache.open(str(tmp_path), "1.0", "Settings()").key("a.py", b"x")


def test_concurrent_runs_share_one_cache(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expected = lint(capsys, "--no-cache", ".")[1]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "bufferlint", "--output-format", "json", "-j", "2", "."]
    children = [subprocess.Popen(command, cwd=project / "src", env=env, stdout=subprocess.PIPE) for _ in range(3)]
    outputs = [child.communicate()[0].decode() for child in children]
    assert outputs == [expected] * 3
    leftovers = [p.name for p in (project / CACHE_DIR_NAME).rglob(".tmp-*")]
    assert leftovers == []
    assert lint(capsys, ".")[1] == expected
