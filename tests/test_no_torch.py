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
