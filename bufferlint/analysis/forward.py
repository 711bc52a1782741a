"""The forward path of an nn.Module, as BUF002, BUF003, BUF004 and BUF011 need it.

- which methods run on every call: `forward` and the methods it reaches through `self.helper(...)`;
- which locals hold tensors that live where the inputs (or the module's registered state) live;
- which locals hold tensors a factory made on the CPU because it was given no `device=`;
- which calls move a tensor between devices, and what the call is once the move is dropped;
- which expressions are constants: built from literals, torch factories and constructor-time
  attributes only, never from inputs or their shapes.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from typing import Callable, Iterator, Optional, Sequence, TypeVar, Union

import libcst as cst

from bufferlint.analysis.classes import ClassInfo, ValueKind, tensor_params
from bufferlint.analysis.containers import IN_PLACE_METHODS
from bufferlint.analysis.cuda_intent import is_cuda_literal
from bufferlint.analysis.moved_attrs import is_container
from bufferlint.analysis.factory_sizes import is_zero_dim, static_numel
from bufferlint.analysis.item_changes import ItemChanges, item_changes
from bufferlint.analysis.file import FileAnalysis
from bufferlint.analysis.flow import StatementSite, assignment_targets, branch_holding, is_static, iter_all_statements, iter_sites, self_name, stored_names
from bufferlint.analysis.names import dotted_name
from bufferlint.analysis.path_functions import path_function
from bufferlint.analysis.tensors import TensorInference, is_none
from bufferlint.analysis.torch_api import NON_TENSOR_METHODS, is_tensor_library
from bufferlint.analysis.walk import is_name, nodes_of, variable_names

# torch factories that take `device=` and otherwise build their tensor on the default (CPU) device.
FACTORIES = frozenset(
    """
    zeros ones full empty arange range linspace logspace eye tensor as_tensor rand randn randint
    randperm tril_indices triu_indices hann_window hamming_window blackman_window bartlett_window
    kaiser_window scalar_tensor empty_strided normal
    """.split()
)
# Factories whose data argument may be a Python scalar: a 0-dim CPU tensor mixes with CUDA ones.
_DATA_FACTORIES = frozenset(("tensor", "as_tensor", "scalar_tensor"))
# Calls whose result differs on every call: never constants.
_NOT_CONSTANT = frozenset(
    """
    rand randn randint randperm normal bernoulli multinomial poisson empty empty_strided empty_like
    rand_like randn_like randint_like manual_seed seed
    """.split()
)
# Modules whose functions and attributes give the same value for the same arguments.
_CONSTANT_MODULES = ("torch", "math", "numpy")
_PURE_BUILTINS = frozenset("int float bool abs min max round len range pow sum tuple list".split())
_NON_TENSOR_BUILTINS = frozenset(
    "len int float bool str isinstance print range list tuple enumerate zip type getattr hasattr repr dict set".split()
)
_TORCH_DTYPES = frozenset(
    """
    float float32 float64 double half float16 bfloat16 int int8 int16 int32 int64 long short uint8
    bool complex64 complex128 cfloat cdouble
    """.split()
)
# Tensor methods that return a tensor somewhere other than where the receiver is.
_RELOCATING_METHODS = frozenset(("to", "cuda", "cpu", "type_as", "type"))
# Methods that take other tensors without requiring them on the receiver's device.
_DEVICE_TOLERANT_METHODS = frozenset(("to", "type_as", "type", "cuda", "cpu", "copy_", "new_tensor", "expand_as", "view_as"))
# Tuple-returning methods whose elements live where the receiver lives.
_SPLITTING_METHODS = frozenset("chunk split unbind tensor_split sort topk max min median mode aminmax".split())
_DROPPED_WITH_DEVICE = frozenset(("non_blocking",))
# `.to()` keywords that never change the device.
_DTYPE_ONLY_KEYWORDS = frozenset(("dtype", "copy", "non_blocking", "memory_format"))
# Reductions that, given no argument, return a 0-dim tensor (allowed next to CUDA tensors).
_FULL_REDUCTIONS = frozenset("sum mean max min prod norm std var any all argmax argmin median amax amin logsumexp".split())
# torch functions whose tensor is a shape, kept on the CPU on purpose (ONNX export).
_SHAPE_FUNCTIONS = frozenset(("shape_as_tensor", "_shape_as_tensor"))
# Calls that take some tensors on the CPU next to CUDA ones: CTC targets and lengths, and the
# shape tensor of an ONNX-traceable reshape.
_CPU_TOLERANT_FUNCTIONS = frozenset(
    (
        "torch.nn.functional.ctc_loss",
        "torch.ctc_loss",
        "torch.onnx.operators.reshape_from_tensor_shape",
        "torch._reshape_from_tensor",
        # its lengths must be a CPU tensor (or a list)
        "torch.nn.utils.rnn.pack_padded_sequence",
    )
)
# Attributes and methods only a tensor has (numpy arrays share a few, lists none): reading one
# off a parameter shows the parameter is a tensor.
_TENSOR_ONLY = frozenset(
    """
    device dtype is_cuda shape size dim view reshape permute transpose unsqueeze squeeze contiguous float
    half double long int bool to type_as new_zeros new_ones new_empty new_full new_tensor expand
    expand_as repeat flatten matmul bmm softmax masked_fill detach clone numel ndim
    """.split()
)
_CPU_TOLERANT_MODULES = frozenset(("torch.nn.CTCLoss", "torch.nn.modules.loss.CTCLoss"))


class ArgKind(enum.Enum):
    DEVICE = "device"
    DTYPE = "dtype"
    TENSOR = "tensor"  # `.to(other)`: moves to other's device and casts to its dtype
    UNKNOWN = "unknown"


class Target(enum.Enum):
    """Where a move sends its tensor."""

    INPUT = "input"  # the device of an input (or of the module's registered state)
    CUDA = "cuda"  # a hard-coded GPU
    OTHER = "other"  # a device we cannot place (a `device` variable, "cpu"...)


@dataclass
class FlowState:
    """What the locals of a method hold just before one statement runs."""

    inputs: set[str] = field(default_factory=set)  # derived from the method's tensor inputs
    bound: set[str] = field(default_factory=set)  # on the inputs' or the module's device
    cpu: dict[str, cst.Call] = field(default_factory=dict)  # made by this factory without device=
    devices: set[str] = field(default_factory=set)  # `dev = x.device`
    dtypes: set[str] = field(default_factory=set)  # `dt = x.dtype`

    def copy(self) -> "FlowState":
        return FlowState(set(self.inputs), set(self.bound), dict(self.cpu), set(self.devices), set(self.dtypes))


_Operation = Union[cst.Call, cst.BinaryOperation, cst.Comparison]


@dataclass
class Site:
    site: StatementSite
    state: FlowState  # before the statement
    # Every call, and every call or binary operation or comparison, in the statement, outermost
    # first, in source order: the forward rules each look at them, so the statement is walked once.
    calls: tuple[cst.Call, ...] = ()
    operations: tuple[_Operation, ...] = ()


# A statement of a method, its calls and its operations (the parts of a `Site` that never change).
_Statement = tuple[StatementSite, tuple[cst.Call, ...], tuple[_Operation, ...]]
T = TypeVar("T")


def _statement(site: StatementSite) -> _Statement:
    operations: tuple[_Operation, ...] = tuple(nodes_of(site.small, _OPERATIONS))  # type: ignore[arg-type]
    return site, tuple(node for node in operations if type(node) is cst.Call), operations


@dataclass
class PathMethod:
    """A method that runs on every forward call."""

    func: cst.FunctionDef
    self_name: str
    inputs: list[str]  # parameters holding input tensors, in order
    sites: list[Site] = field(default_factory=list)
    # parameters a caller on the path gives a tensor (not a list of them): see `device_input`
    given_tensors: set[str] = field(default_factory=set)
    constants: frozenset[str] = frozenset()  # locals bound only to constant expressions
    locals: frozenset[str] = frozenset()  # every name bound in the method
    # parameters some call on the path gives a value not shown constant, or leaves at a default
    # that is no literal; None for the entry, whose parameters are the call's inputs
    varying: Optional[set[str]] = None
    function: bool = False  # a top-level function of the file, called by name (path_functions.py)

    @property
    def name(self) -> str:
        return self.func.name.value

    @property
    def slots(self) -> int:
        """How many leading parameters a call does not fill: the instance's own, if any."""
        return 0 if self.function or is_static(self.func) else 1

    @property
    def device_input(self) -> Optional[str]:
        """The argument whose `.device` a fix can use: the first input parameter shown to be a
        tensor (annotated so, read like one: `x.device`, `x.view(...)`, or given one by a caller
        on the path), never a list of them."""
        return next((name for name in self.inputs if name in self.given_tensors or _shown_tensor(self.func, name)), None)


