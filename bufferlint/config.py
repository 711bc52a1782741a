"""Effective settings: which rules run, and how fixes behave."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Optional

from bufferlint.rules import all_rules
from bufferlint.rules.base import Rule


class ConfigError(Exception):
    """Bad configuration or arguments: exit code 2."""


@dataclass(frozen=True)
class Settings:
    select: Optional[tuple[str, ...]] = None  # None: every rule enabled by default
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    unsafe_fixes: bool = False
    module_bases: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = field(default_factory=tuple)
    ignore_noqa: bool = False  # report findings even where `# noqa` suppresses them

    def enabled_rules(self) -> list[type[Rule]]:
        rules = all_rules()
        if self.select is None:
            chosen = {r for r in rules if r.default_enabled}
        else:
            chosen = set(_matching(rules, self.select))
        chosen |= set(_matching(rules, self.extend_select))
        chosen -= set(_matching(rules, self.ignore))
        return sorted(chosen, key=lambda rule: rule.code)

    def triggers(self) -> tuple[str, ...]:
        """Substrings one of which a file must contain to possibly have a finding."""
        names = {t for rule in self.enabled_rules() for t in rule.triggers}
        names |= {base.rsplit(".", 1)[-1] for base in self.module_bases}
        return tuple(sorted(names))


def _matching(rules: Iterable[type[Rule]], selectors: Iterable[str]) -> Iterable[type[Rule]]:
    for selector in selectors:
        found = [r for r in rules if r.code.startswith(selector.upper()) or r.name == selector.lower() or selector.upper() == "ALL"]
        if not found:
            raise ConfigError(f"unknown rule selector: {selector!r}")
        yield from found
