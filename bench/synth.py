"""Synthetic PyTorch-like modules for a quick benchmark and for the prefilter tests.

    python bench/synth.py OUT_DIR [--files N] [--seed S]

Deterministic for a seed. The mix imitates a model repository: nn.Module subclasses with and
without findings for every rule (imported in the ways people write it), plain classes holding
tensors (no finding), utility modules with torch but no class, modules without torch, and a few
files with syntax errors (reported as BUF999, never skipped).
"""

from __future__ import annotations

import argparse
import os
import random
from typing import Callable

IMPORT_STYLES = (
    ("import torch\nimport torch.nn as nn\n", "nn.Module"),
    ("import torch\nfrom torch import nn\n", "nn.Module"),
    ("import torch\nfrom torch.nn import Module\n", "Module"),
    ("import torch\nfrom torch.nn import Module as Base\n", "Base"),
    ("import torch\nfrom torch.nn import *\n", "Module"),
    ("import torch as T\nimport torch.nn as tnn\ntorch = T\n", "tnn.Module"),
)

# Method bodies, each `{i}` a unique number; most hold a finding of one rule, some are clean.
INIT_SNIPPETS = (
    "self.table{i} = torch.randn({n}, {n})",  # BUF001
    "self.mask{i} = torch.triu(torch.ones({n}, {n}), diagonal=1).bool()",  # BUF001
    "self.register_buffer('ok{i}', torch.zeros({n}), persistent=False)",  # clean
    "self.frozen{i} = nn.Parameter(torch.ones({n}), requires_grad=False)",  # BUF008
    "self.parts{i} = [torch.zeros({n}) for _ in range(3)]",  # BUF009
    "res{i} = self.register_buffer('res{i}', torch.ones({n}))",  # BUF005
    "self.register_buffer('bad{i}', torch.ones({n}, requires_grad=True))",  # BUF007
    "self.lin{i} = nn.Linear({n}, {n})",  # clean
    "self.scale{i} = {n} ** -0.5",  # clean
    "self.pinned{i} = torch.ones({n}).cuda()",  # BUF001 + BUF004
)
FORWARD_SNIPPETS = (
    "x = x + self.table.to(x.device).sum()",  # BUF002 when table is a tensor attribute
    "pos{i} = torch.arange({n}, device=x.device)",  # BUF003
    "noise{i} = torch.zeros(x.shape[0], {n})\n        x = x + noise{i}.sum()",  # BUF011
    "x = x * 2",  # clean
    "y{i} = torch.ones({n}).cuda()",  # BUF004
)


def module_class(rng: random.Random, base: str, index: int) -> str:
    n = rng.choice((4, 8, 16, 64))
    init = [s.format(i=index * 10 + k, n=n) for k, s in enumerate(rng.sample(INIT_SNIPPETS, rng.randint(1, 4)))]
    if rng.random() < 0.3:
        init.append("self.table = torch.eye(%d)" % n)
    forward = [s.format(i=index * 10 + k, n=n) for k, s in enumerate(rng.sample(FORWARD_SNIPPETS, rng.randint(1, 3)))]
    init_body = "\n        ".join(init)
    forward_body = "\n        ".join(forward)
    return (
        f"class Block{index}({base}):\n"
        f'    """Synthetic block {index}."""\n\n'
        f"    def __init__(self):\n"
        f"        super().__init__()\n"
        f"        {init_body}\n\n"
        f"    def forward(self, x):\n"
        f"        {forward_body}\n"
        f"        return x\n"
    )


def plain_class(rng: random.Random, index: int) -> str:
    return (
        f"class Holder{index}:\n"
        f"    def __init__(self):\n"
        f"        self.t = torch.randn({rng.randint(2, 9)})\n\n"
        f"    def get(self):\n"
        f"        return self.t.cuda()\n"
    )


def utility_function(rng: random.Random, index: int) -> str:
    return (
        f"def helper_{index}(x, k={rng.randint(1, 5)}):\n"
        f'    """Scale and clip."""\n'
        f"    y = torch.clamp(x * k, min=0)\n"
        f"    for _ in range(k):\n"
        f"        y = y + torch.zeros_like(y)\n"
        f"    return y\n"
    )


def model_file(rng: random.Random) -> str:
    imports, base = rng.choice(IMPORT_STYLES)
    parts = [imports]
    for index in range(rng.randint(1, 6)):
        chooser = rng.random()
        if chooser < 0.6:
            parts.append(module_class(rng, base, index))
        elif chooser < 0.8:
            parts.append(plain_class(rng, index))
        else:
            parts.append(utility_function(rng, index))
    if rng.random() < 0.3:  # a same-file subclass chain
        parts.append("class Derived(Block0 if False else %s):\n    def __init__(self):\n        super().__init__()\n        self.extra = torch.zeros(2)\n" % base)
    return "\n\n".join(parts)


def utility_file(rng: random.Random) -> str:
    return "import torch\n\n\n" + "\n\n".join(utility_function(rng, i) for i in range(rng.randint(2, 8)))


def plain_file(rng: random.Random) -> str:
    body = "\n\n".join(
        f"def f{i}(a, b):\n    total = 0\n    for v in range(a):\n        total += v * b\n    return total\n"
        for i in range(rng.randint(3, 12))
    )
    return f'"""Plain python, no torch."""\nimport os\n\n\n{body}'


def plain_class_file(rng: random.Random) -> str:
    return "import torch\n\n\n" + "\n\n".join(plain_class(rng, i) for i in range(rng.randint(1, 4)))


def broken_file(rng: random.Random) -> str:
    return "import torch\n\nclass Broken(torch.nn.Module):\n    def __init__(self)\n        pass\n"


KINDS: tuple[tuple[float, Callable[[random.Random], str]], ...] = (
    (0.45, model_file),
    (0.2, utility_file),
    (0.2, plain_file),
    (0.13, plain_class_file),
    (0.02, broken_file),
)


def generate(count: int, seed: int = 0) -> dict[str, str]:
    """`count` file names (relative, in a few packages) mapped to their source text."""
    rng = random.Random(seed)
    files: dict[str, str] = {}
    for index in range(count):
        pick = rng.random()
        for weight, make in KINDS:
            if pick < weight:
                break
            pick -= weight
        files[f"pkg{index % 7}/mod_{index:05d}.py"] = make(rng)
    return files


def write_corpus(out_dir: str, count: int, seed: int = 0) -> int:
    for name, text in generate(count, seed).items():
        path = os.path.join(out_dir, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    write_corpus(args.out_dir, args.files, args.seed)
    print(f"wrote {args.files} files under {args.out_dir}")


if __name__ == "__main__":
    main()
