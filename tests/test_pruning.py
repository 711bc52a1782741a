"""Checks that skip a second ast parse (prechecked.py) and blank definitions they need not parse
up front (pruning.py) find exactly what a full check finds."""

from __future__ import annotations

import ast
import pathlib
import shutil
from dataclasses import replace

import pytest

from bufferlint import prechecked
from bufferlint.analysis.project import ProjectScan, scan_project
from bufferlint.cli import main
from bufferlint.config import Settings
from bufferlint.discovery import display_path
from bufferlint.lint import check_bytes
from bufferlint.model import Finding
from bufferlint.prefilter import summarize
from bufferlint.pruning import Pruned, pruned, top_definitions
from tests.fixture_cases import Case, all_cases, finding_line

CASES = all_cases()
PRUNING_FIXTURE = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "pruning" / "helpers_around_modules.py"


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_prechecked_and_pruned_check_matches_the_full_check(case: Case) -> None:
    settings = case.settings()
    full = [finding_line(f) for f in check_bytes(case.source, case.path.name, settings).findings]
    scan = scan_project([str(case.path)], settings.module_bases)
    scanned = replace(settings, module_bases=settings.module_bases + scan.bases)
    with prechecked.in_effect(scan.checked):
        assert prechecked.recall(case.source) is not None  # the shortcut is really taken
        fast = [finding_line(f) for f in check_bytes(case.source, case.path.name, scanned).findings]
    assert fast == full


def _pruned(source: bytes) -> Pruned:
    tree = ast.parse(source)
    return pruned(source, top_definitions(tree), summarize(tree), ())


def _full_and_scanned(tmp_path: pathlib.Path, data: bytes, settings: Settings) -> tuple[list[str], list[Finding], ProjectScan]:
    """A full check's findings (as lines), those of a check that takes the project scan's
    shortcuts (prechecked.py, pruning), and that scan."""
    path = tmp_path / "case.py"
    path.write_bytes(data)
    full = [finding_line(f) for f in check_bytes(data, "case.py", settings).findings]
    scan = scan_project([str(path)])
    with prechecked.in_effect(scan.checked):
        fast = check_bytes(data, "case.py", settings).findings
    return full, fast, scan


def _by_row(part: Pruned, source: bytes) -> list[bytes]:
    """The pruned text laid over the file's lines: each line left out reads as empty."""
    lines = part.text.split(b"\n")
    rows = part.rows or tuple(range(1, len(lines) + 1))
    assert len(rows) == len(lines) and list(rows) == sorted(set(rows))
    kept = dict(zip(rows, lines))
    return [kept.get(row, b"") for row in range(1, source.count(b"\n") + 2)]


def _blanked_rows(source: bytes) -> list[int]:
    before, after = source.split(b"\n"), _by_row(_pruned(source), source)
    return [row for row, (old, new) in enumerate(zip(before, after), start=1) if old != new]


def test_the_fixture_blanks_exactly_the_definitions_it_can() -> None:
    source = PRUNING_FIXTURE.read_bytes()
    lines = source.split(b"\n")
    starts = [lines[row - 1] for row in _blanked_rows(source) if lines[row - 1][:1] not in (b" ", b"")]
    assert starts == [
        b"def window(n: int) -> torch.Tensor:",
        b"def unused_report(rows: list) -> str:",
        b"def lazy_import_helper() -> object:",
        b"class Config:",
        b"@torch.no_grad()",
        b"def decorated_unused(x: torch.Tensor) -> torch.Tensor:",
    ]
    part = _pruned(source)
    compile(part.text, "pruned", "exec")
    assert sorted(part.functions) == ["decorated_unused", "lazy_import_helper", "unused_report", "window"]
    assert b"\nimport torch.nn.functional as F\n" in part.text
    assert part.functions["window"].name.value == "window"
    assert part.functions["decorated_unused"].decorators  # parsed with its decorator line
    with pytest.raises(KeyError):
        part.functions["make_block"]  # kept in the text: it holds a class


