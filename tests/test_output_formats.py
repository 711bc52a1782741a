"""Every --output-format, read back: concise, full, json, json-lines, github, gitlab, junit, sarif."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bufferlint.cli import main
from bufferlint.discovery import display_path
from tests.samples import MODEL
from bufferlint.rules import all_rules

T_MESSAGE = (
    "Tensor attribute `t` is not a registered buffer: .to()/.cuda() leave it behind, "
    "and forward() uses it with the input or the module's tensors"
)
JSON_KEYS = ["code", "name", "message", "filename", "location", "end_location", "fix", "url"]


@pytest.fixture(autouse=True)
def model(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text(MODEL)
    (tmp_path / "broken.py").write_text("import torch\ndef f(:\n")


def output(capsys: pytest.CaptureFixture[str], fmt: str, *paths: str) -> str:
    assert main(["--select", "BUF001", "--output-format", fmt, *(paths or ("m.py",))]) == 1
    return capsys.readouterr().out


def test_json_keys_and_values(capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(output(capsys, "json"))
    assert [list(item) for item in data] == [JSON_KEYS, JSON_KEYS]
    assert data[0] == {
        "code": "BUF001",
        "name": "tensor-attribute",
        "message": T_MESSAGE,
        "filename": "m.py",
        "location": {"row": 8, "column": 9},
        "end_location": {"row": 8, "column": 31},
        "fix": {"applicability": "safe", "message": "Register `t` as a non-persistent buffer"},
        "url": "https://github.com/bufferlint/bufferlint/blob/main/docs/rules.md#buf001",
    }
    assert data[1]["fix"]["applicability"] == "unsafe"


def test_json_parse_error_is_buf999(capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(output(capsys, "json", "broken.py"))
    assert [(d["code"], d["filename"], d["location"]["row"]) for d in data] == [("BUF999", "broken.py", 2)]
    assert data[0]["message"].startswith("syntax error")


def test_json_lines(capsys: pytest.CaptureFixture[str]) -> None:
    lines = output(capsys, "json-lines").splitlines()
    assert [json.loads(line)["location"]["row"] for line in lines] == [8, 9]
    assert all(list(json.loads(line)) == JSON_KEYS for line in lines)


def test_github_annotations(capsys: pytest.CaptureFixture[str]) -> None:
    lines = output(capsys, "github").splitlines()
    assert lines[0] == f"::error file=m.py,line=8,col=9,endLine=8,endColumn=31,title=BUF001::{T_MESSAGE}"
    assert lines[1].startswith("::error file=m.py,line=9,col=9,endLine=9,endColumn=27,title=BUF001::Tensor attribute `basis`")
    assert len(lines) == 2


def test_github_escapes_properties_and_message() -> None:
    from bufferlint.model import Finding, Position
    from bufferlint.output.github import annotation

    finding = Finding("BUF001", "tensor-attribute", "50% of\nit", "a,b:c.py", None, Position(1, 2), Position(3, 4))
    assert annotation(finding) == "::error file=a%2Cb%3Ac.py,line=1,col=2,endLine=3,endColumn=4,title=BUF001::50%25 of%0Ait"


def test_sarif_read_back(capsys: pytest.CaptureFixture[str]) -> None:
    doc = json.loads(output(capsys, "sarif", "m.py", "broken.py"))
    assert doc["version"] == "2.1.0"
    assert doc["$schema"].endswith("sarif-2.1.0.json")
    (run,) = doc["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "bufferlint" and driver["version"]
    ids = [rule["id"] for rule in driver["rules"]]
    assert ids == [rule.code for rule in all_rules()] + ["BUF999"]
    for rule, descriptor in zip(all_rules(), driver["rules"]):
        assert descriptor["name"] == rule.name
        assert descriptor["shortDescription"]["text"] == rule.summary
        assert descriptor["help"]["markdown"] == rule.docs()
        assert descriptor["helpUri"].endswith(f"#{rule.code.lower()}")
        assert descriptor["defaultConfiguration"]["level"] in ("error", "none")
    results = run["results"]
    assert [(r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in results] == [
        ("BUF999", 2),
        ("BUF001", 8),
        ("BUF001", 9),
    ]
    first = results[1]
    assert driver["rules"][first["ruleIndex"]]["id"] == "BUF001"
    assert first["message"]["text"] == T_MESSAGE
    assert first["level"] == "error"
    location = first["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": "m.py", "uriBaseId": "%SRCROOT%"}
    assert location["region"] == {"startLine": 8, "startColumn": 9, "endLine": 8, "endColumn": 31}
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"].startswith("file:///")
    _check_sarif_shape(doc)


def _check_sarif_shape(doc: dict) -> None:
    """The parts of the SARIF 2.1.0 schema that code-scanning uploads require."""
    assert set(doc) <= {"$schema", "version", "runs", "inlineExternalProperties", "properties"}
    for run in doc["runs"]:
        assert isinstance(run["tool"]["driver"]["name"], str)
        for rule in run["tool"]["driver"]["rules"]:
            assert isinstance(rule["id"], str)
            for key in ("shortDescription", "fullDescription", "help"):
                if key in rule:
                    assert isinstance(rule[key]["text"], str)
        for result in run["results"]:
            assert isinstance(result["message"]["text"], str)
            assert result["level"] in ("none", "note", "warning", "error")
            region = result["locations"][0]["physicalLocation"]["region"]
            assert all(isinstance(region[k], int) and region[k] >= 1 for k in region)


def test_full_shows_snippet_and_fix(capsys: pytest.CaptureFixture[str]) -> None:
    out = output(capsys, "full")
    first = out.split("\n\n")[0]
    assert first.splitlines() == [
        f"BUF001 [*] {T_MESSAGE}",
        " --> m.py:8:9",
        "   |",
        " 6 |     def __init__(self, basis: torch.Tensor):",
        " 7 |         super().__init__()",
        " 8 |         self.t = torch.ones(3)",
        "   |         ^^^^^^^^^^^^^^^^^^^^^^",
        " 9 |         self.basis = basis",
        "10 |",
        "   |",
        "help: Register `t` as a non-persistent buffer",
        "  |",
        "8 -         self.t = torch.ones(3)",
        '8 +         self.register_buffer("t", torch.ones(3), persistent=False)',
        "  |",
    ]
    assert "help: Register `basis` as a non-persistent buffer (unsafe fix: enable with `--unsafe-fixes`)" in out
    assert out.endswith("Found 2 errors.\n[*] 1 fixable with the `--fix` option (1 hidden fix can be enabled with the `--unsafe-fixes` option).\n")


def test_statistics_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--select", "BUF001", "--statistics", "--output-format", "json", "m.py"]) == 1
    assert json.loads(capsys.readouterr().out) == [{"code": "BUF001", "name": "tensor-attribute", "count": 2, "fixable": True, "fixable_count": 1}]


def test_a_message_quoting_a_statement_over_several_lines_stays_on_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The no-fix reason quotes the statement that sets the name first; written over three
    lines, it used to break the concise line (and any line-oriented consumer) in two."""
    source = (
        "import torch\nfrom torch import nn\n\n\n"
        "class Schedule(nn.Module):\n"
        "    def __init__(self, n):\n"
        "        super().__init__()\n"
        "        self.lin = nn.Linear(3, 3)\n"
        "        self.make(n)\n"
        "        self.ids = torch.arange(n)\n\n"
        "    def make(self, n):\n"
        "        self.ids = torch.full(\n"
        "            size=(n,), fill_value=n - 1, dtype=torch.long\n"
        "        )\n\n"
        "    def forward(self, x):\n"
        "        return self.lin(x) + self.ids.to(x.device)\n"
    )
    path = tmp_path / "schedule.py"
    path.write_text(source)
    main(["--no-cache", "--exit-zero", "--output-format", "concise", str(path)])
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith(display_path(str(path)))]
    assert [line.split(": ")[1].split(" ")[0] for line in lines] == ["BUF001", "BUF002"]
    assert all("no fix: `self.ids = torch.full( size=(n,), fill_value=n ...` sets it first (in make())" in line for line in lines)


