"""SARIF 2.1.0 for code scanning (e.g. `github/codeql-action/upload-sarif`).

Every rule of the registry is listed with its docs as metadata (plus BUF999, the parse error),
and each finding is a result pointing at its rule by id and index. Relative paths are URIs
relative to `%SRCROOT%` (the folder bufferlint ran in).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from bufferlint import __version__
from bufferlint.lint import PARSE_ERROR_CODE
from bufferlint.model import Finding
from bufferlint.output.summary import RunSummary
from bufferlint.rules import all_rules
from bufferlint.rules.base import DOCS_URL

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/bufferlint/bufferlint"


def rule_descriptors() -> list[dict[str, Any]]:
    descriptors = []
    for rule in all_rules():
        docs = rule.docs()
        descriptors.append(
            {
                "id": rule.code,
                "name": rule.name,
                "shortDescription": {"text": rule.summary},
                "fullDescription": {"text": docs.split("\n\n", 1)[0]},
                "help": {"text": docs, "markdown": docs},
                "helpUri": DOCS_URL.format(code=rule.code.lower()),
                "defaultConfiguration": {"level": "error" if rule.default_enabled else "none"},
                "properties": {"tags": ["pytorch", "nn.Module"]},
            }
        )
    descriptors.append(
        {
            "id": PARSE_ERROR_CODE,
            "name": "parse-error",
            "shortDescription": {"text": "The file could not be read or parsed"},
            "defaultConfiguration": {"level": "error"},
        }
    )
    return descriptors


def _artifact(filename: str) -> dict[str, str]:
    if os.path.isabs(filename):
        return {"uri": Path(filename).as_uri()}
    return {"uri": Path(filename).as_posix(), "uriBaseId": "%SRCROOT%"}


def result(finding: Finding, index: dict[str, int]) -> dict[str, Any]:
    cell = getattr(finding, "cell", 0)
    message = f"cell {cell}: {finding.message}" if cell else finding.message
    region = {
        "startLine": finding.location.row,
        "startColumn": finding.location.column,
        "endLine": finding.end_location.row,
        "endColumn": finding.end_location.column,
    }
    entry: dict[str, Any] = {
        "ruleId": finding.code,
        "level": "error",
        "message": {"text": message},
        "locations": [{"physicalLocation": {"artifactLocation": _artifact(finding.filename), "region": region}}],
    }
    if finding.code in index:
        entry["ruleIndex"] = index[finding.code]
    properties: dict[str, Any] = {"name": finding.name}
    if finding.fix is not None:
        properties["fix"] = {"applicability": finding.fix.applicability.value, "message": finding.fix.message}
    if cell:
        properties["cell"] = cell
    entry["properties"] = properties
    return entry


def document(findings: list[Finding]) -> dict[str, Any]:
    rules = rule_descriptors()
    index = {rule["id"]: position for position, rule in enumerate(rules)}
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": {"name": "bufferlint", "version": __version__, "informationUri": INFORMATION_URI, "rules": rules}},
                "originalUriBaseIds": {"%SRCROOT%": {"uri": Path.cwd().as_uri() + "/"}},
                "results": [result(f, index) for f in findings],
            }
        ],
    }


def render(findings: list[Finding], summary: RunSummary) -> str:
    return json.dumps(document(findings), indent=2) + "\n"
