"""How big a tensor built by a torch factory is, when the call spells it out.

The forward rules stay silent on tensors too small to matter: a hoisted one-element constant
buys nothing (BUF003), and an empty placeholder or a 0-dim tensor never trips a device check
(BUF011: PyTorch lets a 0-dim CPU tensor meet CUDA tensors). Only literal sizes count; anything
computed stays unknown (None), and unknown is never "small".
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from bufferlint.analysis.flow import locals_always
from bufferlint.analysis.names import Qualify
from bufferlint.analysis.walk import nodes_of


# Factories whose positional arguments (or one sequence argument, or `size=`) are the shape.
_SHAPE_FACTORIES = frozenset("zeros ones empty rand randn full".split())
# Factories whose first argument is the data.
_DATA_FACTORIES = frozenset(("tensor", "as_tensor", "scalar_tensor"))
# torch.Tensor([0]), torch.LongTensor([[1, 2]]): the legacy constructors, given data.
_LEGACY_CONSTRUCTORS = frozenset(
    "Tensor FloatTensor DoubleTensor HalfTensor BFloat16Tensor LongTensor IntTensor ShortTensor ByteTensor BoolTensor".split()
)
# Methods that keep the number of elements: casts and copies (`torch.tensor([0.]).float()`).
_SAME_SIZE_METHODS = frozenset("float double half bfloat16 long int short bool byte clone detach contiguous to type".split())
# Scalars a data factory may be given: numbers, `math.inf`, `float("inf")`, names of numbers.
_NUMBER_FUNCTIONS = frozenset(("float", "int", "bool", "complex"))
_NUMBER_ATTRIBUTES = frozenset(("pi", "e", "inf", "nan", "tau"))


def static_numel(expr: cst.BaseExpression, qualify: Qualify) -> Optional[int]:
    """The number of elements of the tensor `expr` builds, read from literal sizes, or None."""
    while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and qualify(expr.func) is None:
        if expr.func.attr.value not in _SAME_SIZE_METHODS:
            return None
        expr = expr.func.value  # `.float()`, `.to(x)` keep the size
    if not isinstance(expr, cst.Call) or any(arg.star for arg in expr.args):
        return None
    qualified = qualify(expr.func) or ""
    if not qualified.startswith("torch.") or qualified.count(".") != 1:
        return None
    short = qualified[len("torch.") :]
    if short in _DATA_FACTORIES or short in _LEGACY_CONSTRUCTORS:
        data = _positional(expr, 0)
        return _data_numel(data) if data is not None else None
    if short in _SHAPE_FACTORIES:
        return _shape_numel(_shape_args(expr, short))
    if short == "arange":
        return _arange_numel(expr)
    return None


def copies_host_data(expr: cst.BaseExpression, qualify: Qualify) -> bool:
    """Whether building `expr` turns Python or numpy data into a tensor (`torch.tensor([...])`,
    `torch.from_numpy(a)`, `torch.FloatTensor([...])`): that data lives on the host, so the tensor
    is copied from there whatever device it is built for. A factory that computes its tensor
    (`torch.arange(n)`, `torch.eye(4)`) can build it on the device instead."""
    for node in nodes_of(expr, cst.Call):
        qualified = qualify(node.func) or ""
        short = qualified[len("torch.") :] if qualified.startswith("torch.") and qualified.count(".") == 1 else ""
        if short in _DATA_FACTORIES or short in _LEGACY_CONSTRUCTORS or short == "from_numpy":
            return True
    return False


def _arange_numel(call: cst.Call) -> Optional[int]:
    """`torch.arange(0, 0)`, `torch.arange(3)`, `torch.arange(1, 9, 2)`: integer literals only."""
    if any(a.keyword is not None for a in call.args) or not 1 <= len(call.args) <= 3:
        return None
    bounds = [b for b in (_signed_int(a.value) for a in call.args) if b is not None]
    if len(bounds) != len(call.args):
        return None
    start, end, step = (0, bounds[0], 1) if len(bounds) == 1 else (bounds[0], bounds[1], bounds[2] if len(bounds) == 3 else 1)
    if step == 0:
        return None
    return max(0, -((start - end) // step))  # ceil((end - start) / step)


def _signed_int(expr: cst.BaseExpression) -> Optional[int]:
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        value = _int_literal(expr.expression)
        return None if value is None else -value
    return _int_literal(expr)


# Element-wise torch functions and tensor methods: the result has the shape of the operand.
_POINTWISE = frozenset(
    "sqrt rsqrt exp log log2 log10 log1p expm1 abs neg sin cos tan tanh sigmoid square reciprocal clamp clip pow".split()
)
# Reductions over every element when given no `dim`: the result has no dimensions.
_FULL_REDUCTIONS = frozenset("sum mean prod max min norm std var amax amin all any median".split())


def is_zero_dim(
    expr: cst.BaseExpression, qualify: Qualify, scalars: frozenset[str] = frozenset(), vectors: frozenset[str] = frozenset()
) -> bool:
    """`torch.zeros(())`, `torch.empty([])`, `torch.tensor(0.)`, and what keeps or makes a tensor
    0-dim: `torch.sqrt(torch.tensor(2.))`, `x.sum()`, `2 * torch.tensor(1.)`, one element of a
    1-D tensor (`centres[1] - centres[0]`). `scalars`: names known to hold Python numbers
    (`scalar_names`), so `torch.tensor(rate)` counts too; `vectors`: local names known to hold
    1-D tensors (`vector_names`)."""
    if isinstance(expr, cst.BinaryOperation):
        sides = (expr.left, expr.right)
        return any(is_zero_dim(s, qualify, scalars, vectors) for s in sides) and all(
            is_zero_dim(s, qualify, scalars, vectors) or _is_scalar(s) or _is_scalar_name(s, scalars) for s in sides
        )
    if isinstance(expr, cst.UnaryOperation):
        return is_zero_dim(expr.expression, qualify, scalars, vectors)
    if isinstance(expr, cst.Subscript):
        return _one_element(expr, scalars) and (
            _is_scalar_name(expr.value, vectors) or _one_dim_factory(expr.value, qualify, scalars)
        )
    if not isinstance(expr, cst.Call):
        return False
    qualified = qualify(expr.func) or ""
    short = qualified[len("torch.") :] if qualified.startswith("torch.") else ""
    if _reduces_everything(expr, short) or (short in _POINTWISE and _first_is_zero_dim(expr, qualify, scalars)):
        return True
    if not short and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _POINTWISE | _SAME_SIZE_METHODS:
        return is_zero_dim(expr.func.value, qualify, scalars, vectors)
    if short in _SHAPE_FACTORIES:
        shape = _shape_args(expr, short)
        return shape is not None and len(shape) == 0
    if short in _DATA_FACTORIES:
        data = _positional(expr, 0)
        return data is not None and (_is_scalar(data) or _is_scalar_name(data, scalars))
    return False


# In-place fills that keep the receiver's shape (`t.uniform_(a, b)`, `t.normal_(m, s)`).
_FILLS = frozenset("uniform_ normal_ fill_ zero_ exponential_ bernoulli_ clamp_ clip_ random_".split())


def same_shape_chain(expr: cst.BaseExpression) -> Optional[tuple[cst.BaseExpression, list[cst.BaseExpression]]]:
    """The receiver at the root of a chain of methods that keep its shape when given no tensor
    (`t.normal_(m, s).clamp(min=0.)`, `t.float()`), with the arguments the chain passes (for the
    caller to show they are no tensors); None when `expr` is no such chain."""
    given: list[cst.BaseExpression] = []
    steps = 0
    while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
        method = expr.func.attr.value
        if method not in _SAME_SIZE_METHODS and method not in _POINTWISE and method not in _FILLS:
            return None
        given.extend(arg.value for arg in expr.args)
        expr, steps = expr.func.value, steps + 1
    return (expr, given) if steps else None


def scalar_names(func: cst.FunctionDef) -> frozenset[str]:
    """The parameters annotated `float`/`int`/`bool` or defaulting to a number (`rate=0.1`), and
    the locals every assignment of which is a number (`n = K.shape[-1]`, `k = len(xs)`,
    `m = int(...)`, `v = t.item()`)."""
    params = func.params
    found = {
        p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)
        if (p.annotation is not None and isinstance(p.annotation.annotation, cst.Name) and p.annotation.annotation.value in ("float", "int", "bool"))
        or (p.default is not None and _is_scalar(p.default))
    }
    return frozenset(found) | locals_always(func, _number_expression)


def vector_names(func: cst.FunctionDef, qualify: Qualify) -> frozenset[str]:
    """The locals every assignment of which builds a 1-D tensor (`mean = torch.linspace(0, 9, k)`)."""
    scalars = scalar_names(func)
    return locals_always(func, lambda value: _one_dim_factory(value, qualify, scalars))


# Factories whose result is 1-D whatever their arguments are.
_VECTOR_FACTORIES = frozenset(
    "linspace logspace arange randperm hann_window hamming_window blackman_window bartlett_window kaiser_window".split()
)


def _one_dim_factory(expr: cst.BaseExpression, qualify: Qualify, scalars: frozenset[str]) -> bool:
    """`torch.linspace(0, 1, n)`, `torch.arange(n)`, `torch.zeros(n)` (`n` a number, never a name
    that may hold a shape), `torch.tensor([1., 2.])`."""
    if not isinstance(expr, cst.Call) or any(arg.star for arg in expr.args):
        return False
    qualified = qualify(expr.func) or ""
    short = qualified[len("torch.") :] if qualified.startswith("torch.") else ""
    if short in _VECTOR_FACTORIES:
        return True
    if short in _SHAPE_FACTORIES:
        shape = _shape_args(expr, short)
        return shape is not None and len(shape) == 1 and (_int_literal(shape[0]) is not None or _is_scalar_name(shape[0], scalars))
    data = _positional(expr, 0) if short in _DATA_FACTORIES else None
    return isinstance(data, (cst.List, cst.Tuple)) and all(
        not isinstance(e, cst.StarredElement) and _is_scalar(e.value, element=True) for e in data.elements
    )


def _one_element(subscript: cst.Subscript, scalars: frozenset[str]) -> bool:
    """`t[1]`, `t[-1]`, `t[i]` with `i` a number: one integer index, no slice."""
    if len(subscript.slice) != 1 or not isinstance(subscript.slice[0].slice, cst.Index):
        return False
    index = subscript.slice[0].slice.value
    if isinstance(index, cst.UnaryOperation) and isinstance(index.operator, cst.Minus):
        index = index.expression
    return isinstance(index, cst.Integer) or _is_scalar_name(index, scalars)


def _number_expression(expr: cst.BaseExpression) -> bool:
    if _is_scalar(expr):
        return True
    if isinstance(expr, cst.Subscript):  # `K.shape[-1]`, `x.size()[0]`
        inner = expr.value
        return isinstance(inner, cst.Attribute) and inner.attr.value == "shape"
    if isinstance(expr, cst.Call):
        func = expr.func
        if isinstance(func, cst.Name):
            return func.value in ("len", "round") or func.value in _NUMBER_FUNCTIONS
        if isinstance(func, cst.Attribute):
            return func.attr.value == "item" or (func.attr.value == "size" and len(expr.args) == 1)
    return False


def _is_scalar_name(expr: cst.BaseExpression, scalars: frozenset[str]) -> bool:
    return isinstance(expr, cst.Name) and expr.value in scalars


def _reduces_everything(call: cst.Call, short: str) -> bool:
    """`torch.sum(x)`, `x.mean()`: a full reduction (no `dim`, no other positional argument)."""
    keywords = {a.keyword.value for a in call.args if a.keyword is not None}
    positional = [a for a in call.args if a.keyword is None]
    if "dim" in keywords or "axis" in keywords:
        return False
    if short in _FULL_REDUCTIONS:
        return len(positional) == 1
    func = call.func
    return not short and isinstance(func, cst.Attribute) and func.attr.value in _FULL_REDUCTIONS and not positional


def _first_is_zero_dim(call: cst.Call, qualify: Qualify, scalars: frozenset[str]) -> bool:
    first = _positional(call, 0)
    return first is not None and is_zero_dim(first, qualify, scalars)


def _positional(call: cst.Call, index: int) -> Optional[cst.BaseExpression]:
    positional = [a.value for a in call.args if a.keyword is None]
    return positional[index] if index < len(positional) else None


def _shape_args(call: cst.Call, short: str) -> Optional[list[cst.BaseExpression]]:
    """The shape's dimensions: `zeros(2, 3)`, `zeros((2, 3))`, `zeros(size=(2, 3))`; None if not literal."""
    keyword = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "size"), None)
    positional = [a.value for a in call.args if a.keyword is None]
    if short == "full":
        positional = positional[:1]  # full(size, fill_value)
    if keyword is not None:
        positional = [keyword]
    if len(positional) == 1 and isinstance(positional[0], (cst.Tuple, cst.List)):
        elements = positional[0].elements
        if any(isinstance(e, cst.StarredElement) for e in elements):
            return None  # zeros((*shape, 2)): not literal
        return [e.value for e in elements]
    if short == "full":
        return None  # full() takes its size as one sequence; a name is not a literal
    return positional


