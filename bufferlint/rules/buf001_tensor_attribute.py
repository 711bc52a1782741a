"""BUF001 tensor-attribute."""

from __future__ import annotations

from typing import Iterator, Optional

from bufferlint.analysis.attributes import ClassAttributes, class_attributes, file_family
from bufferlint.analysis.evidence import Evidence
from bufferlint.analysis.file import FileAnalysis
from bufferlint.analysis.intent import self_rebinding
from bufferlint.fixes.register_buffer import buffer_fix, buffer_registration
from bufferlint.model import Applicability, Finding, Fix
from bufferlint.rules.base import Rule


class TensorAttribute(Rule):
    """A tensor stored as a plain attribute of an `nn.Module` subclass.

    ## Why it matters
    PyTorch moves, casts, saves and replicates only what a module registered: parameters and
    buffers. `self.table = torch.randn(5, 5)` stays on the CPU after `model.cuda()`, is skipped by
    `.half()`, is not replicated by `DataParallel`, and `forward()` fails with "Expected all tensors
    to be on the same device".

    ## Example
    ```python
    class DCT(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.basis = dct_matrix(n)
    ```

    ## Instead
    ```python
            self.register_buffer("basis", dct_matrix(n), persistent=False)
    ```
    `persistent=False` keeps the tensor out of `state_dict()`, so checkpoints stay exactly as they
    were and old ones still load with `strict=True`. Not flagged: a second name for a parameter
    (`self.weight = self.W`, W an `nn.Parameter`), which nn.Module registers as a parameter too.

    ## Fix safety
    Safe when no hazard applies. No fix is offered when the rewrite could crash or change
    behaviour: assigned before `super().__init__()`; the name is also a property, method, class
    attribute, parameter or submodule; a non-tensor is assigned to it elsewhere; the value derives
    from a parameter (it would go stale); `requires_grad=True`; `ScriptModule` subclasses; classes
    with their own `register_buffer`. A value that aliases an argument gets an unsafe fix.
    When `self.x = None` comes first in `__init__`, `None` is registered there instead.
    """

    code = "BUF001"
    name = "tensor-attribute"
    summary = "Tensor attribute is not registered: .to()/.cuda() leave it behind"

    def check(self, analysis: FileAnalysis) -> Iterator[Finding]:
        family = file_family(analysis)
        for info in family.members:
            attributes = class_attributes(analysis, info)
            for attr, defining in attributes.defining.items():
                if self_rebinding(attr, defining) or attributes.quiet(attr) is not None:
                    continue
                evidence = attributes.evidence(attr)
                if evidence is not None:
                    yield self._finding(analysis, attributes, attr, evidence)

    def _finding(self, analysis: FileAnalysis, attributes: ClassAttributes, attr: str, evidence: Evidence) -> Finding:
        registration = buffer_registration(attributes, attr)
        hazards = registration.hazards
        message = f"Tensor attribute `{attr}` is not a registered buffer: .to()/.cuda() leave it behind, and {evidence.describe()}"
        fix: Optional[Fix] = None
        if hazards.blocking:
            message += f"; no fix: {hazards.blocking[0]}"
        elif registration.edit is None:
            message += "; no fix: no __init__ with super().__init__() to register it in"
        else:
            applicability = Applicability.UNSAFE if hazards.unsafe else Applicability.SAFE
            fix = buffer_fix(registration.edit, applicability, attr)
            if hazards.unsafe:
                message += f"; unsafe: {hazards.unsafe[0]}"
        if hazards.notes and fix is not None:
            message += f"; {hazards.notes[0]}"
        return self.finding(analysis, attributes.defining[attr].statement, message, fix)
