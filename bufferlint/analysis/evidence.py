"""Evidence that a plain tensor attribute's device matters: the reason a maintainer acts on a finding.

A tensor kept as a plain attribute is only a problem when it meets tensors that live where the
module or its inputs live, so that `.to()`/`.cuda()` leaving it behind makes an op fail (or a
per-call copy necessary). The evidence, found in the methods that run after construction (the
forward path first, then every other method of the class and of its subclasses in the file):

- `moved`: it is moved to another device on the forward path (`self.t.to(x.device)`);
- `meets`: it (or a local computed from it) is an operand of an op together with an input or the
  module's own state: arithmetic (`attn += self.mask` too), a comparison, a torch function, a
  tensor method, a submodule call, or a call that receives both (not a function of the file that
  rebuilds the placed argument on the host first: `v = torch.tensor([v[0], v[1], 1.0])`);
- `returned`: the forward path, or a public method, returns it (its caller combines it with
  tensors on the module's device);
  (for `moved` and `returned`, a draw from it is not it: `torch.multinomial(self.w, k).to(d)`
  moves indices, and `choice(n, prob=self.w)` hands out its own draw)
- `indexed`: forward indexes it with an index that lives on the input's device (CUDA refuses a
  CUDA index into a CPU tensor; other methods may be given host-side lists and masks).

The same scan records, for the fix's proof, a tensor a method builds on the host each call
that meets the attribute (`torch.arange(b) + self.idx`: a buffer would meet it from the GPU),
and a sampler given the attribute with a `generator=` (the tensor must stay beside the generator).

Not evidence: metadata (`.shape`, `.dtype`, `.requires_grad`, `len()`), host-side use (`.item()`,
`.tolist()`, `.cpu()`, `int()`, unpacked into the sizes of a call: `x.view(b, *self.shape)`),
indexing another tensor with it (CUDA accepts CPU index tensors), CPU-only
arguments (`pack_padded_sequence` lengths), arguments that a custom `torch.autograd.Function` of
the file only reads on the host (`dt.item()` as a kernel launch argument), and 0-dim tensors
(CUDA accepts them next to its own).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import AbstractSet, Callable, Iterator, Optional

import libcst as cst

from bufferlint.analysis.classes import ClassInfo
from bufferlint.analysis.flow import is_self_attr, self_name
from bufferlint.analysis.forward import FlowState, ForwardFacts, PathMethod, combined_operands, given_arguments, input_params
from bufferlint.analysis.grad import argument_keyword
from bufferlint.analysis.intent import init_time_methods, self_calls
from bufferlint.analysis.mentions import Mentions
from bufferlint.analysis.moved_attrs import to_own_device
from bufferlint.analysis.names import Qualify, code_excerpt
from bufferlint.analysis.torch_api import NON_TENSOR_METHODS, is_tensor_library
from bufferlint.analysis.walk import callee_name, is_name, nodes_of

# Attributes of a tensor that are tensors sharing its data (and device).
_DATA_ATTRS = frozenset(("T", "mT", "H", "mH", "real", "imag", "data"))
# Methods that return the tensor somewhere else, or not as a tensor: the result carries nothing.
_LEAVING_METHODS = frozenset(("cpu", "numpy", "tolist", "item", "cuda", "to", "type_as"))
# (`list(t)`, `tuple(t)`: the elements of a table of sizes, 0-dim tensors CUDA accepts beside its own, or
# host values for a helper that takes a list)
_NON_TENSOR_BUILTINS = frozenset("len int float bool str isinstance print repr type id hasattr getattr list tuple".split())


@dataclass(frozen=True)
class Evidence:
    kind: str  # "moved" | "meets" | "returned"
    method: str  # the method it was found in
    node: cst.CSTNode
    # for "meets" through a function imported from outside the run (`voxelize(points, self.size)`):
    # its name; what that code does with the tensor's device is not read
    via: Optional[str] = None

    def describe(self) -> str:
        if self.kind == "moved":
            return f"{self.method}() moves it to another device on every call"
        if self.kind == "returned":
            return f"{self.method}() returns it"
        if self.kind == "indexed":
            return f"{self.method}() indexes it with a tensor from the input's device"
        return f"{self.method}() uses it with the input or the module's tensors"


@dataclass(frozen=True)
class HostPartner:
    """A tensor built on the host in `method` on every call (`torch.arange(n)`) that meets the attribute."""

    method: str
    factory: cst.Call

    def describe(self) -> str:
        return f"{self.method}() uses it with `{code_excerpt(self.factory)}`, built on the host on every call"


class EvidenceFinder:
    """Evidence for the plain tensor attributes `wanted` of one class (and its same-file
    subclasses, whose methods read the attributes they inherit)."""

    def __init__(
        self, facts: ForwardFacts, wanted: frozenset[str], subclass_facts: tuple[ForwardFacts, ...] = (),
        mentions: Optional[Mentions] = None,
    ) -> None:
        self.facts = facts
        self.wanted = wanted
        self.subclass_facts = subclass_facts
        self.mentions = mentions or Mentions()
        self._found: Optional[dict[str, Evidence]] = None
        self.host_partners: dict[str, HostPartner] = {}
        self.generator_sampled: dict[str, str] = {}
        self._used: set[str] = set()  # attributes with evidence other than being returned

    def _scanned(self) -> dict[str, Evidence]:
        """The evidence found, scanning the methods once, on the first question."""
        if self._found is None:
            self._found = {}
            for facts in (self.facts, *self.subclass_facts):
                for method in _methods(facts, lambda func: bool(self.mentions.words(func) & self.wanted)):
                    self._scan(facts, method)
        return self._found

    def evidence(self, attr: str) -> Optional[Evidence]:
        found = self._scanned().get(attr)
        if found is not None and found.kind == "returned" and self._host_side(attr, found):
            # `off = self.lo + torch.rand(n, 3) * self.span; return off`: the method computes on
            # the host by design (callers outside the class move what it returns); as a buffer the
            # table would break it
            return None
        return found

    def _host_side(self, attr: str, found: Evidence) -> bool:
        """Only returned, by a method that builds a host partner for it, that is off the forward
        path and that no method of the class calls (what it returns is placed by outside callers)."""
        partner = self.host_partners.get(attr)
        if partner is None or partner.method != found.method or attr in self._used:
            return False
        if any(m.name == found.method for m in self.facts.methods):
            return False
        return not any(
            found.method in self_calls(func, self_name(func)) for func in self.facts.info.methods.values() if func.name.value != found.method
        )

    def _scan(self, facts: ForwardFacts, method: PathMethod) -> None:
        carriers: dict[str, frozenset[str]] = {}
        # per set of samplers: locals holding the attributes' data, not a draw from them (_Reader.data)
        data_carriers: dict[frozenset[str], dict[str, frozenset[str]]] = {SAMPLERS: {}, INDEX_SAMPLERS: {}}
        on_path = facts.path_method(method.func) is not None
        handed_out = on_path or not method.name.startswith("_")
        # Rebound by this method before a read (`self.flat = torch.cat(...)`, then `return self.flat`):
        # the read sees the value just built, not the stored one that .to() would leave behind.
        fresh: set[str] = set()
        rehomed = _rehomed(facts, method)
        for index, site in enumerate(method.sites):
            reader = _Reader(facts, method, site.state, carriers, self.wanted, data_carriers)
            reader.moved_later = frozenset(name for at, name in rehomed if at > index)
            small = site.site.small
            for node in site.operations:
                met = reader.meets(node)
                if met:
                    self._add(met, "meets", method, node, reader.outside_callee(node), fresh)
                self._host_partner(reader, node, method)
            if isinstance(small, cst.AugAssign):
                self._add(reader.augments(small), "meets", method, small, None, fresh)
            # Off the forward path a method's arguments may be host-side lists or masks
            # (`filter_envs(keep)`): only the forward path's inputs are known to be placed.
            for subscript in nodes_of(small, cst.Subscript) if on_path else ():
                self._add(reader.indexed(subscript), "indexed", method, subscript, None, fresh)
            if handed_out and isinstance(small, cst.Return) and small.value is not None:
                self._add(reader.handed_out(small.value), "returned", method, small, None, fresh)
            for call in site.calls:
                self._generator_sampled(reader, call, method)
            if on_path:
                for call in site.calls:
                    move = facts.move(call, site.state, method)
                    if move is not None and move.method in ("to", "cuda", "type_as", "type", "as_tensor"):
                        # what moves is the attribute's data, not a sample drawn from it
                        moved = frozenset(a for a in reader.data(move.subject, SAMPLERS) if not to_own_device(move, method, a))
                        self._add(moved, "moved", method, call, None, fresh)
            if not site.site.nested:
                fresh |= _rebound_afresh(small, method.self_name, self.wanted, reader)
            _update(small, reader)

    def _host_partner(self, reader: "_Reader", node: cst.CSTNode, method: PathMethod) -> None:
        """Record the first tensor built on the host each call that an attribute meets."""
        found = reader.host_partner(node)
        if found is not None:
            attrs, factory = found
            for attr in attrs - self.host_partners.keys():
                self.host_partners[attr] = HostPartner(method.name, factory)

    def _generator_sampled(self, reader: "_Reader", call: cst.Call, method: PathMethod) -> None:
        generator = argument_keyword(call, "generator")
        if generator is None or is_name(generator, "None"):
            return
        shown = cst.Module([]).code_for_node(generator)
        for arg in call.args:
            for attr in reader.carried(arg.value) - self.generator_sampled.keys():
                self.generator_sampled[attr] = f"{method.name}() samples from it with `generator={shown}`"

    def sampled_with_generator(self, attr: str) -> Optional[str]:
        """Where a method samples from `attr` with a `torch.Generator`, which stays on the device it
        was built for: `.to()` moves no generator, so the tensor must stay beside it."""
        self._scanned()
        return self.generator_sampled.get(attr)

    def host_partner(self, attr: str) -> Optional["HostPartner"]:
        """A tensor a method builds on the host on every call and uses with `attr` (after the
        evidence scan): as a buffer on the GPU, `attr` would meet a CPU tensor there."""
        self._scanned()
        return self.host_partners.get(attr)

    def _add(
        self, attrs: frozenset[str], kind: str, method: PathMethod, node: cst.CSTNode, via: Optional[str] = None,
        fresh: AbstractSet[str] = frozenset(),
    ) -> None:
        assert self._found is not None
        for attr in attrs - fresh:
            if kind != "returned":
                self._used.add(attr)  # evidence other than a return: no host-side design to spare it
            known = self._found.get(attr)
            if known is None or (known.via is not None and via is None):  # evidence the analysis read wins
                self._found[attr] = Evidence(kind, method.name, node, via)


def _rebound_afresh(small: cst.BaseSmallStatement, me: Optional[str], wanted: frozenset[str], reader: "_Reader") -> frozenset[str]:
    """`self.<attr> = <value>` directly in the method's body, from a value that does not read the
    attribute itself, directly or through a local (`self.t = self.t.to(d)`, `prev = self.t;
    self.t = prev * 0.9`: the stored value goes on, it is no new one)."""
    if type(small) is not cst.Assign or len(small.targets) != 1:  # type: ignore[attr-defined]
        return frozenset()
    target = small.targets[0].target  # type: ignore[attr-defined]
    if not (is_self_attr(target, me) and target.attr.value in wanted):  # type: ignore[attr-defined]
        return frozenset()
    attr = target.attr.value  # type: ignore[attr-defined]
    value = small.value  # type: ignore[attr-defined]
    reads_itself = any(is_self_attr(node, me, attr) for node in nodes_of(value, cst.Attribute)) or any(
        attr in reader.carriers.get(name.value, frozenset()) for name in nodes_of(value, cst.Name)
    )
    return frozenset() if reads_itself else frozenset((attr,))


def _rehomed(facts: ForwardFacts, method: PathMethod) -> list[tuple[int, str]]:
    """(site index, name) of each statement that moves a local to a device and binds it again
    or returns it (`im = im.cuda()`, `return x.to(device)`)."""
    found = []
    for index, site in enumerate(method.sites):
        small = site.site.small
        value: Optional[cst.BaseExpression] = None
        if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
            value = small.value  # `im = im.cuda()`
        elif isinstance(small, cst.Return):
            value = small.value  # `return im.cuda()`
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and isinstance(value.func.value, cst.Name):
            name = value.func.value.value
            if (isinstance(small, cst.Return) or is_name(small.targets[0].target, name)) and facts.move(value, site.state, method) is not None:  # type: ignore[union-attr,attr-defined]
                found.append((index, name))
    return found


def _methods(facts: ForwardFacts, may_read: Callable[[cst.FunctionDef], bool]) -> Iterator[PathMethod]:
    """The forward path, then every other method that runs after construction and names one of
    the attributes (`may_read`: walking a method costs a flow analysis; most name none)."""
    yield from facts.methods
    on_path = {id(m.func) for m in facts.methods}
    skipped = init_time_methods(facts.info)
    for name, func in facts.info.methods.items():
        if id(func) in on_path or name in skipped or name in facts.info.properties:
            continue
        if func.params.params and not _is_static(func) and may_read(func):
            yield facts.method_sites(func, input_params(func, facts.inference))


def _is_static(func: cst.FunctionDef) -> bool:
    return any(isinstance(d.decorator, cst.Name) and d.decorator.value in ("staticmethod", "classmethod") for d in func.decorators)


class _Reader:
    """Reads expressions at one statement: which wanted attributes they carry, where they meet."""

    def __init__(
        self, facts: ForwardFacts, method: PathMethod, state: FlowState, carriers: dict[str, frozenset[str]],
        wanted: frozenset[str], data_carriers: dict[frozenset[str], dict[str, frozenset[str]]],
    ) -> None:
        self.facts, self.method, self.state, self.carriers, self.wanted = facts, method, state, carriers, wanted
        self.data_carriers = data_carriers
        self._data_only: frozenset[str] = frozenset()  # while reading data: the samplers whose draws carry none
        # locals a later statement moves to a device itself (`im = im.cuda()`): until then they
        # live where the method built them (on the host, to be normalised there first)
        self.moved_later: frozenset[str] = frozenset()

    def placed(self, expr: cst.BaseExpression) -> bool:
        """`expr` lives where the inputs or the module's state live."""
        if isinstance(expr, cst.Name) and expr.value in self.moved_later:
            return False
        return self.facts.derived(expr, self.state, self.method)

    def data(self, expr: cst.BaseExpression, samplers: frozenset[str] = frozenset()) -> frozenset[str]:
        """The attributes whose data `expr` holds: as `carried`, but not through a draw from them by
        one of `samplers` (`torch.multinomial(self.w, n)` holds indices, not the weights)."""
        self._data_only = samplers
        try:
            return self.carried(expr)
        finally:
            self._data_only = frozenset()

    def carried(self, expr: cst.BaseExpression) -> frozenset[str]:
        kind = type(expr)
        if kind is cst.Name:
            carriers = self.data_carriers[self._data_only] if self._data_only else self.carriers
            return carriers.get(expr.value, frozenset())  # type: ignore[attr-defined]
        if kind is cst.Attribute:
            return self._attribute(expr)  # type: ignore[arg-type]
        if kind is cst.Subscript:
            return self.carried(expr.value)  # type: ignore[attr-defined]
        if kind is cst.BinaryOperation:
            return self.carried(expr.left) | self.carried(expr.right)  # type: ignore[attr-defined]
        if kind is cst.UnaryOperation and not isinstance(expr.operator, cst.Not):  # type: ignore[attr-defined]
            return self.carried(expr.expression)  # type: ignore[attr-defined]
        if kind is cst.IfExp:
            return self.carried(expr.body) | self.carried(expr.orelse)  # type: ignore[attr-defined]
        if kind is cst.Call:
            return self._call(expr)  # type: ignore[arg-type]
        if kind is cst.Tuple or kind is cst.List:
            found: frozenset[str] = frozenset()
            for element in expr.elements:  # type: ignore[attr-defined]
                found |= self.carried(element.value)
            return found
        return frozenset()

    def _attribute(self, expr: cst.Attribute) -> frozenset[str]:
        value = expr.value
        if isinstance(value, cst.Name) and value.value == self.method.self_name:
            return frozenset((expr.attr.value,)) & self.wanted
        if expr.attr.value in _DATA_ATTRS:
            return self.carried(value)
        return frozenset()  # `.shape`, `.device`, `.dtype`: metadata

    def _call(self, call: cst.Call) -> frozenset[str]:
        func = call.func
        if self._data_only and self._new_data(call):
            return frozenset()
        if isinstance(func, cst.Attribute):
            move = self.facts.move(call, self.state, self.method)
            if move is not None or func.attr.value in _LEAVING_METHODS:
                if self.facts.casts_only(call, self.state, self.method):
                    return self.carried(func.value)
                if move is not None:  # a move to the tensor's own device leaves it where it was
                    return frozenset(a for a in self.carried(move.subject) if to_own_device(move, self.method, a))
                return frozenset()  # moved: the copy lives elsewhere (the move is its own evidence)
            if func.attr.value in NON_TENSOR_METHODS:
                return frozenset()
            receiver = self.carried(func.value)
            if receiver:
                return receiver
        qualified = self.facts.inference.qualify(func)
        if qualified is not None and (qualified.startswith("torch.") or is_tensor_library(qualified)):
            return self._args(call)
        if isinstance(func, cst.Name) and func.value in _NON_TENSOR_BUILTINS:
            return frozenset()
        if isinstance(func, cst.Name):
            placed = self._placing_arguments(call)
            if placed is not None:  # what it returns it re-homes to where these live
                return frozenset().union(*(self.carried(value) for value in placed))
        if isinstance(func, cst.Name) or (isinstance(func, cst.Attribute) and is_name(func.value, self.method.self_name)):
            return self._args(call)  # a function or helper method: what it makes of a CPU tensor stays there
        return frozenset()

    def _placing_arguments(self, call: cst.Call) -> Optional[list[cst.BaseExpression]]:
        """For a call of a function of the file that moves values to the device of one of its
        arguments (`idx.to(x.device)`), given a placed tensor there: the arguments it places its
        results beside. The others it reads where they are (a host-side search over positions
        kept on the CPU on purpose), unless it moves them too (`window.to(x.device)`: a copy per
        call, which meets the input)."""
        helper = self.facts.analysis.function(call.func.value) if isinstance(call.func, cst.Name) else None
        if helper is None or any(arg.star for arg in call.args):
            return None
        placing = _placing_params(helper)
        if not placing:
            return None
        given = given_arguments(helper, call)
        placed = [value for name, value in given.items() if name in placing and self.facts.derived(value, self.state, self.method)]
        if not placed:
            return None
        moved = _moved_params(helper)
        return placed + [value for name, value in given.items() if name in moved and name not in placing]

    def _new_data(self, call: cst.Call) -> bool:
        """A draw by one of the samplers asked about: `torch.multinomial(self.w, n)`,
        `self.w.multinomial(n)`, `choice(n, prob=self.w)` (not a method of the class's own)."""
        func = call.func
        if isinstance(func, cst.Attribute) and is_name(func.value, self.method.self_name or ""):
            return False
        return callee_name(call) in self._data_only

    def _args(self, call: cst.Call) -> frozenset[str]:
        sizes = _size_values(call, self.facts.inference.qualify(call.func))
        found: frozenset[str] = frozenset()
        for arg in call.args:
            if id(arg.value) not in sizes:
                found |= self.carried(arg.value)
        return found

    def handed_out(self, expr: cst.BaseExpression) -> frozenset[str]:
        """The attributes a return statement hands out themselves (`self.pe[:, :n]`, a tuple of
        them, a local bound to one), not values computed from them (`torch.multinomial(self.w, 1)`)."""
        kind = type(expr)
        if kind is cst.Tuple or kind is cst.List:
            found: frozenset[str] = frozenset()
            for element in expr.elements:  # type: ignore[attr-defined]
                found |= self.handed_out(element.value)
            return found
        if kind is cst.Subscript:
            return self.handed_out(expr.value)  # type: ignore[attr-defined]
        if kind is cst.Name or kind is cst.Attribute:
            return self.data(expr, INDEX_SAMPLERS)
        return frozenset()

    def indexed(self, node: cst.Subscript) -> frozenset[str]:
        """`self.t[idx]` with `idx` on the input's device."""
        attrs = self.carried(node.value)
        if not attrs:
            return frozenset()
        for element in node.slice:
            index = element.slice
            if isinstance(index, cst.Index) and self.facts.derived(index.value, self.state, self.method, inputs_only=True):
                return attrs
        return frozenset()

    def meets(self, node: cst.CSTNode) -> frozenset[str]:
        """Wanted attributes that `node` combines with a tensor on the input's or module's device."""
        facts, method = self.facts, self.method
        if isinstance(node, cst.Call) and facts.cpu_tolerant(node, method):
            return frozenset()
        operands = combined_operands(node, facts, method)
        if operands is None and isinstance(node, cst.Call):
            operands = self._passed_along(node)
        if operands and isinstance(node, cst.Call):
            host = {id(node.args[i].value) for i in _host_only_arguments(facts, node) if i < len(node.args)}
            # `x.view(b, *self.shape)`, `x.reshape(b, n, self.dim_head)`: a call that takes sizes
            # reads a tensor given there (unpacked, or a 0-dim one) as ints (another call would
            # get its rows, tensors like it)
            if _takes_sizes(node):
                host.update(id(arg.value) for arg in _size_positions(node))
            host.update(_size_values(node, facts.inference.qualify(node.func)))
            operands = [op for op in operands if id(op) not in host]
        if not operands:
            return frozenset()
        carried = [self.carried(op) for op in operands]
        attrs = frozenset().union(*carried)
        if not attrs:
            return frozenset()
        if isinstance(node, cst.Call) and facts.submodule_call(node, method):
            return attrs  # a submodule's weights live on the module's device
        placed = [c for op, c in zip(operands, carried) if self.placed(op)]
        # `(x + self.a) + self.b`: `b` meets a placed operand that does not carry `b` itself
        return frozenset(attr for attr in attrs if any(attr not in c for c in placed))

    def augments(self, small: cst.AugAssign) -> frozenset[str]:
        """`attn += self.mask`: the attribute meets a placed tensor in place."""
        attrs = self.carried(small.value)
        if attrs and self.placed(small.target):
            return attrs
        return frozenset()

    def host_partner(self, node: cst.CSTNode) -> Optional[tuple[frozenset[str], cst.Call]]:
        """The wanted attributes an operand of `node` carries, and the factory without `device=`
        that built another operand on the host (`torch.arange(b) * n + self.idx`)."""
        operands = combined_operands(node, self.facts, self.method)
        if not operands or len(operands) < 2:
            return None
        carried = [self.carried(op) for op in operands]
        if not any(carried):
            return None
        for index, (operand, carries) in enumerate(zip(operands, carried)):
            others = frozenset().union(*(c for i, c in enumerate(carried) if i != index)) - carries
            if others:
                origin = self.facts.cpu_origin(operand, self.state, self.method)
                if origin is not None:
                    return others, origin
        return None

    def outside_callee(self, node: cst.CSTNode) -> Optional[str]:
        """The name of the function `node` calls when it is imported from outside the run (not
        torch, not a function of the linted files, not a submodule): a compiled op may read what
        it is given on the host."""
        if not isinstance(node, cst.Call) or combined_operands(node, self.facts, self.method) is not None:
            return None
        qualified = self.facts.inference.qualify(node.func)
        if qualified is None or qualified.split(".")[0] in ("torch", "torchvision", "torchaudio", "builtins"):
            return None
        if self.facts.submodule_call(node, self.method) or qualified in self.facts.analysis.project.functions:
            return None
        if isinstance(node.func, cst.Name) and self.facts.analysis.function(node.func.value) is not None:
            return None
        return qualified

    def _passed_along(self, call: cst.Call) -> Optional[list[cst.BaseExpression]]:
        """The arguments of a submodule call, or of a call to code the analysis does not read
        (a helper of the file, a function of another module) that is given both the attribute
        and a placed tensor."""
        func = call.func
        if isinstance(func, cst.Name) and func.value in _NON_TENSOR_BUILTINS:
            return None
        if isinstance(func, cst.Attribute) and func.attr.value in NON_TENSOR_METHODS:
            return None
        qualified = self.facts.inference.qualify(func)
        if qualified is not None and qualified.startswith("torch.") and not self.facts.submodule_call(call, self.method):
            return None  # torch functions: `combined_operands` decided
        helper = self.facts.analysis.function(func.value) if isinstance(func, cst.Name) else None
        rebuilt = _rebuilt_on_host(helper, call, self.facts.inference.qualify) if helper is not None else frozenset()
        placed = self._placing_arguments(call)
        if placed is not None:
            return placed
        return [arg.value for arg in call.args if not arg.star and id(arg) not in rebuilt]