def _shape_numel(shape: Optional[list[cst.BaseExpression]]) -> Optional[int]:
    if shape is None:
        return None
    sizes = [_int_literal(d) for d in shape]
    if any(s == 0 for s in sizes):
        return 0  # one empty dimension empties the tensor, whatever the others are
    if any(s is None for s in sizes):
        return None
    numel = 1
    for size in sizes:
        assert size is not None
        numel *= size
    return numel


def _data_numel(data: cst.BaseExpression) -> Optional[int]:
    if _is_scalar(data):
        return 1
    if isinstance(data, (cst.List, cst.Tuple)):
        if any(isinstance(e, cst.StarredElement) for e in data.elements):
            return None
        counts = [1 if _is_scalar(e.value, element=True) else _data_numel(e.value) for e in data.elements]
        if any(c is None for c in counts):
            return None
        return sum(c for c in counts if c is not None)
    return None


def _is_scalar(expr: cst.BaseExpression, element: bool = False) -> bool:
    """A Python number: a literal, `-1.0`, `math.inf`, `torch.pi`, `float("-inf")`. As an element of a list
    literal (`element`), a name or attribute counts too (`[self.neg_inf]`): nested data would be
    written as a nested list."""
    if isinstance(expr, (cst.Integer, cst.Float, cst.Imaginary)):
        return True
    if isinstance(expr, cst.UnaryOperation):
        return _is_scalar(expr.expression, element)
    if isinstance(expr, cst.BinaryOperation):
        return _is_scalar(expr.left, element) and _is_scalar(expr.right, element)
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name):
        module = expr.value.value  # `math.inf`; `torch.pi`, `np.e`: the numbers those modules name
        if module == "math" or (module in ("torch", "np", "numpy") and expr.attr.value in _NUMBER_ATTRIBUTES):
            return True
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value in _NUMBER_FUNCTIONS:
        return True
    return element and (isinstance(expr, cst.Name) and expr.value != "None" or isinstance(expr, cst.Attribute))


def _int_literal(expr: cst.BaseExpression) -> Optional[int]:
    if isinstance(expr, cst.Integer):
        return int(expr.evaluated_value)
    return None
