"""The plain tensor attributes of a module class, decided once for every rule that reports them.

For each attribute the class assigns a tensor (or, for BUF002, moves like one), this answers:
- `defining`: the assignment that gives it its tensor (the first in `__init__`);
- `quiet`: why it is plain on purpose (intent.py), or why its device does not matter here (the
  project creates tensors on the GPU by default, a base in another file moves them itself, it is
  a 0-dim tensor, no construction of the class gives the argument it is stored from:
  never_given.py), or None;
- `evidence`: where its device matters (evidence.py).
Where it would become a buffer, and what that must prove, is the fix's business
(fixes/register_buffer.py, analysis/hazards.py).
"""

from __future__ import annotations

from functools import cached_property
from typing import Optional, Sequence

import libcst as cst

from bufferlint.analysis.classes import AttrAssignment, ClassInfo, ValueKind, never_initialised, tensor_params
from bufferlint.analysis.containers import may_hold_tensors
from bufferlint.analysis.evidence import Evidence, EvidenceFinder, HostPartner
from bufferlint.analysis.factory_sizes import is_zero_dim, same_shape_chain, scalar_names, static_numel, vector_names
from bufferlint.analysis.file import FileAnalysis
from bufferlint.analysis.flow import StatementSite, body_statements, child_suites, is_self_attr, self_name, stored_names
from bufferlint.analysis.forward import forward_facts
from bufferlint.analysis.grad import asks_for_grad
from bufferlint.analysis.intent import DEVICE_ATTRS, Family, deliberate_reason, init_time_methods, moved_later, placed_by_design, reached_from
from bufferlint.analysis.named_device import shared_generator_device
from bufferlint.analysis.names import Qualify
from bufferlint.analysis.never_given import given_by_every_construction, given_parameters, handed_by_owners, never_given
from bufferlint.analysis.parameters import is_parameter_call
from bufferlint.analysis.paths import enclosing
from bufferlint.analysis.tensors import TensorInference
from bufferlint.analysis.walk import is_name, nodes_of


