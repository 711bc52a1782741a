"""Constructor arguments that no construction of a class gives: what `__init__` stores from one is
always its default, None, so where it lives never matters.

A transformer block copied from CLIP keeps `self.attn_mask = attn_mask` (`attn_mask=None` in its
signature) and re-homes it in `attention()`; the vision towers that copy it build the block, and
the `Transformer` around it, without a mask. In every instance the project makes the attribute
is None, and a finding about its device would be a false alarm. This is proved only from what the
run shows, so that an unseen caller can only cost a finding, never make one false:
- the class is built in its own file at least once, and its name appears there only in those
  calls (and in `super(Cls, self)`): it is not handed around as a value;
- no import of the run may reach it (its name, its module, a package above it, or `*` from one of
  them), and no class of the file derives from it;
- each call leaves the parameter out, passes `None` (or a local of the enclosing `__init__` that
  only ever holds None), or passes a parameter of the enclosing class's `__init__` that it never
  rebinds and that is itself never given (the same proof, one class up, at most `_MAX_DEPTH`
  classes up).

The same proof shows an argument that every construction gives an `nn.Parameter` (a local of the
enclosing `__init__` bound only to `nn.Parameter(...)`, or the call itself): `self.pos_embed =
pos_embed` then registers a parameter, and there is no plain tensor to report.
"""

from __future__ import annotations

from typing import Callable, Optional

import libcst as cst

from bufferlint.analysis.classes import ClassInfo, ValueKind
from bufferlint.analysis.constructions import surely_gives
from bufferlint.analysis.file import FileAnalysis
from bufferlint.analysis.flow import self_name, stored_names
from bufferlint.analysis.parameters import is_parameter_call
from bufferlint.analysis.walk import is_name, nodes_of

_MAX_DEPTH = 4
_CACHE_ATTR = "_never_given_calls"
_REBINDING = (cst.AssignTarget, cst.AnnAssign, cst.AugAssign, cst.For, cst.NamedExpr, cst.AsName)


def never_given(analysis: FileAnalysis, info: ClassInfo, attr: str) -> Optional[str]:
    """Why `self.<attr>` is always None, or None when that is not proved."""
    init = info.init
    if init is None or not analysis.project.known:
        return None
    parameter = _stored_parameter(info, init, attr)
    if parameter is None or not _never_given(analysis, info.node, parameter, 0):
        return None
    return f"no construction of {info.name} in the project gives `{parameter}` (it defaults to None): `{attr}` is always None"


def given_parameters(analysis: FileAnalysis, info: ClassInfo, attr: str) -> Optional[str]:
    """Why `self.<attr>` always holds an `nn.Parameter` (or None), or None when that is not proved."""
    init = info.init
    if init is None or not analysis.project.known:
        return None
    parameter = _stored_parameter(info, init, attr, none_default=False)
    if parameter is None or not _always_parameter(analysis, info.node, init, parameter):
        return None
    return f"every construction of {info.name} in the project gives `{parameter}` an nn.Parameter, which `self.{attr}` registers"


def given_by_every_construction(analysis: FileAnalysis, info: ClassInfo) -> frozenset[str]:
    """The `__init__` parameters that every construction of the class in the run gives a value
    other than None: whatever their defaults say, the caller always names them (`device="cpu"` in
    the signature, `device=args.device` at every call). Empty unless every construction is seen:
    the class is built at least once, is not decorated (a registry may build it from a config),
    its file names it only in calls (and `super(Cls, self)`, `isinstance`), and no other file
    may build it unseen."""
    init = info.init
    if init is None or info.node.decorators or not analysis.project.known:
        return frozenset()
    qualified = f"{analysis.module_name}.{info.name}"
    local = _calls_if_only_called(analysis, info.name)
    elsewhere = analysis.project.calls_elsewhere(qualified)
    if local is None or elsewhere is None or not (local or elsewhere) or (elsewhere and analysis.project.built_only_by_tests(qualified)):
        return frozenset()
    given = set()
    for param in _params(init)[1:]:
        name, position = param.name.value, _position(init, param.name.value)
        if all(_gives_value(call, name, position) for call in local) and all(surely_gives(g, name, position) for g in elsewhere):
            given.add(name)
    return frozenset(given)


