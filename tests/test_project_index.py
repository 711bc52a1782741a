"""The project-wide index of module classes (bufferlint/analysis/project.py), through the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bufferlint.analysis.project import ProjectIndex, index_source, module_name, project_module_bases


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


PACKAGE = {
    "pkg/__init__.py": "from .base import LossBase\n",
    "pkg/base.py": "import torch.nn as nn\n\nclass LossBase(nn.Module):\n    pass\n\nclass Plain:\n    pass\n",
    "pkg/mid.py": "from pkg import LossBase\n\nclass Weighted(LossBase):\n    pass\n",
    "pkg/losses/__init__.py": "",
    "pkg/losses/focal.py": (
        "import torch\nfrom ..mid import Weighted\nfrom ..base import Plain\n\n"
        "class Focal(Weighted):\n    def __init__(self):\n        super().__init__()\n"
        "        self.alpha = torch.ones(3)\n\n"
        "    def forward(self, x):\n        return x * self.alpha\n\n"
        "class NotModule(Plain):\n    def __init__(self):\n        self.alpha = torch.ones(3)\n"
    ),
}


def test_module_name_follows_packages(tmp_path: Path) -> None:
    _write(tmp_path, PACKAGE)
    assert module_name(str(tmp_path / "pkg/losses/focal.py")) == "pkg.losses.focal"
    assert module_name(str(tmp_path / "pkg/__init__.py")) == "pkg"


def test_bases_propagate_across_files_and_reexports(tmp_path: Path) -> None:
    _write(tmp_path, PACKAGE)
    names = project_module_bases([str(p) for p in tmp_path.rglob("*.py")])
    assert "pkg.base.LossBase" in names and "pkg.mid.Weighted" in names
    assert "pkg.LossBase" in names  # the re-export in pkg/__init__.py
    assert "Plain" not in names and "pkg.base.Plain" not in names


def test_bare_name_shared_with_a_non_module_is_not_exported() -> None:
    a = index_source(b"import torch.nn as nn\nclass Block(nn.Module): pass\nclass User(Block): pass\n", "a")
    b = index_source(b"class Block: pass\n", "b")
    assert a is not None and b is not None
    names = ProjectIndex([a, b]).base_names()
    assert "a.Block" in names and "Block" not in names


def test_cli_flags_a_class_whose_base_is_in_another_file(tmp_path: Path) -> None:
    _write(tmp_path, PACKAGE)
    done = subprocess.run(
        [sys.executable, "-m", "bufferlint", "--output-format", "json", "--exit-zero", "--no-cache", str(tmp_path / "pkg")],
        capture_output=True, text=True, check=True,
    )
    findings = json.loads(done.stdout)
    assert [(Path(f["filename"]).name, f["location"]["row"], f["code"]) for f in findings] == [("focal.py", 8, "BUF001")]
    assert findings[0]["fix"]["applicability"] == "safe"


def _lint_one(root: Path, name: str) -> list[tuple[str, int, str]]:
    """`bufferlint <one file>` run from the project root, as a pre-commit hook runs it."""
    done = subprocess.run(
        [sys.executable, "-m", "bufferlint", "--output-format", "json", "--exit-zero", "--no-cache", name],
        capture_output=True, text=True, check=True, cwd=root,
    )
    return [(Path(f["filename"]).name, f["location"]["row"], f["code"]) for f in json.loads(done.stdout)]


def test_one_file_of_a_git_project_sees_bases_in_the_files_it_was_not_given(tmp_path: Path) -> None:
    """pre-commit passes only the changed file: the scan still reads the rest of the git project,
    so the class whose base lives in another file is still a module, as in a whole-project run."""
    _write(tmp_path, PACKAGE)
    (tmp_path / ".git").mkdir()
    assert _lint_one(tmp_path, "pkg/losses/focal.py") == [("focal.py", 8, "BUF001")]


def test_one_file_of_a_configured_project_leaves_out_what_the_configuration_excludes(tmp_path: Path) -> None:
    """The project is the configuration's folder; a file it excludes is not read for context."""
    _write(tmp_path, PACKAGE)
    (tmp_path / "pyproject.toml").write_text('[tool.bufferlint]\nexclude = ["pkg/base.py"]\n')
    assert _lint_one(tmp_path, "pkg/losses/focal.py") == []
    (tmp_path / "pyproject.toml").write_text("[tool.bufferlint]\n")
    assert _lint_one(tmp_path, "pkg/losses/focal.py") == [("focal.py", 8, "BUF001")]


def test_one_file_outside_any_project_is_scanned_alone(tmp_path: Path) -> None:
    """No configuration and no git root: nothing else is read (no walk of the working folder)."""
    _write(tmp_path, PACKAGE)
    assert _lint_one(tmp_path, "pkg/losses/focal.py") == []


def test_context_files_come_from_the_cache_until_they_change(tmp_path: Path) -> None:
    """The second run takes the other files' indexes from the cache (by size and mtime); once the
    base class's file changes, it is read again and the answer follows it."""
    _write(tmp_path, PACKAGE)
    (tmp_path / ".git").mkdir()
    cache = tmp_path / "cache"

    def lint() -> list[tuple[str, int, str]]:
        done = subprocess.run(
            [sys.executable, "-m", "bufferlint", "--output-format", "json", "--exit-zero", "--cache-dir", str(cache), "pkg/losses/focal.py"],
            capture_output=True, text=True, check=True, cwd=tmp_path,
        )
        return [(Path(f["filename"]).name, f["location"]["row"], f["code"]) for f in json.loads(done.stdout)]

    assert lint() == lint() == [("focal.py", 8, "BUF001")]
    stats = json.loads(next(cache.glob("project-index-*.json")).read_text())["stats"]
    assert any(path.endswith("base.py") for path in stats)
    (tmp_path / "pkg/base.py").write_text("class LossBase:\n    pass\n\nclass Plain:\n    pass\n")
    assert lint() == []


def test_a_context_file_whose_module_name_changes_is_read_again(tmp_path: Path) -> None:
    """A folder that gains an `__init__.py` renames the modules of its files: a cached context
    index under the old name must not be reused, or the base class it defines goes unseen."""
    _write(tmp_path, {
        "pkg/base.py": "import torch.nn as nn\n\nclass Base(nn.Module):\n    pass\n",
        "model.py": (
            "import torch\nfrom pkg.base import Base\n\nclass Net(Base):\n    def __init__(self):\n"
            "        super().__init__()\n        self.t = torch.zeros(3)\n\n    def forward(self, x):\n        return x * self.t\n"
        ),
    })
    (tmp_path / ".git").mkdir()

    def lint() -> list[tuple[str, int, str]]:
        done = subprocess.run(
            [sys.executable, "-m", "bufferlint", "--output-format", "json", "--exit-zero", "--cache-dir", str(tmp_path / "cache"), "model.py"],
            capture_output=True, text=True, check=True, cwd=tmp_path,
        )
        return [(Path(f["filename"]).name, f["location"]["row"], f["code"]) for f in json.loads(done.stdout)]

    lint()
    (tmp_path / "pkg/__init__.py").write_text("")
    assert lint() == [("model.py", 7, "BUF001")]
