"""`--show-fixes`: after `--fix`, what was fixed in which file, by rule."""

from __future__ import annotations

from collections import Counter


def render(fixed: dict[str, Counter[str]], names: dict[str, str]) -> str:
    files = {name: counts for name, counts in sorted(fixed.items()) if sum(counts.values())}
    if not files:
        return "No errors fixed.\n"
    total = sum(sum(counts.values()) for counts in files.values())
    lines = [f"Fixed {total} error{'' if total == 1 else 's'}:"]
    for filename, counts in files.items():
        lines.append(f"- {filename}:")
        lines += [f"    {count} × {code} ({names.get(code, '')})" for code, count in sorted(counts.items())]
    return "\n".join(lines) + "\n"
