"""Which parameters the project's optimizers are given: all of them, or only those that train.

BUF008 turns a frozen `nn.Parameter` into a buffer. An optimizer built over every parameter
(`torch.optim.Adam(model.parameters())`) then covers one tensor fewer, and resuming its state from
a checkpoint saved before the change fails. An optimizer given only the parameters that require
grad never held the frozen one, so resuming it is unaffected:

    for name, p in net.named_parameters():
        if not p.requires_grad:
            continue
        groups.append({"params": [p], "lr": lr})
    optimizer = factory[cfg.optim](groups, lr)

A build is **filtered** when nothing in its arguments reads `.parameters()` (or
`.named_parameters()`) unfiltered and either its arguments filter (`filter(lambda p:
p.requires_grad, ...)`, a comprehension testing `requires_grad`) or the function building it reads
`requires_grad` (or groups them with timm's `add_weight_decay`, which leaves frozen ones out). A
list of tensors the call builds from constants (`Adam([torch.zeros(3)])`, a scheduler's demo) is
no module's parameters. What counts as a build: a `torch.optim` class (by name or dotted), a call indexed
out of a table whose name says optimizer (`factory[name](...)`), and any other call whose name
says optimizer (`build_optimizer(cfg, model)`); the project's own builders among the last are
read where they are defined, not at their calls. Learning-rate schedulers are no builds.
"""

from __future__ import annotations

import ast
import re
from typing import Iterator, Optional, Union

from bufferlint.analysis.ast_reading import called_name, nodes_on_lines

# torch.optim's optimizers and the common ones outside it, by class name
OPTIMIZER_CLASSES = frozenset(
    "SGD Adam AdamW Adagrad Adadelta Adamax RMSprop Rprop ASGD LBFGS NAdam RAdam SparseAdam "
    "Lion Lamb LAMB Adafactor AdamP FusedAdam FusedLAMB Novograd".split()
)
# what builds no optimizer, though its name says so: modules of schedulers, an optimizer's own methods
_NOT_BUILD_MODULES = frozenset(("lr_scheduler", "swa_utils"))
_OPTIMIZER_METHODS = frozenset(("load_state_dict", "state_dict", "zero_grad", "step", "add_param_group"))
_PARAMETER_LISTS = frozenset(("parameters", "named_parameters"))
# timm's parameter-group helpers, which leave out every parameter that does not require grad
_TRAINABLE_GROUPS = frozenset(("add_weight_decay", "param_groups_weight_decay", "param_groups_layer_decay"))
# the roots of calls that build a tensor or a Parameter from constants (`torch.zeros`, `nn.Parameter`)
_TENSOR_BUILDERS = frozenset(("torch", "nn", "Parameter"))

Function = Union[ast.FunctionDef, ast.AsyncFunctionDef, ast.Module]

# (the callee's last name, the line, whether only trainable parameters reach it)
Build = tuple[str, int, bool]


# Text that may start a build (`Adam(`, `build_optimizer(`, `optimizers[name](`) or define a
# builder: only the functions holding such a line are walked.
_BUILD_TEXT = re.compile(
    rb"(?:[Oo]ptim\w*|\b(?:" + "|".join(sorted(OPTIMIZER_CLASSES)).encode() + rb"))[ \t]*(?:\[[^\]\n]*\][ \t]*)?\("
)
_BUILDER_DEF = re.compile(rb"(?m)^[ \t]*(?:async[ \t]+)?def[ \t]+(\w*[Oo]ptim\w*)")


def optimizer_builds(tree: ast.Module, source: bytes) -> tuple[tuple[Build, ...], tuple[str, ...]]:
    """Every optimizer build of the file, and the names of its functions and methods that say
    optimizer (the project's own builders: their calls elsewhere are not builds)."""
    builders = tuple(match.group(1).decode("ascii", "replace") for match in _BUILDER_DEF.finditer(source))
    lines = {source.count(b"\n", 0, match.start()) + 1 for match in _BUILD_TEXT.finditer(source)}
    builds: list[Build] = []
    for scope in _scopes(tree, lines):
        reads_grad: Optional[bool] = None
        for call in _calls(scope):
            name = _build_name(call) if call.lineno in lines else None
            if name is None:
                continue
            if reads_grad is None:
                reads_grad = _reads_requires_grad(scope)
            builds.append((name, call.lineno, _filtered(call, reads_grad)))
    return tuple(builds), builders


def _scopes(tree: ast.Module, lines: set[int]) -> Iterator[Function]:
    """The module and the functions (methods too) whose lines hold one of `lines`."""
    if not lines:
        return
    yield tree
    yield from (node for node in nodes_on_lines(tree, lines) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)))