class ClassAttributes:
    """The plain tensor attributes of one module class (see the module docstring)."""

    def __init__(self, analysis: FileAnalysis, info: ClassInfo, family: Family) -> None:
        self.analysis = analysis
        self.info = info
        self.family = family

    @cached_property
    def defining(self) -> dict[str, AttrAssignment]:
        """For each plain tensor attribute, the assignment that defines it (first in `__init__`)."""
        registered = self._registered
        chosen: dict[str, AttrAssignment] = {}
        for assignment in self.info.assignments:
            if assignment.kind is not ValueKind.TENSOR or assignment.augmented or assignment.attr in registered:
                continue
            current = chosen.get(assignment.attr)
            if current is None or (assignment.in_init and not current.in_init):
                chosen[assignment.attr] = assignment
        return chosen

    @cached_property
    def _registered(self) -> set[str]:
        """Names the class or a base registers (a tensor assigned to one fills the buffer)."""
        return self.info.registered_buffers | self.info.registered_parameters | self._base_registered

    @cached_property
    def _base_registered(self) -> set[str]:
        """Names a base class registers, in this file or another."""
        names: set[str] = set(self.info.torch_registered)
        for ancestor in self.info.ancestors():
            names |= ancestor.registered_buffers | ancestor.registered_parameters
        lineage = self.analysis.lineage(self.info)
        for _, facts in lineage.ancestors if lineage is not None else ():
            names.update(facts.registered)
        return names

    def quiet(self, attr: str) -> Optional[str]:
        """Why the attribute is no finding whatever its uses, or None."""
        reason = deliberate_reason(self.info, attr, self.defining.get(attr), self.family)
        return (
            reason or self._unseen_registration(attr) or self._replaced_later(attr) or self._made_parameter_by_loop(attr)
            or self._project_reason(attr)
            or self._zero_dim(attr) or self._by_design() or self._throwaway(attr) or never_given(self.analysis, self.info, attr)
            or given_parameters(self.analysis, self.info, attr) or self._beside_generator(attr) or self._placed_by_owner(attr)
        )

    def _placed_by_owner(self, attr: str) -> Optional[str]:
        """Every construction hands `__init__` a tensor its owner places itself and never moves
        (`GraphEmbedding(features=self.features)` in a model keeping `self.device`): the alias
        lives where the owner puts it, and a finding here repeats the one the owner is spared.
        (A tensor the owner registers or moves with `.to()` is no such case: after a move the
        alias is left behind.)"""
        handed = handed_by_owners(self.analysis, self.info, attr)
        if not handed or moved_later(self.info, attr):
            return None
        first: Optional[str] = None  # every owner must place it; the message names the first
        for node, name in handed:
            # (the construction is read from the whole file: its class node may be another parse's)
            owner = next((i for i in self.family.members if i.node is node or i.name == node.name.value), None)
            if owner is None or owner is self.info:
                return None
            reason = placed_by_design(owner, name, class_attributes(self.analysis, owner).defining.get(name), self.family)
            if reason is None:
                return None
            first = first or f"it is `{owner.name}.{name}`, handed in by every construction: {reason}"
        return first

    def _beside_generator(self, attr: str) -> Optional[str]:
        """A table the class builds on the device of a `torch.Generator` it also builds there, and
        samples with it: the class pins both to one device the program names (VAR's class prior
        on `dist.get_device()`), and a buffer would leave the generator behind."""
        defining = self.defining.get(attr)
        if defining is None or defining.value is None:
            return None
        device = shared_generator_device(self.info, defining.value, self.analysis.inference.qualify)
        sampled = self._evidence.sampled_with_generator(attr) if device is not None else None
        if sampled is None:
            return None
        return (
            f"it is built on `{device}` beside a torch.Generator the class builds there, and {sampled}: "
            ".to() moves no generator, and a sampler refuses a tensor on another device than its generator"
        )

    def _by_design(self) -> Optional[str]:
        if id(self.info.node) in self.analysis.test_local_classes:
            return "a test defines the class to exercise it"
        if self.analysis.cuda_at_import is not None:
            return f"the file calls {self.analysis.cuda_at_import} when imported: it only runs on a GPU"
        if never_initialised(self.info):
            return f"{self.info.name}.__init__() never runs nn.Module.__init__(): the module cannot be moved, called or given buffers at all"
        return None

    def _throwaway(self, attr: str) -> Optional[str]:
        """Every instance the project builds is called once and dropped (`Pool(mode, device)(x)`),
        and the tensor is built from what that one call hands in or on a device it names: no
        instance is kept or moved, so `.to()` never leaves it behind. (A host constant in such a
        class still meets a GPU input: that stays a finding, though a buffer would not cure it.)"""
        project, info = self.analysis.project, self.info
        if not project.known or info.name not in project.throwaway or info.node.decorators or info.init is None:
            return None
        tensors = [a for a in info.assignments_to(attr) if a.kind is ValueKind.TENSOR and a.value is not None]
        given = {p.name.value for p in (*info.init.params.params[1:], *info.init.params.kwonly_params)}
        handed = tensor_params(info.init, self.analysis.inference)
        if not tensors or not all(_given_or_placed(a.value, given, handed) for a in tensors):  # type: ignore[arg-type]
            return None
        return f"every {info.name} the project builds is called once and dropped, and `{attr}` comes from what that call hands in"

    def _replaced_later(self, attr: str) -> Optional[str]:
        """`self.mask = torch.zeros(...)`, filled, then `self.mask = nn.Parameter(self.mask, ...)`
        (or `self.bands = self.bands.tolist()`) further down the same block of `__init__`: the plain
        tensor was scaffolding, and what the module keeps is a parameter, a buffer or host values.
        (A replacement in another branch only leaves this branch's tensor plain, and stays a
        finding; so does a tensor assigned again after construction.)"""
        assignments = self.info.assignments_to(attr)
        replacing = {id(a.site.line): a for a in assignments if a.in_init and _replaces_tensor(a)}
        # the values replaced: tensors (BUF001), and lists of them (BUF009) that `__init__` stacks
        # into a Parameter further down (`self.poses = [...]`, then `nn.Parameter(torch.stack(self.poses))`)
        tensors = [a for a in assignments if a.kind is ValueKind.TENSOR or _container(a)]
        if not replacing or not tensors or not all(a.in_init for a in tensors):
            return None
        for tensor in tensors:
            if not any(id(s) in replacing for s in _statements_after(tensor.method, tensor.site)):
                return None
        last = next(iter(replacing.values()))
        if last.kind in (ValueKind.PARAMETER, ValueKind.BUFFER):
            return f"`{attr}` becomes an {last.kind.value} further down __init__()"
        return f"`{attr}` becomes host values (`.{_host_method(last.value)}()`) further down __init__()"

    def _made_parameter_by_loop(self, attr: str) -> Optional[str]:
        """`for key in ["d", "c"]: setattr(self, key, nn.Parameter(getattr(self, key)))` further
        down `__init__`, after every tensor the name is given: what the module keeps is a parameter."""
        tensors = [a for a in self.info.assignments_to(attr) if a.kind is ValueKind.TENSOR]
        if not tensors or not all(a.in_init for a in tensors):
            return None
        for tensor in tensors:
            after = _statements_after(tensor.method, tensor.site)
            if not any(_sets_parameters_by_name(s, attr, tensor.scope.self_name, self.analysis.inference) for s in after):
                return None
        return f"`{attr}` becomes an nn.Parameter further down __init__() (`setattr` in a loop over its name)"

    def _unseen_registration(self, attr: str) -> Optional[str]:
        """The name may be a buffer already: the class or a base registers buffers under names
        it computes, assigning it runs a property's setter, or an `__setattr__` override decides
        where it goes (spiking neurons keep their state in a memory table that way)."""
        if attr in self._base_registered or any(attr in ancestor.parameters for ancestor in self.info.ancestors()):
            return f"a base class registers `{attr}`: assigning a tensor to it updates that buffer or parameter"
        for ancestor in (self.info, *self.info.ancestors()):
            if attr in ancestor.properties:
                return f"`{attr}` is a property of {ancestor.name}: assigning it runs the setter"
            if "__setattr__" in ancestor.methods:
                return f"{ancestor.name} overrides __setattr__: it decides where a tensor assigned to `{attr}` is kept"
            if ancestor.registers_unnamed:
                return f"{ancestor.name} registers buffers under computed names, which may include `{attr}`"
            helper = self._registered_through(attr, ancestor.registers_via)
            if helper is not None:
                return f"{ancestor.name}.{helper}() registers buffers under the names it is given, which may include `{attr}`"
        lineage = self.analysis.lineage(self.info)
        for name, facts in lineage.ancestors if lineage is not None else ():
            if "__setattr__" in facts.body:
                return f"base class {name} overrides __setattr__: it decides where a tensor assigned to `{attr}` is kept"
            if facts.registers_unnamed:
                return f"base class {name} registers buffers under computed names, which may include `{attr}`"
            helper = self._registered_through(attr, frozenset(facts.registers_via))
            if helper is not None:
                return f"base class {name}'s {helper}() registers buffers under the names it is given, which may include `{attr}`"
        return None

    def _registered_through(self, attr: str, helpers: frozenset[str]) -> Optional[str]:
        """The registering helper that the class (or a same-file base) calls with `attr`, or with
        a name it computes; one only called with other literal names registers only those."""
        if not helpers:
            return None
        for owner in (self.info, *self.info.ancestors()):
            for func in owner.methods.values():
                for call in nodes_of(func.body, cst.Call):
                    callee = call.func
                    if isinstance(callee, cst.Attribute) and callee.attr.value in helpers and is_name(callee.value, self_name(func) or ""):
                        named = next((a.value for a in call.args if a.keyword is None or a.keyword.value == "name"), None)
                        if named is None or not isinstance(named, cst.SimpleString) or named.evaluated_value == attr:
                            return callee.attr.value
        return None

    def _project_reason(self, attr: str) -> Optional[str]:
        project = self.analysis.project
        if project.default_device is not None:
            return f"the project creates tensors on its device by default ({project.default_device})"
        lineage = self.analysis.lineage(self.info)
        for name, facts in lineage.ancestors if lineage is not None else ():
            if facts.moves(attr):
                return f"base class {name} moves it with its own to()/_apply()"
        keeper = self._device_keeper(attr)
        if keeper is not None:
            return keeper
        holder = project.moved_by_holder(self.analysis.qualified(self.info), attr) if project.known else None
        if holder is not None:
            return f"{holder} moves it along in its own to()/_apply(), on the instance it holds"
        if lineage is not None and lineage.outside is not None and project.hidden_in_run(lineage.outside):
            # Its file is in the run, but another file takes the same module name: what it
            # registers is not known, and a buffer of the base's is assigned, not left behind.
            return f"base class {lineage.outside} is a file of the run whose module name another file shares: it may register `{attr}`"
        return self._built_in_device_context(attr)

    def _device_keeper(self, attr: str) -> Optional[str]:
        """A base class in another file keeps `self.device` (a recommender's `BaseModel` that
        moves itself and every batch there) and the class builds the tensor there: the same design
        as `intent.own_device`, one file away.
        A tensor that a method moves after construction, even to `self.device`, is copied per call:
        still a finding; so is one built with `requires_grad=True` (placed, but never trained: the
        design places tensors, it does not register them)."""
        lineage = self.analysis.lineage(self.info)
        if lineage is None or moved_later(self.info, attr) or self._trainable(attr) or not self._built_on_own_device(attr):
            return None
        for name, facts in lineage.ancestors:
            if DEVICE_ATTRS & set(facts.binds):
                return f"base class {name} keeps its own `self.device`, and the class places its tensors there"
        return None

    def _built_on_own_device(self, attr: str) -> bool:
        """The tensor is built by the module, where the design puts it: its first value names
        `self.device` (`.to(self.device)`, `device=self.device`) or is computed from the module's
        own state (`torch.cumprod(1 - self.betas, 0)`), not stored as a caller handed it in."""
        tensors = [a for a in self.info.assignments_to(attr) if a.kind is ValueKind.TENSOR and a.value is not None]
        if not tensors:
            return False
        first = min(tensors, key=lambda a: not a.in_init)
        me = first.scope.self_name or ""
        return any(isinstance(n, cst.Attribute) and is_name(n.value, me) and n.attr.value != attr for n in nodes_of(first.value, cst.Attribute))  # type: ignore[arg-type]

    def _trainable(self, attr: str) -> bool:
        """A value of `self.<attr>` asks for gradients (`torch.randn(..., requires_grad=True)`)."""
        return any(a.value is not None and asks_for_grad(a.value) for a in self.info.assignments_to(attr))

    def _built_in_device_context(self, attr: str) -> Optional[str]:
        """gpt-fast's `with torch.device(device): model.setup_caches(...)`: every tensor the
        attribute holds is built after construction by a method the project calls under a device
        context, so it is made on the device the model runs on, by design."""
        calls = self.analysis.project.device_context_calls
        entries = [name for name in self.info.methods if name in calls]
        tensors = [a for a in self.info.assignments_to(attr) if a.kind is ValueKind.TENSOR]
        if not entries or not tensors:
            return None
        init_time, reached = init_time_methods(self.info), reached_from(self.info, entries)
        if any(a.method.name.value in init_time or a.method.name.value not in reached for a in tensors):
            return None
        return f"{entries[0]}() builds it, and the project calls it under `with torch.device(...)` ({calls[entries[0]]})"

    def _zero_dim(self, attr: str) -> Optional[str]:
        qualify = self.analysis.inference.qualify
        tensors = [a for a in self.info.assignments_to(attr) if a.kind is ValueKind.TENSOR and a.value is not None]
        zero_dim = [a for a in tensors if is_zero_dim(a.value, qualify, scalar_names(a.method), vector_names(a.method, qualify))]  # type: ignore[arg-type]
        # the rest may only carry it on: `self.ema = a * self.ema + (1 - a) * loss.mean()`
        if zero_dim and all(a in zero_dim or self._carries_zero_dim(a, qualify) for a in tensors):
            return "a 0-dim tensor, which CUDA accepts next to tensors on the GPU"
        if tensors and all(static_numel(a.value, qualify) == 0 for a in tensors):  # type: ignore[arg-type]
            # `self.k_cache = torch.tensor([])`, filled later by code that allocates it on the device
            return "every tensor the class gives it is empty: a placeholder for one assigned from elsewhere"
        return None

    def _carries_zero_dim(self, assignment: AttrAssignment, qualify: Qualify) -> bool:
        """Arithmetic whose tensors are the attribute itself or 0-dim, beside numbers and plain
        (never tensor) attributes: a running average of 0-dim values stays 0-dim
        (`self.ema = a * self.ema + (1 - a) * loss.mean()`)."""
        me, attr, scalars = assignment.scope.self_name or "", assignment.attr, scalar_names(assignment.method)
        stack: list[cst.BaseExpression] = [assignment.value] if isinstance(assignment.value, cst.BinaryOperation) else []
        chain = same_shape_chain(assignment.value) if isinstance(assignment.value, cst.Call) else None
        if chain is not None and is_self_attr(chain[0], me, attr):
            stack = list(chain[1])  # `self.p = self.p.normal_(m, s).clamp(min=0.)`: its shape, given numbers
            if not stack:
                return True
        if not stack:
            return False
        while stack:
            node = stack.pop()
            if isinstance(node, cst.BinaryOperation):
                stack += (node.left, node.right)
            elif isinstance(node, cst.UnaryOperation):
                stack.append(node.expression)
            elif isinstance(node, cst.Attribute) and is_name(node.value, me):
                name = node.attr.value
                if name != attr and any(a.kind is ValueKind.TENSOR for a in self.info.assignments_to(name)):
                    return False
            elif not (isinstance(node, (cst.Integer, cst.Float)) or (isinstance(node, cst.Name) and node.value in scalars) or is_zero_dim(node, qualify, scalars)):
                return False
        return True

    def evidence(self, attr: str) -> Optional[Evidence]:
        return self._evidence.evidence(attr)

    def host_partner(self, attr: str) -> Optional[HostPartner]:
        return self._evidence.host_partner(attr)

    @cached_property
    def _evidence(self) -> EvidenceFinder:
        # The attributes the rules ask about: tensors, and containers that may hold them (BUF009).
        wanted = frozenset(self.defining) | frozenset(a.attr for a in self.info.assignments if _may_hold_tensors(a))
        subclasses = tuple(forward_facts(self.analysis, sub) for sub in self.family.subclasses(self.info))
        return EvidenceFinder(forward_facts(self.analysis, self.info), wanted, subclasses, self.analysis.mentions)


