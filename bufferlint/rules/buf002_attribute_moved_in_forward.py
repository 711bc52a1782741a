"""BUF002 attribute-moved-in-forward."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional

import libcst as cst

from bufferlint.analysis.attributes import ClassAttributes, class_attributes
from bufferlint.analysis.classes import ClassInfo, ValueKind
from bufferlint.analysis.file import FileAnalysis
from bufferlint.analysis.flow import body_statements
from bufferlint.analysis.forward import ForwardFacts, Move, PathMethod, Site, Target, forward_facts, may_hold_move, self_attr_root
from bufferlint.analysis.init_order import runs_init_of
from bufferlint.analysis.intent import init_time_methods
from bufferlint.analysis.unmoved import moved_with_users
from bufferlint.analysis.moved_attrs import called_attributes, not_a_tensor_reason, result_dropped, self_healing, to_own_device
from bufferlint.analysis.names import code_excerpt
from bufferlint.analysis.paths import enclosing
from bufferlint.fixes.forward import Parents, drop_move_edits
from bufferlint.fixes.register_buffer import buffer_registration
from bufferlint.model import Applicability, Edit, Finding, Fix
from bufferlint.rules.base import Rule


@dataclass
class AttributeMove:
    attr: str
    method: PathMethod
    site: Site
    move: Move


class AttributeMovedInForward(Rule):
    """A module attribute moved to the input's device on every call of `forward`.

    ## Why it matters
    `self.pe.to(x.device)` inside `forward()` (or a helper it calls) copies the tensor to the GPU on
    every call, because `self.pe` is a plain attribute that `model.cuda()` never moved. The copy
    costs time and memory each step, `.half()` never reaches the tensor, and the pattern hides the
    real problem: the module does not own the tensor. The same goes for `.cuda()`, `.to(x)`,
    `.type_as(x)`, `.type(x.type())`, `torch.as_tensor(self.t, device=...)` and
    `self.t = self.t.to(x.device)`.

    ## Example
    ```python
    class PositionalEncoding(nn.Module):
        def __init__(self, d_model, max_len=512):
            super().__init__()
            self.pe = sinusoids(max_len, d_model)

        def forward(self, x):
            pe = self.pe.to(x.device)
            return x + pe[:, : x.size(1)]
    ```

    ## Instead
    ```python
            self.register_buffer("pe", sinusoids(max_len, d_model), persistent=False)

        def forward(self, x):
            pe = self.pe
    ```
    The buffer moves and casts with the module and stays out of `state_dict()`.

    ## Fix
    Registers the attribute as a non-persistent buffer (exactly as BUF001 does) and drops the
    move: `self.pe.to(x.device)` becomes `self.pe`; a rebinding `self.w = self.w.to(x.device)` is
    removed, and so is an `if self.w.device != x.device:` guard that held only that statement.
    A dtype part stays: `.to(device=x.device, dtype=x.dtype)` becomes `.to(dtype=x.dtype)`, and
    `.to(x)` / `.type_as(x)` / `.type(x.type())` (which also cast to `x`'s dtype) become
    `.to(x.dtype)`. A local that
    only fed the dropped move (`device = img.device`, or its element of `b, device = ...`) goes too.

    ## Fix safety
    Every obligation of BUF001's registration (see BUF001: a disproved one means no fix, an
    unproved one an unsafe fix), and then what dropping the move needs:
    1. The module is moved with the model that uses it: it holds parameters, buffers, or a
       submodule that holds some (itself or through a base in any file; a stateless torch layer
       such as `nn.Dropout()` or `nn.MSELoss()` holds none, a module class of another file or a
       constructor argument annotated with one counts). A module without any is moved only by a
       module that holds it: when one of the run does, the fix is unsafe (a standalone use still
       needs the move); when none does, or only modules of its file that hold nothing either
       (a loss holding a stateless assigner, which callers run without moving), no fix.
    2. Nothing but construction gives the attribute its tensor: another method assigning it
       makes the fix unsafe (that tensor may not be on the module's device).
    3. The move targets the input's or the module's device; a device the rule cannot place
       (`.to(device)` with an unknown `device`) makes the fix unsafe.

    ## Not reported
    Dtype-only casts (`self.t.to(x.dtype)`), `.cpu()`, and `.to()` on parameters, registered
    buffers, submodules or tensors computed from the inputs; attributes that are evidently not
    tensors (called like `self.resampler(x)`, holding a list/dict and never a tensor, or only a
    Python number that `torch.as_tensor(self.eps, device=...)` makes on the device); moves
    whose result is dropped (`self.m.to(x.device)`: only a module moves in place); moves to the
    tensor's own device (`self.t.to(self.t.device)`); self-healing caches (rebuilt on the forward
    path, moved behind a check of their own device or dtype); and every attribute BUF001 keeps
    quiet on: caches rebuilt for the input's shape, per-call state, placeholders, 0-dim tensors,
    classes that place their tensors themselves.
    """

    code = "BUF002"
    name = "attribute-moved-in-forward"
    skips_export_files = True
    skips_test_files = True
    summary = "Attribute moved to the input's device on every forward call"

    def check(self, analysis: FileAnalysis) -> Iterator[Finding]:
        if not may_hold_move(analysis):
            return
        for info in analysis.module_classes:
            facts = forward_facts(analysis, info)
            attributes = class_attributes(analysis, info)
            by_attr: dict[str, list[AttributeMove]] = {}
            for found in attribute_moves(facts, attributes):
                by_attr.setdefault(found.attr, []).append(found)
            for attr, moves in by_attr.items():
                yield from self._findings(analysis, attributes, attr, moves)

    def _findings(self, analysis: FileAnalysis, attributes: ClassAttributes, attr: str, moves: list[AttributeMove]) -> Iterator[Finding]:
        edits, applicability, reason = _fix_parts(attributes, attr, moves)
        for found in moves:
            message = (
                f"`{found.method.self_name}.{attr}` is moved with {found.move.description} {_when(found)}: "
                "register it as a buffer so it moves with the module"
            )
            fix: Optional[Fix] = None
            if edits is None:
                message += f"; no fix: {reason}"
            else:
                assert applicability is not None
                fix = Fix(applicability, f"Register `{attr}` as a non-persistent buffer and drop the per-call move", edits)
                if reason:
                    message += f"; unsafe: {reason}"
            yield self.finding(analysis, found.move.call, message, fix)


def _when(found: AttributeMove) -> str:
    """`on every call`, or, for a move under a test, the branch it takes: `on every call that takes
    `if self.first:`` (or `elif ...:`, or the `else` of `if ...:`): a flag or a type check may
    make it a first-call or a rare move."""
    site = found.site.site
    chain = enclosing(site.top, site.line)
    tests = [index for index, node in enumerate(chain) if isinstance(node, cst.If)]
    if not tests:
        return "on every call"
    test = chain[tests[-1]]
    assert isinstance(test, cst.If)
    inner = chain[tests[-1] + 1] if tests[-1] + 1 < len(chain) else site.line
    return f"on every call that takes {_branch(test, inner)}"


def _branch(test: cst.If, inner: cst.CSTNode) -> str:
    """The branch of the `if`/`elif`/`else` chain `test` whose block holds the statement `inner`."""
    node: Optional[cst.CSTNode] = test
    keyword = "if"
    while isinstance(node, cst.If):
        if any(statement is inner for statement in body_statements(node.body)):
            return f"`{keyword} {code_excerpt(node.test, 40)}:`"
        node, keyword = node.orelse, "elif"
    if isinstance(node, cst.Else) and any(statement is inner for statement in body_statements(node.body)):
        return f"the `else` of `if {code_excerpt(test.test, 40)}:`"
    return f"`if {code_excerpt(test.test, 40)}:`"  # (a one-line block is not told apart)


def attribute_moves(facts: ForwardFacts, attributes: ClassAttributes) -> Iterator[AttributeMove]:
    """Every device move of a plain attribute on the forward path, in source order."""
    plain: Optional[set[str]] = None  # computed at the first move found: most classes have none
    path = [m.func for m in facts.methods]
    for method in facts.methods:
        for site in method.sites:
            for call in site.calls:
                move = facts.move(call, site.state, method)
                if move is None or _to_cpu(move) or result_dropped(site.site.small, call):
                    continue
                attr = self_attr_root(move.subject, method.self_name)
                if attr is None:
                    continue
                if plain is None:
                    plain = _plain_tensor_attributes(attributes)
                if attr not in plain:
                    continue
                if self_healing(facts.info, attr, path, method.func, call):
                    continue  # a cache that re-checks its own device: moved once, not per call
                if to_own_device(move, method, attr):
                    continue  # `.to(device=dev)` with `dev` read off the tensor itself: no move at all
                yield AttributeMove(attr, method, site, move)


def _plain_tensor_attributes(attributes: ClassAttributes) -> set[str]:
    info = attributes.info
    called = called_attributes(info)
    return {
        attr for attr in plain_attributes(info)
        if not_a_tensor_reason(info, attr, called) is None and attributes.quiet(attr) is None
    }


def plain_attributes(info: ClassInfo) -> set[str]:
    """Attributes assigned in the class that are not parameters, buffers or submodules."""
    state = info.parameters | info.registered_buffers | info.submodules | info.properties | set(info.methods)
    kinds = (ValueKind.PARAMETER, ValueKind.BUFFER, ValueKind.MODULE)
    return {a.attr for a in info.assignments if a.kind not in kinds and a.attr not in state}


def _to_cpu(move: Move) -> bool:
    device = move.device
    if isinstance(device, cst.Call) and device.args:
        device = device.args[0].value  # torch.device("cpu")
    return isinstance(device, cst.SimpleString) and device.evaluated_value == "cpu"


def _fix_parts(
    attributes: ClassAttributes, attr: str, moves: list[AttributeMove]
) -> tuple[Optional[list[Edit]], Optional[Applicability], str]:
    """The edits every finding of `attr` shares (registration plus every move dropped), so one
    round lands them all: once the attribute is a buffer, the moves are no longer flagged."""
    defining = attributes.defining.get(attr)
    if defining is None:
        base = next((b for b in attributes.info.ancestors() if any(a.kind is ValueKind.TENSOR for a in b.assignments_to(attr))), None)
        if base is not None:  # the base's own finding registers it, for this class too
            return None, None, f"`{attr}` gets its tensor in base class {base.name}, where its registration belongs"
        return None, None, f"`{attr}` is not known to hold a tensor where it is assigned"
    if any(defining.statement is found.site.site.small for found in moves):
        return None, None, f"`{attr}` gets its tensor from the move itself"
    registration = buffer_registration(attributes, attr)
    hazards = registration.hazards
    if hazards.blocking:
        return None, None, hazards.blocking[0]
    if registration.edit is None:
        return None, None, "no __init__ with super().__init__() to register it in"
    held = moved_with_users(attributes)
    if held is not None and held.blocking:
        return None, None, held.reason
    skipped = _skipping_subclass(attributes, attr, moves)
    if skipped is not None:
        return None, None, skipped
    edits: list[Edit] = [registration.edit]
    for found in moves:
        parents = Parents(found.method.func)
        edits += drop_move_edits(found.move, found.site.site.small, found.site.site.line, parents, attr)
    unsafe = list(hazards.unsafe)
    if held is not None:
        unsafe.append(held.reason)
    unsafe += _reassigned(attributes, attr, moves)
    if any(found.move.target is Target.OTHER for found in moves):
        unsafe.append("the move targets a device that may differ from the module's")
    applicability = Applicability.UNSAFE if unsafe else Applicability.SAFE
    return edits, applicability, unsafe[0] if unsafe else ""


def _skipping_subclass(attributes: ClassAttributes, attr: str, moves: list[AttributeMove]) -> Optional[str]:
    """Dropping a move from a method that a subclass inherits needs the subclass to hold the
    buffer too: one whose constructor skips this class's `__init__` (calling `nn.Module.__init__`
    itself) keeps its own plain `attr`, which the inherited method still has to move."""
    info = attributes.info
    for sub in attributes.family.subclasses(info):
        inherited = [found.method.name for found in moves if found.method.name not in sub.methods]
        if inherited and sub.assignments_to(attr) and not runs_init_of(sub, info):
            return f"subclass {sub.name} skips {info.name}.__init__() and keeps a plain `{attr}` of its own, which the {inherited[0]}() it inherits still has to move"
    return None


def _reassigned(attributes: ClassAttributes, attr: str, moves: list[AttributeMove]) -> list[str]:
    """Dropping the moves must also prove that nothing but construction gives the attribute its tensor."""
    reasons = []
    dropped = {id(found.site.site.small) for found in moves}
    init_time = init_time_methods(attributes.info)
    for assignment in attributes.info.assignments_to(attr):
        if assignment.method.name.value in init_time or id(assignment.statement) in dropped or assignment.kind is ValueKind.NONE:
            continue
        reasons.append(f"{assignment.method.name.value}() also assigns `{attr}`, and that tensor may not be on the module's device")
        break
    return reasons
