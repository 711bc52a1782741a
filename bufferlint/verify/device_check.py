"""Dispatch modes that make a meta-device forward behave like a CUDA forward.

Plain meta is not enough: `cpu_tensor @ meta_tensor` (aten.mm) runs silently on meta, while on
CUDA it raises "Expected all tensors to be on the same device". `DeviceCheckMode` applies the
CUDA rules itself (those of torch/_subclasses/fake_tensor.py::_find_common_device) to every
aten op, so the same check runs on meta and on real CUDA. `CudaAliasMode` maps hard-coded
"cuda" devices to the target, so code that works on a GPU is not failed for naming one.
"""
from __future__ import annotations

from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map_only

from bufferlint.verify.location import user_frame_location
from bufferlint.verify.result import DeviceError

aten = torch.ops.aten

# ops whose whole purpose is to move data between devices
_CROSS_DEVICE_OPS = frozenset({
    aten._to_copy.default, aten.copy_.default, aten.copy.default, aten._copy_from.default,
    aten._copy_from_and_resize.default, aten.lift_fresh.default, aten.lift_fresh_copy.default,
    aten._foreach_copy_.default, aten.to.device, aten.to.dtype_layout, aten.to.other,
})
# ops where CUDA accepts index tensors on the CPU, but not a CPU `self` indexed from the GPU
# ("indices should be either on cpu or on the same device as the indexed tensor")
_INDEX_OPS = frozenset({aten.index.Tensor, aten._unsafe_index.Tensor})
_INDEX_PUT_OPS = frozenset({aten.index_put.default, aten.index_put_.default, aten._unsafe_index_put.default})
# arguments that CUDA itself requires on the host: packed-sequence lengths and batch sizes
_HOST_ARGUMENTS = {
    aten._pack_padded_sequence.default: 1, aten._pad_packed_sequence.default: 1,
    aten.lstm.data: 1, aten.gru.data: 1, aten.rnn_tanh.data: 1, aten.rnn_relu.data: 1,
}
# ops with no exemption for 0-dim CPU operands on CUDA
_NO_SCALAR_EXEMPTION = frozenset({aten.nextafter.default})
# message fragments of meta kernels refusing to run because the result depends on the data
# how torch says that an op has no meta kernel at all (not that it needs values)
_NO_KERNEL_HINTS = ("with arguments from the 'Meta' backend", "no fake impl or Meta kernel registered")
_DATA_DEPENDENT_HINTS = ("meta tensor", "Meta tensors", "data-independent", "no data", "without output_size")


class DataDependentOp(Exception):
    """An op the meta device cannot run: its result depends on tensor values, which meta tensors
    do not have, or (`no_kernel`) torch has no meta kernel for it at all."""

    def __init__(self, op: str, location: str, source: str, no_kernel: bool = False) -> None:
        cause = "has no meta kernel" if no_kernel else "needs tensor values, which the meta device does not have"
        super().__init__(f"{op} {cause} ({location})")
        self.op, self.location, self.source, self.no_kernel = op, location, source, no_kernel


def _is_cpu_scalar(t: torch.Tensor) -> bool:
    return t.device.type == "cpu" and t.dim() == 0


def _checked_operands(func: Any, args: tuple, kwargs: dict) -> list[torch.Tensor]:
    """The tensors of one op call that CUDA requires on the same device."""
    if func in _INDEX_OPS or func in _INDEX_PUT_OPS:
        return _indexing_operands(func, args)
    if func in _HOST_ARGUMENTS:
        args = args[:_HOST_ARGUMENTS[func]] + args[_HOST_ARGUMENTS[func] + 1:]
    flat, _ = tree_flatten((args, kwargs))
    tensors = [a for a in flat if isinstance(a, torch.Tensor)]
    if func in _NO_SCALAR_EXEMPTION:
        return tensors
    return [t for t in tensors if not _is_cpu_scalar(t)]


