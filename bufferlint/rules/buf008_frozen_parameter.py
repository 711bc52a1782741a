"""BUF008 frozen-parameter."""

from __future__ import annotations

import re
from typing import Iterator, Optional

from bufferlint.analysis.classes import AttrAssignment, ClassInfo, ValueKind
from bufferlint.analysis.factory_sizes import static_numel
from bufferlint.analysis.file import FileAnalysis
from bufferlint.analysis.flow import exclusive_branches
from bufferlint.analysis.grad import GradInference
from bufferlint.analysis.hazards import handed_over, layer_owned, own_bookkeeping
from bufferlint.analysis.intent import init_time_methods
from bufferlint.analysis.layer_weights import FrozenLayerWeight, FrozenOwnWeight, filled_layer_weights, frozen_layer_weights, frozen_own_weights
from bufferlint.analysis.parameters import (
    FrozenParameter,
    Unfreezing,
    find_unfreezing,
    frozen_parameters,
    parameter_reference,
    presence_only,
    quantized_slot,
    related_classes,
    unread,
    updated_after_construction,
)
from bufferlint.fixes.misuse import parameter_to_buffer
from bufferlint.model import Finding, Fix
from bufferlint.rules.base import Rule


class FrozenParameterRule(Rule):
    """`nn.Parameter(t, requires_grad=False)` that nothing in the class ever unfreezes.

    ## Why it matters
    A parameter that never requires grad is a constant dressed as a weight: it sits in
    `parameters()`, so every optimizer built from them carries it (and its state), weight decay
    and gradient clipping loop over it, and parameter counts include it. A buffer says what it
    is: moved, cast and saved with the module, never trained. Running statistics the class updates
    in place after construction (`self.mean.data = ...`, `self.var.mul_(m)`) are no constant, and
    the message says so, but they are a buffer's job just the same (BatchNorm keeps its own there).

    ## Example
    ```python
    class Normalize(nn.Module):
        def __init__(self, mean):
            super().__init__()
            self.mean = nn.Parameter(torch.tensor(mean), requires_grad=False)
    ```

    ## Instead
    ```python
            self.register_buffer("mean", torch.tensor(mean))
    ```
    A persistent buffer (the default) keeps the `state_dict()` key `mean`, so checkpoints saved
    before the change still load with `strict=True`.

    So does a Parameter turned off by a later statement of the same body (`self.w =
    nn.Parameter(t)`, then `self.w.requires_grad = False` or `self.w.requires_grad_(False)`), when
    neither sits under a branch or loop and nothing binds the name again between; a freeze under
    a test (`if not bias: self.bias.requires_grad = False`) leaves a configuration that trains it.

    A frozen parameter built by a function of the same file counts too (`self.betas =
    to_const(betas)`, where `to_const` returns `nn.Parameter(x, requires_grad=False)`, directly or
    through a name it last bound to one): no fix, since other code may call the helper; have it
    return the tensor and register that.

    A frozen table the class computes and puts into a torch layer it holds (`self.emb =
    nn.Embedding(n, d)`, then `self.emb.weight = nn.Parameter(table, requires_grad=False)`: the
    sinusoidal time embedding of the Informer family, a fixed Sobel kernel in an `nn.Conv2d`)
    counts too, with no fix: the remedy replaces the layer's own parameter (`del self.emb.weight`,
    then `self.emb.register_buffer("weight", table)`, which keeps the `state_dict()` key), and a
    rewrite inside a layer the class holds is not offered. Weights read from a checkpoint
    (`weights.get_tensor(name)`, `torch.load(...)`) are no computed table and are left alone.
    The same goes for a held layer's weight filled in place with a constant and frozen while
    constructing (`self.conv.weight.data.fill_(1.)`, `.data.copy_(kernel)` or `.data = kernel`,
    then `self.conv.weight.requires_grad_(False)`): a summation or Sobel kernel. Filled but not
    frozen, it is an initialisation; frozen after copying loaded weights, a pretrained part.
    So does a torch layer subclass that fills its own weight with such a table and freezes it
    while constructing (EDSR's `MeanShift(nn.Conv2d)`: `self.weight.data = torch.eye(3).view(3, 3,
    1, 1) / std`, then `self.weight.requires_grad = False` or `for p in self.parameters():
    p.requires_grad = False`), when it holds nothing else; the remedy is `del self.weight`, then
    `self.register_buffer("weight", table)`. `self.requires_grad = False` freezes nothing (it sets
    a plain attribute of the module), and a subclass that also holds a submodule freezes a part,
    not a constant: neither is reported.

    ## What counts as unfreezing
    A finding needs proof that nothing in the repository unfreezes the parameter, so any of these
    means no finding: `<x>.mean.requires_grad = True` (any value but `False`) or
    `<x>.mean.requires_grad_()` anywhere in the file; `self.requires_grad_()`, loops over
    `self.parameters()`, `named_parameters()`, `modules()` that set `requires_grad`, and
    `getattr(self, name).requires_grad_()` in the class or a same-file base or subclass; an
    assignment of a trainable `nn.Parameter` to the same name; and, in any file of the run,
    `<x>.mean.requires_grad = <not False>`, or a filter over parameter names that may pick it: a
    file that turns `requires_grad` on for parameters it does not name (`p.requires_grad = True`
    in a loop, `requires_grad_()` on a module, Lightning's `unfreeze()`) and holds a string that
    holds `mean` or is part of it (`"mean"`, `"norm.mean"`; not one or two characters).
    A class whose instances hold this one, at any depth and in any file (through attributes it, a
    base or a subclass builds: `self.decoder = Decoder()`), and that calls `self.requires_grad_(True)`
    or `self.<attr>.requires_grad_()`, unfreezes it too: no finding.
    Unfreezing elsewhere that names nothing (`for p in model.encoder.parameters(): ...`) leaves the
    finding, without a fix: the class still means a constant, but whether the loop reaches it is
    not proved. A helper that sets `requires_grad` to a flag it is given
    (`def set_grad(model, flag=True)`) unfreezes only if a call in its file gives it something
    other than `False`.

    ## Not a constant
    A quantized layer keeps its packed weights and their scales as frozen parameters that a loader
    fills by name: a class with a frozen parameter left uninitialised with a packed type
    (`torch.empty(..., dtype=torch.int8)`, `int32`, fp8) has no finding.

    A frozen parameter that nothing in its class reads, when it is the class's only parameter and
    the class holds no submodule, is there to make `parameters()` non-empty: code that reads the
    module's device as `next(self.parameters()).device` needs it. No finding; nor for one that
    holds no values at all (`nn.Parameter(torch.empty(0), requires_grad=False)`) and that nothing
    reads, whatever the class holds besides. (An empty one read for its dtype, `self.dummy.dtype`,
    stays a finding: a buffer tells the dtype as well.)
    Nor for a placeholder in a slot that other configurations fill with a submodule
    (`self.background = Field(...)` in one branch, `nn.Parameter(torch.ones(1), requires_grad=False)`
    in the other): it keeps the slot's optimizer group non-empty.

    ## Fix safety
    Unsafe, always: `self.register_buffer("mean", <the wrapped tensor>)`. The `state_dict()` keys
    stay the same, but `mean` leaves `parameters()`: an optimizer built over all parameters has one
    tensor fewer, so resuming it from a checkpoint saved before the change fails
    (`optimizer.load_state_dict` sees a different parameter count), and code outside the run may
    unfreeze it. No fix when an obligation fails:
    1. Nothing else is bound to the name: it is not assigned anything else in the class, deleted,
       bound in the class body, or owned by a `torch.nn` base class (`weight`, `bias`, the names
       torch.nn.utils adds: a LoRA `nn.Linear` subclass's own `ranknum` is none); and its statement assigns no
       other name (`self.a = self.b = nn.Parameter(...)`: the registration would drop `b`).
    2. No other name holds the parameter (`self.weight = self.W`): it would be left a plain
       attribute outside `state_dict()`.
    3. It is not handed to another module (`Decoder(window=self.window)` registers it there too,
       and that `state_dict` key would disappear).
    4. The wrapped tensor does not require grad (`nn.Parameter` detaches it; a buffer would keep
       its autograd history), and the class has no `register_buffer` of its own.
    5. Nothing in the class or its bases overrides what lists parameters and buffers
       (`named_buffers()`, `named_parameters()`, `state_dict()`, `_load_from_state_dict()`...) or
       walks every buffer: the parameter turned buffer would be listed there twice, or not at all.
    6. No file of the run restores optimizer or trainer state (`optimizer.load_state_dict(...)`,
       `load_state_dict(ckpt["optim"])`, Lightning's `fit(..., ckpt_path=)` and
       `resume_from_checkpoint`, accelerate's `load_state()`, mmcv's `runner.resume()`): resuming
       a run saved before the change would fail if that optimizer covers the parameter. That it
       does not is proved only when every optimizer the run builds is given just the parameters
       that require grad (`[p for p in m.parameters() if p.requires_grad]`, `filter(...)`, or a
       builder that skips `not p.requires_grad`; a builder of the run is read where it is defined,
       one from a library counts as given them all). The message names the load most likely to
       restore this class's optimizer: one in a file that imports the class's top-level package,
       sits in its top-level folder or at the run's root, and of those the nearest by folder (a
       vendored trainer under `external/` is named only when nothing closer restores one). Where
       that is proved, the finding says the constant sits in parameters() only ("the project's
       optimizers take only trainable ones") rather than in the optimizer too.
    7. No file of the run turns `requires_grad` on for parameters it does not name: such a loop may
       reach this one, and then it was trained.
    8. No file of the run sets the name on an object from outside it (`model.loss.mean = p`, a line
       that starts `<object>.mean =`, the object not being `self`): an `nn.Parameter` assigned there
       turns the buffer back into a parameter, and a tensor assigned there after that raises
       `TypeError`, where the original code kept one parameter throughout.
    """

    code = "BUF008"
    name = "frozen-parameter"
    summary = "nn.Parameter with requires_grad=False is a constant: register it as a buffer"
    triggers = ("Parameter", "requires_grad")  # a layer subclass freezing its own weight may spell no Parameter
    skips_test_files = True

    def check(self, analysis: FileAnalysis) -> Iterator[Finding]:
        unfreezing: Optional[Unfreezing] = None  # the file's unfreezing, read once when first needed
        layers_frozen = analysis.may_match(_LAYER_WEIGHT_TEXT)  # `self.emb.weight = ...`: rare, checked by text first
        own_frozen = analysis.may_match(_OWN_WEIGHT_TEXT)  # `self.weight.data = ...`
        filled_frozen = analysis.may_match(_FILLED_WEIGHT_TEXT)  # `self.conv.weight.data.fill_(1.)`
        for info in analysis.module_classes:
            held = list(frozen_layer_weights(info, analysis.inference, analysis.resolver.qualify)) if layers_frozen else []
            held += filled_layer_weights(info, analysis.resolver.qualify) if filled_frozen else []
            own = list(frozen_own_weights(info, analysis.resolver.qualify)) if own_frozen and info.is_layer_subclass else []
            frozen = frozen_parameters(info, analysis.inference, analysis.function)
            if unfreezing is None and (held or own or frozen):
                unfreezing = find_unfreezing(analysis.module)
            if held:
                assert unfreezing is not None
                yield from self._layer_findings(analysis, info, held, unfreezing)
            if own:
                assert unfreezing is not None
                yield from self._own_weight_findings(analysis, info, own, unfreezing)
            if not frozen or quantized_slot(frozen, analysis.inference) is not None:
                continue  # a quantized layer's frozen parameters are its loaded weights
            assert unfreezing is not None
            related = related_classes(info, analysis.classes)
            trainable = _trainable_names(analysis, info, frozen)
            for parameter in frozen:
                if parameter.attr in trainable or unfreezing.unfreezes(info, parameter.attr, related):
                    continue
                if analysis.project.may_unfreeze(parameter.attr, info.name) is not None:
                    continue  # a training script unfreezes it by name: it is trained
                if analysis.project.unfrozen_by_holder(analysis.qualified(info)) is not None:
                    continue  # a model holding it turns requires_grad on for all it holds
                if presence_only(info, parameter.attr, related) or (_holds_nothing(parameter, analysis) and unread(info, parameter.attr, related)):
                    continue  # it is there to be in parameters() (a device anchor), not to be read
                if _stands_in_for_a_module(info, parameter.attr):
                    continue  # a dummy in the slot other configurations fill with a submodule
                yield self._finding(analysis, info, parameter, frozen)

    def _layer_findings(
        self, analysis: FileAnalysis, info: ClassInfo, weights: list[FrozenLayerWeight], unfreezing: Unfreezing
    ) -> Iterator[Finding]:
        """Frozen weights the class puts into torch layers it holds (`self.emb.weight = ...`)."""
        for held in weights:
            if _unfrozen_somewhere(analysis, info, (held.name, held.layer), unfreezing):
                continue
            layer = held.layer_class.rpartition(".")[2]
            what = (
                f"`{held.layer}.{held.name}` of the {layer} `{held.layer}` is filled with a constant and frozen while constructing, and nothing unfreezes it"
                if held.filled else
                f"`{held.layer}.{held.name}` is an nn.Parameter with requires_grad=False that nothing unfreezes, put into the {layer} `{held.layer}`"
            )
            message = (
                f"{what}: {_kept_as(analysis)}; make it a buffer of the layer "
                f"(`del self.{held.layer}.{held.name}`, then `self.{held.layer}.register_buffer(\"{held.name}\", ...)`); "
                f"no fix: a rewrite of a parameter the {layer} owns is not offered"
            )
            yield self.finding(analysis, held.statement, message, None)

    def _own_weight_findings(
        self, analysis: FileAnalysis, info: ClassInfo, weights: list[FrozenOwnWeight], unfreezing: Unfreezing
    ) -> Iterator[Finding]:
        """Tables a torch layer subclass puts into its own weights and freezes (`MeanShift(nn.Conv2d)`)."""
        for own in weights:
            if _unfrozen_somewhere(analysis, info, (own.name,), unfreezing):
                continue
            layer = own.layer_class.rpartition(".")[2]
            message = (
                f"`{own.name}` of {info.name}, a {layer}, is set to a table its constructor computes and frozen there, "
                f"and nothing unfreezes it: {_kept_as(analysis)}; make it a buffer "
                f"(`del self.{own.name}`, then `self.register_buffer(\"{own.name}\", ...)`); "
                f"no fix: a rewrite of a parameter the {layer} owns is not offered"
            )
            yield self.finding(analysis, own.statement, message, None)

    def _finding(
        self, analysis: FileAnalysis, info: ClassInfo, parameter: FrozenParameter, frozen: list[FrozenParameter]
    ) -> Finding:
        attr = parameter.attr
        updated = updated_after_construction(info, attr)
        kept = _kept_as(analysis) if updated is None else _kept_as(analysis).replace("a constant", f"state {updated}() updates in place, kept", 1)
        message = f"`{attr}` is an nn.Parameter with requires_grad=False that nothing in the class unfreezes: {kept}; register it as a buffer"
        blocker = (
            _fix_blocker(analysis, info, parameter, frozen)
            or _grad_blocker(analysis, info, parameter)
            or _unnamed_unfreezing(analysis, attr)
        )
        fix: Optional[Fix] = None
        if blocker is None:
            assert parameter.data is not None
            owner = parameter.assignment.scope.self_name or "self"
            fix = parameter_to_buffer(parameter.assignment.statement, owner, attr, parameter.data)
            message += (
                "; unsafe: it leaves parameters(), and no code outside the run that builds an optimizer over them "
                "or unfreezes it is ruled out"
            )
        else:
            message += f"; no fix: {blocker}"
        return self.finding(analysis, parameter.assignment.statement, message, fix)


