"""Rule documentation from the rule docstrings: the terminal text of `bufferlint rule CODE`, and
`docs/rules.md`, regenerated with `python -m bufferlint.docs` (a test fails when it is stale)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Optional, Sequence

from bufferlint.rules import all_rules
from bufferlint.rules.base import DOCS_URL, Rule

RULES_MD = Path(__file__).resolve().parent.parent / "docs" / "rules.md"
REGENERATE = "python -m bufferlint.docs"
_HEADING = re.compile(r"^(#+) ", re.MULTILINE)
_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def _default(rule: type[Rule]) -> str:
    return "yes" if rule.default_enabled else f"no (enable with `--extend-select {rule.code}`)"


def terminal_docs(rule: type[Rule]) -> str:
    """What `bufferlint rule CODE` prints."""
    header = [
        f"# {rule.code} {rule.name}",
        "",
        rule.summary,
        "",
        f"Enabled by default: {_default(rule)}",
        f"Docs: {DOCS_URL.format(code=rule.code.lower())}",
        "",
    ]
    return "\n".join(header) + rule.docs() + "\n"


def rule_list() -> str:
    """What `bufferlint --list-rules` prints: code, name, default state, summary."""
    rules = all_rules()
    width = max((len(r.name) for r in rules), default=0)
    lines = [f"{r.code}  {r.name:<{width}}  {'   ' if r.default_enabled else 'off'}  {r.summary}" for r in rules]
    return "\n".join(lines) + "\n"


def _demote(markdown: str) -> str:
    """Rule docstrings use `##` headings; under a rule's own `##` heading they become `###`."""
    fences = {match.start(): match.group(0) for match in _FENCE.finditer(markdown)}
    pieces, cursor = [], 0
    for start, block in sorted(fences.items()):
        pieces.append(_HEADING.sub(lambda m: "#" + m.group(1) + " ", markdown[cursor:start]))
        pieces.append(block)
        cursor = start + len(block)
    pieces.append(_HEADING.sub(lambda m: "#" + m.group(1) + " ", markdown[cursor:]))
    return "".join(pieces)


def rules_markdown() -> str:
    rules = all_rules()
    out = [
        "# bufferlint rules",
        "",
        f"<!-- Generated from the rule docstrings by `{REGENERATE}`; do not edit by hand. -->",
        "",
        "| code | name | summary | default |",
        "| --- | --- | --- | --- |",
    ]
    out += [f"| [{r.code}](#{r.code.lower()}) | {r.name} | {r.summary} | {'on' if r.default_enabled else 'off'} |" for r in rules]
    for rule in rules:
        out += [
            "",
            f'<a id="{rule.code.lower()}"></a>',
            "",
            f"## {rule.code} {rule.name}",
            "",
            f"{rule.summary}. Enabled by default: {_default(rule)}.",
            "",
            _demote(rule.docs()),
        ]
    return "\n".join(out).rstrip("\n") + "\n"


def main(argv: Optional[Sequence[str]] = None) -> int:
    """`python -m bufferlint.docs [PATH]` rewrites docs/rules.md (or PATH); `--check` only compares."""
    args = list(sys.argv[1:] if argv is None else argv)
    check = "--check" in args
    paths = [a for a in args if a != "--check"]
    target = Path(paths[0]) if paths else RULES_MD
    text = rules_markdown()
    if check:
        current = target.read_text(encoding="utf-8") if target.is_file() else ""
        if current != text:
            print(f"{target} is stale: run `{REGENERATE}`", file=sys.stderr)
            return 1
        return 0
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    print(f"wrote {target} ({len(all_rules())} rules)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
