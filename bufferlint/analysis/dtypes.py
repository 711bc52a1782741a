"""What a buffer's dtype obligations need: is a value complex, pinned to a dtype, or used as
bucket boundaries?

A plain attribute keeps its dtype; a buffer is cast with the module. `.half()` and
`.to(torch.bfloat16)` cast every floating buffer, and `.to(dtype)` also casts complex buffers to
real numbers (the imaginary part is dropped). So registering a tensor is only safe when the
analysis proves its values survive that: it is not complex, the code did not pin its dtype on
purpose, and it is not a set of bucket boundaries (`torch.bucketize` on cast boundaries puts
values in other buckets).
"""

from __future__ import annotations

import builtins
import math
import re
from typing import Callable, Iterable, Iterator, Optional

import libcst as cst

from bufferlint.analysis.classes import ClassInfo
from bufferlint.analysis.flow import assignment_targets, is_self_attr, self_name
from bufferlint.analysis.names import Qualify, dotted_name
from bufferlint.analysis.torch_api import SHAPING_METHODS
from bufferlint.analysis.walk import is_name, nodes_of

_COMPLEX_NAMES = frozenset("polar view_as_complex cfloat cdouble chalf complex32 complex64 complex128".split())
# float8 tables (quantized weights) are floating point too: `.half()` would cast them as well
_PINNED_DTYPES = frozenset("float32 float64 float double float8_e4m3fn float8_e5m2 float8_e4m3fnuz float8_e5m2fnuz float8_e8m0fnu".split())
_PINNING_METHODS = frozenset(("double",))
# Typed constructors name their dtype as plainly as `dtype=` does.
_PINNING_CONSTRUCTORS = frozenset("torch.FloatTensor torch.DoubleTensor torch.cuda.FloatTensor torch.cuda.DoubleTensor".split())
# torch calls whose (sorted) boundaries argument is compared with the input's values.
_BOUNDARY_CALLS = {"torch.bucketize": 1, "torch.searchsorted": 0}
# Builtins and modules whose results are never complex tensors.
_REAL_CALLS = frozenset("int float bool len range list tuple min max abs round sum sorted reversed enumerate zip".split())
_REAL_MODULES = ("math", "numpy", "np")
# Builtins other than those above (`getattr(torch, name)(n)`): never "not defined in this file".
_BUILTINS = frozenset(dir(builtins))
_MAX_DEPTH = 3
# Pins to a dtype wider than the default one.
WIDE_DTYPE_WORDS = ("float64", "double", "Double")


class ComplexCheck:
    """Whether a value may hold complex numbers, following the helpers it calls.

    `function(name)`: a top-level function of the file; `method(name)`: a method of the class;
    `qualify`: a dotted name through the file's imports; `project`: qualified names of the
    project's functions and of those that build complex tensors (None without project facts)."""

    def __init__(
        self,
        function: Callable[[str], Optional[cst.FunctionDef]],
        method: Callable[[str], Optional[cst.FunctionDef]],
        qualify: Qualify,
        project: Optional[tuple[frozenset[str], frozenset[str]]],
    ) -> None:
        self.function, self.method, self.qualify, self.project = function, method, qualify, project

    def reason(self, value: cst.CSTNode, me: Optional[str]) -> tuple[Optional[str], Optional[str]]:
        """(why it is complex, why it may be): at most one of them set."""
        if made_real(value):
            return None, None  # `get_window(...).astype(np.float32)`: whatever the helper returns
        return self._check(value, me, 0, set())

    def _check(self, node: cst.CSTNode, me: Optional[str], depth: int, seen: set[int]) -> tuple[Optional[str], Optional[str]]:
        if _mentions_complex(node):
            return "it holds complex values", None
        unknown: Optional[str] = None
        for call in nodes_of(node, cst.Call):
            found, maybe = self._callee(call, me, depth, seen)
            if found is not None:
                return found, None
            unknown = unknown or maybe
        return None, unknown

    def _callee(self, call: cst.Call, me: Optional[str], depth: int, seen: set[int]) -> tuple[Optional[str], Optional[str]]:
        func = call.func
        qualified = self.qualify(func)
        if qualified is not None:
            return self._imported(qualified)
        body: Optional[cst.FunctionDef] = None
        is_method = False  # the callee's first parameter is the instance: a method, or a helper given `self`
        if isinstance(func, cst.Name):
            if func.value in _REAL_CALLS:
                return None, None
            body = self.function(func.value)
            is_method = bool(call.args) and me is not None and is_name(call.args[0].value, me)  # `build(self, n)`
            if body is None and func.value in _BUILTINS:
                return None, f"`{func.value}()` picks what it returns at run time: not proved to return real values"
            if body is None:
                return None, f"`{func.value}()` is not defined in this file: not proved to return real values"
        elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == me:
            body, is_method = self.method(func.attr.value), True
            if body is None:
                return None, f"`{me}.{func.attr.value}()` is not defined in this file: not proved to return real values"
        if body is None or id(body) in seen or depth >= _MAX_DEPTH:
            return None, None  # a tensor method, or a helper already followed
        seen.add(id(body))
        # a helper's first parameter is no instance unless it is given one (`def kernel(k): ... k.sum()`)
        found, maybe = self._check(body.body, self_name(body) if is_method else None, depth + 1, seen)
        if found is not None:
            return f"{found} (built by {body.name.value}())", None
        return None, maybe

    def _imported(self, qualified: str) -> tuple[Optional[str], Optional[str]]:
        head = qualified.split(".")[0]
        if head == "torch" or head in _REAL_MODULES:
            return None, None
        if self.project is not None:
            functions, complex_functions = self.project
            if qualified in complex_functions:
                return f"it holds complex values (built by {qualified})", None
            if qualified in functions:
                return None, None
        return None, f"`{qualified}` is defined outside the linted files: not proved to return real values"