def _unfrozen_somewhere(analysis: FileAnalysis, info: ClassInfo, names: tuple[str, ...], unfreezing: Unfreezing) -> bool:
    """The file unfreezes one of `names` (or the class as a whole), a script of the run unfreezes
    one by name, or a model holding the class turns requires_grad on for all it holds."""
    related = related_classes(info, analysis.classes)
    if any(unfreezing.unfreezes(info, name, related) or analysis.project.may_unfreeze(name, info.name) is not None for name in names):
        return True
    return analysis.project.unfrozen_by_holder(analysis.qualified(info)) is not None


# `self.<layer>.weight = ` (or `.bias`): the text every frozen layer weight needs
_LAYER_WEIGHT_TEXT = re.compile(rb"\.\w+\.(?:weight|bias)[ \t]*=[^=]")
# `self.weight.data = `: the text a layer subclass filling its own weight needs
_OWN_WEIGHT_TEXT = re.compile(rb"\.(?:weight|bias)\.data[ \t]*=[^=]")
# `self.conv.weight.data = `, `.data.fill_(`, `.copy_(`: a held layer's weight filled in place
_FILLED_WEIGHT_TEXT = re.compile(rb"\.\w+\.(?:weight|bias)(?:\.data[ \t]*=[^=]|(?:\.data)?\.(?:fill_|copy_)\()")


