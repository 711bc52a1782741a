"""Whether anything moves a module class with the model that uses it: a class holding
parameters, buffers or submodules (itself or through a base in any file) must be moved to run at
all; one holding none is moved only by a module that holds it, and its standalone uses are not.
Dropping a per-call move (BUF002) and registering a tensor only a method hands out (BUF001) both
rest on this.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import libcst as cst

from bufferlint.analysis import torch_api
from bufferlint.analysis.attributes import ClassAttributes
from bufferlint.analysis.classes import ValueKind
from bufferlint.analysis.file import FileAnalysis
from bufferlint.analysis.forward import dotted
from bufferlint.analysis.walk import nodes_of


@dataclass(frozen=True)
class Unmoved:
    """Why nothing proves that the module is moved with the model that uses it."""

    reason: str
    blocking: bool  # no module of the run even holds one: the move is its only way to the device


def moved_with_users(attributes: ClassAttributes) -> Optional[Unmoved]:
    """None when the module is moved by whoever uses it: it holds parameters, buffers or
    submodules (in the class or its bases), so it must be moved to run at all. A module without
    any is moved only when another module holds it (then the fix is unsafe), else never (no fix)."""
    info, analysis = attributes.info, attributes.analysis
    for owner in (info, *info.ancestors()):
        if owner.parameters or owner.registered_buffers or owner.submodules or any(_holds_tensors(b) for b in owner.qualified_bases):
            return None
    lineage = analysis.lineage(info)
    if lineage is not None and any(facts.stateful or facts.registered for _, facts in lineage.ancestors):
        return None
    if info.name in _held_here(analysis) or info.name in analysis.project.held_classes:
        return Unmoved(f"{info.name} holds no parameters, buffers or submodules: it moves only with the modules that hold it, so its standalone uses may still need the move", False)
    return Unmoved(f"{info.name} holds no parameters, buffers or submodules, and no module of the run holds one: nothing moves it, so the per-call move is what places the tensor", True)


def _holds_tensors(base: Optional[str]) -> bool:
    """A torch.nn layer base other than the stateless ones (`nn.Conv2d`: its weight)."""
    return torch_api.is_layer_base(base) and base is not None and base.rpartition(".")[2] not in torch_api.STATELESS_LAYERS


def _held_here(analysis: FileAnalysis) -> frozenset[str]:
    """Classes that the module classes of this file instantiate into their attributes."""
    names: set[str] = set()
    for info in analysis.module_classes:
        for assignment in info.assignments:
            if assignment.kind is ValueKind.MODULE and assignment.value is not None:
                names.update(dotted(call.func).rpartition(".")[2] for call in nodes_of(assignment.value, cst.Call))
    return frozenset(names)
