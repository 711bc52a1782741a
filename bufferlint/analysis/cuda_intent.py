"""Code that asks for CUDA on purpose, which BUF004 must not call a hard-coded GPU.

- under a test that decides about CUDA: `if torch.cuda.is_available():`, `if self.use_cuda:`,
  `if device.type == "cpu":`, `... if x.is_cuda else ...`, or after an early exit on such a
  test (`if not torch.cuda.is_available(): return`);
- a device handed to a `torch.cuda.*` query (`torch.cuda.get_device_properties(torch.device("cuda"))`):
  the query needs a GPU by definition and places nothing;
- the fallback of a device parameter or attribute (`if device is None: device = torch.device("cuda")`,
  `if self._device is None: self._device = torch.device("cuda")`): the caller chooses, and a
  backend may require the GPU;
- the body of a method that is itself a device move (`def cuda(self): self.model.cuda()`);
- a GPU offload of module state: the class moves the same submodule back with `.cpu()`;
- distributed GPU code: a file that imports `torch.distributed`, Megatron or `apex.transformer`
  (NCCL collectives need CUDA tensors; model parallelism places everything on the rank's GPU).
"""

from __future__ import annotations

from typing import Iterable, Optional, Protocol

import libcst as cst

from bufferlint.analysis.flow import child_nodes
from bufferlint.analysis.names import Qualify
from bufferlint.analysis.walk import nodes_of


# Methods that move a module on request: what they move, they move because the caller asked.
DEVICE_MOVE_METHODS = frozenset(("cuda", "to", "_apply", "cpu", "to_device", "to_empty"))
_CUDA_WORDS = ("cuda", "gpu")
_DEVICE_TYPES = frozenset(("cpu", "cuda", "mps", "xla", "meta"))


class ParentMap(Protocol):
    def get(self, node: cst.CSTNode) -> Optional[cst.CSTNode]: ...


def is_cuda_literal(expr: cst.BaseExpression, qualify: Qualify) -> bool:
    """`"cuda"`, `"cuda:0"`, `torch.device("cuda")`, `torch.device("cuda", 0)`."""
    if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)):
        value = expr.evaluated_value
        return isinstance(value, str) and (value == "cuda" or value.startswith("cuda:"))
    if isinstance(expr, cst.Call) and qualify(expr.func) == "torch.device" and expr.args:
        return is_cuda_literal(expr.args[0].value, qualify)
    return False


def decides_on_cuda(test: cst.BaseExpression) -> bool:
    """A test that chooses by CUDA: a name or attribute spelling cuda/gpu (`is_available` too),
    or a device type compared with a string (`device.type == "cpu"`)."""
    stack: list[cst.CSTNode] = [test]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name) and (any(w in node.value.lower() for w in _CUDA_WORDS) or node.value == "is_available"):
            return True
        if isinstance(node, cst.Comparison) and _compares_device_type(node):
            return True
        stack.extend(child_nodes(node))
    return False


def cuda_on_purpose(node: cst.CSTNode, parents: ParentMap, func: cst.FunctionDef, qualify: Qualify) -> bool:
    """Whether the pin at `node` is asked for on purpose (see the module docstring)."""
    if func.name.value in DEVICE_MOVE_METHODS:
        return True
    current: cst.CSTNode = node
    parent = parents.get(current)
    while parent is not None and current is not func:
        if isinstance(parent, (cst.If, cst.IfExp, cst.While)) and current is not parent.test and decides_on_cuda(parent.test):
            return True
        if isinstance(parent, cst.Call) and current is not parent.func and (qualify(parent.func) or "").startswith("torch.cuda."):
            return True
        if isinstance(parent, cst.Assign) and current is parent.value and (
            _parameter_fallback(parent, func, qualify) or (_is_device_value(parent.value, qualify) and _lazy_device_attribute(parent, parents))
        ):
            return True
        if isinstance(parent, cst.IndentedBlock) and _after_cuda_exit(parent, current):
            return True
        current, parent = parent, parents.get(parent)
    return False