def _stands_in_for_a_module(info: ClassInfo, attr: str) -> bool:
    """Other branches assign a submodule to the name (`self.background = Field(...)` when configured,
    `nn.Parameter(torch.ones(1), requires_grad=False)` otherwise): the parameter is a placeholder
    that keeps the slot's optimizer group non-empty, not a constant the module computes with."""
    return any(a.kind is ValueKind.MODULE for a in info.assignments_to(attr))


def _holds_nothing(parameter: FrozenParameter, analysis: FileAnalysis) -> bool:
    """`nn.Parameter(torch.empty(0), requires_grad=False)`: no values, so no constant; a dummy that
    makes `parameters()` non-empty (for `next(self.parameters()).device`, or for a wrapper that
    expects one)."""
    return parameter.data is not None and static_numel(parameter.data, analysis.inference.qualify) == 0


def _trainable_names(analysis: FileAnalysis, info: ClassInfo, frozen: list[FrozenParameter]) -> set[str]:
    """Names that also receive a parameter that is not frozen (a second name for a frozen one,
    `self.weight = self.W`, is frozen too)."""
    frozen_ids = {id(p.assignment) for p in frozen}
    frozen_names = {p.attr for p in frozen}
    return {
        a.attr for a in info.assignments
        if a.kind is ValueKind.PARAMETER and id(a) not in frozen_ids and _reads(analysis, a) not in frozen_names
    } | info.registered_parameters


