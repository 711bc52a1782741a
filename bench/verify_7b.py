"""Benchmark (not a test): `bufferlint verify` on a Llama-7B-shaped transformer built on meta.

    python bench/verify_7b.py [--layers 32] [--tokens 512]

Goal: verification (move + stray-tensor walk + forward under the device checker) <= 5 s, and
<= 1 GB peak RSS. It runs the way the CLI runs it, in a fresh worker subprocess, so the
end-to-end time is printed too: it adds Python and torch imports and the model's construction,
whose first meta kernel makes torch import torch._dynamo (a one-time cost of torch, ~2-3 s).
Prints the numbers; exits 1 when a goal is missed.
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

ROOT = Path(__file__).resolve().parents[1]
GOAL_SECONDS, GOAL_MB = 5.0, 1024.0


class Rotary(nn.Module):
    def __init__(self, head_dim: int, max_len: int = 4096) -> None:
        super().__init__()
        inv = 1.0 / (10000 ** (torch.arange(0, head_dim, 2).float() / head_dim))
        freqs = torch.outer(torch.arange(max_len).float(), inv)
        self.register_buffer("cos", freqs.cos(), persistent=False)
        self.register_buffer("sin", freqs.sin(), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = x.shape[-2]
        x1, x2 = x[..., ::2], x[..., 1::2]
        c, s = self.cos[:t], self.sin[:t]
        return torch.stack([x1 * c - x2 * s, x1 * s + x2 * c], -1).flatten(-2)


class DecoderLayer(nn.Module):
    def __init__(self, d: int, heads: int, ffn: int) -> None:
        super().__init__()
        self.heads = heads
        self.attn_norm = nn.RMSNorm(d)
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        self.mlp_norm = nn.RMSNorm(d)
        self.gate_up = nn.Linear(d, 2 * ffn, bias=False)
        self.down = nn.Linear(ffn, d, bias=False)
        self.rotary = Rotary(d // heads)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.attn_norm(x)).view(b, t, 3, self.heads, d // self.heads).transpose(1, 3).unbind(2)
        a = F.scaled_dot_product_attention(self.rotary(q), self.rotary(k), v, is_causal=True)
        x = x + self.o(a.transpose(1, 2).reshape(b, t, d))
        gate, up = self.gate_up(self.mlp_norm(x)).chunk(2, -1)
        return x + self.down(F.silu(gate) * up)


class Llama7B(nn.Module):
    """6.7B parameters; built on the meta device, so it costs no memory."""

    def __init__(self, layers: int = 32, d: int = 4096, heads: int = 32, ffn: int = 11008, vocab: int = 32000) -> None:
        super().__init__()
        with torch.device("meta"):
            self.embed = nn.Embedding(vocab, d)
            self.layers = nn.ModuleList(DecoderLayer(d, heads, ffn) for _ in range(layers))
            self.norm = nn.RMSNorm(d)
            self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)
        for layer in self.layers:
            x = layer(x)
        return self.head(self.norm(x))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=32)
    parser.add_argument("--tokens", type=int, default=512)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from bufferlint.verify.result import VerifyResult
    from bufferlint.verify.runner import run_jobs

    job = {
        "kind": "verify", "target": f"{Path(__file__).resolve()}::Llama7B", "kwargs": {"layers": args.layers},
        "input": f"torch.randint(0, 32000, (1, {args.tokens}))", "device": "meta", "against": None,
    }
    started = time.perf_counter()
    [record] = run_jobs([job], timeout=120)
    wall = time.perf_counter() - started
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    peak_mb, cpu = children.ru_maxrss / 1024, children.ru_utime + children.ru_stime
    if "result" not in record:
        print(json.dumps(record))
        return 1
    result = VerifyResult.from_dict(record["result"])
    phases = ", ".join(f"{k}={v:.2f}" for k, v in result.timings.items() if k.endswith("_s"))
    verification = result.timings["check_s"]
    print(f"Llama-7B-shaped ({args.layers} layers, {args.tokens} tokens), mode {result.mode}: status {result.status}")
    print(f"worker phases (s): {phases}")
    print(f"verification (move + walk + checked forward): {verification:.2f} s (goal <= {GOAL_SECONDS:g} s)")
    print(f"peak RSS of the worker: {peak_mb:.0f} MB (goal <= {GOAL_MB:g} MB)")
    print(f"end to end (new interpreter, imports, build, verification): {wall:.2f} s wall, {cpu:.2f} s CPU")
    return 0 if result.status == "pass" and verification <= GOAL_SECONDS and peak_mb <= GOAL_MB else 1


if __name__ == "__main__":
    sys.exit(main())