@dataclass(frozen=True)
class Move:
    """A call that moves `subject` to another device: `.to(...)`, `.cuda()`, `.type_as(x)`,
    `.type(x.type())`, `torch.as_tensor(subject, device=...)`."""

    call: cst.Call
    subject: cst.BaseExpression
    method: str
    target: Target
    device: Optional[cst.BaseExpression]  # the device expression, when it is one argument
    kept: Callable[[cst.BaseExpression], cst.BaseExpression]  # the call with the move dropped

    def without_move(self, subject: Optional[cst.BaseExpression] = None) -> cst.BaseExpression:
        """The expression once the move is gone (a dtype part stays), on `subject` if given."""
        return self.kept(self.subject if subject is None else subject)

    @property
    def description(self) -> str:
        return {"to": ".to()", "cuda": ".cuda()", "type_as": ".type_as()", "type": ".type(x.type())", "as_tensor": "torch.as_tensor(device=...)"}[
            self.method
        ]


class ForwardFacts:
    """The forward path of one module class and the device facts the forward rules share."""

    def __init__(self, analysis: FileAnalysis, info: ClassInfo) -> None:
        self.analysis = analysis
        self.info = info
        self.inference = analysis.inference
        self.parameters = info.parameters
        self.buffers = info.registered_buffers
        self.submodules = info.submodules
        self.constructor_attrs = _constructor_attrs(info) - _filled_after_construction(analysis, info)
        self.module_constants = _module_constants(analysis)
        # What `_once` found, by kind and method id (the node is kept so its id is not reused).
        self._per_method: dict[tuple[str, int], tuple[cst.FunctionDef, object]] = {}
        self.methods = self._path()

    # -- the path -------------------------------------------------------------------------
    def _path(self) -> list[PathMethod]:
        forward = self.info.methods.get("forward")
        if forward is None or self_name(forward) is None:
            return []
        entry = PathMethod(forward, self_name(forward) or "self", input_params(forward, self.inference))
        methods = {id(forward): entry}
        order = [entry]
        for _ in range(3):  # helper inputs come from their call sites: settle in a few passes
            changed = False
            for method in list(order):
                for helper, call, inputs, tensors in self._walk(method):
                    callee = helper.func
                    known = methods.get(id(callee))
                    if known is None:
                        known = methods[id(callee)] = helper  # no instance name: a static method or a function
                        order.append(known)
                        changed = True
                    varying = self._varying_arguments(known, call, method)
                    if known.varying is not None and not varying <= known.varying:
                        known.varying |= varying
                        changed = True
                    new = [p for p in inputs if p not in known.inputs]
                    if new:
                        known.inputs = [p for p in _param_names(callee) if p in {*known.inputs, *new}]
                        changed = True
                    if not set(tensors) <= known.given_tensors:
                        known.given_tensors.update(tensors)
                        changed = True
            if not changed:
                break
        else:
            # Not settled: keep no helper's parameter constant, and record every method again.
            for method in order[1:]:
                method.varying = set(_param_names(method.func))
            for method in order:
                for _ in self._walk(method):
                    pass
        return order

    def path_method(self, func: cst.FunctionDef) -> Optional[PathMethod]:
        return next((method for method in self.methods if method.func is func), None)

    def method_sites(self, func: cst.FunctionDef, inputs: list[str]) -> PathMethod:
        """Any method walked like a forward-path one, its `inputs` standing for the tensors it is given."""
        method = PathMethod(func, self_name(func) or "self", inputs)
        for _ in self._walk(method):
            pass
        return method

    def _varying_arguments(self, helper: PathMethod, call: cst.Call, caller: PathMethod) -> set[str]:
        """The parameters of the helper that `call` may give a value that is not constant: one not
        shown constant where the caller passes it, or a default that is no literal."""
        callee = helper.func
        params = _called_params(callee, helper.slots)
        if any(arg.star for arg in call.args):
            return set(params)
        given = given_arguments(callee, call, helper.slots)
        defaults = {p.name.value: p.default for p in (*callee.params.params, *callee.params.kwonly_params)}
        varying = set()
        for name in params:
            value = given.get(name)
            if value is None:
                default = defaults.get(name)
                if default is None or not _is_literal(default):
                    varying.add(name)
            elif not self.is_constant(value, caller):
                varying.add(name)
        return varying

    def _walk(self, method: PathMethod) -> Iterator[tuple[PathMethod, cst.Call, list[str], list[str]]]:
        """Record the state before each statement; yield the helpers called (new ones, not yet
        walked), the call, their input params and those of them given a tensor."""
        func = method.func
        method.locals = self._once("locals", func, lambda: frozenset(_bound_names(func)))
        fixed = _constant_params(method)
        # (a helper's constants depend on which of its parameters its callers keep constant)
        method.constants = self._once(f"constants {sorted(fixed)}", func, lambda: self._constant_locals(method, fixed))
        state = FlowState(set(method.inputs), set(method.inputs))
        method.sites = []
        for site, calls, operations in self._statements(func):
            method.sites.append(Site(site, state.copy(), calls, operations))
            yield from self._helper_calls(method, calls, state)
            self._update(site.small, state, method)

    def _once(self, kind: str, func: cst.FunctionDef, compute: Callable[[], T]) -> T:
        """`compute()` for `func`, computed once: the path walks a method again in each pass that
        changes its inputs, and a method's statements, bindings and constants do not depend on them."""
        known = self._per_method.get((kind, id(func)))
        if known is None:
            known = self._per_method[(kind, id(func))] = (func, compute())
        return known[1]  # type: ignore[return-value]

    def _statements(self, func: cst.FunctionDef) -> list[_Statement]:
        """Each statement of `func` with its calls and operations (see `Site`)."""
        return self._once("statements", func, lambda: [_statement(site) for site in iter_sites(func)])

    def _helper_calls(
        self, method: PathMethod, calls: tuple[cst.Call, ...], state: FlowState
    ) -> Iterator[tuple[PathMethod, cst.Call, list[str], list[str]]]:
        for call in calls:
            helper = self._helper(call, method)
            if helper is None:
                continue
            callee, slots = helper.func, helper.slots
            inputs = _bound_params(callee, call, slots, lambda e: self.derived(e, state, method, inputs_only=True))
            yield helper, call, inputs, _bound_params(callee, call, slots, lambda e: self._a_tensor(e, state, method))

    def _helper(self, call: cst.Call, caller: PathMethod) -> Optional[PathMethod]:
        """What `call` runs when it is a helper on the path: a method called on the instance, or
        (from a method of the class) a top-level function of the file called by name."""
        func = call.func
        if type(func) is cst.Name:
            if caller.function or func.value in caller.locals:
                return None  # one call away from the class only; a local of that name shadows it
            found = path_function(self.analysis, func.value)
            if found is None or _defines(caller.func, func.value):
                return None
            return PathMethod(found, "", [], varying=set(), function=True)
        if _self_attr(func, caller.self_name) is None:
            return None
        assert isinstance(func, cst.Attribute)
        callee = self.info.methods.get(func.attr.value)
        if callee is None or callee.name.value in self.info.properties or (self_name(callee) is None and not is_static(callee)):
            return None
        return PathMethod(callee, self_name(callee) or "", [], varying=set())  # "": a static method has no instance

    def _a_tensor(self, expr: cst.BaseExpression, state: FlowState, method: PathMethod) -> bool:
        """An argument known to be one tensor: a parameter shown to be one, or a value computed
        from the inputs (a bare parameter that is not shown to be a tensor may be a list)."""
        if isinstance(expr, cst.Name) and expr.value in method.inputs:
            return expr.value in method.given_tensors or _shown_tensor(method.func, expr.value)
        return self.derived(expr, state, method, inputs_only=True)

    def _update(self, small: cst.BaseSmallStatement, state: FlowState, method: PathMethod) -> None:
        for target, value in _assigned(small):
            if isinstance(target, cst.Name):
                name = target.value
                _toggle(state.inputs, name, self.derived(value, state, method, inputs_only=True))
                _toggle(state.bound, name, self.derived(value, state, method))
                _toggle(state.devices, name, _is_attr_of(value, "device"))
                _toggle(state.dtypes, name, _is_attr_of(value, "dtype"))
                origin = self.cpu_origin(value, state, method)
                if origin is not None:
                    state.cpu[name] = origin
                else:
                    state.cpu.pop(name, None)
            elif isinstance(target, (cst.Tuple, cst.List)):
                self._update_unpacked(target, value, state, method)

    def _update_unpacked(
        self, target: cst.BaseExpression, value: cst.BaseExpression, state: FlowState, method: PathMethod
    ) -> None:
        pairs = _parallel(target, value)
        if pairs is not None:  # `b, device = x.shape[0], x.device`: each name gets its own value
            before = state.copy()  # every right-hand side is read before any name is bound
            for element_target, element in pairs:
                alone = before.copy()
                self._update(cst.Assign(targets=[cst.AssignTarget(target=element_target)], value=element), alone, method)
                _take_name(state, alone, element_target.value)
            return
        names = [e.value.value for e in target.elements if isinstance(e.value, cst.Name)]  # type: ignore[attr-defined]
        splits = self._splits(value, state, method, inputs_only=False)
        splits_inputs = self._splits(value, state, method, inputs_only=True)
        for name in names:
            _toggle(state.bound, name, splits)
            _toggle(state.inputs, name, splits_inputs)
            state.cpu.pop(name, None)
            state.devices.discard(name)
            state.dtypes.discard(name)

    def _splits(self, value: cst.BaseExpression, state: FlowState, method: PathMethod, inputs_only: bool) -> bool:
        """`q, k, v = self.qkv(x).chunk(3, -1)`: every element lives where x lives."""
        if isinstance(value, (cst.Tuple, cst.List)):
            return any(self.derived(e.value, state, method, inputs_only) for e in value.elements)
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
            if value.func.attr.value in _SPLITTING_METHODS:
                return self.derived(value.func.value, state, method, inputs_only)
        if isinstance(value, cst.Call) and self._is_submodule_call(value, method):
            return not inputs_only or self._any_arg(value, state, method, inputs_only)
        return False

    # -- where tensors live -----------------------------------------------------------------
    def derived(self, expr: cst.BaseExpression, state: FlowState, method: PathMethod, inputs_only: bool = False) -> bool:
        """Whether `expr` is a tensor living where the inputs live. With `inputs_only`, only values
        computed from inputs count; otherwise the module's parameters, buffers and submodule
        outputs count too (they follow the module's device)."""
        kind = type(expr)  # exact tests: these classes have no subclasses, and ABCMeta is slow
        if kind is cst.Name:
            return expr.value in (state.inputs if inputs_only else state.bound)  # type: ignore[attr-defined]
        if kind is cst.Attribute:
            return self._derived_attribute(expr, state, method, inputs_only)  # type: ignore[arg-type]
        if kind is cst.Subscript:
            return self.derived(expr.value, state, method, inputs_only)  # type: ignore[attr-defined]
        if kind is cst.BinaryOperation or kind is cst.Comparison:
            return any(self.derived(op, state, method, inputs_only) for op in _operands(expr))  # type: ignore[arg-type]
        if kind is cst.UnaryOperation:
            return not isinstance(expr.operator, cst.Not) and self.derived(expr.expression, state, method, inputs_only)  # type: ignore[attr-defined]
        if kind is cst.IfExp:
            branches = [b for b in (expr.body, expr.orelse) if not is_none(b)]  # type: ignore[attr-defined]
            return bool(branches) and all(self.derived(b, state, method, inputs_only) for b in branches)
        if kind is cst.Call:
            return self._derived_call(expr, state, method, inputs_only)  # type: ignore[arg-type]
        return False

    def _derived_attribute(self, expr: cst.Attribute, state: FlowState, method: PathMethod, inputs_only: bool) -> bool:
        attr = _self_attr(expr, method.self_name)
        if attr is not None:
            return not inputs_only and (attr in self.parameters or attr in self.buffers)
        if _self_attr(expr.value, method.self_name) in self.submodules:
            return not inputs_only  # `self.lin.weight`
        return expr.attr.value in ("T", "mT", "H", "mH", "real", "imag", "data") and self.derived(
            expr.value, state, method, inputs_only
        )

    def _derived_call(self, call: cst.Call, state: FlowState, method: PathMethod, inputs_only: bool) -> bool:
        func = call.func
        qualified = self.inference.qualify(func)
        if qualified is not None and qualified.startswith("torch."):
            short = qualified.rsplit(".", 1)[-1]
            if short in _SHAPE_FUNCTIONS:
                return False  # a shape as a CPU tensor, whatever the input's device
            if short in FACTORIES and qualified.count(".") == 1:
                device = _keyword(call, "device")
                return device is not None and self.device_target(device, state, method, inputs_only) is Target.INPUT
            return self._any_arg(call, state, method, inputs_only)
        if self._is_submodule_call(call, method):
            return not inputs_only or self._any_arg(call, state, method, inputs_only)
        if is_tensor_library(qualified):  # `einops.rearrange(x, ...)` stays where `x` is
            return self._any_arg(call, state, method, inputs_only)
        if isinstance(func, cst.Attribute):
            if _self_attr(func, method.self_name) is not None:  # a helper method
                return self._any_arg(call, state, method, inputs_only)
            move = self.move(call, state, method)
            if move is not None:
                return move.target is Target.INPUT
            method_name = func.attr.value
            if method_name == "cpu" or method_name in NON_TENSOR_METHODS:
                return False
            return self.derived(func.value, state, method, inputs_only)
        if isinstance(func, cst.Name) and func.value not in _NON_TENSOR_BUILTINS:
            return self._any_arg(call, state, method, inputs_only)
        return False

    def _any_arg(self, call: cst.Call, state: FlowState, method: PathMethod, inputs_only: bool) -> bool:
        return any(self.derived(v, state, method, inputs_only) for v in _arg_values(call))

    def _is_submodule_call(self, call: cst.Call, method: PathMethod) -> bool:
        return _self_attr(call.func, method.self_name) in self.submodules

    def submodule_call(self, call: cst.Call, method: PathMethod) -> bool:
        return self._is_submodule_call(call, method)

    # -- tensors made on the CPU -------------------------------------------------------------
    def factory_without_device(self, call: cst.Call, state: FlowState, method: PathMethod) -> bool:
        """`torch.zeros(b, 8)`: a torch factory given no device (0-dim data tensors excluded)."""
        qualified = self.inference.qualify(call.func)
        if qualified is None or qualified.count(".") != 1 or not qualified.startswith("torch."):
            return False
        short = qualified[len("torch.") :]
        if short not in FACTORIES or _keyword(call, "device") is not None or any(a.star for a in call.args):
            return False
        if short == "normal" and _keyword(call, "size") is None and len(call.args) < 3:
            return False  # normal(mean_tensor, std_tensor) is made where its arguments are
        if static_numel(call, self.inference.qualify) == 0 or is_zero_dim(call, self.inference.qualify):
            return False  # an empty placeholder, or a 0-dim tensor: neither trips a device check
        if short in _DATA_FACTORIES:
            data = call.args[0].value if call.args and call.args[0].keyword is None else None
            if data is None or not isinstance(data, (cst.List, cst.Tuple, cst.ListComp)):
                return False  # a scalar (0-dim, allowed next to CUDA tensors) or a tensor already placed
        return True

    def cpu_origin(self, expr: cst.BaseExpression, state: FlowState, method: PathMethod) -> Optional[cst.Call]:
        """The device-less factory call `expr` still is (through methods, slices and arithmetic
        with plain numbers), or None."""
        if isinstance(expr, cst.Name):
            return state.cpu.get(expr.value)
        if isinstance(expr, cst.Subscript):
            if _may_pick_elements(expr, state):
                return None  # `t[0]` of a 1-dim tensor is 0-dim: allowed next to CUDA tensors
            return self.cpu_origin(expr.value, state, method)
        if isinstance(expr, cst.Attribute) and expr.attr.value in ("T", "mT", "real", "imag"):
            return self.cpu_origin(expr.value, state, method)
        if isinstance(expr, cst.UnaryOperation):
            return self.cpu_origin(expr.expression, state, method)
        if isinstance(expr, (cst.BinaryOperation, cst.Comparison)):
            return self._cpu_of_operands(list(_operands(expr)), state, method)
        if isinstance(expr, cst.Call):
            return self._cpu_origin_call(expr, state, method)
        return None

    def _cpu_origin_call(self, call: cst.Call, state: FlowState, method: PathMethod) -> Optional[cst.Call]:
        if self.factory_without_device(call, state, method):
            return call
        qualified = self.inference.qualify(call.func)
        if qualified is not None and qualified.startswith("torch."):
            return self._cpu_of_operands(list(_arg_values(call)), state, method)
        func = call.func
        if isinstance(func, cst.Attribute) and _self_attr(func, method.self_name) is None:
            name = func.attr.value
            if name in _RELOCATING_METHODS:
                if not self.casts_only(call, state, method):
                    return None  # moved, or maybe moved (`.to(other)`, `.type_as(t)`): not ours to judge
                return self.cpu_origin(func.value, state, method)
            if name.startswith("new_") or name in NON_TENSOR_METHODS:
                return None
            if name in _FULL_REDUCTIONS and not call.args:
                return None  # `lengths.max()`: 0-dim
            return self.cpu_origin(func.value, state, method)
        return None

    def casts_only(self, call: cst.Call, state: FlowState, method: PathMethod) -> bool:
        """`.to(torch.float16)`, `.to(dtype=dt)`, `.type(torch.long)`: a cast that cannot change the device."""
        func = call.func
        if not isinstance(func, cst.Attribute) or any(a.star for a in call.args):
            return False
        name = func.attr.value
        if name == "type":
            if len(call.args) != 1 or _names_tensor_type(call.args[0].value):
                return False  # `.type(x.type())`, `.type("torch.cuda.FloatTensor")`: the type names a device
            return self._arg_kind(call.args[0].value, state, method) is ArgKind.DTYPE
        if name != "to":
            return False
        for arg in call.args:
            if arg.keyword is not None:
                if arg.keyword.value not in _DTYPE_ONLY_KEYWORDS:
                    return False
            elif self._arg_kind(arg.value, state, method) is not ArgKind.DTYPE:
                return False
        return bool(call.args)

    def cpu_tolerant(self, call: cst.Call, method: PathMethod) -> bool:
        """CTC losses (targets, lengths) and ONNX reshapes (the shape) take CPU tensors next to CUDA ones."""
        if self.inference.qualify(call.func) in _CPU_TOLERANT_FUNCTIONS:
            return True
        attr = _self_attr(call.func, method.self_name)
        return attr is not None and attr in self._cpu_tolerant_submodules()

    def _cpu_tolerant_submodules(self) -> frozenset[str]:
        found = set()
        for a in self.info.assignments:
            if a.kind is ValueKind.MODULE and isinstance(a.value, cst.Call):
                if self.inference.qualify(a.value.func) in _CPU_TOLERANT_MODULES:
                    found.add(a.attr)
        return frozenset(found)

    def _cpu_of_operands(
        self, operands: Sequence[cst.BaseExpression], state: FlowState, method: PathMethod
    ) -> Optional[cst.Call]:
        if any(self.derived(op, state, method) for op in operands):
            return None
        return next((o for o in (self.cpu_origin(op, state, method) for op in operands) if o is not None), None)

    # -- moves ---------------------------------------------------------------------------------
    def move(self, call: cst.Call, state: FlowState, method: PathMethod) -> Optional[Move]:  # (see MOVE_TEXT)
        """The device move `call` makes, or None (dtype-only casts, `.cpu()` and unknowns are none)."""
        func = call.func
        qualified = self.inference.qualify(func)
        if qualified in ("torch.as_tensor",):
            return self._as_tensor_move(call, state, method)
        if not isinstance(func, cst.Attribute) or qualified is not None:
            return None
        if func.attr.value == "to":
            return self._to_move(call, func.value, state, method)
        if func.attr.value == "cuda" and not any(a.star for a in call.args):
            return Move(call, func.value, "cuda", Target.CUDA, None, _keep_subject(call))
        if func.attr.value == "type_as" and len(call.args) == 1 and call.args[0].keyword is None:
            other = call.args[0].value
            if self._arg_kind(other, state, method) is ArgKind.TENSOR:
                return Move(call, func.value, "type_as", Target.INPUT, None, _type_as_kept(call, other))
        if func.attr.value == "type" and len(call.args) == 1 and call.args[0].keyword is None:
            typed = _type_string_of(call.args[0].value)  # `.type(x.type())`: x's tensor type, device included
            if typed is not None and self._arg_kind(typed, state, method) is ArgKind.TENSOR:
                return Move(call, func.value, "type", Target.INPUT, None, _type_as_kept(call, typed))
        return None

    def follows_input_to_cuda(self, move: Move, site: StatementSite, state: FlowState, method: PathMethod) -> bool:
        """`.cuda()` in the body of `if x.is_cuda:`, `x` from the inputs: the move sends the tensor
        where the input lives, as `.to(x.device)` would (PointNet's `if x.is_cuda: iden = iden.cuda()`)."""
        if move.target is not Target.CUDA or move.method != "cuda" or move.call.args:
            return False
        for branch in nodes_of(site.top, cst.If):
            test = branch.test
            if isinstance(test, cst.Attribute) and test.attr.value == "is_cuda" and branch_holding(branch, site.line) == 0:
                return self.derived(test.value, state, method, inputs_only=True)
        return False

    def _to_move(
        self, call: cst.Call, subject: cst.BaseExpression, state: FlowState, method: PathMethod
    ) -> Optional[Move]:
        if any(a.star for a in call.args):
            return None
        positional = [a for a in call.args if a.keyword is None]
        device: Optional[cst.Arg] = _keyword_arg(call, "device")
        tensor: Optional[cst.Arg] = None
        if positional:
            kind = self._arg_kind(positional[0].value, state, method)
            if kind is ArgKind.UNKNOWN:
                return None
            if kind is ArgKind.DEVICE:
                device = positional[0]
            elif kind is ArgKind.TENSOR:
                tensor = positional[0]
        if device is not None:
            target = self.device_target(device.value, state, method)
            return Move(call, subject, "to", target, device.value, _to_kept(call, device, None))
        if tensor is not None:
            target = Target.INPUT if self.derived(tensor.value, state, method) else Target.OTHER
            return Move(call, subject, "to", target, tensor.value, _to_kept(call, None, tensor))
        return None

    def _as_tensor_move(self, call: cst.Call, state: FlowState, method: PathMethod) -> Optional[Move]:
        device = _keyword_arg(call, "device")
        if device is None or not call.args or call.args[0].keyword is not None:
            return None
        target = self.device_target(device.value, state, method)
        return Move(call, call.args[0].value, "as_tensor", target, device.value, _as_tensor_kept(call, device))

    def _arg_kind(self, expr: cst.BaseExpression, state: FlowState, method: PathMethod) -> ArgKind:
        if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)) or _is_attr_of(expr, "device") or _get_device_of(expr) is not None:
            return ArgKind.DEVICE
        if _is_attr_of(expr, "dtype"):
            return ArgKind.DTYPE
        qualified = self.inference.qualify(expr)
        if qualified is not None:
            if qualified == "torch.device":
                return ArgKind.UNKNOWN
            if qualified.startswith("torch.") and qualified[len("torch.") :] in _TORCH_DTYPES:
                return ArgKind.DTYPE
        if isinstance(expr, cst.Call) and self.inference.qualify(expr.func) == "torch.device":
            return ArgKind.DEVICE
        if isinstance(expr, cst.Name):
            name = expr.value
            if name in state.devices or name in ("device", "dev") or name.endswith("_device"):
                return ArgKind.DEVICE
            if name in state.dtypes or name == "dtype" or name.endswith("_dtype"):
                return ArgKind.DTYPE
        if self.derived(expr, state, method):
            return ArgKind.TENSOR
        return ArgKind.UNKNOWN

    def device_target(
        self, expr: cst.BaseExpression, state: FlowState, method: PathMethod, inputs_only: bool = False
    ) -> Target:
        if is_cuda_literal(expr, self.inference.qualify):
            return Target.CUDA
        if isinstance(expr, cst.Attribute) and expr.attr.value == "device":
            if self.derived(expr.value, state, method, inputs_only):
                return Target.INPUT
        ordinal_of = _get_device_of(expr)  # `x.get_device()`: the input's CUDA ordinal
        if ordinal_of is not None and self.derived(ordinal_of, state, method, inputs_only):
            return Target.INPUT
        if isinstance(expr, cst.Name) and expr.value in state.devices and not inputs_only:
            return Target.INPUT
        return Target.OTHER

    # -- constants ------------------------------------------------------------------------------
    def is_constant(self, expr: cst.BaseExpression, method: PathMethod) -> bool:
        """Built only from literals, torch calls that are not random, constructor-time attributes,
        module-level literals and locals bound to such expressions."""
        return _Constant(self, method).check(expr)

    def _constant_locals(self, method: PathMethod, fixed: frozenset[str] = frozenset()) -> frozenset[str]:
        """The locals bound only to constants, and `fixed`: parameters every call on the path
        keeps constant (`max_period=10000` left at its default)."""
        values: dict[str, list[cst.BaseExpression]] = {}
        blocked: set[str] = set(_param_names(method.func)) - fixed
        for site, calls, _ in self._statements(method.func):
            for target, value in _assigned(site.small):
                value = _data_of(value)
                pairs = [(target, value)] if isinstance(target, cst.Name) else _parallel(target, value)
                if pairs is None:
                    blocked |= set(stored_names(target))
                for bound, element in pairs or ():  # `lo, hi, n = 2.0, 22.0, self.bins`: one binding each
                    values.setdefault(bound.value, []).append(element)
            blocked.update(_filled_containers(calls))
            if isinstance(site.small, cst.AugAssign) and isinstance(site.small.target, cst.Name):
                # `kernel /= 256.`: still a constant when what it applies is one
                values.setdefault(site.small.target.value, []).append(site.small.value)
        blocked |= set(method.locals) - set(values) - fixed  # loop targets, with-targets, walrus...
        blocked |= {name for name in fixed if name in values}  # a parameter the body rebinds
        constants: list[str] = [name for name in fixed if name not in blocked]  # in the order found
        seen_when: dict[str, int] = {}  # how many constants were visible when a name was last tested
        changed = True
        while changed:
            changed = False
            visible = len(constants)
            method.constants = frozenset(constants)
            for name, exprs in values.items():
                if name in blocked or name in method.constants or name in constants[visible:]:
                    continue
                # Only a constant found since its last test can change a name's answer.
                if name in seen_when and not _mentions_any(exprs, constants[seen_when[name] : visible]):
                    continue
                seen_when[name] = visible
                if self._constant_binding(name, exprs, method, constants):
                    constants.append(name)
                    changed = True
        return frozenset(constants)

    def _constant_binding(self, name: str, exprs: list[cst.BaseExpression], method: PathMethod, constants: list[str]) -> bool:
        """Every value bound to `name` is constant, reading `name` itself as one: a chain from a
        constant base that only applies constants to it (`k = torch.tensor(...)`, `k /= 256.`,
        `k = k.repeat(3, 1, 1, 1)`) stays constant; at least one value must not read `name`."""
        if all(name in variable_names(e) for e in exprs):
            return False
        method.constants = frozenset((*constants, name))
        try:
            return all(self.is_constant(e, method) for e in exprs)
        finally:
            method.constants = frozenset(constants)