def _parameter_fallback(assign: cst.Assign, func: cst.FunctionDef, qualify: Qualify) -> bool:
    """`device = torch.device("cuda")` where `device` is a parameter: a default the caller overrides.
    Only a device value counts; a tensor built on the GPU is still a pin."""
    if not _is_device_value(assign.value, qualify):
        return False
    params = func.params
    names = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
    return all(isinstance(t.target, cst.Name) and t.target.value in names for t in assign.targets)


def _is_device_value(value: cst.BaseExpression, qualify: Qualify) -> bool:
    return isinstance(value, (cst.SimpleString, cst.ConcatenatedString)) or (
        isinstance(value, cst.Call) and qualify(value.func) == "torch.device"
    )


def _lazy_device_attribute(assign: cst.Assign, parents: ParentMap) -> bool:
    """`if self._device is None: self._device = torch.device("cuda", ...)`: the default of a
    device the caller may set; the test reads the attribute the statement assigns."""
    targets = [t.target for t in assign.targets]
    if len(targets) != 1 or not isinstance(targets[0], cst.Attribute) or "device" not in targets[0].attr.value:
        return False
    current: Optional[cst.CSTNode] = parents.get(assign)
    while current is not None and not isinstance(current, cst.FunctionDef):
        if isinstance(current, cst.If) and any(n.deep_equals(targets[0]) for n in nodes_of(current.test, cst.Attribute)):
            return True
        current = parents.get(current)
    return False


def _after_cuda_exit(block: cst.IndentedBlock, current: cst.CSTNode) -> bool:
    """An earlier `if not torch.cuda.is_available(): return` in the same block guards the rest."""
    for statement in block.body:
        if statement is current:
            return False
        if isinstance(statement, cst.If) and statement.orelse is None and decides_on_cuda(statement.test) and _exits(statement.body):
            return True
    return False


def _exits(body: cst.BaseSuite) -> bool:
    if not isinstance(body, cst.IndentedBlock) or not body.body:
        return isinstance(body, cst.SimpleStatementSuite) and any(isinstance(s, (cst.Return, cst.Raise)) for s in body.body)
    last = body.body[-1]
    return isinstance(last, cst.SimpleStatementLine) and any(isinstance(s, (cst.Return, cst.Raise, cst.Continue, cst.Break)) for s in last.body)


def _compares_device_type(node: cst.Comparison) -> bool:
    """`device.type == "cpu"`, and any comparison with a device kind spelled out
    (`input_type == "cuda"`, `accelerator.upper() == "GPU"`)."""
    operands = [node.left, *(c.comparator for c in node.comparisons)]
    has_type = any(isinstance(o, cst.Attribute) and o.attr.value == "type" for o in operands)
    strings = [str(o.evaluated_value) for o in operands if isinstance(o, cst.SimpleString)]
    return any(s in _DEVICE_TYPES for s in strings) if has_type else any(s.lower() in _DEVICE_KINDS for s in strings)


_DEVICE_KINDS = frozenset(("cuda", "gpu", "cpu"))


def distributed_design(imports: Iterable[str]) -> Optional[str]:
    """The import that makes a file distributed GPU code: collectives over NCCL need CUDA tensors,
    Megatron-style model parallelism places everything on the rank's GPU by design, and a wrapper
    that hands modules to `DistributedDataParallel` (torch's, mmcv's, apex's) puts them on the
    rank's GPU first."""
    return next((name for name in imports if name.startswith(_DISTRIBUTED) or name.endswith("DistributedDataParallel")), None)


_DISTRIBUTED = ("torch.distributed", "megatron", "apex.transformer")


def offloaded(subject: cst.BaseExpression, info_methods: Iterable[cst.FunctionDef]) -> bool:
    """`self.unet.cuda()` where the class also moves `self.unet` back with `.cpu()` (or
    `.to("cpu")`): a deliberate GPU offload, not a constant pinned to the GPU."""
    wanted = _code(subject)
    for method in info_methods:
        for call in nodes_of(method.body, cst.Call):
            func = call.func
            if isinstance(func, cst.Attribute) and _code(func.value) == wanted and _to_cpu(call, func):
                return True
    return False


def _to_cpu(call: cst.Call, func: cst.Attribute) -> bool:
    if func.attr.value == "cpu":
        return True
    first = call.args[0].value if func.attr.value == "to" and call.args else None
    return isinstance(first, cst.SimpleString) and first.evaluated_value == "cpu"


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)