def _calls(scope: Function) -> Iterator[ast.Call]:
    return (node for node in _own_nodes(scope) if isinstance(node, ast.Call))


def _own_nodes(scope: Function, lambdas: bool = False) -> Iterator[ast.AST]:
    """The scope's own nodes, not those of functions nested in it (their own scope); with
    `lambdas`, those of the lambdas it holds too (`filter(lambda p: p.requires_grad, ...)`)."""
    nested = (ast.FunctionDef, ast.AsyncFunctionDef) if lambdas else (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
    stack: list[ast.AST] = list(scope.body)
    while stack:
        node = stack.pop()
        if isinstance(node, nested):
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def _build_name(call: ast.Call) -> Optional[str]:
    func = call.func
    if isinstance(func, ast.Subscript):
        table = called_name(func.value)
        return table if table is not None and "optim" in table.lower() else None
    name = called_name(func)
    dotted = _dotted(func)
    if name is None or name in _OPTIMIZER_METHODS or _NOT_BUILD_MODULES & set(dotted.split(".")):
        return None
    if name in OPTIMIZER_CLASSES or dotted.startswith(("torch.optim.", "optim.")) or "optim" in name.lower():
        return name
    return None


def _dotted(node: ast.AST) -> str:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _reads_requires_grad(scope: Function) -> bool:
    """The scope reads `requires_grad`, or groups parameters with a timm helper that skips those
    that do not require grad (`optim_factory.add_weight_decay(model, wd)`, as MAE's pretraining
    script does)."""
    return any(
        (isinstance(node, ast.Attribute) and node.attr == "requires_grad" and isinstance(node.ctx, ast.Load))
        or (isinstance(node, ast.Call) and called_name(node.func) in _TRAINABLE_GROUPS)
        for node in _own_nodes(scope, lambdas=True)
    )


def _filtered(call: ast.Call, reads_grad: bool) -> bool:
    """No unfiltered parameter list among the arguments, and a filter in them or around them;
    or tensors the call builds itself (a scheduler's demo: `Adam([torch.zeros(3, 3)], lr=1e-3)`),
    which are no module's parameters."""
    if _fresh_tensors(call):
        return True
    arguments = [*call.args, *(keyword.value for keyword in call.keywords)]
    unfiltered, filters = False, False
    for argument in arguments:
        bare, filtering = _parameter_reads(argument)
        unfiltered |= bare
        filters |= filtering
    return not unfiltered and (filters or reads_grad)


def _fresh_tensors(call: ast.Call) -> bool:
    """The optimizer is given a list of tensors built in place from constants alone
    (`[torch.zeros(3, 64)]`, `[nn.Parameter(torch.randn(2, 2))]`)."""
    given = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "params"), None)
    return isinstance(given, (ast.List, ast.Tuple)) and bool(given.elts) and all(_built_from_constants(e) for e in given.elts)


def _built_from_constants(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(_built_from_constants(element) for element in node.elts)
    if isinstance(node, ast.Call) and _dotted(node.func).split(".")[0] in _TENSOR_BUILDERS:
        return all(_built_from_constants(arg) for arg in [*node.args, *(k.value for k in node.keywords)])
    return False


def _parameter_reads(node: ast.AST) -> tuple[bool, bool]:
    """(reads `.parameters()` outside a filter, holds a filter testing `requires_grad`)."""
    if _is_filter(node):
        return False, True
    if isinstance(node, ast.Call) and called_name(node.func) in _PARAMETER_LISTS:
        return True, False
    bare, filters = False, False
    for child in ast.iter_child_nodes(node):
        child_bare, child_filters = _parameter_reads(child)
        bare |= child_bare
        filters |= child_filters
    return bare, filters


def _is_filter(node: ast.AST) -> bool:
    """`filter(<tests requires_grad>, ...)`, or a comprehension whose condition tests it."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "filter" and node.args:
        return _tests_grad(node.args[0])
    if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp, ast.DictComp)):
        return any(_tests_grad(condition) for generator in node.generators for condition in generator.ifs)
    return False


def _tests_grad(node: ast.AST) -> bool:
    return any(isinstance(inner, ast.Attribute) and inner.attr == "requires_grad" for inner in ast.walk(node))


def trainable_only(builds: list[Build], builders: set[str]) -> bool:
    """Every optimizer the project builds is given only parameters that require grad (and it
    builds one): none of them ever held a frozen parameter."""
    relevant = [build for build in builds if build[0] in OPTIMIZER_CLASSES or build[0] not in builders]
    return bool(relevant) and all(filtered for _, _, filtered in relevant)
