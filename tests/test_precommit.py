"""The pre-commit hooks, end to end with the real `pre-commit` tool.

The hook repository is a fresh git commit of this working tree (tracked and untracked files
that git does not ignore: pre-commit clones committed state only), so the test sees the
current `.pre-commit-hooks.yaml` and code. pre-commit builds the hook's own virtualenv from
PyPI (libcst, pathspec): this needs the network and takes about a minute the first time.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODEL = """\
import torch
import torch.nn as nn


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.t = torch.ones(3)

    def forward(self, x):
        return x + self.t
"""
FIXED = MODEL.replace("self.t = torch.ones(3)", 'self.register_buffer("t", torch.ones(3), persistent=False)')
NOTEBOOK_CELLS = [["import torch\n", "import torch.nn as nn"], MODEL.split("\n\n\n", 1)[1].splitlines(keepends=True)]


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


def snapshot_of_this_repo(target: Path) -> str:
    """Copy the working tree into a new git repo with one commit; return that commit."""
    listed = git(ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    git(target, "init", "-q")
    git(target, "add", "-A")
    git(target, "commit", "-q", "-m", "snapshot")
    return git(target, "rev-parse", "HEAD")


def notebook(cells: list[list[str]]) -> str:
    code = [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": s} for s in cells]
    return json.dumps({"cells": code, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"


def pre_commit(project: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "PRE_COMMIT_COLOR": "never"}
    env.pop("PYTHONPATH", None)  # the hook must run from its own environment, not this checkout
    command = [sys.executable, "-m", "pre_commit", "run", "--all-files", "--hook-stage", "manual", *args]
    return subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, timeout=600)


def test_hooks_end_to_end(tmp_path: Path) -> None:
    hooks_repo, project, home = tmp_path / "hooks", tmp_path / "project", tmp_path / "home"
    hooks_repo.mkdir()
    project.mkdir()
    rev = snapshot_of_this_repo(hooks_repo)
    (project / ".pre-commit-config.yaml").write_text(
        f"repos:\n- repo: {hooks_repo}\n  rev: {rev}\n  hooks:\n"
        "  - id: bufferlint\n    stages: [manual]\n"
        "  - id: bufferlint-fix\n    stages: [manual]\n"
    )
    (project / "pyproject.toml").write_text('[tool.bufferlint]\nselect = ["BUF001"]\nextend-exclude = ["vendored/"]\n')
    (project / "model.py").write_text(MODEL)
    (project / "vendored").mkdir()
    (project / "vendored" / "third_party.py").write_text(MODEL)  # excluded: pre-commit names it, --force-exclude skips it
    (project / "nb.ipynb").write_text(notebook(NOTEBOOK_CELLS))
    # Each file takes the nearest pyproject.toml that has a [tool.bufferlint] table: `aaa/`'s has
    # none (pre-commit passes `aaa/util.py` first; the root's excludes still hold), `sub/`'s has one.
    (project / "aaa").mkdir()
    (project / "aaa" / "pyproject.toml").write_text('[tool.black]\nline-length = 100\n')
    (project / "aaa" / "util.py").write_text(MODEL)
    (project / "sub").mkdir()
    (project / "sub" / "pyproject.toml").write_text('[tool.bufferlint]\nignore = ["BUF001"]\n')
    (project / "sub" / "m.py").write_text(MODEL)
    git(project, "init", "-q")
    git(project, "add", "-A")

    check = pre_commit(project, home, "bufferlint")
    assert check.returncode == 1, check.stdout + check.stderr
    assert "model.py:8:9: BUF001 [*] Tensor attribute `t`" in check.stdout
    assert "nb.ipynb:cell 2:4:9: BUF001 [*] Tensor attribute `t`" in check.stdout
    assert "vendored" not in check.stdout
    assert "aaa/util.py:8:9: BUF001 [*] Tensor attribute `t`" in check.stdout
    assert "sub/" not in check.stdout
    assert (project / "model.py").read_text() == MODEL

    fix = pre_commit(project, home, "bufferlint-fix")
    assert fix.returncode == 1, fix.stdout + fix.stderr  # pre-commit fails a hook that modified files
    assert "files were modified by this hook" in fix.stdout
    assert (project / "model.py").read_text() == FIXED
    assert json.loads((project / "nb.ipynb").read_text())["cells"][1]["source"][3] == '        self.register_buffer("t", torch.ones(3), persistent=False)\n'
    assert (project / "vendored" / "third_party.py").read_text() == MODEL
    assert (project / "aaa" / "util.py").read_text() == FIXED
    assert (project / "sub" / "m.py").read_text() == MODEL

    clean = pre_commit(project, home, "bufferlint")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "Passed" in clean.stdout

    # the hook's environment is small: bufferlint and libcst, never torch
    site_packages = list(home.glob("repo*/py_env-*/lib/python*/site-packages"))
    assert len(site_packages) == 1
    installed = {p.name.split("-")[0].lower() for p in site_packages[0].iterdir()}
    assert {"bufferlint", "libcst"} <= installed
    assert "torch" not in installed