def _may_hold_tensors(assignment: AttrAssignment) -> bool:
    """A value of no known kind that could be a container of tensors (BUF009's candidates)."""
    return assignment.kind is ValueKind.OTHER and assignment.value is not None and may_hold_tensors(assignment.value)


def _container(assignment: AttrAssignment) -> bool:
    """Such a value spelled out as a container, not a name that may be anything."""
    return _may_hold_tensors(assignment) and not isinstance(assignment.value, cst.Name)


# Tensor methods whose result lives on the host as Python or NumPy values, not as a tensor.
_HOST_METHODS = frozenset(("tolist", "item", "numpy"))


def _host_method(value: Optional[cst.BaseExpression]) -> Optional[str]:
    """`tolist` for `<anything>.tolist()`: the value is no tensor, wherever it came from."""
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in _HOST_METHODS:
        return value.func.attr.value
    return None


def _replaces_tensor(assignment: AttrAssignment) -> bool:
    """Whether the assignment leaves a parameter, a buffer or host values in place of a tensor."""
    if assignment.augmented:
        return False
    return assignment.kind in (ValueKind.PARAMETER, ValueKind.BUFFER) or _host_method(assignment.value) is not None


def _sets_parameters_by_name(statement: cst.BaseStatement, attr: str, me: Optional[str], inference: TensorInference) -> bool:
    """`for key in [..., "<attr>", ...]:` whose body calls `setattr(self, key, ...)` and builds an
    `nn.Parameter`."""
    if not isinstance(statement, cst.For) or not isinstance(statement.target, cst.Name) or me is None:
        return False
    names = statement.iter
    if not isinstance(names, (cst.List, cst.Tuple)) or not any(
        isinstance(e.value, cst.SimpleString) and e.value.evaluated_value == attr for e in names.elements
    ):
        return False
    key = statement.target.value
    made = {  # locals of the loop body bound to `nn.Parameter(...)`
        name for assign in nodes_of(statement.body, cst.Assign) if is_parameter_call(assign.value, inference)
        for target in assign.targets for name in stored_names(target.target)
    }
    for call in nodes_of(statement.body, cst.Call):
        if is_name(call.func, "setattr") and len(call.args) == 3 and is_name(call.args[0].value, me) and is_name(call.args[1].value, key):
            value = call.args[2].value
            if is_parameter_call(value, inference) or (isinstance(value, cst.Name) and value.value in made):
                return True
    return False


