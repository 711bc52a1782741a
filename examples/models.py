"""Two small models with the classic mistake: tensors kept as plain attributes."""

import math

import torch
import torch.nn as nn


def dct_matrix(n: int) -> torch.Tensor:
    k = torch.arange(n, dtype=torch.float64)
    basis = torch.cos(math.pi / n * (k[None, :] + 0.5) * k[:, None])
    basis[0] *= 1 / math.sqrt(2)
    return (basis * math.sqrt(2 / n)).float()


class DCT(nn.Module):
    def __init__(self, n: int) -> None:
        super().__init__()
        self.matrix = dct_matrix(n)  # stays on the CPU after model.cuda()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.matrix.t()


class CausalMask(nn.Module):
    def __init__(self, max_len: int) -> None:
        super().__init__()
        self.mask = torch.tril(torch.ones(max_len, max_len)).bool()

    def forward(self, scores: torch.Tensor) -> torch.Tensor:
        t = scores.size(-1)
        return scores.masked_fill(~self.mask[:t, :t], float("-inf"))
