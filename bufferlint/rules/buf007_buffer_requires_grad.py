"""BUF007 buffer-requires-grad."""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from bufferlint.analysis.classes import ClassInfo, RegisterBufferCall
from bufferlint.analysis.file import FileAnalysis
from bufferlint.analysis.grad import GradInference, argument, leaf_lister
from bufferlint.analysis.parameters import parameter_reference
from bufferlint.model import Finding
from bufferlint.rules.base import Rule


class BufferRequiresGrad(Rule):
    """A tensor that requires grad, or an `nn.Parameter`, given to `register_buffer`.

    ## Why it matters
    Buffers are state, not weights: they are not in `parameters()`, so no optimizer ever steps
    them. A `requires_grad=True` tensor registered as a buffer collects `.grad` and is never
    trained; after a cast (`.double()`, `.half()`) or a move to another device it is a non-leaf
    tensor, and `copy.deepcopy` of the module fails. An `nn.Parameter` passed to `register_buffer` stays a buffer: it is saved and
    moved, but never trained either.

    ## Example
    ```python
            self.register_buffer("scale", torch.ones(n, requires_grad=True))
            self.register_buffer("bias", nn.Parameter(torch.zeros(n)))
    ```

    ## Instead
    To train it, make it a parameter: `self.scale = nn.Parameter(torch.ones(n))`. If it is a
    constant, register a tensor without grad: drop `requires_grad=True`, or pass `t.detach()`.

    Not reported: `nn.Parameter(t, requires_grad=False)`, which as a buffer collects no grad and
    is moved and saved like any tensor; a value computed from a parameter where grad is off (a
    method under `@torch.no_grad()`, a `with torch.no_grad():` block), such as a cache gathered
    from the biases when the module switches to eval mode; a buffer the class lists with its name
    as a leaf (`def named_leaves(self): return [("weight", self.weight)]`): a meta-learning module
    keeps its weights as buffers so that its own update step can replace them with non-leaf
    tensors, which a Parameter slot refuses, and trains them through that list.

    ## Fix safety
    No fix: only the author knows whether the tensor was meant to be trained.
    """

    code = "BUF007"
    name = "buffer-requires-grad"
    default_enabled = False  # blind precision on fresh code below 95% (docs/survey.md, round 46)
    summary = "register_buffer given a tensor that requires grad: it is never trained"
    triggers = ("register_buffer",)

    def check(self, analysis: FileAnalysis) -> Iterator[Finding]:
        for info in analysis.module_classes:
            for registration in info.register_buffer_calls:
                reason = self._reason(analysis, info, registration)
                if reason is not None:
                    yield self.finding(analysis, registration.call, _message(registration, reason) + _NO_FIX)

    def _reason(self, analysis: FileAnalysis, info: ClassInfo, registration: RegisterBufferCall) -> Optional[str]:
        tensor = argument(registration.call, "tensor", 1)
        if tensor is None:
            return None
        owner = _owner(registration.call)
        grad = GradInference(analysis.inference, lambda node: parameter_reference(info, node, owner))
        reason = grad.reason(tensor, grad.locals_before(registration.method, registration.site.small))
        if reason is not None and grad.computed_without_grad(tensor, registration.method, registration.site.line):
            return None  # derived from a parameter where grad is off: an eval-mode cache
        if reason is not None and registration.name is not None and leaf_lister(info, registration.name) is not None:
            return None  # a meta-learning module lists it as a leaf and trains it through its own update step
        return reason


_NO_FIX = "; no fix: whether it was meant to be trained is for its author to say"


def _message(registration: RegisterBufferCall, reason: str) -> str:
    buffer = f"`{registration.name}`" if registration.name else "the buffer"
    if "nn.Parameter" in reason:
        advice = "assign it as a parameter to train it, or register a tensor (`.detach()`) if it is a constant"
    else:
        advice = "use nn.Parameter to train it, or drop requires_grad (`.detach()`) if it is a constant"
    return f"Buffer {buffer} is registered from {reason}: buffers are never trained; {advice}"


def _owner(call: cst.Call) -> Optional[str]:
    func = call.func
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
        return func.value.value
    return None