def _kept_as(analysis: FileAnalysis) -> str:
    """Where the constant is kept: in parameters() and so in an optimizer built over them, unless
    every optimizer the run builds is given only parameters that require grad."""
    if analysis.project.trains_only_trainable:
        return "a constant in parameters() (the project's optimizers take only trainable ones)"
    return "a constant in parameters() and the optimizer"


def _fix_blocker(analysis: FileAnalysis, info: ClassInfo, parameter: FrozenParameter, frozen: list[FrozenParameter]) -> Optional[str]:
    attr = parameter.attr
    if parameter.helper is not None:
        return (
            f"`{parameter.helper}()` builds the frozen nn.Parameter, and other code may call it too: have it return "
            "the tensor, then register that as a buffer"
        )
    if parameter.data is None:
        return "nn.Parameter() is given no tensor"
    frozen_ids = {id(p.assignment) for p in frozen}
    init_time = init_time_methods(info)
    other = next((
        a for a in info.assignments_to(attr)
        if id(a) not in frozen_ids  # `self.pos = None` in the other branch of the same if never meets the registration
        and not (a.kind is ValueKind.NONE and exclusive_branches(a.site, parameter.assignment.site))
        # a tensor stored after construction (`self.occs = self.occs.to(device)` in an own `to()`)
        # updates a buffer in place of the name; on the Parameter it raises TypeError
        and not (a.kind is ValueKind.TENSOR and a.method.name.value not in init_time)
        # `self.step += 1` updates the tensor in place and stores it back: the same on a buffer
        and not a.augmented
    ), None)
    if other is not None:
        return f"`{attr}` is also assigned in {other.method.name.value}()"
    if attr in info.deleted:
        return f"`{attr}` is deleted with `del`"
    if parameter.assignment.other_targets:
        return "the same statement assigns other names too (`self.a = self.b = ...`), which a registration would drop"
    alias = next((a.attr for a in info.assignments if _reads(analysis, a) == attr), None)
    if alias is not None:
        return f"`{alias}` holds the same parameter, and would be left a plain attribute outside state_dict()"
    if attr in info.bound_names() or any(attr in a.bound_names() for a in info.ancestors()):
        return f"`{attr}` is also bound in the class body"
    if info.defines_register_buffer():
        return "the class or a base defines its own register_buffer"
    if layer_owned(info, attr):
        return f"the torch.nn base class may already own `{attr}`"
    handed = handed_over(info, attr, analysis)
    if handed is not None and handed.module:
        return f"`{attr}` is handed to `{handed.callee}(...)`, which registers the parameter too: as a buffer its state_dict key there would disappear"
    if handed is not None:
        return (
            f"`{attr}` is handed to `{handed.callee}(...)`, which may keep its own reference: .to() moves a parameter in "
            "place but replaces a buffer, so a reference kept from before the move would stay behind"
        )
    outside = analysis.project.set_outside.get(attr)
    if outside is not None:
        return (
            f"`{attr}` is set on an object from outside its class ({outside}), and that this code behaves the same "
            "on a buffer is not proved: an nn.Parameter assigned there turns the buffer back into a parameter"
        )
    bookkeeping = own_bookkeeping(info, analysis)
    if bookkeeping is not None:
        return bookkeeping
    resume = analysis.project.optimizer_resume_for(analysis.filename, analysis.module_name)
    if resume is not None:
        return (
            f"the project restores optimizer state ({resume}), and that no restored "
            "optimizer covers this parameter is not proved: one that does would cover one tensor fewer, and "
            "resuming a checkpoint saved before the change would fail"
        )
    return None