# Calls that draw samples: what they return is a draw, not the weights they are given (moving a
# draw moves no constant). Those that draw indices hand out nothing of the weights either; a
# Bernoulli draw is a tensor of the weights' shape and device, which a caller may combine.
SAMPLERS = frozenset(("multinomial", "bernoulli", "poisson", "choice", "sample", "rsample"))
INDEX_SAMPLERS = frozenset(("multinomial", "choice"))
# Calls whose positional arguments are sizes (a tensor unpacked into them gives Python ints).
_SIZE_CALLS = frozenset(
    "view reshape expand repeat permute tile new_zeros new_ones new_empty new_full "
    "zeros ones empty full rand randn randint Size".split()
)


def _placing_params(helper: cst.FunctionDef) -> frozenset[str]:
    """The parameters of a function of the file whose device it moves other values to
    (`idx.to(x.device)`, `w.to(x)`): it places its own results where that argument lives."""
    params = {p.name.value for p in (*helper.params.posonly_params, *helper.params.params, *helper.params.kwonly_params)}
    found: set[str] = set()
    for call in nodes_of(helper.body, cst.Call):
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == "to" and call.args:
            target = call.args[0].value
            if isinstance(target, cst.Attribute) and target.attr.value == "device":
                target = target.value
            if isinstance(target, cst.Name) and target.value in params and not is_name(call.func.value, target.value):
                found.add(target.value)
    return frozenset(found)


