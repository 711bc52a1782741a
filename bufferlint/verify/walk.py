"""Find every tensor reachable from a module that is not a registered parameter or buffer.

`Module.to()`/`.cuda()`/`.half()` only visit `_parameters` and `_buffers`, so anything else a
module can reach (plain attributes, lists/dicts/tuples of tensors, helper objects, class
attributes, parameters of modules hidden in plain lists) is left behind. Running this after the
move also catches aliases of buffers: the move replaces the buffer, the alias keeps the old one.
"""
from __future__ import annotations

import collections
import dataclasses
import functools
import types
from collections.abc import Iterator
from typing import Any

import torch
from torch import nn

from bufferlint.verify.result import StrayTensor

# nn.Module bookkeeping that holds hooks and registries, never user tensors worth reporting
_MODULE_INTERNALS = frozenset({"_parameters", "_buffers", "_modules", "_non_persistent_buffers_set"})
_NOT_WALKED = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType,
               types.MethodType, torch.device, torch.dtype, str, bytes, int, float, bool, complex)
_MAX_DEPTH = 8


def find_stray_tensors(root: nn.Module) -> list[StrayTensor]:
    registered = {id(t) for t in root.parameters()} | {id(t) for t in root.buffers()}
    walker = _Walker(registered)
    return [_describe(path, tensor, note) for path, tensor, note in walker.walk(root, "", 0)]


def _describe(path: str, tensor: torch.Tensor, note: str) -> StrayTensor:
    return StrayTensor(
        path=path,
        device=str(tensor.device),
        shape=list(tensor.shape),
        dtype=str(tensor.dtype).replace("torch.", ""),
        fatal=tensor.dim() > 0,
        note=note,
    )


def _attr(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


class _Walker:
    def __init__(self, registered: set[int]) -> None:
        self.registered = registered
        self.seen: set[int] = set()

    def walk(self, obj: Any, path: str, depth: int, note: str = "") -> Iterator[tuple[str, torch.Tensor, str]]:
        if depth > _MAX_DEPTH or id(obj) in self.seen or isinstance(obj, _NOT_WALKED):
            return
        self.seen.add(id(obj))
        if isinstance(obj, torch.Tensor):
            if id(obj) not in self.registered:
                yield path, obj, note
        elif isinstance(obj, nn.Module):
            yield from self._module(obj, path, depth)
        elif isinstance(obj, dict):
            for key, value in list(obj.items()):
                yield from self.walk(value, f"{path}[{key!r}]", depth + 1, note)
        elif isinstance(obj, (list, tuple, set, frozenset, collections.deque)):
            for index, value in enumerate(list(obj)):
                yield from self.walk(value, f"{path}[{index}]", depth + 1, note)
        else:
            yield from self._helper(obj, path, depth, note)

    def _module(self, module: nn.Module, path: str, depth: int) -> Iterator[tuple[str, torch.Tensor, str]]:
        # registered tensors of this module: only stray when the module itself is not
        # registered under the root (e.g. a Linear kept in a plain list)
        for name, tensor in [*module._parameters.items(), *module._buffers.items()]:
            if tensor is not None:
                yield from self.walk(tensor, _attr(path, name), depth + 1)
        for name, child in module._modules.items():
            if child is not None:
                yield from self.walk(child, _attr(path, name), depth + 1)
        for name, value in vars(module).items():
            if name not in _MODULE_INTERNALS and not _is_hook_registry(name):
                yield from self.walk(value, _attr(path, name), depth + 1)
        yield from self._class_attributes(module, path, depth)

    def _class_attributes(self, module: nn.Module, path: str, depth: int) -> Iterator[tuple[str, torch.Tensor, str]]:
        shadowed = set(vars(module)) | set(module._parameters) | set(module._buffers) | set(module._modules)
        for klass in type(module).__mro__:
            if klass is nn.Module or not issubclass(klass, nn.Module):
                break
            for name, value in vars(klass).items():
                if name not in shadowed and _holds_tensor(value):
                    note = f"class attribute of {klass.__name__}: shared by all instances"
                    yield from self.walk(value, _attr(path, name), depth + 1, note)

    def _helper(self, obj: Any, path: str, depth: int, note: str) -> Iterator[tuple[str, torch.Tensor, str]]:
        if isinstance(obj, functools.partial):
            yield from self.walk(obj.args, f"{path}.args", depth + 1, note)
            yield from self.walk(obj.keywords, f"{path}.keywords", depth + 1, note)
            return
        if dataclasses.is_dataclass(obj) and not hasattr(obj, "__dict__"):  # slotted dataclass
            for f in dataclasses.fields(obj):
                yield from self.walk(getattr(obj, f.name, None), _attr(path, f.name), depth + 1, note)
            return
        attributes = getattr(obj, "__dict__", None)
        if isinstance(attributes, dict) and type(obj).__module__ != "builtins":
            for name, value in list(attributes.items()):
                yield from self.walk(value, _attr(path, name), depth + 1, note)


def _is_hook_registry(name: str) -> bool:
    # _forward_hooks, _backward_pre_hooks, _state_dict_hooks, _load_state_dict_post_hooks, ...
    return name.startswith("_") and "hooks" in name


def _holds_tensor(value: Any) -> bool:
    if isinstance(value, torch.Tensor):
        return True
    if isinstance(value, (list, tuple)):
        return any(isinstance(v, torch.Tensor) for v in value)
    if isinstance(value, dict):
        return any(isinstance(v, torch.Tensor) for v in value.values())
    return False