def _get_device_of(expr: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """`x` of `x.get_device()`."""
    if isinstance(expr, cst.Call) and not expr.args and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "get_device":
        return expr.func.value
    return None


def _data_of(value: cst.BaseExpression) -> cst.BaseExpression:
    """What a value holds, less a device move at its end (`k.repeat(3, 1, 1, 1).to(x.device)`,
    `.cuda()`, `.type_as(x)`): a constant moved to the input's device is still constant data."""
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in _MOVES:
        if value.func.attr.value != "cuda" and len(value.args) != 1:
            break
        value = value.func.value
    return value


# methods that place a tensor without changing its data
_MOVES = frozenset(("to", "cuda", "type_as"))


def _mentions_any(exprs: list[cst.BaseExpression], names: list[str]) -> bool:
    wanted = set(names)
    return bool(wanted) and any(node.value in wanted for e in exprs for node in nodes_of(e, cst.Name))


class _Constant:
    """The constant-expression test, recursive over the expression's shape."""

    def __init__(self, facts: ForwardFacts, method: PathMethod) -> None:
        self.facts = facts
        self.method = method

    def check(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString)):
            return True
        if isinstance(expr, cst.Name):
            return self._name(expr.value)
        if isinstance(expr, cst.Attribute):
            return self._attribute(expr)
        if isinstance(expr, cst.Call):
            return self._call(expr)
        if isinstance(expr, (cst.BinaryOperation, cst.Comparison, cst.BooleanOperation)):
            return all(self.check(op) for op in _operands(expr))
        if isinstance(expr, cst.UnaryOperation):
            return self.check(expr.expression)
        if isinstance(expr, (cst.Tuple, cst.List)):
            return all(isinstance(e, cst.Element) and self.check(e.value) for e in expr.elements)
        if isinstance(expr, cst.Subscript):
            return self.check(expr.value) and all(self._slice(s.slice) for s in expr.slice)
        if isinstance(expr, cst.IfExp):
            return self.check(expr.test) and self.check(expr.body) and self.check(expr.orelse)
        return False

    def _name(self, name: str) -> bool:
        if name in ("True", "False", "None"):
            return True
        if name in self.method.locals:
            return name in self.method.constants
        return name in self.facts.module_constants or self.facts.inference.module_tensor(name)

    def _attribute(self, expr: cst.Attribute) -> bool:
        attr = _self_attr(expr, self.method.self_name)
        if attr is not None:
            return attr in self.facts.constructor_attrs
        qualified = self.facts.inference.qualify(expr)
        if qualified is not None:
            return qualified.split(".")[0] in _CONSTANT_MODULES
        return self.check(expr.value)  # `.T`, `.shape` of a constant

    def _call(self, call: cst.Call) -> bool:
        if not all(self.check(arg.value) for arg in call.args if not arg.star):
            return False
        if any(arg.star for arg in call.args):
            return False
        func = call.func
        qualified = self.facts.inference.qualify(func)
        if qualified is not None:
            head, _, rest = qualified.partition(".")
            # `np.eye(3)`, `np.array([...])`: numpy computes the same table on every call, but
            # not `np.random.*` (nor `torch.rand`)
            return head in _CONSTANT_MODULES and not rest.startswith("random.") and qualified.rsplit(".", 1)[-1] not in _NOT_CONSTANT
        if isinstance(func, cst.Name):
            return func.value in _PURE_BUILTINS and func.value not in self.method.locals
        if isinstance(func, cst.Attribute) and _self_attr(func, self.method.self_name) is None:
            name = func.attr.value
            return not name.endswith("_") and name not in _NOT_CONSTANT and name not in _RELOCATING_METHODS - {
                "type"
            } and self.check(func.value)
        return False

    def _slice(self, node: cst.BaseSlice) -> bool:
        if isinstance(node, cst.Index):
            return self.check(node.value)
        if isinstance(node, cst.Slice):
            return all(part is None or self.check(part) for part in (node.lower, node.upper, node.step))
        return False