def _calls_if_only_called(analysis: FileAnalysis, name: str) -> Optional[list[cst.Call]]:
    """The file's calls `name(...)`, or None when it also names the class otherwise (a base of
    another class included: a subclass builds it unseen)."""
    index = _file_index(analysis)
    calls = index.calls.get(name, [])
    return calls if index.mentions.get(name, 0) == _inert_mentions(index, name) else None


def named_beyond_calls(analysis: FileAnalysis, name: str) -> bool:
    """Whether the file names the class other than to call it, to head it, as a base of another
    class or in `super(Cls, self)` and `isinstance` tests (`{"sinusoidal": SinusoidalEncoding}`,
    a factory's table): instances may be built where the run cannot see."""
    index = _file_index(analysis)
    return index.mentions.get(name, 0) > _inert_mentions(index, name) + index.bases.get(name, 0)


def _inert_mentions(index: "_FileIndex", name: str) -> int:
    """The mentions that build nothing unseen: the calls, `super(Cls, self)`, `isinstance(m, Cls)`
    tests and the class's own header."""
    return len(index.calls.get(name, [])) + index.super_args.get(name, 0) + index.type_tests.get(name, 0) + 1


def _gives_value(call: cst.Call, parameter: str, position: Optional[int]) -> bool:
    given = _argument(call, parameter, position)
    return given is not None and given is not _SPLAT and not is_name(given, "None")


def handed_by_owners(analysis: FileAnalysis, info: ClassInfo, attr: str) -> list[tuple[cst.ClassDef, str]]:
    """For `self.<attr> = <parameter>` stored by `__init__` alone: the (class, attribute) that each
    construction hands in, when every construction of the run is a call in this file (no import
    reaches the class) inside another class's `__init__` that gives it `self.<name>`
    (`Embedding(features=self.features)`); empty when that is not proved."""
    init = info.init
    if init is None or info.node.decorators or not analysis.project.known:
        return []
    parameter = _stored_parameter(info, init, attr, none_default=False)
    if parameter is None or analysis.project.imported_elsewhere(f"{analysis.module_name}.{info.name}"):
        return []
    position = _position(init, parameter)
    handed: list[tuple[cst.ClassDef, str]] = []
    for call in _constructions(analysis, info.node):
        given = _argument(call, parameter, position)
        enclosing = _enclosing_init(analysis, call)
        if given is None or given is _SPLAT or enclosing is None or enclosing[0] is info.node:
            return []
        owner, owner_init = enclosing
        if not (isinstance(given, cst.Attribute) and is_name(given.value, self_name(owner_init) or "")):
            return []
        handed.append((owner, given.attr.value))
    return handed


def _always_parameter(analysis: FileAnalysis, cls: cst.ClassDef, init: cst.FunctionDef, parameter: str, depth: int = 0) -> bool:
    """Whether every construction of `cls` gives `parameter` an `nn.Parameter` (or None): made in
    the call, a local of the enclosing `__init__` bound only to one, a parameter attribute of the
    enclosing class (`position_enc=self.position_enc`), or that `__init__`'s own parameter, never
    rebound, given a Parameter by every construction one class up."""
    if depth > _MAX_DEPTH or analysis.project.imported_elsewhere(f"{analysis.module_name}.{cls.name.value}"):
        return False
    calls = _constructions(analysis, cls)
    position = _position(init, parameter)
    for call in calls:
        given = _argument(call, parameter, position)
        if given is None:
            if parameter not in _none_defaults(init):
                return False
            continue
        if is_name(given, "None") or is_parameter_call(given, analysis.inference):
            continue
        enclosing = _enclosing_init(analysis, call)
        if given is _SPLAT or enclosing is None or not _given_parameter(analysis, given, *enclosing, depth):
            return False
    return bool(calls)


def _given_parameter(analysis: FileAnalysis, given: cst.BaseExpression, outer: cst.ClassDef, outer_init: cst.FunctionDef, depth: int) -> bool:
    me = self_name(outer_init)
    if isinstance(given, cst.Attribute) and is_name(given.value, me or ""):
        info = next((i for i in analysis.classes if _same_class(i.node, outer)), None)
        assigned = info.assignments_to(given.attr.value) if info is not None else []
        return bool(assigned) and all(a.kind is ValueKind.PARAMETER for a in assigned)
    if not isinstance(given, cst.Name):
        return False
    if _holds_only(outer_init, given.value, lambda value: is_parameter_call(value, analysis.inference)):
        return True
    if given.value not in _named_params(outer_init) or _rebinds(outer_init, given.value):
        return False
    return _always_parameter(analysis, outer, outer_init, given.value, depth + 1)


