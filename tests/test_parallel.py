"""`-j N` gives exactly the results of `-j 1`, in the same order, for check and for fix."""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path

import pytest

from bench.synth import write_corpus
from bufferlint.cli import main
from bufferlint.config import Settings
from bufferlint.discovery import discover
from bufferlint.runner import RunOptions, _process_in_pool, run

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixtures (minus the verifier's) plus synthetic modules, some of them broken."""
    root = tmp_path_factory.mktemp("corpus")
    for source in FIXTURES.rglob("*.py"):
        if "verify" in source.parts:
            continue
        target = root / "fixtures" / source.relative_to(FIXTURES)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(source.read_bytes())
    write_corpus(str(root / "synthetic"), 40, seed=3)
    (root / "synthetic" / "broken.py").write_text("import torch\nclass A(torch.nn.Module):\n    def f(self\n")
    (root / "synthetic" / "skipped_broken.py").write_text("x = (\n")
    return root


def _run_cli(corpus: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> str:
    code = main(["--no-cache", "--output-format", "json", *flags, str(corpus)])
    assert code == 1  # the corpus has findings
    return capsys.readouterr().out


@pytest.mark.parametrize("jobs", ["2", "3"])
def test_check_output_identical_to_one_job(corpus: Path, capsys: pytest.CaptureFixture[str], jobs: str) -> None:
    one = _run_cli(corpus, capsys, "-j", "1")
    many = _run_cli(corpus, capsys, "-j", jobs)
    assert many == one
    assert '"BUF999"' in one and '"BUF001"' in one


def _as_tuples(files: list) -> list:
    return [(f.filename, f.new_data, f.fixed, f.fix_error, [x.to_dict() for x in f.findings]) for f in files]


@pytest.mark.parametrize("fix", [False, True], ids=["check", "fix"])
def test_run_results_identical_and_in_candidate_order(corpus: Path, fix: bool) -> None:
    candidates = list(discover([str(corpus)]))
    settings = Settings(unsafe_fixes=True)
    one = run(candidates, settings, RunOptions(fix=fix, jobs=1)).files
    many = run(candidates, settings, RunOptions(fix=fix, jobs=2)).files
    assert [f.filename for f in one] == [c.path for c in candidates]
    assert _as_tuples(many) == _as_tuples(one)
    if fix:
        assert sum(f.new_data is not None for f in many) > 10


def _pid(_: str) -> int:
    return os.getpid()


def test_the_pool_really_uses_other_processes() -> None:
    pids = _process_in_pool(partial(_pid), [str(i) for i in range(40)], 2)
    assert pids is not None and len(pids) == 40
    assert os.getpid() not in pids


def test_jobs_must_be_positive(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        main(["-j", "0", "."])
    assert raised.value.code == 2
    assert "must be at least 1" in capsys.readouterr().err


def test_no_syntax_tree_outlives_its_file(corpus: Path) -> None:
    """Peak memory stays flat as the corpus grows: nothing keeps a file's tree after the file."""
    import gc

    import libcst as cst

    from bufferlint.analysis.file import FileAnalysis

    def trees() -> int:
        gc.collect()
        return sum(type(o) in (FileAnalysis, cst.Module) for o in gc.get_objects())

    before = trees()  # other tests may hold trees of their own
    result = run(list(discover([str(corpus)])), Settings(), RunOptions(jobs=1))
    assert sum(len(f.findings) for f in result.files) > 50
    assert trees() == before
