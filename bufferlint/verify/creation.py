"""Where each tensor of a module was made: recorded while the module is built, so that a stray
tensor names the line that created it (`pos_embedding ... made at simple_vit.py:97`).

A TorchFunctionMode sees every torch call of the constructor; each tensor it returns is recorded
once (an in-place op hands back a tensor already recorded) with the innermost user frame. Entries
hold weak references: a tensor freed during construction leaves no stale site for a new one that
reuses its id.
"""
from __future__ import annotations

import weakref
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from bufferlint.verify.location import user_frame_location


class CreationSites(TorchFunctionMode):
    def __init__(self) -> None:
        super().__init__()
        self._sites: dict[int, tuple[weakref.ref[torch.Tensor], str]] = {}

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        result = func(*args, **(kwargs or {}))
        if isinstance(result, torch.Tensor) and self.site(result) == "":
            self._sites[id(result)] = (weakref.ref(result), user_frame_location()[0])
        return result

    def site(self, tensor: torch.Tensor) -> str:
        """"file.py:LINE" where `tensor` was made while recording, or ""."""
        entry = self._sites.get(id(tensor))
        return entry[1] if entry is not None and entry[0]() is tensor else ""