def _same_class(node: cst.ClassDef, other: cst.ClassDef) -> bool:
    """The same class, also when one node comes from the whole file and one from the part of it
    a check parsed (FileAnalysis.whole_module): top-level class names are unique enough here."""
    return node is other or node.name.value == other.name.value


def _stored_parameter(info: ClassInfo, init: cst.FunctionDef, attr: str, none_default: bool = True) -> Optional[str]:
    """`p` when `__init__` only ever stores its parameter `p` (None-default, unless `none_default`
    is False) or None in the attribute, and other methods only store None or values derived from
    the attribute itself (`self.attn_mask = None` before a temporal attention)."""
    stored: set[str] = set()
    for assignment in info.assignments_to(attr):
        value = assignment.value
        if value is None or assignment.augmented:
            return None
        if is_name(value, "None"):
            continue
        if assignment.method is init:
            if not isinstance(value, cst.Name):
                return None
            stored.add(value.value)
        elif not _mentions_attribute(value, attr):
            return None
    if len(stored) != 1:
        return None
    parameter = stored.pop()
    if none_default and parameter not in _none_defaults(init):
        return None
    return parameter if parameter in _named_params(init) and not _rebinds(init, parameter) else None


def _mentions_attribute(node: cst.CSTNode, attr: str) -> bool:
    return any(a.attr.value == attr for a in nodes_of(node, cst.Attribute))


def _params(func: cst.FunctionDef) -> tuple[cst.Param, ...]:
    """The named parameters (positional-only, positional, keyword-only; not `*args`/`**kwargs`)."""
    return (*func.params.posonly_params, *func.params.params, *func.params.kwonly_params)


def _named_params(func: cst.FunctionDef) -> set[str]:
    return {p.name.value for p in _params(func)}


def _none_defaults(func: cst.FunctionDef) -> set[str]:
    return {p.name.value for p in _params(func) if p.default is not None and is_name(p.default, "None")}


def _rebinds(func: cst.FunctionDef, name: str) -> bool:
    return any(name in stored_names(_target(node)) for node in nodes_of(func.body, _REBINDING))


def _never_given(analysis: FileAnalysis, cls: cst.ClassDef, parameter: str, depth: int) -> bool:
    """Whether no construction of `cls` gives `parameter` (see the module docstring)."""
    init = _init_of(cls)
    if depth > _MAX_DEPTH or init is None or parameter not in _none_defaults(init):
        return False
    position = _position(init, parameter)
    built_elsewhere = _built_elsewhere(analysis, cls, parameter, position)
    if built_elsewhere is None:
        return False
    calls = _constructions(analysis, cls)
    if not calls and not built_elsewhere:
        return False
    for call in calls:
        given = _argument(call, parameter, position)
        if given is None or is_name(given, "None"):
            continue
        if given is _SPLAT or not isinstance(given, cst.Name):
            return False
        enclosing = _enclosing_init(analysis, call)
        if enclosing is None:
            return False
        outer_class, outer_init = enclosing
        if _holds_only_none(outer_init, given.value):
            continue
        if _rebinds(outer_init, given.value) or not _never_given(analysis, outer_class, given.value, depth + 1):
            return False
    return True


def _built_elsewhere(analysis: FileAnalysis, cls: cst.ClassDef, parameter: str, position: Optional[int]) -> Optional[bool]:
    """Whether other files build `cls` and none of their calls gives `parameter`: False where no
    import reaches it, None where one may give it or build it unseen (a registered class may be
    built from a config file the run does not read)."""
    qualified = f"{analysis.module_name}.{cls.name.value}"
    if not analysis.project.imported_elsewhere(qualified):
        return False
    if cls.decorators or analysis.project.given_elsewhere(qualified, parameter, position) is not False:
        return None
    return True


def _holds_only_none(func: cst.FunctionDef, name: str) -> bool:
    """`name` is a local of `func` that every binding sets to None (`attn_mask = None`)."""
    return _holds_only(func, name, lambda value: is_name(value, "None"))


def _holds_only(func: cst.FunctionDef, name: str, accepted: Callable[[cst.BaseExpression], bool]) -> bool:
    """`name` is a local of `func` that every binding sets to an accepted value."""
    if name in _named_params(func):
        return False
    bindings = [node for node in nodes_of(func.body, _REBINDING) if name in stored_names(_target(node))]
    return bool(bindings) and all(
        isinstance(node, cst.AssignTarget) and _assigned(func, node, accepted) for node in bindings
    )