def test_junit_is_valid_xml_with_one_failing_case_per_finding(capsys: pytest.CaptureFixture[str]) -> None:
    from xml.etree import ElementTree

    root = ElementTree.fromstring(output(capsys, "junit", "m.py", "broken.py"))
    assert (root.tag, root.get("tests"), root.get("failures")) == ("testsuites", "3", "3")
    suites = {suite.get("name"): suite for suite in root.iter("testsuite")}
    assert list(suites) == ["broken.py", "m.py"]
    cases = suites["m.py"].findall("testcase")
    assert [(c.get("name"), c.get("line"), c.get("column")) for c in cases] == [("org.bufferlint.BUF001", "8", "9"), ("org.bufferlint.BUF001", "9", "9")]
    failure = cases[0].find("failure")
    assert failure is not None and failure.get("message") == T_MESSAGE and failure.text == f"line 8, col 9, {T_MESSAGE}"
    assert suites["broken.py"].find("testcase").get("name") == "org.bufferlint.BUF999"  # type: ignore[union-attr]


def test_junit_without_findings_has_one_passing_case(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from xml.etree import ElementTree

    (tmp_path / "ok.py").write_text("x = 1\n")
    assert main(["--output-format", "junit", "ok.py"]) == 0
    root = ElementTree.fromstring(capsys.readouterr().out)
    assert [(c.get("name"), c.find("failure")) for c in root.iter("testcase")] == [("bufferlint", None)]


def test_gitlab_code_quality_fields(capsys: pytest.CaptureFixture[str]) -> None:
    """GitLab's code quality report: a list of issues, each with description, check_name, a
    unique fingerprint, a severity from GitLab's set and a location with path and lines.begin."""
    issues = json.loads(output(capsys, "gitlab", "m.py", "broken.py"))
    assert len(issues) == 3
    for issue in issues:
        assert set(issue) == {"description", "check_name", "fingerprint", "severity", "location"}
        assert issue["severity"] in {"info", "minor", "major", "critical", "blocker"}
        assert isinstance(issue["location"]["path"], str) and issue["location"]["lines"]["begin"] >= 1
    assert len({issue["fingerprint"] for issue in issues}) == 3
    assert issues[1] == {
        "description": f"BUF001 {T_MESSAGE}",
        "check_name": "BUF001",
        "fingerprint": issues[1]["fingerprint"],
        "severity": "major",
        "location": {"path": "m.py", "lines": {"begin": 8, "end": 8}},
    }
    # the fingerprint does not depend on the line: code added above keeps the issue's identity
    Path("m.py").write_text("\n\n" + MODEL)
    moved = json.loads(output(capsys, "gitlab", "m.py", "broken.py"))
    assert [i["fingerprint"] for i in moved] == [i["fingerprint"] for i in issues]


def test_output_file_gets_the_report_and_stdout_stays_empty(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["--select", "BUF001", "--output-format", "json", "--output-file", "report.json", "m.py"]) == 1
    assert capsys.readouterr().out == ""
    assert [f["location"]["row"] for f in json.loads((tmp_path / "report.json").read_text())] == [8, 9]
    assert main(["--select", "BUF001", "-o", "report.json", "-q", "m.py"]) == 1  # replaced, not appended
    assert (tmp_path / "report.json").read_text().splitlines()[0].startswith("m.py:8:9: BUF001")