# Facts live on the analysis they describe. (A global WeakKeyDictionary never dropped an entry:
# each ForwardFacts refers back to its analysis, the key, so every file's tree stayed alive.)
_FACTS_ATTR = "_bufferlint_forward_facts"
_CONSTANTS_ATTR = "_bufferlint_module_constants"
_CHANGED_ATTR = "_bufferlint_changed_by_item"

# The text of every call `ForwardFacts.move` takes for a device move: `.to(`, `.cuda(`,
# `.type_as(` (blanks and line continuations may sit between the dot and the name), `.type(`
# with another `.type(` within 120 characters on its line (`t.type(x.type())`; a bare `.type`
# is everywhere in configs) and `as_tensor`. A comment may sit there too (inside brackets): a dot followed by one is taken as a
# possible move without reading further (`MAY_MOVE_ACROSS_COMMENT`), which keeps both patterns
# linear in the text. A file matching neither holds no move, so a rule about moves need not walk it.
MOVE_TEXT = re.compile(rb"\.[ \t\f\r\n\\]*(?:to|cuda|type_as)\b|\.type\([^\n]{0,120}?\.type\(|as_tensor")
MAY_MOVE_ACROSS_COMMENT = re.compile(rb"\.[ \t\f\r\n\\]*#")


def may_hold_move(analysis: FileAnalysis) -> bool:
    """Whether the file's text may hold a device move (True when the text is unknown)."""
    return analysis.may_match(MOVE_TEXT) or analysis.may_match(MAY_MOVE_ACROSS_COMMENT)


