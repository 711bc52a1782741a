"""Jupyter notebooks: code cells linted and fixed as one module, positions as `cell N:row:col`,
only the changed cells' `source` rewritten, outputs and metadata left byte-for-byte."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bufferlint.cli import main

IMPORTS = ["%matplotlib inline\n", "import torch\n", "import torch.nn as nn"]
MODEL = [
    "class M(nn.Module):\n",
    "    def __init__(self):\n",
    "        super().__init__()\n",
    "        self.t = torch.ones(3)  # é\n",
    "        !echo built\n",
    "\n",
    "    def forward(self, x):\n",
    "        return x + self.t\n",
]
TIMED = "%%time\nclass N(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.u = torch.ones(3)"
STRING_CELL = (
    "class P(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.v = torch.zeros(2)\n\n"
    "    def forward(self, x):\n        return x * self.v\n"
)
OUTPUT = {"output_type": "stream", "name": "stdout", "text": ["built\n"]}
EVIDENCE = ", and forward() uses it with the input or the module's tensors"
T_MESSAGE = "Tensor attribute `t` is not a registered buffer: .to()/.cuda() leave it behind" + EVIDENCE


def cell(kind: str, source: object, **extra: object) -> dict:
    base = {"cell_type": kind, "metadata": {"tags": ["keep"]}, "source": source}
    if kind == "code":
        base.update({"execution_count": extra.pop("n", None), "outputs": extra.pop("outputs", [])})
    return base


def notebook_text(cells: list[dict]) -> str:
    nb = {"cells": cells, "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}}, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"  # what Jupyter writes


def standard() -> str:
    return notebook_text(
        [
            cell("markdown", ["# A notebook\n", "with text"]),
            cell("code", IMPORTS, n=1),
            cell("code", MODEL, n=2, outputs=[OUTPUT]),
            cell("code", TIMED, n=3),
            cell("code", STRING_CELL, n=4),
        ]
    )


@pytest.fixture(autouse=True)
def workdir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.chdir(tmp_path)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["--select", "BUF001", *args])
    return code, capsys.readouterr().out


def test_findings_are_placed_by_cell(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "nb.ipynb").write_text(standard(), encoding="utf-8")
    code, out = run(capsys, "-q", "nb.ipynb")
    assert code == 1
    assert out.splitlines() == [
        f"nb.ipynb:cell 3:4:9: BUF001 [*] {T_MESSAGE}",
        "nb.ipynb:cell 5:4:9: BUF001 [*] Tensor attribute `v` is not a registered buffer: .to()/.cuda() leave it behind" + EVIDENCE,
    ]  # cell 4 starts with %%time: skipped


def test_json_carries_the_cell(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "nb.ipynb").write_text(standard(), encoding="utf-8")
    data = json.loads(run(capsys, "--output-format", "json", "nb.ipynb")[1])
    assert [(d["cell"], d["location"], d["end_location"]) for d in data] == [
        (3, {"row": 4, "column": 9}, {"row": 4, "column": 31}),
        (5, {"row": 4, "column": 9}, {"row": 4, "column": 32}),
    ]


def test_fix_rewrites_only_changed_cell_sources(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    original = standard()
    target = tmp_path / "nb.ipynb"
    target.write_text(original, encoding="utf-8")
    code, out = run(capsys, "--fix", "nb.ipynb")
    assert code == 0
    assert out == "Found 2 errors (2 fixed, 0 remaining).\n"
    expected = original.replace(
        '"        self.t = torch.ones(3)  # é\\n"',
        '"        self.register_buffer(\\"t\\", torch.ones(3), persistent=False)  # é\\n"',
    ).replace(
        json.dumps(STRING_CELL, ensure_ascii=False),
        json.dumps(STRING_CELL.replace("self.v = torch.zeros(2)", 'self.register_buffer("v", torch.zeros(2), persistent=False)')),
    )
    assert expected != original
    assert target.read_text(encoding="utf-8") == expected  # byte-for-byte: only those two sources changed
    new = json.loads(expected)
    assert new["cells"][2]["source"][4] == "        !echo built\n"  # the masked shell line is restored
    assert new["cells"][2]["outputs"] == [OUTPUT]
    # idempotent
    assert run(capsys, "--fix", "nb.ipynb") == (0, "All checks passed!\n")
    assert target.read_text(encoding="utf-8") == expected


def test_diff_on_notebook(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "nb.ipynb").write_text(standard(), encoding="utf-8")
    code, out = run(capsys, "--diff", "nb.ipynb")
    assert code == 1
    changed = [line for line in out.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    assert len(changed) == 4
    assert (tmp_path / "nb.ipynb").read_text(encoding="utf-8") == standard()


def test_syntax_error_in_a_cell_is_reported_and_nothing_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = notebook_text([cell("code", IMPORTS), cell("code", MODEL), cell("code", ["def f(:\n", "    pass\n"])])
    (tmp_path / "nb.ipynb").write_text(text)
    code, out = run(capsys, "--fix", "-q", "nb.ipynb")
    assert code == 1
    assert out.startswith("nb.ipynb:cell 3:1:7: BUF999 syntax error")
    assert (tmp_path / "nb.ipynb").read_text() == text


def test_invalid_json_is_buf999(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "nb.ipynb").write_text('{"cells": [\n')
    code, out = run(capsys, "-q", "nb.ipynb")
    assert code == 1
    assert out.startswith("nb.ipynb:2:1: BUF999 invalid notebook JSON")


def test_noqa_in_a_cell(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = [line.replace("# é", "# noqa: BUF001") for line in MODEL]
    (tmp_path / "nb.ipynb").write_text(notebook_text([cell("code", IMPORTS), cell("code", model)]))
    assert run(capsys, "nb.ipynb") == (0, "All checks passed!\n")


def test_folders_include_notebooks_but_not_checkpoints(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = notebook_text([cell("code", IMPORTS), cell("code", MODEL)])
    (tmp_path / "nbs" / ".ipynb_checkpoints").mkdir(parents=True)
    (tmp_path / "nbs" / "a.ipynb").write_text(text)
    (tmp_path / "nbs" / ".ipynb_checkpoints" / "a-checkpoint.ipynb").write_text(text)
    code, out = run(capsys, "-q", ".")
    assert code == 1
    assert out.splitlines() == [f"nbs/a.ipynb:cell 2:4:9: BUF001 [*] {T_MESSAGE}"]


def test_stdin_notebook(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import io
    import sys

    text = notebook_text([cell("code", IMPORTS), cell("code", MODEL)])
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    assert main(["--select", "BUF001", "-q", "--stdin-filename", "x.ipynb", "-"]) == 1
    assert capsys.readouterr().out == f"x.ipynb:cell 2:4:9: BUF001 [*] {T_MESSAGE}\n"


def test_full_format_shows_the_cell(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "nb.ipynb").write_text(notebook_text([cell("code", IMPORTS), cell("code", MODEL)]), encoding="utf-8")
    out = run(capsys, "--output-format", "full", "nb.ipynb")[1]
    assert " --> nb.ipynb:cell 2:4:9" in out
    assert "4 |         self.t = torch.ones(3)  # é" in out


CONTINUED_SHELL = [
    "! apt-get install -y libfftw3-dev && \\\n",
    "    apt-key add KEY.PUB\n",
    "class Q(nn.Module):\n",
    "    def __init__(self):\n",
    "        super().__init__()\n",
    "        self.w = torch.ones(2)\n",
    "\n",
    "    def forward(self, x):\n",
    "        return x * self.w\n",
]
INDENTED_CELL = "    def pipeline(x):\n        yield torch.LongTensor(x)\n"


def test_shell_escape_continued_with_backslash(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A `!cmd \\` goes on over the next line; rows after it keep their numbers, and the fix restores both lines."""
    target = tmp_path / "nb.ipynb"
    target.write_text(notebook_text([cell("code", IMPORTS, n=1), cell("code", CONTINUED_SHELL, n=2)]), encoding="utf-8")
    code, out = run(capsys, "nb.ipynb")
    assert code == 1
    assert out.splitlines()[0].startswith("nb.ipynb:cell 2:6:9: BUF001 [*] Tensor attribute `w`")
    assert run(capsys, "--fix", "nb.ipynb")[0] == 0
    source = json.loads(target.read_text(encoding="utf-8"))["cells"][1]["source"]
    assert source[:2] == CONTINUED_SHELL[:2]
    assert source[5] == '        self.register_buffer("w", torch.ones(2), persistent=False)\n'


def test_cell_starting_indented_is_not_a_syntax_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """IPython dedents a cell whose first line is indented; such a cell is left alone, not reported."""
    target = tmp_path / "nb.ipynb"
    original = notebook_text([cell("code", IMPORTS, n=1), cell("code", INDENTED_CELL, n=2)])
    target.write_text(original, encoding="utf-8")
    assert run(capsys, "nb.ipynb") == (0, "All checks passed!\n")
    assert run(capsys, "--fix", "nb.ipynb") == (0, "All checks passed!\n")
    assert target.read_text(encoding="utf-8") == original