def made_real(node: cst.CSTNode) -> bool:
    """The value's last step yields real numbers whatever it is given: a real dtype cast
    (`.astype(np.float32)`, `.float()`, `.to(torch.float16)`), `.real`, `.abs()`, or a reshape of
    such a value, or `torch.from_numpy` / `torch.tensor` of one; a call given a real `dtype=`, or
    a torch factory whose arguments are sizes (`torch.zeros((helper(n), d))`)."""
    if isinstance(node, cst.Attribute):
        return node.attr.value in ("real", "imag")
    if not isinstance(node, cst.Call):
        return False
    func = node.func
    if isinstance(func, cst.Attribute):
        name = func.attr.value
        if name in _REAL_METHODS and not node.args:
            return True
        if name in ("astype", "to", "type") and node.args and _dtype_argument(node.args[0]) and _real_dtype(node.args[0].value):
            return True
        if name in _RESHAPES:
            return made_real(func.value)
    if dotted_name(func) in _WRAPPERS and node.args and node.args[0].keyword is None:
        return made_real(node.args[0].value)
    # `torch.zeros((helper(n), d), dtype=torch.float)`: what it is given are sizes, or the dtype
    # names real numbers
    dtype = next((arg.value for arg in node.args if arg.keyword is not None and arg.keyword.value == "dtype"), None)
    if dtype is not None:
        return _real_dtype(dtype)
    return dotted_name(func) in _SIZED_FACTORIES


def _dtype_argument(arg: cst.Arg) -> bool:
    return arg.keyword is None or arg.keyword.value == "dtype"


def _real_dtype(expr: cst.BaseExpression) -> bool:
    """`np.float32`, `torch.float16`, `"float32"`, `float`: a dtype of real numbers."""
    word = expr.attr.value if isinstance(expr, cst.Attribute) else expr.value if isinstance(expr, cst.Name) else None
    if isinstance(expr, cst.SimpleString):
        word = str(expr.evaluated_value)
    return word is not None and word.lower().startswith(("float", "int", "uint", "bool", "double", "half", "long", "bfloat", "short"))


_REAL_METHODS = frozenset(("float", "double", "half", "bfloat16", "int", "long", "short", "bool", "abs"))
_RESHAPES = frozenset(("view", "reshape", "unsqueeze", "squeeze", "contiguous", "clone", "detach", "permute", "transpose", "flatten", "t", "copy"))
_SIZED_FACTORIES = frozenset(
    f"torch.{name}" for name in "zeros ones empty rand randn randint randperm eye arange linspace logspace".split()
)
_WRAPPERS = frozenset(("torch.from_numpy", "torch.tensor", "torch.as_tensor", "np.ascontiguousarray", "numpy.ascontiguousarray"))


