"""What may bind `self.<attr>` before a statement of a constructor runs.

`self.register_buffer("x", t)` raises KeyError when `x` is already an attribute that is not a
buffer. So a fix that turns `self.x = t` into a registration must prove that nothing bound `x`
before that line: not the statements of `__init__` before it, not the helpers they call on
`self` (resolved as Python would, from the class being constructed, so a subclass's override
counts), not the base class constructors (in this file, or in other files through the project
facts), and not what a subclass of this file or another one does before or instead. What the
analysis cannot see into (a base outside the linted files, `setattr(self, name, ...)` with a
computed name, `f(self)`) leaves the proof open: the fix is then unsafe, and says why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Optional, Sequence, Union

import libcst as cst

from bufferlint.analysis.classes import ClassInfo, is_base_init
from bufferlint.analysis.flow import StatementSite, assignment_targets, iter_sites, self_name
from bufferlint.analysis.names import dotted_name
from bufferlint.analysis.project_facts import ClassFacts, Lineage
from bufferlint.analysis.torch_api import is_library_module
from bufferlint.analysis.walk import is_name, nodes_of

# Calls that take the module itself without binding attributes on it.
_READS_SELF = frozenset(("isinstance", "hasattr", "getattr", "print", "len", "id", "type", "repr", "str", "super", "vars"))


@dataclass(frozen=True)
class Prior:
    """The answer for one attribute: `bound` (it is set first: KeyError), `unknown` (something runs
    first that the analysis cannot see into), or neither (proved unset)."""

    bound: Optional[str] = None
    unknown: Optional[str] = None


PROVED = Prior()


@dataclass(frozen=True)
class CrossFile:
    """A method or base defined in another file of the project."""

    name: str
    facts: ClassFacts


class InitOrder:
    """The constructor of `most_derived` (an instance of which is being built), seen from `owner`,
    a class of the file whose `__init__` holds the statement of interest.

    `lineage`: what the project facts say about the bases of `most_derived` in other files
    (None when the run has no project facts)."""

    def __init__(self, most_derived: ClassInfo, lineage: Optional[Lineage], stop_at: Optional[ClassInfo] = None) -> None:
        self.most_derived = most_derived
        self.chain = [most_derived, *most_derived.ancestors()]
        self.lineage = lineage
        # A base whose constructor is not entered: the caller checks it up to the statement of interest.
        self.stop_at = stop_at
        self._seen: set[int] = set()

    def before(self, attr: str, owner: ClassInfo, anchor: Optional[cst.BaseSmallStatement]) -> Prior:
        """Whether `attr` may be bound when `anchor` (a statement of `owner.__init__`) runs;
        `anchor=None`: right after that `__init__` calls its base constructor."""
        init = owner.init
        if init is None:
            return self._base_init(attr, owner)
        return _first_binding(self._site(attr, site, owner) for site in _sites_before(init, anchor, owner))

    # -- one statement ------------------------------------------------------------------------------
    def _site(self, attr: str, site: StatementSite, owner: ClassInfo) -> Prior:
        me = _self_of(site, owner)
        small = site.small
        for target in assignment_targets(small):
            if _stores(target, me, attr):
                return Prior(bound=f"`{_code(small)}` sets it first")
        return _first_binding(self._call(attr, call, me, owner) for call in nodes_of(small, cst.Call))

    def _call(self, attr: str, call: cst.Call, me: Optional[str], owner: ClassInfo) -> Prior:
        func = call.func
        name = dotted_name(func)
        if is_base_init(call):
            return self._base_init(attr, owner, _explicit_base(call))
        if name in ("setattr", "object.__setattr__") and len(call.args) >= 2 and is_name(call.args[0].value, me or ""):
            literal = _literal(call.args[1].value)
            if literal is None:
                return Prior(unknown=f"`{_code(call)}` sets an attribute whose name is computed")
            return Prior(bound=f"`{_code(call)}` sets it first") if literal == attr else PROVED
        if isinstance(func, cst.Attribute) and is_name(func.value, me or ""):
            return self._self_call(attr, func.attr.value)
        if me is not None and name not in _READS_SELF and any(is_name(a.value, me) for a in call.args):
            return Prior(unknown=f"`{_code(call)}` is given the module and may set attributes on it")
        if me is not None and _touches_dict(call, me):
            return Prior(unknown=f"`{_code(call)}` writes the instance's __dict__")
        return PROVED

    def _self_call(self, attr: str, method: str) -> Prior:
        """`self.method(...)`, resolved from the class being constructed."""
        if method == "__init__":
            # `self.__init__(**config)` builds the instance again from the start: its own
            # registration runs after its own base constructor, and a base constructor run after
            # it resets the buffers it left.
            return PROVED
        resolved = self._resolve(method)
        if isinstance(resolved, cst.FunctionDef):
            return self._whole(attr, resolved)
        if isinstance(resolved, CrossFile):
            return _cross_file(attr, resolved)
        if isinstance(resolved, str):
            return Prior(unknown=f"`self.{method}()` may be defined in {resolved}, outside the linted files")
        return PROVED  # an nn.Module method, or none at all

    def _whole(self, attr: str, func: cst.FunctionDef) -> Prior:
        """Every statement of a method that runs before the anchor."""
        if id(func) in self._seen:
            return PROVED
        self._seen.add(id(func))
        owner = self._owner_of(func)
        found = _first_binding(self._site(attr, site, owner) for site in iter_sites(func))
        if found == PROVED:
            return PROVED
        return Prior(found.bound and f"{found.bound} (in {func.name.value}())", found.unknown and f"{found.unknown} (in {func.name.value}())")

    # -- base constructors --------------------------------------------------------------------------
    def _base_init(self, attr: str, owner: ClassInfo, explicit: Optional[str] = None) -> Prior:
        """The constructor that `owner.__init__` hands over to, and everything it runs."""
        for base in self._bases_after(owner, explicit):
            if base is self.stop_at:
                return PROVED
            if base.init is not None:
                return self._whole(attr, base.init)
        return self._other_files(attr)

    def _bases_after(self, owner: ClassInfo, explicit: Optional[str]) -> list[ClassInfo]:
        ancestors = list(owner.ancestors())
        if explicit is not None:
            named = [a for a in ancestors if a.name == explicit.rpartition(".")[2]]
            return [*named, *(a for n in named for a in n.ancestors())]
        return ancestors

    def _other_files(self, attr: str) -> Prior:
        """The bases of the constructed class that this file does not define."""
        if self.lineage is None:
            hidden = _hidden_bases(self.most_derived)
            if hidden:
                written, qualified = hidden[0]
                return Prior(unknown=_unread_library(written, qualified) or f"base class {written} is defined in another file")
            return PROVED
        return _first_binding(self._cross_file_steps(attr, self.lineage))

    def _cross_file_steps(self, attr: str, lineage: Lineage) -> Iterator[Prior]:
        for name, facts in lineage.ancestors:
            yield _cross_file(attr, CrossFile(name, facts))
            for method in facts.self_calls:  # a base constructor calling an override of this file
                resolved = self._resolve(method)
                if isinstance(resolved, cst.FunctionDef):
                    yield self._whole(attr, resolved)
        if lineage.outside is not None:
            outside = lineage.outside
            yield Prior(unknown=_unread_library(outside, outside) or f"base class {outside} was not found among the linted files")

    # -- resolution ------------------------------------------------------------------------------------
    def _resolve(self, method: str) -> Union[cst.FunctionDef, CrossFile, str, None]:
        for info in self.chain:
            func = info.methods.get(method)
            if func is not None:
                return func
        if self.lineage is not None:
            for name, facts in self.lineage.ancestors:
                if method in facts.body:
                    return CrossFile(name, facts)
            return self.lineage.outside
        hidden = _hidden_bases(self.most_derived)
        return f"base class {hidden[0][0]}" if hidden else None

    def _owner_of(self, func: cst.FunctionDef) -> ClassInfo:
        return next((info for info in self.chain if any(f is func for f in info.methods.values())), self.most_derived)


# What the project facts say about the bases of a class of the file in other files (None: no facts).
LineageOf = Callable[[ClassInfo], Optional[Lineage]]


def prior_binding(
    info: ClassInfo, attr: str, anchor: Optional[cst.BaseSmallStatement], subclasses: Sequence[ClassInfo], lineage_of: LineageOf
) -> Prior:
    """Whether `self.<attr>` may be bound when `anchor` of `info.__init__` runs, for an instance of
    `info` or of any subclass (this file's, through `subclasses`; other files', through the facts)."""
    found = InitOrder(info, lineage_of(info)).before(attr, info, anchor)
    if found != PROVED:
        return found
    for sub in subclasses:
        if attr in sub.bound_names():
            return Prior(bound=f"subclass {sub.name} binds `{attr}` in its class body")
        order = InitOrder(sub, lineage_of(sub), stop_at=info)
        found = order.before(attr, sub, None) if sub.init is not None else PROVED
        if found == PROVED:
            found = order.before(attr, info, anchor)
        if found != PROVED:
            return Prior(found.bound and f"{found.bound}, for subclass {sub.name}", found.unknown and f"{found.unknown}, for subclass {sub.name}")
    return PROVED


def _first_binding(steps: Iterable[Prior]) -> Prior:
    """The first step that binds the name; else the first that may; else proved. A disproof
    found after an unknown still wins: it names the KeyError instead of a doubt."""
    unknown: Optional[Prior] = None
    for found in steps:
        if found.bound is not None:
            return found
        if found.unknown is not None and unknown is None:
            unknown = found
    return unknown or PROVED


def _cross_file(attr: str, base: CrossFile) -> Prior:
    facts = base.facts
    where = base.name
    if attr in facts.body:
        return Prior(bound=f"base class {where} binds `{attr}` in its class body")
    if attr in facts.binds:
        return Prior(bound=f"base class {where} also sets `{attr}`")
    if facts.dynamic:
        return Prior(unknown=f"base class {where} sets attributes whose names are computed")
    return PROVED


def _sites_before(init: cst.FunctionDef, anchor: Optional[cst.BaseSmallStatement], owner: ClassInfo) -> Iterator[StatementSite]:
    """The statements of `init` that may run before `anchor` (all of a loop that holds it), or up
    to and including the base constructor call when `anchor` is None."""
    sites = list(iter_sites(init))
    if anchor is None:
        index = owner.super_init_index
        yield from (s for s in sites if index is not None and s.top_index <= index)
        return
    position = next((i for i, s in enumerate(sites) if s.small is anchor), len(sites))
    target = sites[position] if position < len(sites) else None
    looped = target is not None and target.nested and isinstance(target.top, (cst.For, cst.While))
    for i, site in enumerate(sites):
        if i < position or (looped and site.top is target.top and site.small is not anchor):  # type: ignore[union-attr]
            yield site


def _self_of(site: StatementSite, owner: ClassInfo) -> Optional[str]:
    for func in owner.methods.values():
        if func.body is not None and _contains(func, site.line):
            return self_name(func)
    return "self"


def _contains(func: cst.FunctionDef, line: cst.SimpleStatementLine) -> bool:
    return any(site.line is line for site in iter_sites(func))


def binds_on_instance(info: ClassInfo, attr: str) -> bool:
    """Whether a method of the class stores `self.<attr>`, in any target form (`self.a, self.b =
    ...` included): the instance then holds its own value, whatever the class body says."""
    for func in info.methods.values():
        me = self_name(func)
        if me is not None and any(_stores(t, me, attr) for site in iter_sites(func) for t in assignment_targets(site.small)):
            return True
    return False


def runs_init_of(sub: ClassInfo, base: ClassInfo) -> bool:
    """Whether building `sub` (a same-file subclass) runs `base.__init__`: it inherits a
    constructor that does, or its own calls `super().__init__()` or `Cls.__init__(self)` for a
    class on the way to `base`. A constructor that calls `nn.Module.__init__(self)` or no base
    constructor at all skips `base.__init__` and whatever it registers."""
    if sub is base:
        return True
    toward = [b for b in sub.bases_info if b is base or _derives(b, base)]
    if sub.init is None:
        return bool(toward) and runs_init_of(toward[0], base)
    calls = [c for c in nodes_of(sub.init.body, cst.Call) if is_base_init(c)]
    for call in calls:
        named = _explicit_base(call)
        if named is None:  # super().__init__(): the next class of the MRO on the way to `base`
            return bool(toward) and runs_init_of(toward[0], base)
        chosen = next((b for b in (sub, *sub.ancestors()) if b.name == named.rpartition(".")[2]), None)
        if chosen is not None and chosen is not sub and (chosen is base or _derives(chosen, base)):
            return runs_init_of(chosen, base)
    return False


def _derives(info: ClassInfo, base: ClassInfo) -> bool:
    return any(ancestor is base for ancestor in info.ancestors())


def _stores(target: cst.BaseExpression, me: Optional[str], attr: str) -> bool:
    if isinstance(target, cst.Attribute):
        return is_name(target.value, me or "") and target.attr.value == attr
    if isinstance(target, (cst.Tuple, cst.List)):
        return any(_stores(e.value, me, attr) for e in target.elements)
    if isinstance(target, cst.StarredElement):
        return _stores(target.value, me, attr)
    return False


def _touches_dict(call: cst.Call, me: str) -> bool:
    func = call.func
    return isinstance(func, cst.Attribute) and isinstance(func.value, cst.Attribute) and func.value.attr.value == "__dict__" and is_name(func.value.value, me)


def _explicit_base(call: cst.Call) -> Optional[str]:
    """`Base.__init__(self)` names its base; `super().__init__()` does not."""
    receiver = call.func.value  # type: ignore[attr-defined]
    return None if isinstance(receiver, cst.Call) else dotted_name(receiver)


def _hidden_bases(info: ClassInfo) -> list[tuple[str, Optional[str]]]:
    """Bases of the class or its same-file ancestors that this file does not define, as written
    and qualified: neither nn.Module nor a torch.nn layer (whose own attributes hazards.py checks
    by name)."""
    hidden: list[tuple[str, Optional[str]]] = []
    for owner in (info, *info.ancestors()):
        local = {a.name for a in owner.bases_info}
        hidden.extend((b, q) for b, q in zip(owner.base_names, owner.qualified_bases) if b not in local and not _known_base(b, q))
    return hidden


def _unread_library(written: str, qualified: Optional[str]) -> Optional[str]:
    """For a module base of a library (`transformers.BertPreTrainedModel`): that nothing there binds
    the name is unknown, as bufferlint reads no library's code."""
    if qualified is None or not is_library_module(qualified):
        return None
    return f"base class {written.rpartition('.')[2]} comes from {qualified.partition('.')[0]}, whose code bufferlint does not read"


def _known_base(written: str, qualified: Optional[str]) -> bool:
    if written in ("object", "") or (qualified or "").startswith("torch.nn."):
        return True
    return qualified is None and written.rpartition(".")[2] == "Module"  # `nn.Module` through an import we cannot follow


def _literal(node: cst.BaseExpression) -> Optional[str]:
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _code(node: cst.CSTNode) -> str:
    text = " ".join(cst.Module([]).code_for_node(node).split())  # one line, whatever it spans
    return text if len(text) <= 50 else text[:47] + "..."