def _moved_params(helper: cst.FunctionDef) -> frozenset[str]:
    """The parameters the function moves themselves (`window.to(x.device)`): a per-call copy."""
    return frozenset(
        call.func.value.value for call in nodes_of(helper.body, cst.Call)
        if isinstance(call.func, cst.Attribute) and call.func.attr.value in ("to", "cuda", "type_as") and isinstance(call.func.value, cst.Name)
    )


def _size_positions(call: cst.Call) -> list[cst.Arg]:
    """The positional arguments of a call that takes sizes that are sizes (`full(size, fill)`:
    only the first)."""
    positional = [arg for arg in call.args if arg.keyword is None]
    return positional[:1] if callee_name(call) in ("full", "new_full") else positional


def _takes_sizes(call: cst.Call) -> bool:
    return callee_name(call) in _SIZE_CALLS


# torch functions whose argument (by position and keyword) gives sizes, read as Python ints: a
# tensor there (`F.pad(x, (0, self.max_len - x.size(-1)))`) does not flow into the result.
_SIZE_ARGUMENTS = {
    "torch.nn.functional.pad": (1, "pad"),
    "torch.nn.functional.interpolate": (1, "size"),
    "torch.nn.functional.adaptive_avg_pool1d": (1, "output_size"),
    "torch.nn.functional.adaptive_avg_pool2d": (1, "output_size"),
    "torch.nn.functional.adaptive_max_pool2d": (1, "output_size"),
    # a pooling window computed from the input's size (an export stand-in for adaptive pooling)
    **{f"torch.nn.functional.{kind}_pool{n}d": (1, 2, 3, "kernel_size", "stride", "padding") for kind in ("avg", "max") for n in (1, 2, 3)},
}


