"""Rule docs: every rule documents why, an example, what to write instead and fix safety;
docs/rules.md is generated from the docstrings and must not be stale."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bufferlint.cli import main
from bufferlint.docs import REGENERATE, RULES_MD, rules_markdown, terminal_docs
from bufferlint.rules import all_rules

ROOT = Path(__file__).resolve().parent.parent
SECTIONS = ("## Why it matters", "## Example", "## Instead", "## Fix safety")


def test_docs_rules_md_is_current() -> None:
    assert RULES_MD == ROOT / "docs" / "rules.md"
    current = RULES_MD.read_text(encoding="utf-8") if RULES_MD.is_file() else ""
    assert current == rules_markdown(), f"docs/rules.md is stale: run `{REGENERATE}` and commit the result"


@pytest.mark.parametrize("rule", all_rules(), ids=lambda rule: rule.code)
def test_rule_documents_the_required_sections(rule: type) -> None:
    docs = rule.docs()
    missing = [section for section in SECTIONS if section not in docs]
    assert not missing, f"{rule.code} docstring lacks {missing}"
    assert "```python" in docs.split("## Example", 1)[1], f"{rule.code}: the example needs a python code block"


# Rules that offer a fix list the obligations a safe (or any) fix must prove, numbered.
FIXING = ("BUF001", "BUF002", "BUF003", "BUF004", "BUF005", "BUF008", "BUF011")


@pytest.mark.parametrize("code", FIXING)
def test_a_fixing_rule_lists_its_proof_obligations(code: str) -> None:
    rule = next(r for r in all_rules() if r.code == code)
    safety = rule.docs().split("## Fix safety", 1)[1].split("\n## ", 1)[0]
    numbered = [line for line in safety.splitlines() if line.strip()[:2] in ("1.", "2.")]
    assert len(numbered) == 2, f"{code}: the fix safety section numbers its obligations"


def test_rules_md_has_an_anchor_and_section_per_rule() -> None:
    text = rules_markdown()
    for rule in all_rules():
        anchor = f'<a id="{rule.code.lower()}"></a>\n\n## {rule.code} {rule.name}\n'
        assert anchor in text
        assert f"| [{rule.code}](#{rule.code.lower()}) | {rule.name} |" in text
    assert "\n### Why it matters\n" in text  # docstring headings nest under the rule's heading
    assert "\n## Why it matters\n" not in text


def test_bufferlint_rule_prints_the_docs(capsys: pytest.CaptureFixture[str]) -> None:
    for rule in all_rules():
        assert main(["rule", rule.code]) == 0
        out = capsys.readouterr().out
        assert out == terminal_docs(rule)
        assert out.startswith(f"# {rule.code} {rule.name}\n\n{rule.summary}\n")
        assert rule.docs() in out


def test_list_rules_names_every_rule_once(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--list-rules"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[:2] for line in lines] == [[r.code, r.name] for r in all_rules()]
    off = [line.split()[0] for line in lines if line.split()[2] == "off"]
    assert off == [r.code for r in all_rules() if not r.default_enabled]


def test_docs_module_check_and_write(tmp_path: Path) -> None:
    target = tmp_path / "rules.md"
    env_cmd = [sys.executable, "-m", "bufferlint.docs"]
    stale = subprocess.run([*env_cmd, "--check", str(target)], cwd=ROOT, capture_output=True, text=True)
    assert stale.returncode == 1 and f"run `{REGENERATE}`" in stale.stderr
    wrote = subprocess.run([*env_cmd, str(target)], cwd=ROOT, capture_output=True, text=True)
    assert wrote.returncode == 0, wrote.stderr
    assert target.read_text(encoding="utf-8") == rules_markdown()
    assert subprocess.run([*env_cmd, "--check", str(target)], cwd=ROOT).returncode == 0
