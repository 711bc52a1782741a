"""The proof obligations of turning `self.<attr> = <tensor>` into a non-persistent buffer
(measured hazards: research/pytorch-buffer-semantics.md).

Each obligation is checked here, once, for every rule whose fix registers a buffer (BUF001, and
BUF002 on top of it). An obligation the analysis disproves goes to `blocking`: the rewrite would
crash or silently change behaviour, so no fix is offered. One it cannot prove goes to `unsafe`:
the fix is offered only with `--unsafe-fixes`. `notes` are mentioned and keep the fix safe. The
message of a finding names the first obligation that failed.

The obligations (the rules' docs list them too):
1. the class is not a ScriptModule, has no `register_buffer` of its own, and does not rewrite
   its instance dictionary wholesale (`self.__dict__.update(other.__dict__)` replaces `_buffers`);
2. the name is not a property, method, class attribute, parameter or deleted attribute, in the
   class or its bases, and a torch.nn base does not own it;
3. nothing binds the name before the registration runs: the statements of `__init__` before it,
   the helpers they call (resolved from the class being built, overrides included), the base
   constructors in this file or others, and the subclasses of this file and others;
4. it is registered after `super().__init__()`, and no base constructor runs after it;
5. every value the class assigns to it is a tensor or None, and no code outside the class sets the
   name on an object to a plain Python value (a buffer refuses it);
6. the value is a fresh tensor: it does not require grad, derive from a parameter or submodule,
   or alias an argument or another attribute, and it is not handed to another module; nor is it
   a randomly initialised `weight`/`bias`, which may be a forgotten nn.Parameter (unsafe);
7. its dtype may follow the module: not complex, not bucket boundaries, not pinned with an
   explicit dtype, and not in a module that a holder's cast to half puts back in float32
   (disproved: no fix), not compared with data as a threshold (unsafe);
8. the project does not build modules on the meta device (non-persistent buffers are then never
   restored), nor pin torch below 1.6 (no `persistent=` there);
9. nothing in the class or its bases walks every buffer (`self.named_buffers()`, `self._buffers`)
   or overrides what lists them (`named_buffers()`, `state_dict()`, `_load_from_state_dict()`...);
10. the project does not restore pickled modules or copy parameters and buffers by name between
   modules (`dill.load`, StyleGAN's `copy_params_and_buffers(require_all=True)`,
   `persistence.persistent_class`, `load_network_pkl`): a module saved before the change lacks
   the new buffer.
(11, the in-place update with a plain tensor, is `_in_place_hazards`; 12 is the rule's own.)
13. no method uses it with a tensor built on the host on every call (`torch.arange(b) + self.idx`):
   the evidence scan finds that partner (analysis/evidence.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional, Sequence

import libcst as cst

from bufferlint.analysis.classes import AttrAssignment, ClassInfo, ValueKind, base_constructor_lines, top_statements
from bufferlint.analysis.flow import iter_sites, self_name, stored_names
from bufferlint.analysis.project_facts import BUFFER_WALKS
from bufferlint.analysis.conventions import SETTINGS_OBJECTS
from bufferlint.analysis.evidence import HostPartner
from bufferlint.analysis.dtypes import ComplexCheck, boundary_use, dtype_checked, dtype_pin_through, kernel_only, pin_guards_values, sparse_value, strict_op_with_cast, threshold_use
from bufferlint.analysis.file import FileAnalysis
from bufferlint.analysis.cache_guards import filled_beside
from bufferlint.analysis.grad import asks_for_grad
from bufferlint.analysis.init_order import prior_binding
from bufferlint.analysis.intent import Family
from bufferlint.analysis.names import dotted_name
from bufferlint.analysis.walk import callee_name, is_in_place_name, is_name, iter_nodes, nodes_of

# Attributes torch.nn layers own already, or that torch.nn.utils adds to them (weight_norm,
# spectral_norm, pruning, fake quantization): registering a buffer of that name raises KeyError.
# RNN weights are `weight_ih_l0`, `bias_hh_l1_reverse`, `weight_hr_l0`.
_LAYER_OWNED = re.compile(
    r"^(weight|bias|running_mean|running_var|num_batches_tracked|in_proj_\w+|[qkv]_proj_weight|bias_[kv]"
    r"|weight_(g|v|u|orig|mask|fake_quant)|(weight|bias)_(ih|hh|hr)_l\d\w*|\w*_fake_quant|activation_post_process)$"
)
# Tensor attributes that describe rather than alias (`self.lin.weight.shape`).
_METADATA_ATTRS = frozenset("shape dtype device ndim is_cuda requires_grad layout".split())
_LARGE_MAGNITUDE = 65504.0  # float16 max: larger magnitudes become inf under .half()


def layer_owned(info: ClassInfo, attr: str) -> bool:
    """The class derives from a torch.nn layer, which (or torch.nn.utils on it) may own `attr`."""
    return info.is_layer_subclass and _LAYER_OWNED.match(attr) is not None


@dataclass
class Hazards:
    blocking: list[str] = field(default_factory=list)
    unsafe: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class ProofContext:
    """What the obligations look up beyond the class: the file, its module classes, the project."""

    analysis: FileAnalysis
    family: Family


def buffer_hazards(
    info: ClassInfo, attr: str, defining: AttrAssignment, context: ProofContext, anchor: Optional[cst.BaseSmallStatement]
) -> Hazards:
    """Everything that stands between `self.<attr> = <tensor>` and a non-persistent buffer
    registered at `anchor` (a statement of `__init__`; None: right after `super().__init__()`)."""
    hazards = Hazards()
    _class_hazards(info, hazards)
    _name_hazards(info, attr, hazards)
    _assignment_hazards(info, attr, hazards)
    _constructor_hazards(info, anchor, hazards)
    _order_hazards(info, attr, anchor, context, hazards)
    if defining.other_targets:
        others = ", ".join(f"`{cst.Module([]).code_for_node(t)}`" for t in defining.other_targets)
        hazards.blocking.append(f"the same statement also assigns {others}, which a registration would drop")
    if defining.value is not None:
        _value_hazards(info, defining, hazards)
        _dtype_hazards(info, defining, context, hazards)
    _sharing_hazards(info, attr, context, hazards)
    _cache_part_hazards(info, attr, hazards)
    _in_place_hazards(info, attr, hazards)
    _walk_hazards(info, context, hazards)
    _project_hazards(context, hazards)
    _plain_value_from_outside(attr, context, hazards)
    return hazards


def meets_host_tensor(partner: Optional[HostPartner], hazards: Hazards) -> None:
    """Obligation 13: no method uses it with a tensor it builds on the host on every call
    (`torch.arange(b) * n + self.idx`): the original meets a CPU tensor on the CPU; as a buffer
    on the GPU it would meet that CPU tensor and the op would raise."""
    if partner is not None:
        hazards.blocking.append(f"{partner.describe()}: as a buffer it would follow the module to the GPU and meet that CPU tensor")


def _cache_part_hazards(info: ClassInfo, attr: str, hazards: Hazards) -> None:
    """A cache check that fills this attribute with others (`if self.mean_gpu is None:` setting
    `mean_gpu` and `std_gpu`): registering one part alone would let .to()/.half() move it and
    leave the others, and the parts would no longer agree."""
    for assignment in info.assignments_to(attr):
        me = self_name(assignment.method)
        if assignment.in_init or me is None:
            continue
        parts = filled_beside(assignment.method, me, assignment.site, attr)
        if parts:
            names = ", ".join(f"`{name}`" for name in parts)
            hazards.unsafe.append(f"the cache check that fills it also fills {names}: registering it alone, .to()/.half() would move it and not them")
            return


def _class_hazards(info: ClassInfo, hazards: Hazards) -> None:
    if info.is_script_module:
        hazards.blocking.append("ScriptModule subclasses do not support non-persistent buffers")
    if info.defines_register_buffer():
        hazards.blocking.append("the class or a base defines its own register_buffer")
    rewrite = _dict_rewrite(info)
    if rewrite is not None:
        hazards.blocking.append(f"`{rewrite}` rewrites the instance's attributes wholesale: from another module it replaces the `_buffers` table, and the registration is lost")


def _dict_rewrite(info: ClassInfo) -> Optional[str]:
    """`self.__dict__.update(other.__dict__)`, `self.__dict__ = vars(other)` and the like (the
    instance's own dictionary, from another object's) in a method of the class or a base of the
    file, as written."""
    for owner in (info, *info.ancestors()):
        for name, func in owner.methods.items():
            if name == "__setstate__":
                continue  # the state it restores holds the module's own `_buffers`
            me = self_name(func)
            for node in nodes_of(func.body, (cst.Call, cst.Assign)):
                rewritten = _rewritten(node)
                if rewritten is None:
                    continue
                target, source = (_dict_owner(side) for side in rewritten)
                # `self.__dict__.update(other.__dict__)`: the instance's own dict, from another's
                if target is not None and is_name(target, me or "") and source is not None and not is_name(source, me or ""):
                    return cst.Module([]).code_for_node(node).strip().splitlines()[0]
    return None


def _rewritten(node: cst.CSTNode) -> Optional[tuple[cst.BaseExpression, cst.BaseExpression]]:
    """What `node` rewrites wholesale, and from what: `<d>.update(<s>)` or `<d> = <s>`."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "update" and node.args:
        return node.func.value, node.args[0].value
    if isinstance(node, cst.Assign) and len(node.targets) == 1:
        return node.targets[0].target, node.value
    return None