def _size_values(call: cst.Call, qualified: Optional[str]) -> set[int]:
    """The ids of `call`'s size arguments and of each size they list (`(0, self.n - k)`)."""
    sizes = _SIZE_ARGUMENTS.get(qualified or "", ())
    found: set[int] = set()
    for position, arg in enumerate(call.args):
        if (arg.keyword.value if arg.keyword is not None else position) in sizes:
            found.update(id(v) for v in (arg.value, *(e.value for e in getattr(arg.value, "elements", ()))))
    return found


_HOST_FACTORIES = frozenset(("torch.tensor", "torch.as_tensor", "torch.Tensor", "torch.FloatTensor", "torch.LongTensor"))


def _rebuilt_on_host(helper: cst.FunctionDef, call: cst.Call, qualify: Qualify) -> frozenset[int]:
    """The arguments (by id) that a helper of the file rebuilds on the host before anything else
    reads them (`v = torch.tensor([v[0], v[1], 1], dtype=v.dtype)`): only their values arrive, so
    their device meets nothing there."""
    params = helper.params
    positional = [p.name.value for p in (*params.posonly_params, *params.params)]
    rebuilt: set[int] = set()
    for index, arg in enumerate(a for a in call.args if not a.star):
        name = arg.keyword.value if arg.keyword is not None else (positional[index] if index < len(positional) else None)
        if name is not None and _host_rebuilt(helper, name, qualify):
            rebuilt.add(id(arg))
    return frozenset(rebuilt)