@pytest.mark.parametrize(
    "definition, blanked",
    [
        ("def helper():\n    return 1\n", True),  # functions are parsed when asked for
        ("def helper():\n    import os\n    return os\n", True),  # its import stays (test below)
        ("def helper():\n    if x: import os\n    return os\n", False),  # an import that cannot stay alone
        ("def helper(m):\n    m.weight.requires_grad = True\n", False),  # BUF008 reads unfreezing anywhere
        ("def helper():\n    class Local:\n        pass\n", False),  # a class inside
        ("def hélper():\n    return 1\n", False),  # a name a bytes `\b` cannot delimit
        ("def helper():\n    return 1\n\ndef helper():\n    return 2\n", False),  # two of one name
        ("class Plain:\n    x = 1\n", True),
        ("class Plain:\n    x = 1\n\nP = Plain\n", False),  # a class named elsewhere
        ("class Derived(nn.Module):\n    pass\n", False),  # a module class
        ("CONFIGS = dict(\n    small=dict(depth=12),\n    large=dict(depth=24),\n)\n", True),  # read by nothing
        ("if __name__ == '__main__':\n    run_everything(1, 2, 3)\n", True),
        ("A_LONG_MODULE_CONSTANT_NAME = 1234567890123456789\n", False),  # a literal: a module constant
        ("SIZE = compute_the_size(1111111111111111111111111)\nSIZE = 3\n", False),  # bound twice
        ("DEVICE = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n", False),  # a device picked at import
        ("THE_HOST_DEVICE_FOR_THE_TEST = torch.device('cpu')  # fixed\n", False),
        ("x = compute_the_size(111111111111111111111111111111); y = 2\n", False),  # shares its line
        ("try:\n    import apex_amp_module_for_the_test\nexcept ImportError:\n    pass\n", False),
        ("for p in model_instance_for_the_test.parameters():\n    p.requires_grad = False\n", False),
    ],
)
def test_what_is_blanked(definition: str, blanked: bool) -> None:
    source = f"import torch.nn as nn\n\n{definition}\nclass M(nn.Module):\n    pass\n".encode()
    assert (_blanked_rows(source) != []) is blanked


LATIN1_HELPER = (
    b"# -*- coding: latin-1 -*-\n"
    b"import torch\n"
    b"import torch.nn as nn\n"
    b"\n"
    b"def make():\n"
    b"    '''caf\xe9'''\n"
    b"    return torch.ones(3)\n"
    b"\n"
    b"class M(nn.Module):\n"
    b"    def __init__(self):\n"
    b"        super().__init__()\n"
    b"        self.t = make()\n"
    b"\n"
    b"    def forward(self, x):\n"
    b"        return x + self.t\n"
)


def test_a_blanked_helper_still_makes_a_tensor_attribute(tmp_path: pathlib.Path) -> None:
    part = _pruned(LATIN1_HELPER)
    assert b"def make" not in part.text
    assert part.functions["make"].name.value == "make"  # decoded with the file's own encoding
    path = tmp_path / "m.py"
    path.write_bytes(LATIN1_HELPER)
    scan = scan_project([str(path)])
    with prechecked.in_effect(scan.checked):
        found = [finding_line(f) for f in check_bytes(LATIN1_HELPER, "m.py", Settings()).findings]
    assert found == [
        "12:9: BUF001 [safe] Tensor attribute `t` is not a registered buffer: .to()/.cuda() leave it behind, "
        "and forward() uses it with the input or the module's tensors"
    ]


def test_files_with_carriage_returns_are_left_whole() -> None:
    source = b"import torch.nn as nn\r\n\r\ndef helper():\r\n    return 1\r\n\r\nclass M(nn.Module):\r\n    pass\r\n"
    assert _pruned(source).text is source


