"""Small source texts shared by the CLI and output-format tests."""

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