def _host_rebuilt(func: cst.FunctionDef, name: str, qualify: Qualify) -> bool:
    """A statement of the body rebinds `name` to a host factory without `device=` on every path
    (`v = torch.tensor(...)`, or in both branches of an `if`), and nothing reads `name` before
    it except those factories."""
    body = list(func.body.body) if isinstance(func.body, cst.IndentedBlock) else []
    for position, statement in enumerate(body):
        if _rebuilds(statement, name, qualify):
            # the factories' own reads (`v[0]`) and the names they bind do not count as reads
            inside = {
                id(n) for s in body[: position + 1] for a in nodes_of(s, cst.Assign)
                if _rebinds_on_host(a, name, qualify) for n in nodes_of(a, cst.Name)
            }
            return all(id(n) in inside for s in body[: position + 1] for n in nodes_of(s, cst.Name) if n.value == name)
    return False


def _rebuilds(statement: cst.BaseStatement, name: str, qualify: Qualify) -> bool:
    if isinstance(statement, cst.SimpleStatementLine):
        return any(isinstance(small, cst.Assign) and _rebinds_on_host(small, name, qualify) for small in statement.body)
    if isinstance(statement, cst.If) and statement.orelse is not None:
        branches = [statement.body, statement.orelse if isinstance(statement.orelse, cst.If) else statement.orelse.body]
        return all(
            _rebuilds(branch, name, qualify) if isinstance(branch, cst.If)
            else any(_rebuilds(inner, name, qualify) for inner in getattr(branch, "body", ()))
            for branch in branches
        )
    return False


