"""BUF009 tensor-container-attribute."""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from bufferlint.analysis.attributes import class_attributes, file_family
from bufferlint.analysis.classes import AttrAssignment, ClassInfo
from bufferlint.analysis.containers import ContainerInference, Contents, MethodContainers, may_hold_tensors, registered_parameters_only
from bufferlint.analysis.factory_sizes import static_numel
from bufferlint.analysis.file import FileAnalysis
from bufferlint.analysis.flow import self_name
from bufferlint.analysis.intent import init_time_methods, moved_by_override
from bufferlint.analysis.walk import nodes_of
from bufferlint.model import Finding
from bufferlint.rules.base import Rule


class TensorContainerAttribute(Rule):
    """A list, tuple, set or dict of tensors stored as a module attribute.

    ## Why it matters
    `.to()`, `.cuda()`, `.half()` and `state_dict()` only see registered parameters and
    buffers. Tensors inside a Python container attribute stay where they were created, so
    `forward()` fails with "Expected all tensors to be on the same device" after `model.cuda()`.
    A list of `nn.Parameter`s is worse: the parameters are not registered, so they are neither
    moved nor trained.

    ## Example
    ```python
            self.masks = [torch.ones(n).tril(k) for k in range(3)]
            self.scales = {"a": torch.tensor(1.0), "b": torch.tensor(2.0)}
    ```

    ## Instead
    - stack same-shaped tensors into one buffer: `self.register_buffer("masks", torch.stack(masks), persistent=False)`;
    - or register each one: `self.register_buffer(f"mask_{k}", m, persistent=False)` and read them
      with `getattr(self, f"mask_{k}")`;
    - or keep a BufferList-like submodule: a small `nn.Module` that registers each tensor as a
      buffer, held in an `nn.ModuleList`/`nn.ModuleDict`;
    - for parameters: `nn.ParameterList` / `nn.ParameterDict`.

    ## What counts
    Literals and comprehensions whose elements (dict: values) are tensors, `list(...)`/`tuple(...)`
    of those, the tuples of `torch.split`/`chunk`/`unbind`/`meshgrid`, locals bound to any of
    these, and empty literals filled with `.append(t)`/`[k] = t` in the same method. A list of
    strings, numbers, shapes or submodules is not reported, nor is one whose tensors are all empty
    placeholders (`(False, {"prev": torch.tensor([])})`, filled by a later call), nor a container
    that an `_apply` or `to` override moves itself (of the class, a base, or a class of the file
    owning it), nor a list of references to parameters the module registers
    (`[self.conv1.weight, self.conv2.weight]`: `.to()` converts those in place, so the list
    follows).

    ## Fix safety
    No fix: every reader of the attribute would change with it.
    """

    code = "BUF009"
    name = "tensor-container-attribute"
    default_enabled = False  # blind precision on fresh code below 95% (docs/survey.md, round 46)
    skips_export_files = True
    skips_test_files = True
    summary = "Tensors inside a list/tuple/dict attribute are never moved with the module"

    def check(self, analysis: FileAnalysis) -> Iterator[Finding]:
        containers = ContainerInference(analysis.inference)
        family = file_family(analysis)
        for info in family.members:
            walks: dict[int, MethodContainers] = {}
            reported: set[str] = set()
            for assignment in _in_init_first(info):
                if assignment.attr in reported or assignment.augmented or assignment.value is None:
                    continue
                if not may_hold_tensors(assignment.value):
                    continue  # most attributes: no need to walk the method
                if _only_empty_tensors(analysis, assignment.value):
                    continue  # `(False, {"prev_g": torch.tensor([])})`: a placeholder a later call fills
                if moved_by_override(info, assignment.attr, family) is not None:
                    continue  # an `_apply`/`to` override moves the container's tensors itself
                if registered_parameters_only(info, assignment):
                    continue  # `.to()` moves the parameters it points at in place
                walk = walks.get(id(assignment.method))
                if walk is None:
                    walk = walks[id(assignment.method)] = MethodContainers(containers, assignment.method, assignment.scope)
                contents = _contents(walk, assignment)
                if contents is None or _rebuilt_after_construction(info, assignment.attr):
                    continue  # no tensors, or per-call state (an RNN state carried between batches, a lazy cache)
                attributes = class_attributes(analysis, info)
                if attributes.quiet(assignment.attr) is None and attributes.evidence(assignment.attr) is not None:
                    reported.add(assignment.attr)
                    yield self.finding(analysis, assignment.statement, _message(assignment.attr, contents) + _NO_FIX)


def _rebuilt_after_construction(info: ClassInfo, attr: str) -> bool:
    """Assigned, or filled item by item, by a method that runs after construction."""
    init_time = init_time_methods(info)
    for func_name, func in info.methods.items():
        if func_name in init_time:
            continue
        if any(a.attr == attr and a.method is func for a in info.assignments):
            return True
        me = self_name(func)
        for target in nodes_of(func.body, cst.AssignTarget):
            inner = target.target
            if isinstance(inner, cst.Subscript) and isinstance(inner.value, cst.Attribute):
                if isinstance(inner.value.value, cst.Name) and inner.value.value.value == me and inner.value.attr.value == attr:
                    return True
    return False


def _only_empty_tensors(analysis: FileAnalysis, value: cst.BaseExpression) -> bool:
    """Every torch call in the container builds an empty tensor (`torch.tensor([])`,
    `torch.empty(0)`): placeholders, with nothing to move."""
    qualify = analysis.inference.qualify
    calls = [c for c in nodes_of(value, cst.Call) if (qualify(c.func) or "").startswith("torch.")]
    return bool(calls) and all(static_numel(c, qualify) == 0 for c in calls)


def _in_init_first(info: ClassInfo) -> list[AttrAssignment]:
    return sorted(info.assignments, key=lambda a: not a.in_init)


def _contents(walk: MethodContainers, assignment: AttrAssignment) -> Optional[Contents]:
    assert assignment.value is not None
    found = walk.contents_at(assignment.statement, assignment.value)
    return found if found is not None else walk.filled_attr(assignment.attr, assignment.value)


_NO_FIX = "; no fix: every reader of the attribute would change with it"


def _message(attr: str, contents: Contents) -> str:
    if contents.items == "nn.Parameters":
        return (
            f"`{attr}` is a {contents.kind} of nn.Parameters: they are not registered, so never moved "
            f"nor trained; use nn.Parameter{'Dict' if contents.kind == 'dict' else 'List'}"
        )
    return (
        f"`{attr}` is a {contents.kind} of tensors: .to()/.cuda() never move them; register each as a buffer, "
        "stack them into one buffer, or hold them in a BufferList-like submodule"
    )
