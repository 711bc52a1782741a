"""`intent.Family`: what the intent tests look up across a file's module classes, indexed once
(a scan of every class per attribute made a file of n classes cost n²)."""

from __future__ import annotations

import libcst as cst

from bufferlint.analysis.file import FileAnalysis
from bufferlint.analysis.intent import Family, deliberate_reason, moved_by_override

SOURCE = '''
import torch
from torch import nn


class A(nn.Module):
    def __init__(self):
        super().__init__()
        self.t = torch.zeros(3)

    def forward(self, x):
        return x + self.t


class B(A):
    def _apply(self, fn):
        return super()._apply(fn)


class C(B):
    pass


class D(nn.Module):
    def to(self, *args):
        return self

    def cuda(self, device=None):
        return self


class Owner(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = A()

    def _apply(self, fn):
        for m in self.modules():
            if isinstance(m, A):
                m.t = fn(m.t)
        return super()._apply(fn)
'''


def _family() -> Family:
    analysis = FileAnalysis(cst.parse_module(SOURCE), "family.py")
    return Family(analysis.module_classes)


def _names(classes: object) -> list[str]:
    return [info.name for info in classes]  # type: ignore[attr-defined]


def test_subclasses_are_the_members_with_the_class_among_their_ancestors_in_member_order() -> None:
    family = _family()
    a, b, c, d, owner = family.members
    assert _names(family.subclasses(a)) == ["B", "C"]
    assert _names(family.subclasses(b)) == ["C"]
    assert family.subclasses(c) == [] and family.subclasses(d) == [] and family.subclasses(owner) == []


def test_move_overrides_list_each_members_overrides_in_order() -> None:
    family = _family()
    assert [(owner.name, name) for owner, name, _ in family.move_overrides] == [
        ("B", "_apply"), ("D", "to"), ("D", "cuda"), ("Owner", "_apply"),
    ]


def test_an_owner_that_moves_the_attribute_of_a_class_it_names_is_found_through_the_family() -> None:
    family = _family()
    a = family.members[0]
    assert moved_by_override(a, "t", family) == "Owner._apply() moves it with the module that owns it"
    assert moved_by_override(a, "t") is None  # without the family only A and its bases count
    defining = next(x for x in a.assignments if x.attr == "t")
    assert deliberate_reason(a, "t", defining, family) == "Owner._apply() moves it with the module that owns it"