def test_changed_content_is_not_recalled(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "m.py"
    path.write_bytes(b"import torch.nn as nn\nclass M(nn.Module):\n    pass\n")
    scan = scan_project([str(path)])
    with prechecked.in_effect(scan.checked):
        assert prechecked.recall(path.read_bytes()) is not None
        assert prechecked.recall(path.read_bytes() + b"\n") is None
        assert prechecked.recall(path.read_text()) is None  # text from the API: not scanned
    assert prechecked.recall(path.read_bytes()) is None  # only in effect around a run


def test_cli_run_matches_file_by_file_checks(capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path) -> None:
    """The CLI (scan, shortcut, pruning) against plain per-file checks with the same project facts
    (on a copy outside this repository, whose other files the CLI would also scan)."""
    folder = tmp_path / "fixtures"
    shutil.copytree(PRUNING_FIXTURE.parent.parent, folder)
    main(["--no-cache", "-j", "1", "--output-format", "concise", "--select", "ALL", str(folder)])
    cli_lines = sorted(line.split(" ", 2)[0] + " " + line.split(" ", 2)[1] for line in capsys.readouterr().out.splitlines() if ": BUF" in line)
    paths = sorted(str(p) for p in folder.rglob("*.py"))
    settings = Settings(select=("ALL",))
    scan = scan_project(paths)
    settings = replace(settings, module_bases=scan.bases, project=scan.facts)
    expected = sorted(
        f"{display_path(f.filename)}:{f.location.row}:{f.location.column}: {f.code}"
        for path in paths
        for f in check_bytes(pathlib.Path(path).read_bytes(), path, settings).findings
    )
    assert cli_lines == expected
    assert len(expected) > 100


# Sources where a shortcut once disagreed with the full check (a review of the change found them).
TRICKY = {
    "base-class-inside-with": (
        "import warnings\n\nimport torch\nfrom torch import nn\n\nwith warnings.catch_warnings():\n"
        "    warnings.simplefilter('ignore')\n\n    class Base(nn.Module):\n        pass\n\n\n"
        "class M(Base):\n    def __init__(self):\n        super().__init__()\n        self.t = torch.zeros(3)\n"
        "\n    def forward(self, x):\n        return x + self.t\n"
    ),
    "name-bound-twice": (
        "import os\n\nimport torch\n\nif os.environ.get('X'):\n    import oneflow.nn as nn\nelse:\n"
        "    import torch.nn as nn\n\n\nclass Other(torch.nn.Module):\n    pass\n\n\n"
        "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.t = torch.zeros(3)\n"
        "\n    def forward(self, x):\n        return x + self.t\n"
    ),
    "helper-ends-in-backslash": (
        "import torch\nfrom torch import nn\n\n\ndef make(n):\n    return torch.zeros(n) \\\n# comment\n\n\n"
        "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.t = make(3)\n"
        "\n    def forward(self, x):\n        return x + self.t\n"
    ),
    "backslash-line-before-helper": (
        "import torch\nfrom torch import nn\n\\\ndef make(n):\n    return torch.zeros(n)\n\n\n"
        "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.t = make(3)\n"
        "\n    def forward(self, x):\n        return x + self.t\n"
    ),
    "nfkc-helper-name": (
        "import torch\nfrom torch import nn\n\n\ndef \uff4dake(n):\n    return torch.zeros(n)\n\n\n"
        "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.t = \uff4dake(3)\n"
        "\n    def forward(self, x):\n        return x + self.t\n"
    ),
    "nfkc-mixin-name": (
        "import torch\nfrom torch import nn\n\n\nclass \uff2dixin:\n    pass\n\n\n"
        "class M(\uff2dixin, nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.t = torch.arange(3)\n        self.n = int(self.t.sum())\n\n    def forward(self, x):\n        return x * self.n\n"
    ),
    "nfkc-name-spelled-plainly-in-a-comment": (
        "import torch\nfrom torch import nn\n\n\ndef \uff48elper(n):\n    # def helper\n    return torch.zeros(n)\n\n\n"
        "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.t = torch.ones(2)\n"
        "        self.u = helper(3)\n"
        "\n    def forward(self, x):\n        return x + self.t + self.u\n"
    ),
    "cookie-on-line-two-after-a-one-line-def": (
        "def f(): return 1\n# -*- coding: latin-1 -*-\nimport torch\nfrom torch import nn\n\n\n"
        "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.w = torch.zeros(3, device=\"cuda:\u00e9\")\n\n    def forward(self, x):\n        return x + self.w\n"
    ),
    "mutually-recursive-helpers": (
        "import torch\nfrom torch import nn\n\n\ndef f(n):\n    if n:\n        return torch.zeros(3)\n    return g(n)\n\n\n"
        "def g(n):\n    return f(n) + torch.ones(1)\n\n\nclass M(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.a = self.second()\n        self.b = self.first()\n\n"
        "    def first(self):\n        return g(0)\n\n    def second(self):\n        return f(1)\n"
        "\n    def forward(self, x):\n        return x + self.a + self.b\n"
    ),
}


@pytest.mark.parametrize("name", sorted(TRICKY))
def test_tricky_sources_give_the_full_checks_findings(name: str, tmp_path: pathlib.Path) -> None:
    path = tmp_path / "case.py"
    path.write_text(TRICKY[name], encoding="utf-8")
    data = path.read_bytes()
    settings = Settings(select=("ALL",))
    full = [finding_line(f) for f in check_bytes(data, "case.py", settings).findings]
    scan = scan_project([str(path)])
    with prechecked.in_effect(scan.checked):
        fast_settings = replace(settings, module_bases=scan.bases, project=scan.facts)
        fast = [finding_line(f) for f in check_bytes(data, "case.py", fast_settings).findings]
    assert fast == full
    assert full or name == "nfkc-mixin-name"  # there a shortcut once added a finding


def test_utf7_imports_inside_a_helper_are_kept(tmp_path: pathlib.Path) -> None:
    """In UTF-7 `import` may be spelled `+AGk-mport`: such files are not pruned."""
    source = (
        b"# -*- coding: utf-7 -*-\ndef _setup():\n    global torch, nn\n    +AGk-mport torch\n"
        b"    from torch +AGk-mport nn\n\n\n_setup()\n\n\nclass M(nn.Module):\n    def __init__(self):\n"
        b"        super().__init__()\n        self.t = torch.zeros(3)\n\n    def forward(self, x):\n        return x * self.t\n"
    )
    assert _pruned(source).text is source
    path = tmp_path / "case.py"
    path.write_bytes(source)
    scan = scan_project([str(path)])
    full = [finding_line(f) for f in check_bytes(source, "case.py", Settings()).findings]
    with prechecked.in_effect(scan.checked):
        assert [finding_line(f) for f in check_bytes(source, "case.py", Settings()).findings] == full
    assert full


def test_a_file_the_text_cannot_decode_is_still_reported(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    """CPython parses a latin-1 byte on line 1 when the cookie is on line 2; reading it as text
    fails, and the full check reports that: the scan must not vouch for the file."""
    path = tmp_path / "a.py"
    path.write_bytes(b"#\xe9\n# -*- coding: latin-1 -*-\nimport os\n")
    assert main(["--no-cache", "-j", "1", "--output-format", "concise", str(path)]) == 1
    assert "a.py:1:2: BUF999 cannot decode source as utf-8: invalid byte 0xe9" in capsys.readouterr().out


def test_a_subclass_of_a_project_base_without_torch_in_its_file(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "base.py").write_text("import torch.nn as nn\n\n\nclass Base(nn.Module):\n    pass\n")
    (tmp_path / "helpers.py").write_text("def make_mask():\n    return None\n")
    (tmp_path / "model.py").write_text(
        "from base import Base\nfrom helpers import make_mask\n\n\nclass M(Base):\n    def __init__(self):\n"
        "        super().__init__()\n        self.mask = make_mask()\n\n    def forward(self, x):\n"
        "        m = self.mask.to(x.device)\n        return x * m\n"
    )
    main(["--no-cache", "-j", "1", "--output-format", "concise", str(tmp_path)])
    out = capsys.readouterr().out
    assert "model.py:11:13: BUF002" in out


@pytest.mark.parametrize(
    "literal",
    ['"cu" "da"', '"\\x63uda"', '"\\143uda"', '"\\N{LATIN SMALL LETTER C}uda"', '"cu\\\nda"', '("cud"\n "a:0")'],
    ids=["concatenated", "hex", "octal", "named", "continued", "split-lines"],
)
def test_buf004_finds_cuda_spelled_without_the_word(literal: str) -> None:
    """BUF004's file-level gate must not skip a file whose only `cuda` is spelled oddly. (BUF001 is
    selected too: with BUF004 alone the prefilter drops a file without the word `cuda`.)"""
    source = (
        "import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n    def __init__(self):\n"
        f"        super().__init__()\n        self.register_buffer('w', torch.zeros(3, device={literal}))\n"
    ).encode()
    assert b"cuda" not in source
    found = [f.code for f in check_bytes(source, "m.py", Settings(select=("BUF001", "BUF004"))).findings]
    assert found.count("BUF004") == 1


def test_buf004_skips_only_classes_that_cannot_spell_cuda(tmp_path: pathlib.Path) -> None:
    """In a CLI run BUF004 skips a top-level class whose own lines cannot spell `cuda`; the
    class that spells it oddly, and two classes sharing a name, are still walked."""
    source = (
        "import torch\nfrom torch import nn\n\nDEVICE = 'cuda'\n\n\n"
        "class A(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.register_buffer('w', torch.zeros(3, device=DEVICE))\n\n\n"
        "class B(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.register_buffer('w', torch.zeros(3, device='cu' 'da'))\n\n\n"
        "class C(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.register_buffer('w', torch.zeros(3).cuda())\n\n\n"
        "class C(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.register_buffer('w', torch.zeros(3, device='cuda'))\n"
    )
    data = source.encode()
    full, fast, scan = _full_and_scanned(tmp_path, data, Settings(select=("BUF004",)))
    with prechecked.in_effect(scan.checked):
        assert set(prechecked.recall(data).class_regions) == {"A", "B"}  # type: ignore[union-attr]
    assert [finding_line(f) for f in fast] == full
    assert [line.split(": ")[0] for line in full] == ["16:35", "22:35", "28:35"]


def test_imports_inside_a_blanked_definition_stay_as_top_level_statements() -> None:
    source = (
        b"import torch.nn as nn\n\n\ndef helper():\n    try:\n        from apex.normalization import (\n"
        b"            FusedLayerNorm as LN,\n        )\n    except ImportError:\n        LN = None\n    return LN\n\n\n"
        b"class M(nn.Module):\n    pass\n"
    )
    part = _pruned(source)
    assert _by_row(part, source)[3:11] == [
        b"", b"", b"from apex.normalization import (", b"            FusedLayerNorm as LN,", b"        )", b"", b"", b"",
    ]
    compile(part.text, "pruned", "exec")
    assert list(part.functions) == ["helper"]


def test_left_out_lines_keep_findings_and_noqa_on_the_files_lines(tmp_path: pathlib.Path) -> None:
    """Pruning leaves a helper's lines out of the text libcst parses; findings after it, their end
    lines and `# noqa` comments still refer to the file's own lines."""
    helper = "def helper(n):\n" + "".join(f"    n = n + {i}\n" for i in range(12)) + "    return n\n"
    source = (
        "import torch\nfrom torch import nn\n\n\n" + helper + "\n\n"
        "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.a = torch.zeros(\n            3,\n        )\n"
        "        self.b = torch.ones(3)  # noqa: BUF001\n"
        "        self.c = torch.arange(3)\n\n"
        "    def forward(self, x):\n        return x + self.a + self.b + self.c\n"
    )
    data = source.encode()
    part = _pruned(data)
    assert part.rows is not None and 5 not in part.rows and len(part.rows) == data.count(b"\n") + 1 - 14
    assert [part.original_row(row) for row in (1, 4, 5, 6)] == [1, 4, 19, 20]
    assert part.original_row(len(part.rows) + 2) == data.count(b"\n") + 3  # past the end: same offset
    full, found, _ = _full_and_scanned(tmp_path, data, Settings())
    assert [finding_line(f) for f in found] == full
    assert [line.split(": ")[0] for line in full] == ["24:9", "28:9"]  # 27 has the noqa
    assert found[0].end_location.row == 26 and found[0].noqa_rows == (24, 26)
