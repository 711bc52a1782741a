"""JUnit XML, as ruff writes it: one `<testsuite>` per file, one failing `<testcase>` per finding
(named `org.bufferlint.CODE`), and a passing `bufferlint` case when nothing was found, so CI
systems that read test reports (GitLab, Jenkins, Azure) show findings as failed tests."""

from __future__ import annotations

from itertools import groupby
from xml.etree import ElementTree

from bufferlint.model import Finding
from bufferlint.output.summary import RunSummary


def render(findings: list[Finding], summary: RunSummary) -> str:
    root = ElementTree.Element("testsuites", name="bufferlint", tests=str(max(len(findings), 1)), failures=str(len(findings)), errors="0")
    if not findings:
        suite = ElementTree.SubElement(root, "testsuite", name="bufferlint", tests="1", failures="0", errors="0")
        ElementTree.SubElement(suite, "testcase", name="bufferlint")
    for filename, group in groupby(findings, key=lambda f: f.filename):
        cases = list(group)
        suite = ElementTree.SubElement(root, "testsuite", name=filename, tests=str(len(cases)), failures=str(len(cases)), errors="0")
        for finding in cases:
            _case(suite, finding)
    ElementTree.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ElementTree.tostring(root, encoding="unicode") + "\n"


def _case(suite: ElementTree.Element, finding: Finding) -> None:
    start = finding.location
    cell = getattr(finding, "cell", 0)
    where = f"cell {cell}: line {start.row}, col {start.column}" if cell else f"line {start.row}, col {start.column}"
    case = ElementTree.SubElement(
        suite, "testcase", name=f"org.bufferlint.{finding.code}", classname=finding.filename, line=str(start.row), column=str(start.column)
    )
    failure = ElementTree.SubElement(case, "failure", message=finding.message)
    failure.text = f"{where}, {finding.message}"
