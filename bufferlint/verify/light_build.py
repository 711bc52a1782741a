"""Build a module for the emulated device check without allocating the weights of torch.nn layers.

On the meta device the check needs no values: what matters is which tensors are registered and
where the user's own tensors are. So while the module is built, the factories that torch.nn's own
code calls (`nn.Linear`'s `torch.empty(out, in)`, an Embedding's table, a norm's running stats)
make meta tensors, and everything the user's code makes stays where that code puts it. A ViT-L
then costs nothing for its weights, and a 7B model can be checked on a laptop. Sound because
the weights of registered layers follow `.to()` by construction; the one thing lost is the op
report for a torch.nn layer kept where `.to()` cannot see it (a Linear in a plain list): its
weight is still a stray, reported where it would be (`cpu`), and still fails the check.
Where a constructor needs those weights' values (`.item()`, numpy), the caller builds again on
the CPU.
"""
from __future__ import annotations

import os
import sys
from types import FrameType
from typing import Any

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

_FACTORIES = frozenset((torch.empty, torch.zeros, torch.ones, torch.rand, torch.randn, torch.full, torch.empty_strided))
_TORCH_NN = os.path.dirname(os.path.abspath(nn.__file__)) + os.sep
# frames between the factory call and this mode: torch's dispatch to modes, and this file
_PASSING = (os.path.abspath(torch.overrides.__file__), os.path.abspath(__file__))


class LayerWeightsOnMeta(TorchFunctionMode):
    def __init__(self) -> None:
        super().__init__()
        self.redirected = 0  # how many tensors went to meta

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        if func in _FACTORIES and _called_by_torch_nn():
            kwargs = {**kwargs, "device": torch.device("meta")}
            self.redirected += 1
        return func(*args, **kwargs)


def _called_by_torch_nn() -> bool:
    frame: FrameType | None = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename in _PASSING:
        frame = frame.f_back
    return frame is not None and frame.f_code.co_filename.startswith(_TORCH_NN)
