"""Find every tensor reachable from a module that is not a registered parameter or buffer.

`Module.to()`/`.cuda()`/`.half()` only visit `_parameters` and `_buffers`, so anything else a
module can reach (plain attributes, lists/dicts/tuples of tensors, helper objects, class
attributes, parameters of modules hidden in plain lists) is left behind. Running this after the
move also catches aliases of buffers: the move replaces the buffer, the alias keeps the old one.

Tensors that torch.nn.utils recomputes from registered parameters before every forward
(`weight_norm`, `spectral_norm`, pruning: a plain `weight` derived from `weight_g`/`weight_v`,
`weight_orig`, `weight_mask`) are not strays: they follow the module at the next call.
The walk has no depth limit (a diffusion UNet's attention sits deeper than any fixed bound); it
keeps an explicit stack and visits each object once, so cycles and shared tensors end it.
"""
from __future__ import annotations

import collections
import dataclasses
import functools
import types
from collections.abc import Iterator
from typing import Any, Callable, Optional

import torch
from torch import nn

from bufferlint.verify.result import StrayTensor

# nn.Module bookkeeping that holds hooks and registries, never user tensors worth reporting
_MODULE_INTERNALS = frozenset({"_parameters", "_buffers", "_modules", "_non_persistent_buffers_set"})
_NOT_WALKED = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType,
               types.MethodType, torch.device, torch.dtype, str, bytes, int, float, bool, complex)
# the forward pre-hooks of torch.nn.utils that recompute an attribute from registered tensors,
# and the attribute of the hook object that names it
_RECOMPUTING_HOOKS = {
    ("torch.nn.utils.weight_norm", "WeightNorm"): "name",
    ("torch.nn.utils.spectral_norm", "SpectralNorm"): "name",
    ("torch.nn.utils.prune", "PruningContainer"): "_tensor_name",
}


def recomputed_attributes(module: nn.Module) -> frozenset[str]:
    """Attributes of `module` that a torch.nn.utils forward pre-hook rebuilds on every call."""
    names = set()
    for hook in module._forward_pre_hooks.values():
        field_name = _RECOMPUTING_HOOKS.get((type(hook).__module__, type(hook).__name__))
        if field_name is None and isinstance(hook, _pruning_method()):
            field_name = "_tensor_name"
        if field_name is not None and isinstance(getattr(hook, field_name, None), str):
            names.add(getattr(hook, field_name))
    return frozenset(names)


def _pruning_method() -> type:
    from torch.nn.utils import prune

    return prune.BasePruningMethod


def find_stray_tensors(root: nn.Module, site: Optional[Callable[[torch.Tensor], str]] = None) -> list[StrayTensor]:
    """`site(tensor)`: where it was made ("file.py:LINE"), when the caller recorded that."""
    registered = {id(t) for t in root.parameters()} | {id(t) for t in root.buffers()}
    walker = _Walker(registered)
    found = [_describe(path, tensor, note, site) for path, tensor, note in walker.walk(root)]
    for stray in found:
        stray.also = walker.other_paths.get(stray.path, [])
    return found


def _describe(path: str, tensor: torch.Tensor, note: str, site: Optional[Callable[[torch.Tensor], str]]) -> StrayTensor:
    return StrayTensor(
        path=path,
        device=str(tensor.device),
        shape=list(tensor.shape),
        dtype=str(tensor.dtype).replace("torch.", ""),
        fatal=tensor.dim() > 0,
        note=note,
        created=site(tensor) if site is not None else "",
    )


def _attr(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


_Item = tuple[Any, str, str]  # (object, its path, note)


class _Walker:
    """Depth-first, in attribute order, over an explicit stack: any depth, each object once."""

    def __init__(self, registered: set[int]) -> None:
        self.registered = registered
        self.seen: set[int] = set()
        self.first_path: dict[int, str] = {}  # stray tensor -> the path it was reported under
        self.other_paths: dict[str, list[str]] = {}  # that path -> the other paths reaching it

    def walk(self, root: nn.Module) -> Iterator[tuple[str, torch.Tensor, str]]:
        stack: list[_Item] = [(root, "", "")]
        while stack:
            obj, path, note = stack.pop()
            if id(obj) in self.first_path:  # a stray shared by several blocks: every path is named
                self.other_paths.setdefault(self.first_path[id(obj)], []).append(path)
                continue
            if id(obj) in self.seen or isinstance(obj, _NOT_WALKED):
                continue
            self.seen.add(id(obj))
            if isinstance(obj, torch.Tensor):
                if id(obj) not in self.registered:
                    self.first_path[id(obj)] = path
                    yield path, obj, note
                continue
            stack.extend(reversed(list(self._children(obj, path, note))))

    def _children(self, obj: Any, path: str, note: str) -> Iterator[_Item]:
        if isinstance(obj, nn.Module):
            yield from self._module(obj, path)
        elif isinstance(obj, dict):
            yield from ((value, f"{path}[{key!r}]", note) for key, value in list(obj.items()))
        elif isinstance(obj, (list, tuple, set, frozenset, collections.deque)):
            yield from ((value, f"{path}[{index}]", note) for index, value in enumerate(list(obj)))
        else:
            yield from self._helper(obj, path, note)

    def _module(self, module: nn.Module, path: str) -> Iterator[_Item]:
        # registered tensors of this module: only stray when the module itself is not
        # registered under the root (e.g. a Linear kept in a plain list)
        for name, tensor in [*module._parameters.items(), *module._buffers.items()]:
            if tensor is not None:
                yield tensor, _attr(path, name), ""
        for name, child in module._modules.items():
            if child is not None:
                yield child, _attr(path, name), ""
        recomputed = recomputed_attributes(module)
        for name, value in vars(module).items():
            if name not in _MODULE_INTERNALS and not _is_hook_registry(name) and name not in recomputed:
                yield value, _attr(path, name), ""
        yield from self._class_attributes(module, path)

    def _class_attributes(self, module: nn.Module, path: str) -> Iterator[_Item]:
        shadowed = set(vars(module)) | set(module._parameters) | set(module._buffers) | set(module._modules)
        for klass in type(module).__mro__:
            if klass is nn.Module or not issubclass(klass, nn.Module):
                break
            for name, value in vars(klass).items():
                if name not in shadowed and _holds_tensor(value):
                    yield value, _attr(path, name), f"class attribute of {klass.__name__}: shared by all instances"

    def _helper(self, obj: Any, path: str, note: str) -> Iterator[_Item]:
        if isinstance(obj, functools.partial):
            yield obj.args, f"{path}.args", note
            yield obj.keywords, f"{path}.keywords", note
            return
        if dataclasses.is_dataclass(obj) and not hasattr(obj, "__dict__"):  # slotted dataclass
            for f in dataclasses.fields(obj):
                yield getattr(obj, f.name, None), _attr(path, f.name), note
            return
        attributes = getattr(obj, "__dict__", None)
        if isinstance(attributes, dict) and type(obj).__module__ != "builtins":
            for name, value in list(attributes.items()):
                yield value, _attr(path, name), note


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