def _unnamed_unfreezing(analysis: FileAnalysis, attr: str) -> Optional[str]:
    """A loop elsewhere that turns requires_grad on for some module's parameters may reach this
    one (then it is trained) or not: the finding stands, as a buffer is what the class means, but
    the fix cannot prove that behaviour stays the same."""
    site = analysis.project.may_unfreeze_unnamed()
    return None if site is None else f"{site}; if it reaches `{attr}`, that parameter is trained there"


def _reads(analysis: FileAnalysis, assignment: AttrAssignment) -> Optional[str]:
    """`<attr>` for `self.<other> = self.<attr>`: a second name for the same object."""
    value = assignment.value
    return None if value is None else analysis.inference.is_self_attr(value, assignment.scope)


def _grad_blocker(analysis: FileAnalysis, info: ClassInfo, parameter: FrozenParameter) -> Optional[str]:
    """nn.Parameter detaches its data; a buffer would keep the autograd history."""
    assert parameter.data is not None
    owner = parameter.assignment.scope.self_name
    grad = GradInference(analysis.inference, lambda node: parameter_reference(info, node, owner))
    reason = grad.reason(parameter.data, grad.locals_before(parameter.assignment.method, parameter.assignment.statement))
    return None if reason is None else f"the wrapped tensor comes from {reason}: a buffer would keep its autograd history"