def _mentions_complex(node: cst.CSTNode) -> bool:
    for inner in nodes_of(node, (cst.Name, cst.Imaginary)):
        if isinstance(inner, cst.Imaginary) or inner.value in _COMPLEX_NAMES:  # type: ignore[attr-defined]
            return True
    return any(dotted_name(call.func) in ("torch.complex", "complex") for call in nodes_of(node, cst.Call))


def dtype_pin(value: cst.BaseExpression, qualify: Qualify) -> Optional[str]:
    """The part of `value` that sets its floating dtype on purpose (`dtype=torch.float32`,
    `.double()`, `.to(torch.float64)`, `torch.FloatTensor(...)`), or None."""
    code = cst.Module([]).code_for_node
    for call in nodes_of(value, cst.Call):
        constructor = qualify(call.func)
        if constructor in _PINNING_CONSTRUCTORS:
            return f"{constructor}(...)"
        for arg in call.args:
            is_dtype = (arg.keyword is not None and arg.keyword.value == "dtype") or (
                arg.keyword is None and isinstance(call.func, cst.Attribute) and call.func.attr.value in ("to", "type")
            )
            if is_dtype and _pinned(arg.value, qualify):
                return code(arg).strip().rstrip(",")
        if isinstance(call.func, cst.Attribute) and call.func.attr.value in _PINNING_METHODS and not call.args:
            return f".{call.func.attr.value}()"
    return None


def dtype_pin_through(
    value: cst.BaseExpression,
    me: Optional[str],
    attribute_values: Callable[[str], Iterable[tuple[cst.BaseExpression, Optional[str]]]],
    method: Callable[[str], Optional[cst.FunctionDef]],
    function: Callable[[str], Optional[cst.FunctionDef]],
    qualify: Qualify,
) -> Optional[str]:
    """`dtype_pin` of `value`, or a pin to double precision in what it is built from, a few steps
    back: the values assigned to the attributes of the class it reads (`me`: the instance's name
    there), and the bodies of the methods and file functions it calls (`self.alphas = 1 -
    self.betas`, with `self.betas` from a schedule method built with `dtype=torch.float64`)."""
    stack: list[tuple[cst.CSTNode, Optional[str], int]] = [(value, me, 0)]
    seen: set[int] = set()
    while stack:
        node, owner, depth = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        pin = dtype_pin(node, qualify)  # type: ignore[arg-type]
        # where it is built from, only a dtype wider than the default counts: `dtype=torch.float32`
        # in a kernel helper says what a buffer of the default dtype holds anyway
        if pin is not None and (depth == 0 or any(word in pin for word in WIDE_DTYPE_WORDS)):
            return pin
        if depth >= _MAX_DEPTH:
            continue
        for read in nodes_of(node, cst.Attribute):
            if owner is not None and is_name(read.value, owner):
                stack.extend((source, source_me, depth + 1) for source, source_me in attribute_values(read.attr.value))
        for call in nodes_of(node, cst.Call):
            body = None
            if isinstance(call.func, cst.Name):
                body = function(call.func.value)
            elif isinstance(call.func, cst.Attribute) and owner is not None and is_name(call.func.value, owner):
                body = method(call.func.attr.value)
            if body is not None and not _returns_cast(body):
                stack.append((body.body, self_name(body), depth + 1))
    return None


def _returns_cast(func: cst.FunctionDef) -> bool:
    """Every `return` casts what it gives back to the default floating dtype (`.float()`): what
    the body computes in (`dtype=torch.float64` for precision) does not reach the caller."""
    returns = [r.value for r in nodes_of(func.body, cst.Return)]
    return bool(returns) and all(
        isinstance(v, cst.Call) and isinstance(v.func, cst.Attribute) and v.func.attr.value == "float" and not v.args for v in returns
    )


def _pinned(node: cst.BaseExpression, qualify: Qualify) -> bool:
    qualified = qualify(node)
    return qualified is not None and qualified.startswith("torch.") and qualified[len("torch.") :] in _PINNED_DTYPES


