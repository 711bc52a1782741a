"""Why turning `self.<attr>` into a buffer could break a module (see research/pytorch-buffer-semantics.md).

`blocking` hazards crash or silently change behaviour: no fix. `unsafe` ones are plausible but not
provably equivalent: an unsafe fix. `notes` keep the fix safe and are only mentioned.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

import libcst as cst

from bufferlint.analysis.classes import AttrAssignment, ClassInfo, ValueKind
from bufferlint.analysis.names import dotted_name
from bufferlint.analysis.walk import is_name, nodes_of

# Attributes torch.nn layers own already: registering a buffer of that name raises KeyError.
_LAYER_OWNED = re.compile(r"^(weight|bias|running_mean|running_var|num_batches_tracked|in_proj_\w+|[qkv]_proj_weight|bias_[kv]|weight_\w+|bias_\w+)$")
# Tensor attributes that describe rather than alias (`self.lin.weight.shape`).
_METADATA_ATTRS = frozenset("shape dtype device ndim is_cuda requires_grad layout".split())
_LARGE_MAGNITUDE = 65504.0  # float16 max: larger magnitudes become inf under .half()


@dataclass
class Hazards:
    blocking: list[str] = field(default_factory=list)
    unsafe: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def buffer_hazards(info: ClassInfo, attr: str, defining: AttrAssignment) -> Hazards:
    """Everything that stands between `self.<attr> = <tensor>` and a non-persistent buffer."""
    hazards = Hazards()
    _class_hazards(info, hazards)
    _name_hazards(info, attr, hazards)
    _assignment_hazards(info, attr, hazards)
    if defining.value is not None:
        _value_hazards(info, defining, hazards)
    return hazards


def _class_hazards(info: ClassInfo, hazards: Hazards) -> None:
    if info.is_script_module:
        hazards.blocking.append("ScriptModule subclasses do not support non-persistent buffers")
    if info.defines_register_buffer():
        hazards.blocking.append("the class or a base defines its own register_buffer")


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
    if info.is_layer_subclass and _LAYER_OWNED.match(attr):
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
    others = [a for a in assignments if not a.augmented and a.kind not in (ValueKind.TENSOR, ValueKind.NONE)]
    if others:
        kind = others[0].kind
        what = "a value that is not known to be a tensor" if kind is ValueKind.OTHER else f"an {kind.value}"
        if kind is ValueKind.MODULE:
            what = "a submodule"
        hazards.blocking.append(f"`{attr}` is also assigned {what} in {others[0].method.name.value}()")


def _value_hazards(info: ClassInfo, defining: AttrAssignment, hazards: Hazards) -> None:
    value = defining.value
    assert value is not None
    if _requires_grad(value):
        hazards.blocking.append("the tensor requires grad (use nn.Parameter to train it)")
    derived = _derived_from_module_state(info, defining)
    if derived is not None:
        hazards.blocking.append(f"the value derives from `{derived}`, which .to() would not keep in sync")
    alias = _alias_of_argument(defining)
    if alias is not None:
        hazards.unsafe.append(f"the value aliases `{alias}`: after .to() the buffer is a separate copy")
    if _large_constant(value) or _is_mask(defining.attr, value):
        hazards.notes.append("note: .half() will cast it to float16 (large constants overflow to inf)")


def _requires_grad(value: cst.BaseExpression) -> bool:
    for node in nodes_of(value, (cst.Arg, cst.Call)):
        if isinstance(node, cst.Arg):
            if node.keyword is not None and node.keyword.value == "requires_grad" and is_name(node.value, "True"):
                return True
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "requires_grad_":
            return True
    return False


def _derived_from_module_state(info: ClassInfo, defining: AttrAssignment) -> Optional[str]:
    """`self.lin.weight.t()` or `self.w * 2` (w a parameter): trained state the copy would not follow."""
    self_name = defining.scope.self_name
    value = defining.value
    if self_name is None or value is None:
        return None
    attributes = list(nodes_of(value, cst.Attribute))
    for node in attributes:
        inner = node.value
        if isinstance(inner, cst.Attribute) and is_name(inner.value, self_name) and node.attr.value not in _METADATA_ATTRS:
            return dotted_name(node) or f"{self_name}..."
    stateful = info.parameters | info.submodules
    for node in attributes:
        if is_name(node.value, self_name) and node.attr.value in stateful:
            return f"{self_name}.{node.attr.value}"
    return None


def _alias_of_argument(defining: AttrAssignment) -> Optional[str]:
    """The value is an argument or another tensor attribute itself, not a fresh tensor."""
    value = defining.value
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
