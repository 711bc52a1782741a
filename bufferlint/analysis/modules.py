"""Which classes of a file are nn.Module subclasses, including same-file chains and configured bases."""

from __future__ import annotations

from typing import Iterable, Optional

import libcst as cst

from bufferlint.analysis import torch_api
from bufferlint.analysis.classes import ClassInfo
from bufferlint.analysis.flow import iter_all_statements
from bufferlint.analysis.names import ImportMap, dotted_name


class ModuleClassResolver:
    """Decides module-ness for every class of one file."""

    def __init__(self, imports: ImportMap, extra_bases: Iterable[str] = ()) -> None:
        self.imports = imports
        self.extra_bases = frozenset(extra_bases)
        self.local_modules: set[str] = set()

    def resolve(self, infos: list[ClassInfo]) -> None:
        by_name = {info.name: info for info in infos}
        for info in infos:
            info.bases_info = [by_name[b] for b in info.base_names if b in by_name and by_name[b] is not info]
        changed = True
        while changed:  # propagate along same-file subclass chains until nothing changes
            changed = False
            for info in infos:
                if not info.is_module and self._has_module_base(info):
                    info.is_module = True
                    self.local_modules.add(info.name)
                    changed = True
        for info in infos:
            info.qualified_bases = [self.qualify(arg.value) for arg in _base_args(info.node)]
            info.is_script_module = self._inherits(info, torch_api.SCRIPT_MODULE_BASES)
            qualified = [self.qualify(b) for b in self._all_bases(info)]
            info.is_layer_subclass = any(torch_api.is_layer_base(b) for b in qualified)
            info.torch_registered = frozenset(name for b in qualified if b for name in torch_api.registered_by(b))

    def qualify(self, base: cst.BaseExpression) -> Optional[str]:
        return self.imports.qualify(base) or next(iter(self.imports.star_candidates(base)), None)

    def is_module_expr(self, base: cst.BaseExpression) -> bool:
        qualified = self.qualify(base)
        written = dotted_name(base)
        if torch_api.is_module_base(qualified):
            return True
        if written is not None and written in self.local_modules:
            return True
        return bool(self.extra_bases) and (qualified in self.extra_bases or written in self.extra_bases)

    def is_module_call(self, call: cst.Call) -> bool:
        return self.is_module_expr(call.func)

    def _has_module_base(self, info: ClassInfo) -> bool:
        return any(self.is_module_expr(arg.value) for arg in _base_args(info.node))

    def _all_bases(self, info: ClassInfo) -> list[cst.BaseExpression]:
        bases = [arg.value for arg in _base_args(info.node)]
        for ancestor in info.ancestors():
            bases.extend(arg.value for arg in _base_args(ancestor.node))
        return bases

    def _inherits(self, info: ClassInfo, names: frozenset[str]) -> bool:
        return any(self.qualify(b) in names for b in self._all_bases(info))


def _base_args(node: cst.ClassDef) -> list[cst.Arg]:
    return [arg for arg in node.bases if arg.keyword is None]


def class_infos(module: cst.Module) -> list[ClassInfo]:
    """A ClassInfo for every class in the file, nested ones included."""
    infos = []
    for node in iter_all_statements(module):
        if not isinstance(node, cst.ClassDef):
            continue
        base_names = [dotted_name(arg.value) or "" for arg in _base_args(node)]
        infos.append(ClassInfo(node=node, name=node.name.value, base_names=base_names))
    return infos
