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
from bufferlint.analysis.ast_reading import absolute_module
from bufferlint.analysis.attributes import ClassAttributes
from bufferlint.analysis.classes import ClassInfo, ValueKind
from bufferlint.analysis.file import FileAnalysis
from bufferlint.analysis.forward import dotted
from bufferlint.analysis.never_given import named_beyond_calls
from bufferlint.analysis.walk import nodes_of


@dataclass(frozen=True)
class Unmoved:
    """Why nothing proves that the module is moved with the model that uses it."""

    reason: str
    blocking: bool  # no module of the run even holds one: the move is its only way to the device


def moved_with_users(attributes: ClassAttributes) -> Optional[Unmoved]:
    """None when the module is moved by whoever uses it: it holds parameters, buffers or
    submodules (in the class or its bases), so it must be moved to run at all. A module without
    any is moved only when another module holds it (then the fix is unsafe), else never (no fix).
    Being held by modules of this file that hold nothing either proves no move: the holder is
    in the same position (a loss holding a stateless target assigner)."""
    info, analysis = attributes.info, attributes.analysis
    if _moved_to_run(info, analysis):
        return None
    loader = _pretrained_loader(info, analysis)
    if loader is not None:  # most likely a model with weights, which its users move: not proved
        return Unmoved(f"{info.name} holds what `{loader}.from_pretrained()` loads, which is not proved to be a module with weights (a pipeline or a tokenizer is not moved with it)", False)
    holders = _holders(info, analysis)
    if holders is None or not all(_never_moved(h, analysis, {id(info)}) for h in holders):
        return Unmoved(f"{info.name} is not known to hold parameters, buffers or a submodule holding any: it may move only with the modules that hold it, so its standalone uses may still need the move", False)
    if holders:
        held = f", and only {', '.join(sorted({h.name for h in holders}))} of this file, which holds none either, holds it"
    elif analysis.project.named_loosely(info.name) or named_beyond_calls(analysis, info.name):
        # built through a registry or a factory the run does not read: holders unseen, not absent
        held = ", and no module of the run is seen holding one (the run names it other than in a call: a registry, a factory or an import)"
    else:
        held = ", and no module of the run holds one"
    return Unmoved(f"{info.name} is not known to hold parameters, buffers or a submodule holding any{held}: a caller may run it without moving it, so the per-call move may be all that places the tensor", True)


def _moved_to_run(info: ClassInfo, analysis: FileAnalysis) -> bool:
    """It holds state (itself, through a base in any file, or a module it is given): whoever
    runs it has to move it."""
    for owner in (info, *info.ancestors()):
        if _own_state(owner) or _stateful_submodule(owner, analysis, {id(info)}):
            return True
    lineage = analysis.lineage(info)
    if lineage is not None and any(facts.stateful or facts.registered for _, facts in lineage.ancestors):
        return True
    return _keeps_given_module(info, analysis)


def _holders(info: ClassInfo, analysis: FileAnalysis) -> Optional[list[ClassInfo]]:
    """The module classes of this file that hold `info`; None when a class of another file may
    hold it too (by name: what it holds there is not read here)."""
    here = [c for c in analysis.module_classes if info.name in _holds(c)]
    here += [c for c in _factory_callers(info, analysis) if c not in here]
    return None if analysis.project.held_outside(info.name, analysis.module_name) else here


def _factory_callers(info: ClassInfo, analysis: FileAnalysis) -> list[ClassInfo]:
    """Module classes whose methods call a function of the file that builds `info` and hands
    it back (`activation_layer("dice")` returning `Dice(n)`, put in an nn.Sequential): they hold
    what it returns."""
    built_by, called_by = _factory_index(analysis)
    factories = built_by.get(info.name, ())
    return [c for c in analysis.module_classes if any(name in factories for name in called_by.get(id(c), ()))]


_FACTORY_CACHE = "_bufferlint_factory_index"


def _factory_index(analysis: FileAnalysis) -> tuple[dict[str, set[str]], dict[int, set[str]]]:
    """Once per file: the functions of the file that build each class and return something, by
    the class's name; and the bare names each module class's methods call."""
    index = analysis.__dict__.get(_FACTORY_CACHE)
    if index is None:
        built_by: dict[str, set[str]] = {}
        for name in analysis.function_names:
            func = analysis.function(name)
            if func is None or not any(r.value is not None for r in nodes_of(func.body, cst.Return)):
                continue
            for call in nodes_of(func.body, cst.Call):
                built_by.setdefault(dotted(call.func), set()).add(name)
        called_by = {
            id(c): {call.func.value for func in c.methods.values() for call in nodes_of(func.body, cst.Call) if isinstance(call.func, cst.Name)}
            for c in analysis.module_classes
        }
        index = analysis.__dict__[_FACTORY_CACHE] = (built_by, called_by)
    return index  # type: ignore[no-any-return]


def _never_moved(holder: ClassInfo, analysis: FileAnalysis, seen: set[int]) -> bool:
    """Nothing proves that `holder` is moved: it holds no state and is held only by such
    classes of this file, or by none."""
    if id(holder) in seen:
        return True
    seen.add(id(holder))
    if _moved_to_run(holder, analysis):
        return False
    holders = _holders(holder, analysis)
    return holders is not None and all(_never_moved(h, analysis, seen) for h in holders)