def boundary_use(info: ClassInfo, attr: str, qualify: Qualify, methods: Iterable[cst.FunctionDef]) -> Optional[str]:
    """The call that uses `self.<attr>` as sorted boundaries (`torch.bucketize(x, self.bins)`)."""
    for func in methods:
        me = self_name(func) or ""
        aliases = {name for name, value in _local_values(func) if _root_is(value, me, attr)}  # `bins = self.bins.to(...)`
        for call in nodes_of(func.body, cst.Call):
            position = _BOUNDARY_CALLS.get(qualify(call.func) or "")
            positional = [a for a in call.args if a.keyword is None]
            if position is None or len(positional) <= position:
                continue
            target = positional[position].value
            if _root_is(target, me, attr) or (isinstance(target, cst.Name) and target.value in aliases):
                return qualify(call.func)
    return None


_ORDERING = (cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual)


def threshold_use(attr: str, methods: Iterable[cst.FunctionDef]) -> Optional[str]:
    """The comparison that orders data against `self.<attr>` or an item of it (`g >= edges[i]`,
    with `edges = self.edges`): the code of the first one found."""
    for func in methods:
        me = self_name(func) or ""
        aliases = {name for name, value in _local_values(func) if _root_is(value, me, attr)}
        for comparison in nodes_of(func.body, cst.Comparison):
            sides = [comparison.left, *(t.comparator for t in comparison.comparisons if isinstance(t.operator, _ORDERING))]
            read = [side for side in sides if not _metadata(side)]
            if len(sides) > 1 and any(_root_is(side, me, attr) or _subscripted_name(side) in aliases for side in read):
                return cst.Module([]).code_for_node(comparison.with_changes(lpar=(), rpar=()))
    return None


def dtype_checked(attr: str, methods: Iterable[cst.FunctionDef]) -> Optional[str]:
    """The comparison that checks `self.<attr>.dtype` (`assert self.inv_freq.dtype == torch.float32`):
    the code relies on the dtype it built the tensor with."""
    code = cst.Module([]).code_for_node
    for func in methods:
        me = self_name(func) or ""
        for comparison in nodes_of(func.body, cst.Comparison):
            sides = [comparison.left, *(t.comparator for t in comparison.comparisons)]
            if any(isinstance(side, cst.Attribute) and side.attr.value == "dtype" and _root_is(side.value, me, attr) for side in sides):
                return code(comparison.with_changes(lpar=(), rpar=()))
    return None


# Ops that refuse operands of two floating dtypes (elementwise ops promote; these raise).
_DTYPE_STRICT_CALLS = frozenset(
    "torch.matmul torch.mm torch.bmm torch.mv torch.einsum torch.addmm torch.baddbmm torch.nn.functional.linear "
    "torch.nn.functional.conv1d torch.nn.functional.conv2d torch.nn.functional.conv3d".split()
)
_FLOAT_CASTS = frozenset(("float", "double"))


def strict_op_with_cast(attr: str, qualify: Qualify, methods: Iterable[cst.FunctionDef]) -> Optional[str]:
    """The op (`torch.matmul(self.m, index.float().T)`, `self.m @ x.double()`) that takes
    `self.<attr>` and a value the code casts to a fixed floating dtype: after `.half()` a buffer
    would be half and the other operand still float32, which these ops refuse."""
    code = cst.Module([]).code_for_node
    for func in methods:
        me = self_name(func) or ""
        aliases = {name for name, value in _local_values(func) if _root_is(value, me, attr)}
        for node in nodes_of(func.body, (cst.Call, cst.BinaryOperation)):
            operands = _strict_operands(node, qualify)
            if len(operands) < 2:
                continue
            mine = [o for o in operands if _root_is(o, me, attr) or _subscripted_name(o) in aliases]
            if mine and any(_cast_to_float(o) for o in operands if o not in mine):
                return code(node)
    return None


def _strict_operands(node: cst.CSTNode, qualify: Qualify) -> list[cst.BaseExpression]:
    if isinstance(node, cst.BinaryOperation):
        return [node.left, node.right] if isinstance(node.operator, cst.MatrixMultiply) else []
    assert isinstance(node, cst.Call)
    if qualify(node.func) in _DTYPE_STRICT_CALLS:
        return [a.value for a in node.args]
    func = node.func  # `a.matmul(b)`, `a.mm(b)`: the receiver is an operand too
    if isinstance(func, cst.Attribute) and func.attr.value in _DTYPE_STRICT_METHODS:
        return [func.value, *(a.value for a in node.args)]
    return []


_DTYPE_STRICT_METHODS = frozenset("matmul mm bmm mv addmm baddbmm".split())


