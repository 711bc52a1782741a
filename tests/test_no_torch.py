"""The linter and fixer must never import torch: pre-commit environments stay small."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_lint_and_fix_never_import_torch(tmp_path: Path) -> None:
    target = tmp_path / "model.py"
    target.write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass M(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.t = torch.ones(3)\n\n"
        "    def forward(self, x):\n        return x * self.t\n"
    )
    script = (
        "import sys\n"
        "from bufferlint.cli import main\n"
        f"code = main(['--fix', {str(target)!r}])\n"
        f"code2 = main([{str(ROOT / 'fixtures')!r}, '--exit-zero'])\n"
        "assert 'torch' not in sys.modules, sorted(m for m in sys.modules if m.startswith('torch'))\n"
        "print('ok', code, code2)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("ok 0 0")
    assert 'self.register_buffer("t", torch.ones(3), persistent=False)' in target.read_text()


def test_verifier_without_torch_says_so_and_touches_nothing(tmp_path: Path) -> None:
    """In an environment without torch (a fresh venv with bufferlint's own dependencies only),
    `verify` exits 2 naming the cause, and `--fix --verify` refuses before writing any file."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", "libcst", "pathspec"], check=True, capture_output=True)
    target = tmp_path / "model.py"
    source = (
        "import torch\nimport torch.nn as nn\n\n\nclass M(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.t = torch.ones(3)\n\n    def forward(self, x):\n        return x * self.t\n"
    )
    target.write_text(source)
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    verify = subprocess.run([str(python), "-m", "bufferlint", "verify", f"{target}::M"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert verify.returncode == 2, verify.stdout + verify.stderr
    assert "torch is not installed" in verify.stderr
    fix = subprocess.run([str(python), "-m", "bufferlint", "--fix", "--verify", str(target)], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert fix.returncode == 2, fix.stdout + fix.stderr
    assert fix.stderr.startswith("bufferlint: error: --verify: torch is not installed")
    assert target.read_text() == source
    plain = subprocess.run([str(python), "-m", "bufferlint", "--fix", str(target)], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr  # the linter and fixer need no torch
    assert 'self.register_buffer("t"' in target.read_text()