def _rebinds_on_host(assign: cst.Assign, name: str, qualify: Qualify) -> bool:
    return any(is_name(t.target, name) for t in assign.targets) and _host_factory(assign.value, qualify)


def _host_factory(value: cst.BaseExpression, qualify: Qualify) -> bool:
    return (
        isinstance(value, cst.Call) and qualify(value.func) in _HOST_FACTORIES
        and not any(arg.keyword is not None and arg.keyword.value == "device" for arg in value.args)
    )


# What a custom autograd Function's forward may do with an argument that keeps it on the host.
_HOST_READS = frozenset(("item", "tolist", "numpy", "cpu"))


def _host_only_arguments(facts: ForwardFacts, call: cst.Call) -> frozenset[int]:
    """`Kernel.apply(x, self.weight, self.dt)` with `Kernel` a `torch.autograd.Function` of this
    file whose `forward(ctx, x, weight, dt)` reads `dt` only with `.item()` (a launch argument) or
    saves it for backward: the positions of such arguments, which meet nothing."""
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value != "apply" or not isinstance(func.value, cst.Name):
        return frozenset()
    owner = next((c for c in facts.analysis.classes if c.name == func.value.value and _is_function_class(c)), None)
    body = owner.node.body.body if owner is not None and isinstance(owner.node.body, cst.IndentedBlock) else ()
    forward = next((s for s in body if isinstance(s, cst.FunctionDef) and s.name.value == "forward"), None)
    if forward is None:
        return frozenset()
    params = [p.name.value for p in forward.params.params][1:]  # after ctx
    return frozenset(index for index, name in enumerate(params) if _read_on_host_only(forward, name))


