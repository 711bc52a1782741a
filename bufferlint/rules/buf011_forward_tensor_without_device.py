"""BUF011 forward-tensor-without-device."""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from bufferlint.analysis.file import FileAnalysis
from bufferlint.analysis.forward import FlowState, ForwardFacts, PathMethod, combined_operands, forward_facts
from bufferlint.fixes.forward import with_device
from bufferlint.model import Applicability, Finding, Fix, Replace
from bufferlint.rules.base import Rule

_COMBINED = "used with tensors on the input's or the module's device"
_CUDA = "moved with .cuda()"


class ForwardTensorWithoutDevice(Rule):
    """A tensor factory in `forward` with no `device=`, then combined with inputs.

    ## Why it matters
    `torch.zeros(x.shape[0], 8)`, `torch.arange(n)` or `torch.tensor([...])` without `device=`
    build their tensor on the CPU. As soon as it meets the input (`x + pos`,
    `torch.cat([x, pad])`, a comparison, a submodule call), a GPU run fails with "Expected all
    tensors to be on the same device". (A factory then moved with `.cuda()` is a hard-coded GPU:
    BUF004 reports it when selected, and this rule, without a fix, when it is not.)

    Off by default: enable it with `--select BUF011` or `extend-select`. On repositories the
    rules were never tuned on it found 7 true and 8 false (rounds 2 to 16): a factory in a
    helper that forward calls with sizes rather than tensors, CPU sampling whose indices are
    meant to stay on the host, a callee that only reads the tensor's length.

    ## Example
    ```python
    def forward(self, x):
        positions = torch.arange(x.shape[1])
        return x + self.embedding(positions)
    ```

    ## Instead
    ```python
        positions = torch.arange(x.shape[1], device=x.device)
    ```
    `x.new_zeros(...)` and `torch.zeros_like(x)` also put the tensor where `x` is.

    ## Fix safety
    Unsafe: adds `device=<input>.device`. The tensor then lives on the input's device, which is
    the intent, but code that relied on it being a CPU tensor (`.numpy()`, Python-side indexing)
    would change. No fix when an obligation fails:
    1. The input is shown to be a tensor (annotated `Tensor`, read like one, or given one by a
       caller on the forward path), never a list of them.
    2. The factory is on the forward path, where an input's device is the one to use.

    ## Not reported
    Factories that already pass `device=`, `x.new_*`, `torch.*_like`, 0-dim tensors
    (`torch.tensor(2.0)`, `torch.zeros(())`, an element picked with `t[0]`, a full reduction
    `t.max()`: allowed next to CUDA tensors), empty placeholders (`torch.empty(0)`), tensors
    moved right after creation by any `.to(...)`/`.type_as(...)` that is not a dtype-only cast
    or by `.type(x.type())` (a tensor type names its device),
    `torch.normal(mean_t, std_t)`, CTC targets and lengths (`nn.CTCLoss`, `F.ctc_loss` take
    them on the CPU), `pack_padded_sequence` lengths (they must be on the CPU), ONNX shape
    tensors (`shape_as_tensor`, `reshape_from_tensor_shape`), and anything in a file written for
    ONNX or ncnn export (`model_onnx.py`, `export-onnx.py`, `ensemble_export.py`, `exporter.py` using `torch.onnx`), whose modules are traced where they
    are built and never moved.
    """

    code = "BUF011"
    name = "forward-tensor-without-device"
    skips_export_files = True
    skips_test_files = True
    default_enabled = False
    summary = "Tensor built in forward without device= is used with inputs"

    def check(self, analysis: FileAnalysis) -> Iterator[Finding]:
        for info in analysis.module_classes:
            facts = forward_facts(analysis, info)
            for method in facts.methods:
                if method.function:
                    continue  # a top-level function of the file: shared by classes, and no instance
                reported: set[int] = set()
                for factory, reason in _device_less_uses(facts, method, "BUF004" not in analysis.enabled):
                    if id(factory) not in reported:
                        reported.add(id(factory))
                        yield self._finding(analysis, method, factory, reason)

    def _finding(self, analysis: FileAnalysis, method: PathMethod, factory: cst.Call, reason: str) -> Finding:
        name = cst.Module([]).code_for_node(factory.func)
        message = f"`{name}(...)` has no `device=`: it is made on the CPU, then {reason}"
        fix: Optional[Fix] = None
        source = method.device_input
        if reason == _CUDA:
            message += "; no fix: `.cuda()` pins it to the GPU, which BUF004 (`--extend-select BUF004`) rewrites"
        elif source is None:
            message += f"; no fix: {method.name}() has no tensor argument to take the device from"
        else:
            fix = Fix(Applicability.UNSAFE, f"Add `device={source}.device`", (Replace(factory, with_device(factory, source)),))
            message += f"; unsafe: it then lives on `{source}`'s device, and no use of it on the host is ruled out"
        return self.finding(analysis, factory, message, fix)


def _device_less_uses(facts: ForwardFacts, method: PathMethod, cuda_moves: bool) -> Iterator[tuple[cst.Call, str]]:
    """(factory, how it meets the input's device), in source order; `cuda_moves`: also factories
    moved with `.cuda()` (when BUF004, which owns them, is not selected)."""
    for site in method.sites:
        small, state = site.site.small, site.state
        if isinstance(small, cst.AugAssign):
            yield from _combined(facts, method, state, [small.target, small.value])
        for node in site.operations:
            yield from _uses(facts, method, state, node, cuda_moves)


def _uses(
    facts: ForwardFacts, method: PathMethod, state: FlowState, node: cst.CSTNode, cuda_moves: bool
) -> Iterator[tuple[cst.Call, str]]:
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "cuda":
        # a factory moved with `.cuda()` is a hard-coded GPU: BUF004's when selected (it fixes it with device=)
        origin = facts.cpu_origin(node.func.value, state, method) if cuda_moves and not node.args else None
        if origin is not None:
            yield origin, _CUDA
        return
    if isinstance(node, cst.Call) and facts.submodule_call(node, method):
        if facts.cpu_tolerant(node, method):
            return  # nn.CTCLoss: targets and lengths may stay on the CPU
        for arg in node.args:
            origin = facts.cpu_origin(arg.value, state, method)
            if origin is not None:
                yield origin, "passed to a submodule whose weights live on the module's device"
        return
    operands = combined_operands(node, facts, method)
    if operands:
        yield from _combined(facts, method, state, operands)


def _combined(
    facts: ForwardFacts, method: PathMethod, state: FlowState, operands: list[cst.BaseExpression]
) -> Iterator[tuple[cst.Call, str]]:
    if not any(facts.derived(op, state, method) for op in operands):
        return
    for op in operands:
        origin = facts.cpu_origin(op, state, method)
        if origin is not None:
            yield origin, _COMBINED
