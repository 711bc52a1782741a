"""Collects the cases under fixtures/: a module, its expected findings, its expected fixed text.

Layout of one case `fixtures/<group>/<name>.py`:
- `<name>.expected`: one line per finding, `row:col: CODE [safe|unsafe|none] message`;
- `<name>.fixed.py`: the text after `--fix` (absent: fixing must leave the file unchanged);
- `<name>.unsafe.py`: the text after `--fix --unsafe-fixes` (absent: same as `.fixed.py`);
- header comments in the module: `# fixture-settings: {"select": ["BUF006"]}` (JSON, Settings
  fields; `"project-scan": true` adds what the CLI's project pre-pass finds in the file) and `# runtime: Class(args) -> input expression` for the torch-backed checks;
  `# runtime-meta: ...` also runs both modules moved to the meta device under the CUDA device
  rules (a fix must not make an op mix devices where the original did not), and
  `# runtime-cast: ...` also compares them cast with `.to(torch.bfloat16)` (a safe fix must not
  cast what the original kept in its own dtype).
`BUFFERLINT_UPDATE_FIXTURES=1 pytest tests/test_fixtures.py` rewrites the expectations; review the diff.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from bufferlint.analysis.project import scan_project
from bufferlint.config import Settings
from bufferlint.model import Finding

ROOT = Path(__file__).resolve().parent.parent / "fixtures"
UPDATE = os.environ.get("BUFFERLINT_UPDATE_FIXTURES") == "1"
_RUNTIME = re.compile(r"^# runtime(?P<kind>|-meta|-cast): (?P<build>.+?) -> (?P<input>.+)$", re.MULTILINE)
_SETTINGS = re.compile(r"^# fixture-settings: (?P<json>\{.*\})$", re.MULTILINE)


@dataclass(frozen=True)
class Runtime:
    build: str
    input: str
    kind: str = ""  # "" (CPU outputs), "meta" (device rules) or "cast" (bfloat16)


@dataclass(frozen=True)
class Case:
    path: Path

    @property
    def id(self) -> str:
        return str(self.path.relative_to(ROOT).with_suffix(""))

    @property
    def source(self) -> bytes:
        return self.path.read_bytes()

    def sibling(self, suffix: str) -> Path:
        return self.path.with_name(self.path.stem + suffix)

    def settings(self, unsafe: bool = False) -> Settings:
        match = _SETTINGS.search(self.source.decode("utf-8", "replace"))
        values = json.loads(match.group("json")) if match else {}
        fields = {k.replace("-", "_"): tuple(v) if isinstance(v, list) else v for k, v in values.items()}
        if fields.pop("project_scan", False):
            # What a run over this one file knows about its project (the CLI's pre-pass), run from
            # the repository root so that the sites messages name are the same on every checkout.
            with contextlib.chdir(ROOT.parent):
                scan = scan_project([str(self.path.relative_to(ROOT.parent))])
            fields["project"] = scan.facts
            fields["module_bases"] = tuple(fields.get("module_bases", ())) + scan.bases
        return Settings(**{**fields, "unsafe_fixes": unsafe})

    def runtimes(self) -> list[Runtime]:
        text = self.source.decode("utf-8", "replace")
        return [Runtime(m.group("build").strip(), m.group("input").strip(), m.group("kind").lstrip("-")) for m in _RUNTIME.finditer(text)]

    def expected_fixed(self, unsafe: bool) -> Optional[bytes]:
        path = self.sibling(".unsafe.py") if unsafe else self.sibling(".fixed.py")
        if unsafe and not path.exists():
            return self.expected_fixed(False)
        return path.read_bytes() if path.exists() else None


def all_cases() -> list[Case]:
    paths = sorted(ROOT.rglob("*.py"))
    return [Case(p) for p in paths if not p.name.endswith((".fixed.py", ".unsafe.py")) and "verify" not in p.parts]


def finding_line(finding: Finding) -> str:
    kind = "none" if finding.fix is None else finding.fix.applicability.value
    return f"{finding.location.row}:{finding.location.column}: {finding.code} [{kind}] {finding.message}"
