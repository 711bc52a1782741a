"""Which parameters the project's optimizers are given (analysis/optimizer_builds.py)."""

from __future__ import annotations

import ast

import pytest

from bufferlint.analysis.optimizer_builds import optimizer_builds, trainable_only

GROUPS_LOOP = """
import torch
optimizers = {'adam': torch.optim.Adam}


def make_optimizer(cfg, net):
    groups = []
    for name, p in net.named_parameters():
        if not p.requires_grad:
            continue
        groups.append({'params': [p], 'lr': cfg.lr})
    return optimizers[cfg.optim](groups, cfg.lr)
"""


@pytest.mark.parametrize(
    ("source", "builds"),
    [
        (GROUPS_LOOP, [("optimizers", 12, True)]),
        ("import torch\n\ndef f(m):\n    return torch.optim.Adam(m.parameters(), lr=1e-3)\n", [("Adam", 4, False)]),
        ("from torch.optim import AdamW\nopt = AdamW(filter(lambda p: p.requires_grad, model.parameters()))\n", [("AdamW", 2, True)]),
        ("import torch\n\ndef f(m):\n    return torch.optim.SGD([p for p in m.parameters() if p.requires_grad], 0.1)\n", [("SGD", 4, True)]),
        (  # the filter bound to a local first: its lambda is read as part of the function
            "import torch\n\ndef f(m):\n    params = filter(lambda p: p.requires_grad, m.parameters())\n"
            "    return torch.optim.Adam(params)\n",
            [("Adam", 5, True)],
        ),
        (  # counting trainable parameters filters nothing handed over
            "import torch\n\ndef f(m):\n    n = sum(p.numel() for p in m.parameters() if p.requires_grad)\n"
            "    return torch.optim.Adam(m.parameters())\n",
            [("Adam", 5, False)],
        ),
        ("import torch\n\ndef f(opt):\n    return torch.optim.lr_scheduler.StepLR(opt, 10)\n", []),
        ("def f(opt, state):\n    opt.load_state_dict(state)\n    opt.step()\n", []),
        ("from mmcv.runner import build_optimizer\n\ndef f(model, cfg):\n    return build_optimizer(model, cfg.optimizer)\n", [("build_optimizer", 4, False)]),
    ],
    ids=["group-loop", "all-parameters", "filter", "comprehension", "filter-bound-first", "counted-not-filtered", "scheduler", "optimizer-methods", "library-builder"],
)
def test_builds_and_whether_only_trainable_parameters_reach_them(source: str, builds: list[tuple[str, int, bool]]) -> None:
    found, _ = optimizer_builds(ast.parse(source), source.encode())
    assert sorted(found) == sorted(builds)


def test_the_projects_own_builder_is_read_where_it_is_defined() -> None:
    """`make_optimizer(cfg, net)` at a call site is the builder read above, not a second build."""
    builds, builders = optimizer_builds(ast.parse(GROUPS_LOOP), GROUPS_LOOP.encode())
    caller = "from lib.train import make_optimizer\n\ndef train(cfg, net):\n    return make_optimizer(cfg, net)\n"
    call, _ = optimizer_builds(ast.parse(caller), caller.encode())
    assert builders == ("make_optimizer",)
    assert call == (("make_optimizer", 4, False),)
    assert trainable_only([*builds, *call], set(builders))
    assert not trainable_only(list(call), set())  # a builder outside the run is not read
    assert not trainable_only([], set())  # no build seen proves nothing