def forward_facts(analysis: FileAnalysis, info: ClassInfo) -> ForwardFacts:
    """The facts for one class, computed once per file and shared by the four forward rules."""
    per_file: dict[int, ForwardFacts] = analysis.__dict__.setdefault(_FACTS_ATTR, {})
    facts = per_file.get(id(info))
    if facts is None:
        facts = per_file[id(info)] = ForwardFacts(analysis, info)
    return facts


# -- small helpers ---------------------------------------------------------------------------------
def _filled_containers(calls: tuple[cst.Call, ...]) -> Iterator[str]:
    """Names of containers changed in place: `out = []` filled by `out.append(f(x))` is not the
    empty literal it was bound to."""
    for call in calls:
        func = call.func
        if type(func) is cst.Attribute and type(func.value) is cst.Name and func.attr.value in IN_PLACE_METHODS:  # type: ignore[attr-defined]
            yield func.value.value  # type: ignore[attr-defined]


_OPERATIONS = (cst.Call, cst.BinaryOperation, cst.Comparison)

def calls_in(root: cst.CSTNode) -> Iterator[cst.Call]:
    for node in nodes_of(root, cst.Call):
        assert isinstance(node, cst.Call)
        yield node


def _shown_tensor(func: cst.FunctionDef, name: str) -> bool:
    params = func.params
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        if param.name.value == name and param.annotation is not None:
            annotation = dotted_name(param.annotation.annotation) or ""
            return annotation.rpartition(".")[2] in ("Tensor", "FloatTensor", "LongTensor")
    tensor_use = False
    for node in nodes_of(func.body, (cst.Attribute, cst.Subscript, cst.For, cst.Call)):
        if isinstance(node, cst.Attribute) and type(node.value) is cst.Name and node.value.value == name:  # type: ignore[attr-defined]
            tensor_use = tensor_use or node.attr.value in _TENSOR_ONLY
        elif isinstance(node, cst.Subscript) and type(node.value) is cst.Name and node.value.value == name:  # type: ignore[attr-defined]
            if all(isinstance(e.slice, cst.Index) and isinstance(e.slice.value, cst.Integer) for e in node.slice):
                return False  # `clips[0]`: one element of a list of tensors
        elif isinstance(node, cst.For) and type(node.iter) is cst.Name and node.iter.value == name:  # type: ignore[attr-defined]
            return False
        elif isinstance(node, cst.Call) and type(node.func) is cst.Name and node.func.value == "len":  # type: ignore[attr-defined]
            if node.args and type(node.args[0].value) is cst.Name and node.args[0].value.value == name:  # type: ignore[attr-defined]
                return False
    return tensor_use