def _assigned(func: cst.FunctionDef, target: cst.AssignTarget, accepted: Callable[[cst.BaseExpression], bool]) -> bool:
    return any(
        any(t is target for t in assign.targets) and len(assign.targets) == 1 and accepted(assign.value)
        for assign in nodes_of(func.body, cst.Assign)
    )


def _target(node: cst.CSTNode) -> cst.BaseExpression:
    target = node.name if isinstance(node, cst.AsName) else getattr(node, "target", None)
    return target if target is not None else cst.Name("_")


_SPLAT = cst.Name("_")  # stands for `*args` / `**kwargs` at a call: may give anything


def _argument(call: cst.Call, parameter: str, position: Optional[int]) -> Optional[cst.BaseExpression]:
    """What the call passes for `parameter`: its value, `_SPLAT`, or None when it passes nothing."""
    positional = 0
    for arg in call.args:
        if arg.star:
            return _SPLAT
        if arg.keyword is not None:
            if arg.keyword.value == parameter:
                return arg.value
            continue
        if position is not None and positional == position:
            return arg.value
        positional += 1
    return None


def _position(init: cst.FunctionDef, parameter: str) -> Optional[int]:
    """The index among positional arguments (after `self`), or None for a keyword-only one."""
    names = [p.name.value for p in (*init.params.posonly_params, *init.params.params)][1:]
    return names.index(parameter) if parameter in names else None


def _init_of(cls: cst.ClassDef) -> Optional[cst.FunctionDef]:
    body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()
    return next((s for s in body if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"), None)


def _constructions(analysis: FileAnalysis, cls: cst.ClassDef) -> list[cst.Call]:
    """The calls `Cls(...)` of the file; empty when the name is also used otherwise (handed
    around, a base of another class, rebound)."""
    return _calls_if_only_called(analysis, cls.name.value) or []


class _FileIndex:
    """Per file: the calls of each bare name, how often each name occurs, and which `__init__`
    holds each call."""

    def __init__(self, module: cst.Module) -> None:
        self.calls: dict[str, list[cst.Call]] = {}
        self.super_args: dict[str, int] = {}
        self.type_tests: dict[str, int] = {}  # `isinstance(m, Cls)`: reads the class, builds nothing
        self.bases: dict[str, int] = {}  # `class Sub(Cls)`: a subclass, built under its own name
        self.mentions: dict[str, int] = {}
        self.init_of_call: dict[int, tuple[cst.ClassDef, cst.FunctionDef]] = {}
        for name in nodes_of(module, cst.Name):
            self.mentions[name.value] = self.mentions.get(name.value, 0) + 1
        for call in nodes_of(module, cst.Call):
            if isinstance(call.func, cst.Name):
                self.calls.setdefault(call.func.value, []).append(call)
                if call.func.value == "super" and call.args and isinstance(call.args[0].value, cst.Name):
                    first = call.args[0].value.value
                    self.super_args[first] = self.super_args.get(first, 0) + 1
                elif call.func.value in ("isinstance", "issubclass") and len(call.args) == 2:
                    tested = call.args[1].value
                    classes = [e.value for e in tested.elements] if isinstance(tested, cst.Tuple) else [tested]
                    for each in classes:
                        if isinstance(each, cst.Name):
                            self.type_tests[each.value] = self.type_tests.get(each.value, 0) + 1
        for cls in nodes_of(module, cst.ClassDef):
            for base in cls.bases:
                if isinstance(base.value, cst.Name):
                    self.bases[base.value.value] = self.bases.get(base.value.value, 0) + 1
            init = _init_of(cls)
            if init is None:
                continue
            for call in nodes_of(init.body, cst.Call):  # an inner class's own calls are mapped after
                self.init_of_call[id(call)] = (cls, init)


def _file_index(analysis: FileAnalysis) -> _FileIndex:
    index: Optional[_FileIndex] = analysis.__dict__.get(_CACHE_ATTR)
    if index is None:
        index = analysis.__dict__[_CACHE_ATTR] = _FileIndex(analysis.whole_module)
    return index


def _enclosing_init(analysis: FileAnalysis, call: cst.Call) -> Optional[tuple[cst.ClassDef, cst.FunctionDef]]:
    return _file_index(analysis).init_of_call.get(id(call))
