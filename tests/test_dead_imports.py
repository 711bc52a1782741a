"""Imports a round of fixes left unread are removed; the author's own are left (fixes/dead_imports.py)."""

from __future__ import annotations

import libcst as cst
import pytest

from bufferlint.fixes.apply import EditApplier
from bufferlint.fixes.dead_imports import orphaned_import_edits

BODY_BEFORE = "class M(Module):\n    def __init__(self):\n        self.w = nn.Parameter(torch.ones(1), requires_grad=False)\n"
BODY_AFTER = 'class M(Module):\n    def __init__(self):\n        self.register_buffer("w", torch.ones(1))\n'


def _cleaned(head: str, package: bool = False, tail: str = "") -> str:
    before, after = cst.parse_module(head + BODY_BEFORE + tail), cst.parse_module(head + BODY_AFTER + tail)
    edits = orphaned_import_edits(before, after, package)
    return after.visit(EditApplier(edits)).code if edits else after.code


@pytest.mark.parametrize(
    ("head", "kept"),
    [
        ("import torch\nimport torch.nn as nn\nfrom torch.nn import Module\n", "import torch\nfrom torch.nn import Module\n"),
        ("import torch\nfrom torch import nn, optim\nfrom torch.nn import Module\n", "import torch\nfrom torch import optim\nfrom torch.nn import Module\n"),
        ("import torch\nfrom torch import optim, nn\nfrom torch.nn import Module\n", "import torch\nfrom torch import optim\nfrom torch.nn import Module\n"),
        # the author's: a comment on the line, an import sharing its line
        ("import torch\nimport torch.nn as nn  # noqa: F401\nfrom torch.nn import Module\n", None),
        ("import torch\nimport torch.nn as nn; import os\nfrom torch.nn import Module\n", None),
        # `import torch.nn` binds `torch`, which the body still reads
        ("import torch\nimport torch.nn\nfrom torch.nn import Module\nnn = torch.nn\n", None),
    ],
    ids=["module-alias", "from-first", "from-last", "commented", "shared-line", "dotted"],
)
def test_an_import_the_fix_left_unread_goes(head: str, kept: str | None) -> None:
    assert _cleaned(head) == (kept if kept is not None else head) + BODY_AFTER


def test_a_package_init_or_a_module_with_all_keeps_its_imports() -> None:
    head = "import torch\nimport torch.nn as nn\nfrom torch.nn import Module\n"
    assert _cleaned(head, package=True) == head + BODY_AFTER
    assert _cleaned(head, tail="__all__ = ['M']\n") == head + BODY_AFTER + "__all__ = ['M']\n"


def test_a_name_still_spelled_in_a_type_string_stays() -> None:
    head = "import torch\nimport torch.nn as nn\nfrom torch.nn import Module\n"
    tail = 'def build() -> "nn.Module":\n    return M()\n'
    assert _cleaned(head, tail=tail) == head + BODY_AFTER + tail