def input_params(func: cst.FunctionDef, inference: TensorInference) -> list[str]:
    """Parameters of `forward` that may hold input tensors: annotated as tensors, or unannotated
    with no default or a `None` default (`scale: float`, `n=3` are not tensors)."""
    annotated = tensor_params(func, inference)
    params = func.params
    names = []
    for param in (*params.posonly_params, *params.params, *params.kwonly_params)[1:]:
        name = param.name.value
        if name in annotated or (param.annotation is None and (param.default is None or is_none(param.default))):
            names.append(name)
    return names


def _param_names(func: cst.FunctionDef) -> list[str]:
    params = func.params
    names = [p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)]
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            names.append(star.name.value)
    return names


def _constant_params(method: PathMethod) -> frozenset[str]:
    """The parameters of a helper on the path that no call on it varies (none for the entry)."""
    if method.varying is None:
        return frozenset()
    return frozenset(_called_params(method.func, method.slots)) - method.varying - _starred_params(method.func)


def _called_params(func: cst.FunctionDef, slots: int) -> list[str]:
    """The parameters a call fills: all but the first `slots` (the instance's own, if any)."""
    return _param_names(func)[slots:]


def params_of(func: cst.FunctionDef) -> frozenset[str]:
    """Every parameter name of `func`, starred ones too."""
    return frozenset(_param_names(func))


def _starred_params(func: cst.FunctionDef) -> set[str]:
    return {star.name.value for star in (func.params.star_arg, func.params.star_kwarg) if isinstance(star, cst.Param)}


def value_bound_before(subject: cst.BaseExpression, site: Site, method: PathMethod) -> cst.BaseExpression:
    """For a local that the statements of the method before `site` bind exactly once, by a plain
    assignment (`iden = torch.eye(3).repeat(b, 1)`, then `iden = iden.cuda()` at `site`), and no
    loop binds: the value it was bound to; otherwise `subject` itself."""
    if not isinstance(subject, cst.Name) or subject.value not in method.locals:
        return subject
    name = subject.value
    earlier: list[cst.BaseExpression] = []
    for other in method.sites:
        small = other.site.small
        if small is site.site.small:
            break
        if isinstance(small, (cst.Assign, cst.AnnAssign, cst.AugAssign)) and name in {n for t in assignment_targets(small) for n in stored_names(t)}:
            if not (isinstance(small, cst.Assign) and len(small.targets) == 1 and is_name(small.targets[0].target, name)):
                return subject  # bound in a way that is no single value (`a, iden = ...`, `iden += 1`)
            earlier.append(small.value)
    loops = {bound for loop in nodes_of(method.func.body, cst.For) for bound in stored_names(loop.target)}
    return earlier[0] if len(earlier) == 1 and name not in loops else subject


