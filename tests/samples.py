"""Small source texts shared by the tests."""

MODEL = """\
import torch
import torch.nn as nn


class M(nn.Module):
    def __init__(self, basis: torch.Tensor):
        super().__init__()
        self.t = torch.ones(3)
        self.basis = basis

    def forward(self, x):
        return x + self.t + self.basis
"""

# The smallest file with one safe fix (BUF001), as bytes: `forward` comes first so that the flagged
# assignment is the file's last line (the encoding and line-ending tests look at how it ends).
ONE_TENSOR_ATTRIBUTE = (
    b"import torch\n"
    b"import torch.nn as nn\n"
    b"\n"
    b"\n"
    b"class M(nn.Module):\n"
    b"    def forward(self, x):\n"
    b"        return x * self.t\n"
    b"\n"
    b"    def __init__(self):\n"
    b"        super().__init__()\n"
    b"        self.t = torch.zeros(3)\n"
)
# Its finding, as the concise output prints it after `path:11:9: `.
ONE_FINDING = (
    "BUF001 [*] Tensor attribute `t` is not a registered buffer: .to()/.cuda() leave it behind, "
    "and forward() uses it with the input or the module's tensors"
)

# A plain tensor forward moves on every call: BUF001 (safe fix) and BUF002 on the same attribute.
MOVED_EVERY_CALL = (
    "import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        self.lin = nn.Linear(3, 3)\n        self.t = torch.ones(3)\n\n"
    "    def forward(self, x):\n        return self.lin(x) + self.t.to(x.device)\n"
)
