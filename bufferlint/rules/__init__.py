"""The rule registry: every `bufNNN_*.py` module here defines exactly one Rule subclass."""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache

from bufferlint.rules.base import Rule


@lru_cache(maxsize=None)
def all_rules() -> tuple[type[Rule], ...]:
    found: list[type[Rule]] = []
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("buf"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        found.extend(
            obj
            for obj in vars(module).values()
            if isinstance(obj, type) and issubclass(obj, Rule) and obj is not Rule and obj.__module__ == module.__name__
        )
    return tuple(sorted(found, key=lambda rule: rule.code))


def rule_by_code_or_name(key: str) -> "type[Rule] | None":
    key_upper = key.upper()
    for rule in all_rules():
        if rule.code == key_upper or rule.name == key.lower():
            return rule
    return None