def given_arguments(callee: cst.FunctionDef, call: cst.Call, slots: int = 0) -> dict[str, cst.BaseExpression]:
    """What `call` passes for each named parameter (the first `slots` are the instance's, which
    the call does not pass), in the call's order, up to a starred argument (after it, what goes
    where is not known)."""
    positional = [p.name.value for p in (*callee.params.posonly_params, *callee.params.params)][slots:]
    given: dict[str, cst.BaseExpression] = {}
    index = 0
    for arg in call.args:
        if arg.star:
            break
        if arg.keyword is not None:
            given[arg.keyword.value] = arg.value
            continue
        if index < len(positional):
            given[positional[index]] = arg.value
        index += 1
    return given


def _bound_params(callee: cst.FunctionDef, call: cst.Call, slots: int, is_input: Callable[[cst.BaseExpression], bool]) -> list[str]:
    """Parameters of `callee` that `call` passes an input-derived tensor to."""
    return [name for name, value in given_arguments(callee, call, slots).items() if is_input(value)]


def _bound_names(func: cst.FunctionDef) -> set[str]:
    """Parameters and the names the body binds: assignments, loop and `with`/`except`/import
    targets, and walrus targets in `if`/`while` tests. Statements are walked, not expressions
    (a full walk per method cost 3% of a cold run); comprehension variables do not leak."""
    names = set(_param_names(func))
    for stmt in iter_all_statements(func.body):
        kind = type(stmt)
        if kind is cst.SimpleStatementLine:
            for small in stmt.body:  # type: ignore[attr-defined]
                names.update(_small_binds(small))
        elif kind is cst.For:
            names.update(stored_names(stmt.target))  # type: ignore[attr-defined]
        elif kind is cst.With:
            for item in stmt.items:  # type: ignore[attr-defined]
                if item.asname is not None:
                    names.update(stored_names(item.asname.name))
        elif kind is cst.Try or kind is cst.TryStar:
            for handler in stmt.handlers:  # type: ignore[attr-defined]
                if handler.name is not None:
                    names.update(stored_names(handler.name.name))
        elif kind is cst.If or kind is cst.While:
            for walrus in nodes_of(stmt.test, cst.NamedExpr):  # type: ignore[attr-defined]
                names.update(stored_names(walrus.target))
    return names


def _defines(func: cst.FunctionDef, name: str) -> bool:
    """Whether `func` holds a nested `def` or `class` of that name."""
    return any(type(stmt) in (cst.FunctionDef, cst.ClassDef) and stmt.name.value == name for stmt in iter_all_statements(func.body))  # type: ignore[attr-defined]


def _small_binds(small: cst.BaseSmallStatement) -> Iterator[str]:
    kind = type(small)
    if kind is cst.Assign:
        for target in small.targets:  # type: ignore[attr-defined]
            yield from stored_names(target.target)
    elif kind is cst.AugAssign or kind is cst.AnnAssign:
        yield from stored_names(small.target)  # type: ignore[attr-defined]
    elif (kind is cst.Import or kind is cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):  # type: ignore[attr-defined]
        for alias in small.names:  # type: ignore[attr-defined]
            if alias.asname is not None:
                yield from stored_names(alias.asname.name)


def _assigned(small: cst.CSTNode) -> Iterator[tuple[cst.BaseExpression, cst.BaseExpression]]:
    if isinstance(small, cst.Assign):
        for target in small.targets:
            yield target.target, small.value
    elif isinstance(small, cst.AnnAssign) and small.value is not None:
        yield small.target, small.value


def _constructor_attrs(info: ClassInfo) -> frozenset[str]:
    """Attributes set only in `__init__`, to plain (non-tensor, non-module) values; and class
    attributes bound to literals that no method reassigns."""
    assigned: dict[str, list[bool]] = {}
    for a in info.assignments:
        ok = a.in_init and not a.augmented and a.kind in (ValueKind.OTHER, ValueKind.NONE)
        assigned.setdefault(a.attr, []).append(ok)
    state = info.parameters | info.registered_buffers | info.submodules | info.properties | set(info.methods)
    names = {attr for attr, oks in assigned.items() if all(oks) and attr not in state}
    for attr, values in info.class_attrs.items():
        if attr not in assigned and all(_is_literal(v) for v in values):
            names.add(attr)
    return frozenset(names)


def _filled_after_construction(analysis: FileAnalysis, info: ClassInfo) -> frozenset[str]:
    """Constructor attributes holding a list, dict or set that code outside `__init__` fills or
    changes by item (`layer.p[etype] -= step` in a training loop, `self.p[k] = v` in a method of
    the class or a base): a tensor built from one is the container's state at that call, not a
    constant. (Another class changing its own `self.<same name>` says nothing of this one.)"""
    containers = {a.attr for a in info.assignments if a.in_init and a.value is not None and is_container(a.value)}
    if not containers or not analysis.may_match(_changing_pattern(containers)):
        return frozenset()
    elsewhere, own = _changed_by_item(analysis)
    changed = set(elsewhere)
    for owner in (info, *info.ancestors()):
        changed |= own.get(owner.name, set())
    return frozenset(containers & changed)


def _changing_pattern(names: set[str]) -> "re.Pattern[bytes]":
    """`.<name>[...] = `, `.<name>[...] += `, `.<name>.append(` for one of `names`, in the text."""
    alternatives = "|".join(sorted(re.escape(n) for n in names))
    return re.compile(
        rb"\.(?:" + alternatives.encode() + rb")(?:\[[^\n]*?\][ \t]*(?:[-+*/%@&|^]|//|\*\*|<<|>>)?=(?!=)|\.(?:"
        + "|".join(sorted(IN_PLACE_METHODS)).encode() + rb")\()"
    )


def _changed_by_item(analysis: FileAnalysis) -> ItemChanges:
    """Attribute names the file changes by item outside any `__init__` (item_changes.py); read
    once per file, from the whole text."""
    known: Optional[ItemChanges] = analysis.__dict__.get(_CHANGED_ATTR)
    if known is None:
        known = analysis.__dict__[_CHANGED_ATTR] = item_changes(analysis.whole_ast)
    return known


def _module_constants(analysis: FileAnalysis) -> frozenset[str]:
    """Top-level names bound once, to a literal; read once per file (not per class)."""
    known: Optional[frozenset[str]] = analysis.__dict__.get(_CONSTANTS_ATTR)
    if known is None:
        names: dict[str, bool] = {}
        for stmt in analysis.module.body:
            if isinstance(stmt, cst.SimpleStatementLine):
                for target, value in (tv for small in stmt.body for tv in _assigned(small)):
                    if isinstance(target, cst.Name):
                        names[target.value] = target.value not in names and _is_literal(value)
        known = analysis.__dict__[_CONSTANTS_ATTR] = frozenset(n for n, ok in names.items() if ok)
    return known


def _is_literal(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString)):
        return True
    if isinstance(expr, cst.Name):
        return expr.value in ("True", "False", "None")
    if isinstance(expr, cst.UnaryOperation):
        return _is_literal(expr.expression)
    if isinstance(expr, (cst.Tuple,)):
        return all(isinstance(e, cst.Element) and _is_literal(e.value) for e in expr.elements)
    return False


def _parallel(target: cst.BaseExpression, value: cst.BaseExpression) -> Optional[list[tuple[cst.Name, cst.BaseExpression]]]:
    """The (name, value) pairs of `a, b = x, y`, or None when the two sides do not pair up."""
    if not isinstance(target, (cst.Tuple, cst.List)) or not isinstance(value, (cst.Tuple, cst.List)):
        return None
    names, values = target.elements, value.elements
    if len(names) != len(values) or any(isinstance(e, cst.StarredElement) for e in (*names, *values)):
        return None
    if not all(isinstance(e.value, cst.Name) for e in names):
        return None
    return [(n.value, v.value) for n, v in zip(names, values)]  # type: ignore[misc]