def _cast_to_float(node: cst.BaseExpression) -> bool:
    """`x.float()`, `x.double().T`, `x.to(torch.float32)`, `x.type(torch.float64)`: cast to a
    fixed floating dtype."""
    for call in nodes_of(node, cst.Call):
        func = call.func
        if not isinstance(func, cst.Attribute):
            continue
        if func.attr.value in _FLOAT_CASTS and not call.args:
            return True
        if func.attr.value in ("to", "type") and any(_names_float_dtype(a.value) for a in call.args):
            return True
    return False


def _names_float_dtype(node: cst.BaseExpression) -> bool:
    name = dotted_name(node) or ""
    return name.startswith("torch.") and name[len("torch."):] in ("float32", "float64", "float", "double")


_SPARSE_CONSTRUCTORS = frozenset(
    "torch.sparse_coo_tensor torch.sparse_csr_tensor torch.sparse_csc_tensor torch.sparse_bsr_tensor "
    "torch.sparse_bsc_tensor torch.sparse_compressed_tensor torch.sparse.FloatTensor torch.sparse.DoubleTensor "
    "torch.sparse.LongTensor torch.sparse.IntTensor".split()
)
_SPARSE_METHODS = frozenset("to_sparse to_sparse_coo to_sparse_csr to_sparse_csc to_sparse_bsr to_sparse_bsc".split())


def sparse_value(value: cst.BaseExpression, qualify: Qualify) -> Optional[str]:
    """The part of `value` that makes a sparse tensor (`torch.sparse_coo_tensor(...)`, `.to_sparse()`), or None."""
    for call in nodes_of(value, cst.Call):
        constructor = qualify(call.func)
        if constructor in _SPARSE_CONSTRUCTORS:
            return f"{constructor}(...)"
        if isinstance(call.func, cst.Attribute) and call.func.attr.value in _SPARSE_METHODS:
            return f".{call.func.attr.value}()"
    return None


# What describes a tensor rather than reads its values: `L <= self.table.size(0)` compares sizes.
_METADATA = frozenset("size shape numel nelement dim ndim dtype device".split())


def _metadata(node: cst.BaseExpression) -> bool:
    return any(isinstance(n, cst.Attribute) and n.attr.value in _METADATA for n in nodes_of(node, cst.Attribute))


def _subscripted_name(node: cst.BaseExpression) -> Optional[str]:
    while isinstance(node, cst.Subscript):
        node = node.value
    return node.value if isinstance(node, cst.Name) else None


def _root_is(node: cst.BaseExpression, me: str, attr: str) -> bool:
    """`self.<attr>`, possibly moved, cast or sliced (`self.bins.to(x.device)[1:]`)."""
    while True:
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            node = node.func.value
        elif isinstance(node, cst.Subscript):
            node = node.value
        else:
            break
    return isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == me and node.attr.value == attr


def _local_values(func: cst.FunctionDef) -> Iterator[tuple[str, cst.BaseExpression]]:
    for assign in nodes_of(func.body, cst.Assign):
        for target in assign.targets:  # type: ignore[attr-defined]
            if isinstance(target.target, cst.Name):
                yield target.target.value, assign.value  # type: ignore[attr-defined]


_KERNEL_CALLS = frozenset(
    "torch.nn.functional.conv1d torch.nn.functional.conv2d torch.nn.functional.conv3d "
    "torch.nn.functional.conv_transpose1d torch.nn.functional.conv_transpose2d "
    "torch.nn.functional.conv_transpose3d torch.nn.functional.linear torch.conv1d torch.conv2d torch.conv3d".split()
)


def kernel_only(attr: str, qualify: Qualify, methods: Iterable[cst.FunctionDef]) -> bool:
    """Every read of `self.<attr>` is the weight of a functional convolution or linear map whose
    input is not cast to a fixed dtype (`F.conv1d(x, self.wsin, stride=h)`): these ops refuse a
    weight of another dtype than the input, so after `.half()` the plain float32 kernel already
    fails, and only a kernel cast with the module runs. A dtype spelled out where it is built
    protects nothing there."""
    reads = kernels = 0
    for func in methods:
        me = self_name(func) or ""
        stored = {id(n) for a in nodes_of(func.body, (cst.Assign, cst.AugAssign, cst.AnnAssign)) for t in assignment_targets(a) for n in nodes_of(t, cst.Attribute)}
        reads += sum(1 for n in nodes_of(func.body, cst.Attribute) if is_self_attr(n, me, attr) and id(n) not in stored)
        for call in nodes_of(func.body, cst.Call):
            if qualify(call.func) not in _KERNEL_CALLS or len(call.args) < 2 or call.args[0].keyword is not None:
                continue
            weight = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "weight"), None)
            weight = weight if weight is not None else call.args[1].value if call.args[1].keyword is None else None
            if weight is not None and is_self_attr(weight, me, attr) and not _cast_to_float(call.args[0].value):
                kernels += 1
    return reads > 0 and reads == kernels