def _stateful_submodule(owner: ClassInfo, analysis: FileAnalysis, seen: set[int]) -> bool:
    """Whether `owner` holds a submodule that may hold tensors: not a stateless torch layer
    (`nn.MSELoss()`, `nn.ReLU()`), nor a class of this file that holds none itself. A submodule
    whose class is not read here counts as holding some."""
    for assignment in owner.assignments:
        if assignment.kind is not ValueKind.MODULE:
            continue
        call = assignment.value
        if not isinstance(call, cst.Call):
            return True
        qualified = analysis.resolver.qualify(call.func)
        keywords = frozenset(a.keyword.value for a in call.args if a.keyword is not None)
        positional = sum(1 for a in call.args if a.keyword is None)
        if torch_api.is_stateless_layer(qualified, keywords, positional):
            continue
        local = next((c for c in analysis.classes if c.name == dotted(call.func)), None)
        if local is None:
            return True
        if id(local) in seen:
            continue
        seen.add(id(local))
        for part in (local, *local.ancestors()):
            if _own_state(part) or _stateful_submodule(part, analysis, seen):
                return True
        if any(base.rpartition(".")[2] != "Module" for base in local.base_names if base not in {b.name for b in local.bases_info}):
            return True  # a base of another file or library: its state is not read here
    return False


def _own_state(owner: ClassInfo) -> bool:
    """Parameters or buffers of its own, or a torch.nn layer base that holds a weight."""
    return bool(owner.parameters or owner.registered_buffers) or any(_holds_tensors(b) for b in owner.qualified_bases)


def _keeps_given_module(info: ClassInfo, analysis: FileAnalysis) -> bool:
    """A submodule the per-file pass does not know as one: a module class of another file built
    into an attribute (`self.conv = convolutional_network.ConvolutionalNetwork(...)`), or
    `def __init__(self, net: ModelBase): self.net = net` with the annotation naming a module
    class. The class holds it, so whoever runs it moves it too."""
    resolver = analysis.resolver
    init = info.init
    if init is None:
        return False
    for assignment in info.assignments:
        value = assignment.value
        if assignment.in_init and isinstance(value, cst.Call):
            qualified = resolver.qualify(value.func) or _relatively_imported(analysis, value.func)
            if qualified is not None and analysis.project.is_module_class(qualified):
                return True
    modules = {
        p.name.value for p in (*init.params.params, *init.params.kwonly_params)
        if p.annotation is not None and resolver.is_module_expr(p.annotation.annotation)
    }
    return bool(modules) and any(
        isinstance(a.value, cst.Name) and a.value.value in modules for a in info.assignments if a.in_init
    )


def _relatively_imported(analysis: FileAnalysis, func: cst.BaseExpression) -> Optional[str]:
    """The qualified name a bare name has through a relative import of the file
    (`from .core import Core` in `pkg.models.net`: `pkg.models.core.Core`), or None."""
    if not isinstance(func, cst.Name):
        return None
    own = analysis.module_name
    package = own if analysis.filename.endswith("__init__.py") else own.rpartition(".")[0]
    for stmt in analysis.module.body:
        for small in stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ():
            if not isinstance(small, cst.ImportFrom) or not small.relative or isinstance(small.names, cst.ImportStar):
                continue
            for alias in small.names:
                local = alias.asname.name if alias.asname is not None else alias.name
                if isinstance(local, cst.Name) and local.value == func.value and isinstance(alias.name, cst.Name):
                    base = absolute_module(dotted(small.module) if small.module is not None else "", len(small.relative), package)
                    return None if base is None else f"{base}.{alias.name.value}" if base else alias.name.value
    return None


def _pretrained_loader(info: ClassInfo, analysis: FileAnalysis) -> Optional[str]:
    """`self.encoder = encoder_cls.from_pretrained(name)` while constructing, in the class or a
    base: the loader's name, unless it or the attribute names a tokenizer, processor, config,
    feature extractor, scheduler or pipeline (loaded the same way, holding no weights)."""
    for owner in (info, *info.ancestors()):
        for assignment in owner.assignments:
            value = assignment.value
            if not (assignment.in_init and isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)):
                continue
            if value.func.attr.value != "from_pretrained":
                continue
            loader = analysis.resolver.qualify(value.func.value) or dotted(value.func.value)
            words = f"{loader.rsplit('.', 1)[-1]} {assignment.attr}".lower()
            if loader and not any(word in words for word in _NOT_MODELS):
                return loader
    return None


_NOT_MODELS = ("tokenizer", "processor", "config", "extractor", "scheduler", "pipe", "tok")


def _holds_tensors(base: Optional[str]) -> bool:
    """A torch.nn layer base other than the stateless ones (`nn.Conv2d`: its weight)."""
    return torch_api.is_layer_base(base) and base is not None and base.rpartition(".")[2] not in torch_api.STATELESS_LAYERS


def _holds(holder: ClassInfo) -> frozenset[str]:
    """Classes that `holder` instantiates into its attributes, by their last name."""
    names: set[str] = set()
    for assignment in holder.assignments:
        if assignment.kind is ValueKind.MODULE and assignment.value is not None:
            names.update(dotted(call.func).rpartition(".")[2] for call in nodes_of(assignment.value, cst.Call))
    return frozenset(names)