def _is_function_class(info: ClassInfo) -> bool:
    return any(base.rpartition(".")[2] == "Function" for base in info.base_names)


def _read_on_host_only(func: cst.FunctionDef, name: str) -> bool:
    """Every use of `name` in `func` is `name.item()`-like or an argument of `ctx.save_for_backward`."""
    uses = [n for n in nodes_of(func.body, cst.Name) if n.value == name]
    allowed: set[int] = set()
    for call in nodes_of(func.body, cst.Call):
        callee = call.func
        if isinstance(callee, cst.Attribute) and callee.attr.value in _HOST_READS and is_name(callee.value, name):
            allowed.add(id(callee.value))
        elif isinstance(callee, cst.Attribute) and callee.attr.value == "save_for_backward":
            allowed.update(id(arg.value) for arg in call.args if is_name(arg.value, name))
    return bool(uses) and all(id(use) in allowed for use in uses)


def _update(small: cst.BaseSmallStatement, reader: _Reader) -> None:
    if isinstance(small, (cst.Assign, cst.AnnAssign)) and small.value is not None:
        attrs = reader.carried(small.value)
        data = {samplers: reader.data(small.value, samplers) for samplers in reader.data_carriers}
        targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
        for target in targets:
            names = [target] if isinstance(target, cst.Name) else [e.value for e in getattr(target, "elements", ())]
            for name in names:
                if isinstance(name, cst.Name):
                    _carry(reader.carriers, name.value, attrs)
                    for samplers, carriers in reader.data_carriers.items():
                        _carry(carriers, name.value, data[samplers])


def _carry(carriers: dict[str, frozenset[str]], name: str, attrs: frozenset[str]) -> None:
    if attrs:
        carriers[name] = attrs
    else:
        carriers.pop(name, None)
