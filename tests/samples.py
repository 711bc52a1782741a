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

# The smallest file with one safe fix (BUF001), as bytes.
ONE_TENSOR_ATTRIBUTE = (
    b"import torch\n"
    b"import torch.nn as nn\n"
    b"\n"
    b"\n"
    b"class M(nn.Module):\n"
    b"    def __init__(self):\n"
    b"        super().__init__()\n"
    b"        self.t = torch.zeros(3)\n"
)