def _indexing_operands(func: Any, args: tuple) -> list[torch.Tensor]:
    """The indexed tensor, its indices off the host, and (index_put) values that are not 0-dim."""
    indices = [i for i in args[1] if isinstance(i, torch.Tensor) and i.device.type != "cpu"]
    values = [args[2]] if func in _INDEX_PUT_OPS and args[2].dim() > 0 else []
    return [args[0], *indices, *values]


class DeviceCheckMode(TorchDispatchMode):
    """Records every op that mixes devices, then moves the stragglers to the target and goes on,
    so one forward reports all problems instead of the first."""

    def __init__(self, target: torch.device) -> None:
        super().__init__()
        self.target = target
        self.errors: list[DeviceError] = []
        self._reported: set[tuple[str, str]] = set()

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        if self.target.type == "meta":
            args, kwargs = _gpu_as_target(args, kwargs, self.target)
        if func not in _CROSS_DEVICE_OPS:
            devices = {t.device for t in _checked_operands(func, args, kwargs)}
            if len(devices) > 1:
                self._record(func, devices)
                args, kwargs = self._move_to_target(func, args, kwargs)
        try:
            return func(*args, **kwargs)
        except (NotImplementedError, RuntimeError) as exc:
            no_kernel = any(m in str(exc) for m in _NO_KERNEL_HINTS)
            if self.target.type == "meta" and (no_kernel or any(h in str(exc) for h in _DATA_DEPENDENT_HINTS)):
                location, source = user_frame_location()
                raise DataDependentOp(str(func), location, source, no_kernel) from None
            raise

    def _record(self, func: Any, devices: set[torch.device]) -> None:
        location, source = user_frame_location()
        if (str(func), location) in self._reported:
            return  # the same line in a loop (e.g. every layer of a ModuleList) is one problem
        self._reported.add((str(func), location))
        self.errors.append(DeviceError(op=str(func), devices=sorted(map(str, devices)), location=location, source=source))

    def _move_to_target(self, func: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        def move(t: torch.Tensor) -> torch.Tensor:
            return t if t.device == self.target or _is_cpu_scalar(t) else t.to(self.target)

        host = _HOST_ARGUMENTS.get(func)
        moved = tuple(a if i == host else tree_map_only(torch.Tensor, move, a) for i, a in enumerate(args))
        return moved, tree_map_only(torch.Tensor, move, kwargs)


def _gpu_as_target(args: tuple, kwargs: dict, target: torch.device) -> tuple[tuple, dict]:
    """Emulating on a machine that has a GPU: a tensor already on it (built with a device picked at
    import) is where a real CUDA run would have it, so it stands in for the target unreported."""
    def move(t: torch.Tensor) -> torch.Tensor:
        return t.to(target) if t.device.type == "cuda" else t

    return tree_map_only(torch.Tensor, move, (args, kwargs))


def _is_cuda(device: Any) -> bool:
    if isinstance(device, torch.device):
        return device.type == "cuda"
    return isinstance(device, str) and device.split(":")[0] == "cuda"


class CudaAliasMode(TorchFunctionMode):
    """Without a GPU, send `.cuda()`, `.to("cuda")` and `device="cuda"` to the target device, and
    note where forward reads `.is_cuda` (False on meta: what the code does on a GPU did not run)."""

    def __init__(self, target: torch.device) -> None:
        super().__init__()
        self.target = target
        self.is_cuda_reads: list[str] = []  # "file.py:LINE", in order, each once

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        if getattr(func, "__self__", None) is torch.Tensor.is_cuda:
            location = user_frame_location()[0]
            if location not in self.is_cuda_reads:
                self.is_cuda_reads.append(location)
        if func is torch.Tensor.cuda:
            return args[0].to(self.target)
        if _is_cuda(kwargs.get("device")):
            kwargs = {**kwargs, "device": self.target}
        if func is torch.Tensor.to:
            args = tuple(self.target if _is_cuda(a) else a for a in args)
        return func(*args, **kwargs)