def _take_name(state: FlowState, source: FlowState, name: str) -> None:
    """Copy what `source` knows of `name` into `state`."""
    for mine, theirs in ((state.inputs, source.inputs), (state.bound, source.bound), (state.devices, source.devices), (state.dtypes, source.dtypes)):
        _toggle(mine, name, name in theirs)
    if name in source.cpu:
        state.cpu[name] = source.cpu[name]
    else:
        state.cpu.pop(name, None)


def _toggle(names: set[str], name: str, present: bool) -> None:
    if present:
        names.add(name)
    else:
        names.discard(name)


def _self_attr(node: cst.BaseExpression, self_name: Optional[str]) -> Optional[str]:
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == self_name:
        return node.attr.value
    return None


def self_attr_root(node: cst.BaseExpression, self_name: str) -> Optional[str]:
    """`self.pe` or `self.pe[:, :n]` -> "pe"."""
    while isinstance(node, cst.Subscript):
        node = node.value
    return _self_attr(node, self_name)


def _is_attr_of(expr: cst.BaseExpression, attr: str) -> bool:
    return isinstance(expr, cst.Attribute) and expr.attr.value == attr


def _operands(expr: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    if isinstance(expr, (cst.BinaryOperation, cst.BooleanOperation)):
        yield expr.left
        yield expr.right
    elif isinstance(expr, cst.Comparison):
        yield expr.left
        for target in expr.comparisons:
            yield target.comparator


def _may_pick_elements(expr: cst.Subscript, state: FlowState) -> bool:
    """`t[0]`, `t[i, j]`: integer indices only (no slices, `None`, `...` or index tensors), so the
    result may be a 0-dim tensor. The analysis does not track ranks: unsure means silent."""
    for element in expr.slice:
        index = element.slice
        if not isinstance(index, cst.Index):
            return False
        value = index.value
        if isinstance(value, cst.Name) and (value.value in ("None", "Ellipsis") or value.value in state.cpu or value.value in state.bound):
            return False
        if not isinstance(value, (cst.Integer, cst.Name, cst.UnaryOperation, cst.BinaryOperation, cst.Attribute)):
            return False
    return True


def _arg_values(call: cst.Call) -> Iterator[cst.BaseExpression]:
    """Argument values, with list and tuple literals opened (`torch.cat([a, b])`); not a
    `generator=`, which holds no tensor (and pins its sampler to its own device)."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "generator":
            continue
        value = arg.value
        if isinstance(value, (cst.List, cst.Tuple)):
            yield from (e.value for e in value.elements)
        else:
            yield value


def combined_operands(node: cst.CSTNode, facts: ForwardFacts, method: PathMethod) -> Optional[list[cst.BaseExpression]]:
    """The tensors an operation needs on one device: both sides of arithmetic and comparisons,
    the tensor arguments of torch functions, the receiver and arguments of tensor methods,
    and the arguments of a submodule call. None when `node` does not combine tensors."""
    if isinstance(node, (cst.BinaryOperation, cst.Comparison)):
        return list(_operands(node))
    if not isinstance(node, cst.Call):
        return None
    qualified = facts.inference.qualify(node.func)
    if qualified is not None:
        if not qualified.startswith("torch.") or qualified.rsplit(".", 1)[-1] in FACTORIES or facts.cpu_tolerant(node, method):
            return None
        return list(_arg_values(node))
    func = node.func
    if isinstance(func, cst.Attribute) and _self_attr(func, method.self_name) is None:
        if func.attr.value in _DEVICE_TOLERANT_METHODS or func.attr.value.startswith("new_"):
            return None
        return [func.value, *_arg_values(node)]
    return None


def _keyword_arg(call: cst.Call, name: str) -> Optional[cst.Arg]:
    return next((a for a in call.args if a.keyword is not None and a.keyword.value == name), None)


def _keyword(call: cst.Call, name: str) -> Optional[cst.BaseExpression]:
    arg = _keyword_arg(call, name)
    return arg.value if arg is not None else None


# -- what a call is once its move is dropped ----------------------------------------------------
def with_parens_of(node: cst.BaseExpression, like: cst.BaseExpression) -> cst.BaseExpression:
    """`node`, wearing the parentheses `like` had (they may matter where `like` stood)."""
    lpar, rpar = getattr(like, "lpar", ()), getattr(like, "rpar", ())
    if lpar:
        return node.with_changes(lpar=lpar, rpar=rpar)
    return node


def _names_tensor_type(arg: cst.BaseExpression) -> bool:
    """`x.type()` (a tensor's type name, `torch.cuda.FloatTensor` on a GPU) or a literal naming a
    CUDA tensor type: given to `.type()`, they move the tensor there."""
    if isinstance(arg, cst.Call) and isinstance(arg.func, cst.Attribute) and arg.func.attr.value == "type" and not arg.args:
        return True
    return isinstance(arg, cst.SimpleString) and "cuda" in arg.value


def _keep_subject(call: cst.Call) -> Callable[[cst.BaseExpression], cst.BaseExpression]:
    return lambda subject: with_parens_of(subject, call)


def _without_args(call: cst.Call, drop: Sequence[cst.Arg]) -> list[cst.Arg]:
    dropped = {id(a) for a in drop}
    args = [a for a in call.args if id(a) not in dropped]
    if args and args[-1].comma is not cst.MaybeSentinel.DEFAULT and id(call.args[-1]) in dropped:
        args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return args


def _dtype_of(tensor: cst.BaseExpression) -> cst.Attribute:
    atomic = isinstance(tensor, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) or bool(getattr(tensor, "lpar", ()))
    value = tensor if atomic else tensor.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.Attribute(value=value, attr=cst.Name("dtype"))


def _retarget(call: cst.Call, subject: cst.BaseExpression, args: list[cst.Arg]) -> cst.BaseExpression:
    """`subject.to(args)`, or `subject` alone when nothing is left to pass."""
    if not args:
        return with_parens_of(subject, call)
    assert isinstance(call.func, cst.Attribute)
    return call.with_changes(func=call.func.with_changes(value=subject), args=args)


def _to_kept(
    call: cst.Call, device: Optional[cst.Arg], tensor: Optional[cst.Arg]
) -> Callable[[cst.BaseExpression], cst.BaseExpression]:
    def kept(subject: cst.BaseExpression) -> cst.BaseExpression:
        extra = [a for a in call.args if a.keyword is not None and a.keyword.value in _DROPPED_WITH_DEVICE]
        if tensor is not None:
            args = _without_args(call, extra)
            args = [a.with_changes(value=_dtype_of(tensor.value)) if a is tensor else a for a in args]
            return _retarget(call, subject, args)
        return _retarget(call, subject, _without_args(call, [a for a in (device, *extra) if a is not None]))

    return kept


def _type_string_of(arg: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """`x` of `x.type()` (the string naming x's tensor type: `torch.cuda.FloatTensor`)."""
    if isinstance(arg, cst.Call) and not arg.args and isinstance(arg.func, cst.Attribute) and arg.func.attr.value == "type":
        return arg.func.value
    return None


def _type_as_kept(call: cst.Call, other: cst.BaseExpression) -> Callable[[cst.BaseExpression], cst.BaseExpression]:
    def kept(subject: cst.BaseExpression) -> cst.BaseExpression:
        assert isinstance(call.func, cst.Attribute)
        func = call.func.with_changes(value=subject, attr=cst.Name("to"))
        return call.with_changes(func=func, args=[call.args[0].with_changes(value=_dtype_of(other))])

    return kept


def _as_tensor_kept(call: cst.Call, device: cst.Arg) -> Callable[[cst.BaseExpression], cst.BaseExpression]:
    def kept(subject: cst.BaseExpression) -> cst.BaseExpression:
        args = _without_args(call, [device])
        if len(args) == 1:
            return with_parens_of(subject, call)  # as_tensor of a tensor, no dtype: the tensor itself
        return call.with_changes(args=[args[0].with_changes(value=subject), *args[1:]])

    return kept


def dotted(node: cst.BaseExpression) -> str:
    return dotted_name(node) or cst.Module([]).code_for_node(node)
