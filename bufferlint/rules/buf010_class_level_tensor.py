"""BUF010 class-level-tensor."""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from bufferlint.analysis.classes import ClassInfo
from bufferlint.analysis.containers import ContainerInference
from bufferlint.analysis.file import FileAnalysis
from bufferlint.analysis.flow import body_statements
from bufferlint.analysis.init_order import binds_on_instance
from bufferlint.analysis.tensors import Scope, track_locals
from bufferlint.model import Finding
from bufferlint.rules.base import Rule


class ClassLevelTensor(Rule):
    """A tensor (or a container of tensors) assigned in the body of an `nn.Module` class.

    ## Why it matters
    A class attribute is one object shared by every instance of the class. PyTorch never
    registers it: `.to()`, `.cuda()` and `.half()` leave it on the CPU in its dtype, it is not in
    `state_dict()`, and an in-place update through one instance changes all of them.

    Off by default: enable it with `--select BUF010` or `extend-select`. On repositories the
    rules were never tuned on it never found a class-level tensor a maintainer would act on, and
    its only findings there (round 15: four empty anchor placeholders that the head replaces on
    the instance) were false alarms, a class it now skips.

    ## Example
    ```python
    class Embed(nn.Module):
        table = torch.arange(10)

        def forward(self, x):
            return x + self.table
    ```

    ## Instead
    Create it per instance, as a buffer:
    ```python
        def __init__(self):
            super().__init__()
            self.register_buffer("table", torch.arange(10), persistent=False)
    ```
    Plain constants (`torch.Size`, `torch.device`, dtypes, numbers) are fine as class attributes
    and are not reported. Neither is a class-level default that the class's own methods replace
    on the instance (`anchors = torch.empty(0)` in the class body, `self.anchors = ...` rebuilt
    in `forward()` for the input's shape): it is a placeholder, and what the instance holds is an
    instance attribute, which BUF001 judges with all its evidence. Files written for ONNX or
    ncnn export (`model_onnx.py`) are not checked: their modules are traced where they are built.

    ## Fix safety
    No fix: the class attribute may also be read through the class (`Embed.table`) or by other
    classes, which a buffer cannot serve.
    """

    code = "BUF010"
    name = "class-level-tensor"
    skips_export_files = True
    skips_test_files = True
    default_enabled = False
    summary = "Class-level tensor: shared by all instances and never moved"

    def check(self, analysis: FileAnalysis) -> Iterator[Finding]:
        containers = ContainerInference(analysis.inference)
        for info in analysis.module_classes:
            scope = Scope()
            for line in body_statements(info.node.body):
                if not isinstance(line, cst.SimpleStatementLine):
                    continue
                for small in line.body:
                    message = _message(info, small, scope, containers)
                    if message is not None:
                        yield self.finding(analysis, small, message + _NO_FIX)
                    track_locals(small, scope, analysis.inference)


_NO_FIX = "; no fix: the class attribute may also be read through the class or by other classes"


def _message(info: ClassInfo, small: cst.BaseSmallStatement, scope: Scope, containers: ContainerInference) -> Optional[str]:
    target, value = _target_and_value(small)
    if target is None or value is None or binds_on_instance(info, target):
        return None  # (a default the instance replaces: see the docstring)
    where = f"shared by every {info.name} instance and never moved by .to()/.cuda()"
    advice = f'register it in __init__: self.register_buffer("{target}", ..., persistent=False)'
    if containers.inference.is_tensor(value, scope):
        return f"Class attribute `{target}` is a tensor {where}; {advice}"
    contents = containers.contents(value, scope)
    if contents is not None:
        return f"Class attribute `{target}` is a {contents.kind} of {contents.items} {where}; create it per instance in __init__"
    return None


def _target_and_value(small: cst.BaseSmallStatement) -> tuple[Optional[str], Optional[cst.BaseExpression]]:
    if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
        return small.targets[0].target.value, small.value
    if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
        return small.target.value, small.value
    return None, None
