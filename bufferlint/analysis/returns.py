"""Functions of the file (module-level helpers and methods) that return tensors."""

from __future__ import annotations

from typing import Callable, Mapping, Optional

import libcst as cst

from bufferlint.analysis.classes import tensor_params
from bufferlint.analysis.flow import iter_sites
from bufferlint.analysis.tensors import Scope, TensorInference, is_none, track_locals
from bufferlint.analysis.walk import has_node


class ReturnTypes:
    """Memoised "does calling this function give a tensor?" for functions of one file."""

    def __init__(self, functions: Mapping[str, cst.FunctionDef], blanked: Mapping[str, cst.FunctionDef] = {}) -> None:
        self.functions = functions
        self.blanked = blanked  # functions a check left out of the tree, parsed on lookup (pruning.py)
        self._memo: dict[int, bool] = {}

    def returns_tensor(self, name: str, inference: TensorInference, scope_for: Callable[[cst.FunctionDef], Scope]) -> bool:
        func = self.functions.get(name) or self.blanked.get(name)
        if func is None:
            return False
        key = id(func)
        if key not in self._memo:
            self._memo[key] = False  # recursion guard: a function calling itself is not evidence
            self._memo[key] = _all_returns_tensor(func, inference, scope_for(func))
        return self._memo[key]


def _all_returns_tensor(func: cst.FunctionDef, inference: TensorInference, scope: Scope) -> bool:
    scope.tensor_locals |= tensor_params(func, inference)
    seen_tensor = False
    for site in iter_sites(func):
        small = site.small
        if isinstance(small, cst.Return):
            value: Optional[cst.BaseExpression] = small.value
            if value is None or is_none(value):
                continue
            if not inference.is_tensor(value, scope):
                return False
            seen_tensor = True
        track_locals(small, scope, inference)
    return seen_tensor and not _is_generator(func)


def _is_generator(func: cst.FunctionDef) -> bool:
    return has_node(func.body, cst.Yield)


def module_functions(module: cst.Module) -> dict[str, cst.FunctionDef]:
    return {stmt.name.value: stmt for stmt in module.body if isinstance(stmt, cst.FunctionDef)}