def _statements_after(method: cst.FunctionDef, site: StatementSite) -> list[cst.BaseStatement]:
    """The statements that run after `site` whichever branch it sits in: those after it in its
    own block, then those after each compound statement that holds it, out to the function."""
    after: list[cst.BaseStatement] = []
    inner: cst.BaseStatement = site.line
    for compound in reversed(enclosing(site.top, site.line)):
        block = next(b for b in map(body_statements, child_suites(compound)) if any(s is inner for s in b))
        after.extend(_following(block, inner))
        inner = compound
    return after + _following(body_statements(method.body), site.top)


def _following(block: Sequence[cst.BaseStatement], statement: cst.BaseStatement) -> list[cst.BaseStatement]:
    return list(block[next(i for i, s in enumerate(block) if s is statement) + 1 :])


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
        family = analysis.__dict__[_FAMILY_ATTR] = Family(
            analysis.module_classes, analysis.module, lambda info: given_by_every_construction(analysis, info)
        )
    return family


_ATTRIBUTES_ATTR = "_bufferlint_class_attributes"
_FAMILY_ATTR = "_bufferlint_family"


def _given_or_placed(value: cst.BaseExpression, given: set[str], handed: set[str]) -> bool:
    """The value is a constructor argument read as a tensor (`content.mean(...)`, or stored as
    it is), is built by a call handed an argument annotated as a tensor (`make_grid(x_min, ...)`
    with `x_min: torch.Tensor`), or is placed on a device the call names (`device=device`,
    `.to(device)`, with `device` an argument); an argument used as a size (`torch.ones(n) / n`)
    or a dtype is not."""
    if isinstance(value, cst.Name) and value.value in given:
        return True
    if any(isinstance(n.value, cst.Name) and n.value.value in given for n in nodes_of(value, cst.Attribute)):
        return True
    for call in nodes_of(value, cst.Call):
        if any(isinstance(arg.value, cst.Name) and arg.value.value in handed for arg in call.args):
            return True
        targets = [arg.value for arg in call.args if arg.keyword is not None and arg.keyword.value == "device"]
        if isinstance(call.func, cst.Attribute) and call.func.attr.value in ("to", "cuda") and call.args and call.args[0].keyword is None:
            targets.append(call.args[0].value)
        if any(isinstance(t, cst.Name) and t.value in given and "dtype" not in t.value for t in targets):
            return True
    return False