# Factories whose every element is 0 or 1, and the methods that only reshape or cast what they get.
_UNIT_FACTORIES = frozenset("torch.zeros torch.ones torch.eye torch.zeros_like torch.ones_like".split())
_LITERAL_FACTORIES = frozenset("torch.tensor torch.as_tensor torch.Tensor torch.FloatTensor".split())
_SHAPING_METHODS = _RESHAPES | SHAPING_METHODS | {"float"}


def exact_in_every_float(value: cst.BaseExpression, qualify: Qualify) -> bool:
    """`value` holds only numbers that half and bfloat16 represent exactly (zeros, ones, an
    identity, `torch.full(..., -1)`, a literal table of small integers): a cast with the module
    cannot change them, so a float32 pin on it protects no value."""
    node = value
    while True:
        if isinstance(node, cst.Subscript):
            node = node.value
        elif isinstance(node, cst.Attribute) and node.attr.value in ("T", "mT"):
            node = node.value
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and qualify(node.func) is None and (
            node.func.attr.value in _SHAPING_METHODS or _default_float_cast(node, qualify)
        ):
            node = node.func.value
        else:
            break
    if not isinstance(node, cst.Call):
        return False
    built = qualify(node.func)
    if built in _UNIT_FACTORIES:
        return True
    positional = [arg.value for arg in node.args if arg.keyword is None and not arg.star]
    if built == "torch.full" and len(positional) >= 2:
        return _exact_literal(positional[1])
    return built in _LITERAL_FACTORIES and len(positional) == 1 and isinstance(positional[0], (cst.List, cst.Tuple)) and _exact_literal(positional[0])


def _default_float_cast(call: cst.Call, qualify: Qualify) -> bool:
    """`.to(torch.float32)`, `.type(torch.float)`, `.to(dtype=torch.float32)`: a cast to the default float dtype."""
    if not isinstance(call.func, cst.Attribute) or call.func.attr.value not in ("to", "type") or len(call.args) != 1:
        return False
    arg = call.args[0]
    return (arg.keyword is None or arg.keyword.value == "dtype") and qualify(arg.value) in ("torch.float32", "torch.float")


def pin_guards_values(value: cst.BaseExpression, pin: str, qualify: Qualify) -> bool:
    """Whether the dtype pin `pin` on `value` may keep values that a cast with the module would
    change: any pin but one to the default float dtype may (float64 for precision, float8 or half
    for a format); that one may not when every value is exact in half and bfloat16."""
    return _DEFAULT_FLOAT_PIN.search(pin) is None or not exact_in_every_float(value, qualify)


# `dtype=torch.float32`, `dtype=torch.float`, `torch.FloatTensor(...)`, `.float()`: the default float dtype.
_DEFAULT_FLOAT_PIN = re.compile(r"(?:\bfloat32\b|\bfloat\b(?![0-9_])|FloatTensor)")


def _exact_literal(node: cst.BaseExpression) -> bool:
    """A number, or nested lists/tuples of numbers, each exact in half and bfloat16."""
    if isinstance(node, (cst.List, cst.Tuple)):
        return all(_exact_literal(element.value) for element in node.elements if not isinstance(element, cst.StarredElement)) and not any(
            isinstance(element, cst.StarredElement) for element in node.elements
        )
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
        return _exact_literal(node.expression)
    if isinstance(node, (cst.Integer, cst.Float)):
        number = float(node.evaluated_value)
        if number == 0:
            return True
        mantissa, exponent = math.frexp(abs(number))
        # bfloat16 keeps 8 significant bits; half's normal exponents reach from 2**-14 to 2**15
        return (mantissa * 256).is_integer() and -13 <= exponent <= 16
    return False
