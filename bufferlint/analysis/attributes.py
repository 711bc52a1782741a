"""The plain tensor attributes of a module class, decided once for every rule that reports them.

For each attribute the class assigns a tensor (or, for BUF002, moves like one), this answers:
- `defining`: the assignment that gives it its tensor (the first in `__init__`);
- `quiet`: why it is plain on purpose (intent.py), or why its device does not matter here (the
  project creates tensors on the GPU by default, a base in another file moves them itself, it is
  a 0-dim tensor), or None;
- `evidence`: where its device matters (evidence.py).
Where it would become a buffer, and what that must prove, is the fix's business
(fixes/register_buffer.py, analysis/hazards.py).
"""

from __future__ import annotations

from functools import cached_property
from typing import Optional

from bufferlint.analysis.classes import AttrAssignment, ClassInfo, ValueKind
from bufferlint.analysis.containers import may_hold_tensors
from bufferlint.analysis.evidence import Evidence, EvidenceFinder
from bufferlint.analysis.factory_sizes import is_zero_dim
from bufferlint.analysis.file import FileAnalysis
from bufferlint.analysis.forward import forward_facts
from bufferlint.analysis.intent import Family, deliberate_reason


class ClassAttributes:
    """The plain tensor attributes of one module class (see the module docstring)."""

    def __init__(self, analysis: FileAnalysis, info: ClassInfo, family: Family) -> None:
        self.analysis = analysis
        self.info = info
        self.family = family

    @cached_property
    def defining(self) -> dict[str, AttrAssignment]:
        """For each plain tensor attribute, the assignment that defines it (first in `__init__`)."""
        registered = self.info.registered_buffers
        chosen: dict[str, AttrAssignment] = {}
        for assignment in self.info.assignments:
            if assignment.kind is not ValueKind.TENSOR or assignment.augmented or assignment.attr in registered:
                continue
            current = chosen.get(assignment.attr)
            if current is None or (assignment.in_init and not current.in_init):
                chosen[assignment.attr] = assignment
        return chosen

    def quiet(self, attr: str) -> Optional[str]:
        """Why the attribute is no finding whatever its uses, or None."""
        reason = deliberate_reason(self.info, attr, self.defining.get(attr), self.family)
        return reason or self._project_reason(attr) or self._zero_dim(attr)

    def _project_reason(self, attr: str) -> Optional[str]:
        project = self.analysis.project
        if project.default_device is not None:
            return f"the project creates tensors on its device by default ({project.default_device})"
        lineage = self.analysis.lineage(self.info)
        for name, facts in lineage.ancestors if lineage is not None else ():
            if facts.moves(attr):
                return f"base class {name} moves it with its own to()/_apply()"
        return None

    def _zero_dim(self, attr: str) -> Optional[str]:
        qualify = self.analysis.inference.qualify
        values = [a.value for a in self.info.assignments_to(attr) if a.kind is ValueKind.TENSOR and a.value is not None]
        if values and all(is_zero_dim(v, qualify) for v in values):
            return "a 0-dim tensor, which CUDA accepts next to tensors on the GPU"
        return None

    def evidence(self, attr: str) -> Optional[Evidence]:
        return self._evidence.evidence(attr)

    @cached_property
    def _evidence(self) -> EvidenceFinder:
        # The attributes the rules ask about: tensors, and containers that may hold them (BUF009).
        wanted = frozenset(self.defining) | frozenset(
            a.attr for a in self.info.assignments
            if a.kind is ValueKind.OTHER and a.value is not None and may_hold_tensors(a.value)
        )
        subclasses = tuple(forward_facts(self.analysis, sub) for sub in self.family.subclasses(self.info))
        return EvidenceFinder(forward_facts(self.analysis, self.info), wanted, subclasses, self.analysis.mentions)


def class_attributes(analysis: FileAnalysis, info: ClassInfo) -> ClassAttributes:
    """The attributes of one class, computed once per file and shared by the rules."""
    per_file: dict[int, ClassAttributes] = analysis.__dict__.setdefault(_ATTRIBUTES_ATTR, {})
    found = per_file.get(id(info))
    if found is None:
        found = per_file[id(info)] = ClassAttributes(analysis, info, file_family(analysis))
    return found


def file_family(analysis: FileAnalysis) -> Family:
    family: Optional[Family] = analysis.__dict__.get(_FAMILY_ATTR)
    if family is None:
        family = analysis.__dict__[_FAMILY_ATTR] = Family(analysis.module_classes)
    return family


_ATTRIBUTES_ATTR = "_bufferlint_class_attributes"
_FAMILY_ATTR = "_bufferlint_family"