def _dict_owner(node: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """`x` of `x.__dict__` or `vars(x)`; None for anything else."""
    if isinstance(node, cst.Attribute) and node.attr.value == "__dict__":
        return node.value
    if isinstance(node, cst.Call) and is_name(node.func, "vars") and len(node.args) == 1:
        return node.args[0].value
    return None


def _name_hazards(info: ClassInfo, attr: str, hazards: Hazards) -> None:
    if attr in info.properties:
        hazards.blocking.append(f"`{attr}` is also a property of the class")
    elif attr in info.methods:
        hazards.blocking.append(f"`{attr}` is also a method of the class")
    elif attr in info.class_attrs:
        hazards.blocking.append(f"`{attr}` is also a class attribute")
    if attr in info.parameters:
        hazards.blocking.append(f"`{attr}` is also an nn.Parameter")
    if attr in info.deleted:
        hazards.blocking.append(f"`{attr}` is deleted with `del` (it would come back as a plain attribute)")
    if layer_owned(info, attr):
        hazards.blocking.append(f"the torch.nn base class may already own `{attr}`")
    for ancestor in info.ancestors():
        if attr in ancestor.bound_names() or any(a.attr == attr and a.kind is not ValueKind.TENSOR for a in ancestor.assignments):
            hazards.blocking.append(f"`{attr}` is also bound in base class {ancestor.name}")
            break


def _assignment_hazards(info: ClassInfo, attr: str, hazards: Hazards) -> None:
    assignments = info.assignments_to(attr)
    for assignment in assignments:
        if assignment.in_init and assignment.before_super_init and not assignment.augmented:
            reason = "assigned before super().__init__()"
            if info.super_init_index is None:
                reason = "__init__ never calls super().__init__()"
            if reason not in hazards.blocking:
                hazards.blocking.append(reason)
    tensor = any(a.kind is ValueKind.TENSOR for a in assignments)
    others = [
        a for a in assignments
        if not a.augmented and a.kind not in (ValueKind.TENSOR, ValueKind.NONE) and not (tensor and _own_copy(a))
    ]
    if others:
        kind = others[0].kind
        what = "a value that is not known to be a tensor" if kind is ValueKind.OTHER else f"an {kind.value}"
        if kind is ValueKind.MODULE:
            what = "a submodule"
        hazards.blocking.append(f"`{attr}` is also assigned {what} in {others[0].method.name.value}()")


# Tensor methods that give a tensor back: `self.t = self.t.to(x.device)` keeps a tensor a tensor.
_COPYING_METHODS = frozenset("to cuda cpu clone detach contiguous float half double bfloat16 type_as".split())


def _own_copy(assignment: AttrAssignment) -> bool:
    """`self.t = self.t.to(x.device)` (or `.clone()`...): a copy of the attribute itself, a tensor
    whenever the attribute is one."""
    value = assignment.value
    if not isinstance(value, cst.Call) or not isinstance(value.func, cst.Attribute):
        return False
    receiver = value.func.value
    return (
        value.func.attr.value in _COPYING_METHODS
        and isinstance(receiver, cst.Attribute)
        and isinstance(receiver.value, cst.Name)
        and receiver.value.value == assignment.scope.self_name
        and receiver.attr.value == assignment.attr
    )


def _order_hazards(
    info: ClassInfo, attr: str, anchor: Optional[cst.BaseSmallStatement], context: ProofContext, hazards: Hazards
) -> None:
    """Obligation 3: nothing binds the name before the registration (KeyError otherwise)."""
    if hazards.blocking:
        return  # already no fix; the walk below is the costliest obligation
    analysis = context.analysis
    subclasses = context.family.subclasses(info)
    prior = prior_binding(info, attr, anchor, subclasses, analysis.lineage)
    _subclass_values(attr, subclasses, hazards)
    if prior.bound is not None and anchor is None:
        # Registered right after super().__init__(): whatever binds it runs inside the base constructor.
        hazards.blocking.append(f"{prior.bound}, inside the base constructor, before a registration after super().__init__() could run, so register_buffer would raise KeyError")
    elif prior.bound is not None:
        hazards.blocking.append(f"{prior.bound}, so register_buffer would raise KeyError")
    elif prior.unknown is not None:
        hazards.unsafe.append(f"not proved that nothing sets `{attr}` before it is registered: {prior.unknown}")
    if analysis.project.known and id(info.node) in analysis.top_level_ids:
        for name, facts in analysis.project.descendants(analysis.qualified(info)):
            if attr in facts.body or attr in facts.binds or facts.dynamic:
                hazards.unsafe.append(f"subclass {name} (another file) may also set `{attr}`")
                break


def _subclass_values(attr: str, subclasses: Sequence[ClassInfo], hazards: Hazards) -> None:
    """A buffer holds only tensors: assigning it anything else raises TypeError. A subclass may
    assign a tensor, None, a Parameter or a module (those two replace the buffer), or a copy of
    the attribute itself (`self.pe = self.pe.to(x.device)`); a literal disproves the fix, and a
    value of unknown kind leaves it unproved."""
    for sub in subclasses:
        for assignment in sub.assignments_to(attr):
            if assignment.augmented or assignment.value is None or assignment.kind is not ValueKind.OTHER or _own_copy(assignment):
                continue
            if isinstance(assignment.value, _LITERALS):
                hazards.blocking.append(f"subclass {sub.name} assigns it `{cst.Module([]).code_for_node(assignment.value)}`, and a buffer takes only tensors (TypeError)")
            else:
                hazards.unsafe.append(f"subclass {sub.name} assigns it a value not known to be a tensor, and a buffer takes only tensors (TypeError)")
            return


_LITERALS = (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString, cst.List, cst.Tuple, cst.Dict, cst.Set, cst.ListComp, cst.DictComp)


def _constructor_hazards(info: ClassInfo, anchor: Optional[cst.BaseSmallStatement], hazards: Hazards) -> None:
    """Obligation 4, second half: no base constructor runs after the registration. `Module.__init__`
    resets `_buffers`, and a second base's `__init__` may run it again (a torch Distribution does)."""
    init = info.init
    if init is None or info.super_init_index is None:
        return
    at = next((site.top_index for site in iter_sites(init) if site.small is anchor), info.super_init_index)
    later = [index for index in base_constructor_lines(init) if index > at]
    if later:
        line = cst.Module([]).code_for_node(top_statements(init)[later[0]]).strip().splitlines()[0]
        hazards.unsafe.append(f"a base constructor runs after the registration (`{line}`), and may reset the module's buffers")


def _value_hazards(info: ClassInfo, defining: AttrAssignment, hazards: Hazards) -> None:
    value = defining.value
    assert value is not None
    if asks_for_grad(value):
        hazards.blocking.append("the tensor requires grad (use nn.Parameter to train it)")
    derived = _derived_from_module_state(info, defining)
    if derived is not None:
        hazards.blocking.append(f"the value derives from `{derived}`, which .to() would not keep in sync")
    alias = next((a for a in map(_alias_of_argument, info.assignments_to(defining.attr)) if a is not None), None)
    if alias is not None:
        hazards.unsafe.append(f"the value aliases `{alias}`: after .to() the buffer is a separate copy")
    if _forgotten_bias(info, defining):
        hazards.blocking.append(
            f"`{defining.attr}` starts as a constant bias beside randomly initialised weights: it looks like a layer's "
            "bias that never became an nn.Parameter, which a buffer would keep from training (make it a Parameter)"
        )
    elif _random_weight(defining.attr, value):
        hazards.unsafe.append(
            f"`{defining.attr}` is randomly initialised under a weight's name: that it is a constant, not a layer's "
            "weight left out of nn.Parameter (which a buffer would keep from training), is not proved"
        )
    if _large_constant(value) or _is_mask(defining.attr, value):
        hazards.notes.append("note: .half() will cast it to float16 (large constants overflow to inf)")


def _dtype_hazards(info: ClassInfo, defining: AttrAssignment, context: ProofContext, hazards: Hazards) -> None:
    """Obligation 7: the values survive the casts a buffer goes through."""
    analysis = context.analysis
    project = analysis.project
    check = ComplexCheck(
        analysis.function, info.methods.get, analysis.inference.qualify,
        (frozenset(project.functions), frozenset(project.complex_functions)) if project.known else None,
    )
    for assignment in info.assignments_to(defining.attr):
        if assignment.value is None or assignment.kind is not ValueKind.TENSOR:
            continue
        found, maybe = check.reason(assignment.value, assignment.scope.self_name)
        if found is not None:
            hazards.blocking.append(f"{found}: as a buffer, .to(torch.bfloat16) would cast it to real numbers")
            return
        if maybe is not None and assignment is defining:
            hazards.unsafe.append(f"{maybe} (a complex buffer is cast to real by .to(dtype))")
    assert defining.value is not None
    sparse = sparse_value(defining.value, analysis.inference.qualify)
    if sparse is not None:
        hazards.unsafe.append(
            f"it is a sparse tensor (`{sparse}`): DistributedDataParallel broadcasts every buffer when it wraps the "
            "model and refuses sparse ones, and that the model is never wrapped in it is not proved"
        )
    checked = dtype_checked(defining.attr, info.methods.values())
    if checked is not None:
        hazards.blocking.append(f"the class checks its dtype (`{checked}`): as a buffer, .half() and .to(torch.bfloat16) would cast it")
        return
    pin = dtype_pin_through(
        defining.value, defining.scope.self_name,
        lambda attr: [(a.value, a.scope.self_name) for a in info.assignments_to(attr) if a.value is not None],
        info.methods.get, analysis.function, analysis.inference.qualify,
    )
    if pin is not None and not kernel_only(defining.attr, analysis.inference.qualify, info.methods.values()) and not _exact_constant(info, defining, pin, analysis):
        # Measured on fresh code: 4 of 6 such rewrites broke a module that is cast (BUF003's
        # hoisting declines these for the same reason).
        hazards.blocking.append(f"its dtype is spelled out (`{pin}`): as a buffer, .half() and .to(torch.bfloat16) would cast it, which may change what the code computes")
        return
    kept = project.kept_float_by_holder(analysis.qualified(info)) if project.known else None
    if kept is not None:
        hazards.blocking.append(f"{kept}, keeping it in full precision on purpose: as a buffer, `{defining.attr}` would be rounded to half first")
        return
    bucketing = boundary_use(info, defining.attr, analysis.inference.qualify, info.methods.values())
    if bucketing is not None:
        hazards.blocking.append(f"it holds the boundaries of `{bucketing}`: as a buffer, .half() would cast them and move values to other buckets")
        return
    threshold = threshold_use(defining.attr, info.methods.values())
    if threshold is not None:
        hazards.unsafe.append(f"data is compared with it (`{threshold}`): as a buffer, .half() would round it and move values across the threshold")
    strict = strict_op_with_cast(defining.attr, analysis.inference.qualify, info.methods.values())
    if strict is not None:
        hazards.unsafe.append(
            f"`{strict}` computes with it and a value cast to a fixed dtype: as a buffer, .half() would cast it but not "
            "that value, and the op refuses two dtypes"
        )


def _sharing_hazards(info: ClassInfo, attr: str, context: ProofContext, hazards: Hazards) -> None:
    """Obligation 6, second half: another module keeps its own reference to the tensor."""
    handed = handed_over(info, attr, context.analysis)
    if handed is not None:
        hazards.unsafe.append(f"`{attr}` is handed to `{handed.callee}(...)`, which keeps its own reference and would not follow the buffer")


def _exact_constant(info: ClassInfo, defining: AttrAssignment, pin: str, analysis: FileAnalysis) -> bool:
    """A pin to the default float dtype on a constant whose every value half and bfloat16 hold
    exactly (zeros, an identity, a table of ±1), which no code changes afterwards: a cast with the
    module leaves its values as they are. (A wider pin, or a table that accumulates, keeps its
    precision on purpose.)"""
    if defining.value is None or pin_guards_values(defining.value, pin, analysis.inference.qualify):
        return False
    others = [a for a in info.assignments_to(defining.attr) if a is not defining and not _own_copy(a)]
    return not others and not any(_changed_in_place(owner.node, defining.attr) for owner in (info, *info.ancestors()))


def _in_place_hazards(info: ClassInfo, attr: str, hazards: Hazards) -> None:
    """Obligation 11: it and a tensor attribute left plain meet in an in-place update
    (`self.lam += self.lr * c`, either way round, directly or through locals computed from it):
    after `.to("cuda")` the buffer is on the GPU and the plain tensor is not, and an in-place op
    across the two raises where the original ran."""
    plain = {a.attr for a in info.assignments if a.kind is ValueKind.TENSOR and not a.augmented}
    plain -= info.registered_buffers | info.registered_parameters | {attr}
    for assignment in info.assignments:
        me = assignment.scope.self_name
        if not assignment.augmented or assignment.value is None or me is None:
            continue
        read = _attrs_read(assignment, me)
        other = assignment.attr if assignment.attr in plain and attr in read else None
        if other is None and assignment.attr == attr:
            other = next(iter(sorted(read & plain)), None)
        if other is not None:
            hazards.blocking.append(
                f"`{other}` stays a plain tensor and {assignment.method.name.value}() updates "
                f"{'it' if other == assignment.attr else f'`{attr}`'} in place from "
                f"{f'`{attr}`' if other == assignment.attr else 'it'}: once the module moves, the two sit on different devices"
            )
            return


def _attrs_read(assignment: AttrAssignment, me: str) -> set[str]:
    """The attributes of `me` that the assigned value reads, directly or through locals the
    method computed from them before the statement."""
    through: dict[str, set[str]] = {}

    def reads(node: cst.CSTNode) -> set[str]:
        found: set[str] = set()
        metadata = _metadata_only(node)
        for sub in iter_nodes(node):
            if id(sub) in metadata:
                continue
            if isinstance(sub, cst.Attribute) and is_name(sub.value, me):
                found.add(sub.attr.value)
            elif isinstance(sub, cst.Name) and sub.value in through:
                found |= through[sub.value]
        return found

    for site in iter_sites(assignment.method):
        small = site.small
        if small is assignment.statement:
            break
        if isinstance(small, (cst.Assign, cst.AnnAssign)) and small.value is not None:
            attrs = reads(small.value)
            targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
            for name in (n for t in targets for n in stored_names(t)):
                through[name] = attrs
    assert assignment.value is not None
    return reads(assignment.value)


def _metadata_only(node: cst.CSTNode) -> set[int]:
    """The nodes under `node` read only for their metadata (`x` in `x.shape[0]`, `x.size(1)`):
    an update computed from a tensor's shape takes nothing from its device."""
    skipped: set[int] = set()
    for sub in iter_nodes(node):
        inner: Optional[cst.BaseExpression] = None
        if isinstance(sub, cst.Attribute) and sub.attr.value in _METADATA_ATTRS:
            inner = sub.value
        elif isinstance(sub, cst.Call) and isinstance(sub.func, cst.Attribute) and sub.func.attr.value in _METADATA_CALLS:
            inner = sub.func.value
        if inner is not None:
            skipped.update(id(n) for n in iter_nodes(inner))
    return skipped


# tensor methods that return metadata (`x.size(1)`, `x.dim()`)
_METADATA_CALLS = frozenset(("size", "dim", "numel", "nelement"))


def _walk_hazards(info: ClassInfo, context: ProofContext, hazards: Hazards) -> None:
    """Obligation 9 (see `own_bookkeeping`)."""
    found = own_bookkeeping(info, context.analysis)
    if found is not None:
        hazards.unsafe.append(found)


# nn.Module methods that list or save parameters and buffers: a class overriding one decides
# itself what they contain.
_BOOKKEEPING = frozenset((
    "named_buffers", "buffers", "named_parameters", "parameters", "state_dict", "load_state_dict",
    "_save_to_state_dict", "_load_from_state_dict",
))


def own_bookkeeping(info: ClassInfo, analysis: FileAnalysis) -> Optional[str]:
    """What in the class or its bases treats its buffers and parameters in its own way: an
    override of `named_buffers()`/`state_dict()`/..., or a method that walks every buffer
    (`for name, b in self.named_buffers(): ...` slicing them by a batch index). A new buffer, or
    a parameter turned buffer, would be listed or walked differently than before."""
    for owner in (info, *info.ancestors()):
        overridden = sorted(_BOOKKEEPING & set(owner.methods))
        if overridden:
            return f"{owner.name} defines its own {overridden[0]}(), which decides what it lists"
        for name, method in owner.methods.items():
            me = self_name(method)
            if me is not None and any(n.attr.value in BUFFER_WALKS and is_name(n.value, me) for n in nodes_of(method.body, cst.Attribute)):
                return f"{owner.name}.{name}() walks every buffer of the module, and would walk this one too"
    lineage = analysis.lineage(info)
    for base, facts in lineage.ancestors if lineage is not None else ():
        overridden = sorted(_BOOKKEEPING & set(facts.body))
        if overridden:
            return f"base class {base.rpartition('.')[2]} defines its own {overridden[0]}(), which decides what it lists"
        if facts.walks_buffers is not None:
            return f"{base.rpartition('.')[2]}.{facts.walks_buffers}() walks every buffer of the module, and would walk this one too"
    return None


def _project_hazards(context: ProofContext, hazards: Hazards) -> None:
    """Obligation 8: non-persistent buffers are not restored by meta-device construction, and the
    project's torch has them at all (1.6 and later).
    Obligation 10: no module pickled before the change is restored, and no code copies parameters
    and buffers by name between two versions of a module."""
    where = context.analysis.project.meta_init
    if where is not None:
        hazards.unsafe.append(f"the project builds modules on the meta device ({where}): load_state_dict() never restores a non-persistent buffer")
    pinned = context.analysis.project.old_torch
    if pinned is not None:
        hazards.blocking.append(f"the project pins torch below 1.6 ({pinned}), where register_buffer() takes no `persistent=`")
    pickles = context.analysis.project.pickles
    if pickles is not None:
        hazards.unsafe.append(
            f"the project restores pickled modules or copies parameters and buffers by name ({pickles}): that no module "
            "saved before the change is restored, or matched name by name against the new one, is not proved"
        )


def _plain_value_from_outside(attr: str, context: ProofContext, hazards: Hazards) -> None:
    """Obligation 5, across files: code outside the class sets the name on some object to a plain
    Python value (`layer.anchors = [float(a) for a in spec]`); if that object is this module, its
    buffer refuses the value (TypeError), where the plain attribute took it."""
    where = context.analysis.project.set_outside_plain.get(attr)
    if where is not None:
        hazards.unsafe.append(
            f"`{attr}` is set to a plain Python value on an object outside its class ({where}): if that object is "
            "this module, a buffer refuses the value (TypeError)"
        )


@dataclass(frozen=True)
class Handed:
    """A class built with the attribute as an argument, and whether it is a module."""

    callee: str
    module: bool


def handed_over(info: ClassInfo, attr: str, analysis: FileAnalysis) -> Optional[Handed]:
    """The class that some code of the file builds with the attribute as an argument
    (`Decoder(window=self.window)`, `ISTFT(window=stft.window)`): it keeps its own reference
    (a module even registers a Parameter it is given), so the buffer and it part ways."""
    for call, callee in _constructor_calls(analysis):
        for arg in call.args:
            value = arg.value
            if isinstance(value, cst.Attribute) and value.attr.value == attr:
                return Handed(callee, analysis.resolver.is_module_call(call))
    return None


def _constructor_calls(analysis: FileAnalysis) -> list[tuple[cst.Call, str]]:
    """Calls of the file to a class (a module class, or any capitalised name that is no function
    of the run: `MultiModal_loss(pred, self.w)` computes and keeps nothing), found once per file."""
    found: Optional[list[tuple[cst.Call, str]]] = analysis.__dict__.get(_CONSTRUCTORS_ATTR)
    if found is None:
        found = []
        functions = analysis.function_names
        for call in nodes_of(analysis.module, cst.Call):
            callee = dotted_name(call.func)
            if callee is None:
                continue
            module_call = analysis.resolver.is_module_call(call)
            if not module_call and (not callee.rpartition(".")[2][:1].isupper() or _is_function(analysis, call, callee, functions)):
                continue
            if not callee.rpartition(".")[2].endswith(("Tensor", "Parameter", "Buffer", "Size")):
                found.append((call, callee))
        analysis.__dict__[_CONSTRUCTORS_ATTR] = found
    return found


_CONSTRUCTORS_ATTR = "_bufferlint_constructor_calls"


def _is_function(analysis: FileAnalysis, call: cst.Call, callee: str, functions: frozenset[str]) -> bool:
    """A function of this file, or a top-level function of another file of the run that the
    call's name resolves to."""
    if callee in functions:
        return True
    qualified = analysis.inference.qualify(call.func)
    return qualified is not None and analysis.project.is_function(qualified)


_WEIGHT_NAME = re.compile(r"^_?(weight|bias|w|b)$|_(weight|bias)$", re.IGNORECASE)
_RANDOM_FACTORIES = frozenset("randn rand empty normal randn_like rand_like empty_like".split())


def _random_weight(attr: str, value: cst.BaseExpression) -> bool:
    """`self.weight = torch.randn(n, m)`: a layer's weight that never became a parameter, by
    every sign a reader has (a forgotten `nn.Parameter`, or a fixed random projection)."""
    return _WEIGHT_NAME.search(attr) is not None and _randomly_built(value)


# A bias's name (`b`, `b_AA`, `bz`, `bias`, `out_bias`) and a weight's (`W`, `W_AA`, `Wz`, `weight`).
_BIAS_NAME = re.compile(r"^_?b(_\w+|[a-z])?$|^_?bias(_\w+)?$", re.IGNORECASE)
_MATRIX_NAME = re.compile(r"^_?[Ww](_\w+|[a-z])?$|weight", re.IGNORECASE)
_FILLED_FACTORIES = frozenset("zeros ones full empty zeros_like ones_like full_like".split())


def _forgotten_bias(info: ClassInfo, defining: AttrAssignment) -> bool:
    """`self.b = torch.zeros(n)` in a class that also keeps `self.W = init(torch.empty(n, m))`
    (whatever `init` returns: the weight need not be known to be a tensor): the pair of a dense
    layer written by hand, its parameters forgotten (a constant zero bias is no table anyone
    keeps on purpose)."""
    value = defining.value
    if value is None or not _BIAS_NAME.search(defining.attr):
        return False
    if not isinstance(value, cst.Call) or (dotted_name(value.func) or "").rsplit(".", 1)[-1] not in _FILLED_FACTORIES:
        return False
    return any(
        a.value is not None and _MATRIX_NAME.search(a.attr) is not None and _randomly_built(a.value)
        and a.kind is not ValueKind.PARAMETER  # a weight already wrapped in nn.Parameter is remembered
        for a in info.assignments
    )


def _randomly_built(value: cst.BaseExpression) -> bool:
    return any((dotted_name(call.func) or "").rsplit(".", 1)[-1] in _RANDOM_FACTORIES for call in nodes_of(value, cst.Call))


def _derived_from_module_state(info: ClassInfo, defining: AttrAssignment, seen: frozenset[str] = frozenset()) -> Optional[str]:
    """`self.lin.weight.t()` or `self.w * 2` (w a parameter): trained state the copy would not
    follow. Numbers read off a settings object (`self.config.scaler_start`) are no such state,
    nor is another plain tensor the class builds and never changes (`_plain_tensor`)."""
    self_name = defining.scope.self_name
    value = defining.value
    if self_name is None or value is None:
        return None
    attributes = list(nodes_of(value, cst.Attribute))
    for node in attributes:
        inner = node.value
        if (
            isinstance(inner, cst.Attribute) and is_name(inner.value, self_name) and node.attr.value not in _METADATA_ATTRS
            and inner.attr.value not in SETTINGS_OBJECTS and not _plain_tensor(info, inner.attr.value, seen | {defining.attr})
        ):
            return dotted_name(node) or f"{self_name}..."
    stateful = info.parameters | info.submodules
    for node in attributes:
        if is_name(node.value, self_name) and node.attr.value in stateful:
            return f"{self_name}.{node.attr.value}"
    return None


def _plain_tensor(info: ClassInfo, attr: str, seen: frozenset[str]) -> bool:
    """`self.<attr>` is only ever a plain tensor the class builds from no trained state, and
    nothing in the class or its bases changes it in place (`self.indice = torch.arange(n)`): a
    value derived from it (`self.indice.repeat(n, 1)`, even a view) is a copy of a constant that
    the copy cannot fall behind. (`seen`: the names on the way, so a cycle proves nothing.)"""
    if attr in seen or attr in info.parameters | info.submodules | info.registered_buffers:
        return False
    assignments = info.assignments_to(attr)
    if not assignments or any(a.kind is not ValueKind.TENSOR or a.augmented for a in assignments):
        return False
    if any(_derived_from_module_state(info, a, seen | {attr}) is not None for a in assignments):
        return False
    return not any(_changed_in_place(owner.node, attr) for owner in (info, *info.ancestors()))


def _changed_in_place(node: cst.CSTNode, attr: str) -> bool:
    """Whether code under `node` may change `<x>.<attr>` in place: an item assigned
    (`x.attr[k] = v`, `x.attr[k] += v`), an in-place method (`x.attr.add_(1)`, `x.attr[0].zero_()`)
    or an in-place function given it (`nn.init.normal_(x.attr)`)."""
    for target in nodes_of(node, (cst.AssignTarget, cst.AugAssign)):
        written: cst.BaseExpression = target.target  # type: ignore[attr-defined]
        changed = written
        while isinstance(changed, cst.Subscript):
            changed = changed.value
        if changed is not written and _names_attr(changed, attr):
            return True
    for call in nodes_of(node, cst.Call):
        func = call.func
        if not is_in_place_name(callee_name(call)):
            continue
        receiver = func.value if isinstance(func, cst.Attribute) else None
        while isinstance(receiver, cst.Subscript):
            receiver = receiver.value
        if (receiver is not None and _names_attr(receiver, attr)) or any(_names_attr(arg.value, attr) for arg in call.args):
            return True
    return False


def _names_attr(node: Optional[cst.BaseExpression], attr: str) -> bool:
    return isinstance(node, cst.Attribute) and node.attr.value == attr


def _alias_of_argument(defining: AttrAssignment) -> Optional[str]:
    """The value is an argument or another tensor attribute itself, not a fresh tensor."""
    value = defining.value
    if value is None:
        return None
    params = defining.method.params
    names = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
    if isinstance(value, cst.Name) and value.value in names:
        return value.value
    self_name = defining.scope.self_name
    if isinstance(value, cst.Attribute) and is_name(value.value, self_name or ""):
        if value.attr.value in defining.scope.tensor_attrs and value.attr.value != defining.attr:
            return f"{self_name}.{value.attr.value}"
    return None


def _large_constant(value: cst.BaseExpression) -> bool:
    nodes = list(nodes_of(value, (cst.Float, cst.Integer, cst.SimpleString)))
    for node in nodes:
        if not isinstance(node, (cst.Float, cst.Integer)):
            continue  # a string
        try:
            if abs(float(node.evaluated_value)) >= _LARGE_MAGNITUDE:
                return True
        except (ValueError, OverflowError):
            return True
    return any(isinstance(node, cst.SimpleString) and "inf" in node.value.lower() for node in nodes)


def _is_mask(attr: str, value: cst.BaseExpression) -> bool:
    if "mask" not in attr.lower():
        return False
    for node in nodes_of(value, (cst.Call, cst.Name)):
        if is_name(node, "bool"):
            return False
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "bool":
            return False
    return True
