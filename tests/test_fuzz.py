"""Property-based tests: whatever the input, linting never raises, and fixing either leaves the
file alone or yields code that parses, re-lints to what the fix run reported, and is idempotent.

Inputs: programs from hypothesmith (random grammar, and valid libcst trees), the same embedded in
an nn.Module, module programs built from tensor-flavoured statements (these reach every rule and
its fix), the fixtures mutated (renamed imports, extra nesting, comments everywhere, CRLF,
BOM, tabs), and the fixtures corrupted byte by byte (NUL, undecodable bytes, stray brackets...). CI runs a few examples per property (BUFFERLINT_FUZZ_EXAMPLES, default 15);
`python scripts/fuzz.py --examples N` runs many more and prints counts.
"""

from __future__ import annotations

import ast
import io
import os
import re
import tokenize
from collections import Counter
from pathlib import Path
from typing import Callable, Optional

import hypothesmith
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bufferlint.config import Settings
from bufferlint.lint import PARSE_ERROR_CODE, FileResult, check_bytes, fix_bytes

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = int(os.environ.get("BUFFERLINT_FUZZ_EXAMPLES", "15"))
FIXTURES = sorted(p for p in (ROOT / "fixtures").glob("buf*/*.py") if not p.name.endswith((".fixed.py", ".unsafe.py")))
ALL_RULES = Settings(select=("ALL",))
ALL_RULES_UNSAFE = Settings(select=("ALL",), unsafe_fixes=True)

# What the properties saw, for scripts/fuzz.py (a test run ignores it).
STATS: Counter[str] = Counter()


def check_properties(data: bytes, config: Settings = ALL_RULES_UNSAFE) -> None:
    """The properties every input must satisfy; raises AssertionError (or the crash) otherwise."""
    STATS["inputs"] += 1
    checked = check_bytes(data, "fuzz.py", config)
    STATS["findings"] += len(checked.findings)
    STATS["parse errors"] += sum(f.code == PARSE_ERROR_CODE for f in checked.findings)
    fixed = fix_bytes(data, "fuzz.py", config)
    if fixed.fix_error is not None:
        STATS["fixes refused"] += 1
        assert fixed.new_data is None
        assert _view(fixed) == _view(checked), "a refused fix reports what a check reports"
        return
    if fixed.new_data is None:
        assert not any(f.fix_applicable(config.unsafe_fixes) for f in checked.findings) or fixed.fixed == 0
        return
    STATS["files fixed"] += 1
    STATS["findings fixed"] += fixed.fixed
    assert isinstance(fixed.new_data, bytes)
    ast.parse(fixed.new_data)  # CPython accepts the output (encoding honoured)
    relinted = check_bytes(fixed.new_data, "fuzz.py", config)
    assert _view(relinted) == _view(fixed), "what --fix reports remaining is what a fresh check finds"
    assert not any(f.fix_applicable(config.unsafe_fixes) for f in relinted.findings)
    again = fix_bytes(fixed.new_data, "fuzz.py", config)
    assert (again.new_data, again.fix_error) == (None, None), "fixing is idempotent"


def _view(result: FileResult) -> list[tuple[str, int, int, str]]:
    return [(f.code, f.location.row, f.location.column, f.message) for f in result.findings]


# --- strategies ---

HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"


def _indent(code: str, prefix: str) -> str:
    return "".join(prefix + line if line.strip() else line for line in code.splitlines(keepends=True))


def in_module(code: str) -> str:
    """`code` as the body of a module's __init__, between a tensor attribute and a forward."""
    body = _indent(code, "        ") if code.strip() else ""
    return (
        HEADER
        + "class Fuzzed(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.t = torch.zeros(3)\n"
        + body
        + ("\n" if body and not body.endswith("\n") else "")
        + "\n    def forward(self, x):\n        return x + self.t\n"
    )


NAMES = st.sampled_from(["t", "mask", "table", "w", "scale", "pe", "buf", "lin"])
VALUES = st.sampled_from(
    [
        "torch.zeros(3)", "torch.randn(4, 4)", "torch.ones(3).cuda()", "torch.arange(10).float()",
        "torch.tril(torch.ones(8, 8)).bool()", "None", "nn.Linear(2, 2)", "nn.Parameter(torch.ones(2))",
        "nn.Parameter(torch.ones(2), requires_grad=False)", "torch.tensor([1.0, 2.0], requires_grad=True)",
        "[torch.zeros(1), torch.ones(1)]", "3", "x", "torch.eye(3) * 2", "self.lin.weight.t()",
    ]
)
FORWARD = st.sampled_from(
    [
        "x = x + self.{n}.to(x.device)", "x = x * self.{n}.cuda()", "self.{n} = self.{n}.to(x.device)",
        "m = torch.ones(3, device='cuda')", "m = torch.zeros(x.shape[0])\n        x = x + m", "x = x + self.{n}",
        "self.register_buffer('{n}', torch.zeros(1))", "y = torch.arange(5).to(x.device)\n        x = x + y",
        "x = x.type_as(self.{n})", "x = torch.as_tensor(self.{n}, device=x.device) + x",
    ]
)


@st.composite
def module_programs(draw: st.DrawFn) -> str:
    """An nn.Module whose __init__ and forward mix the patterns the rules look for."""
    init = [f"self.{draw(NAMES)} = {draw(VALUES)}" for _ in range(draw(st.integers(0, 5)))]
    if draw(st.booleans()):
        init.append(f"self.register_buffer('{draw(NAMES)}', {draw(VALUES)}, persistent={draw(st.booleans())})")
    if draw(st.booleans()):
        init.append(f"self.out = self.register_buffer('{draw(NAMES)}', torch.ones(2))")
    forward = [draw(FORWARD).format(n=draw(NAMES)) for _ in range(draw(st.integers(0, 4)))]
    before_super = f"        self.{draw(NAMES)} = torch.ones(1)\n" if draw(st.booleans()) else ""
    class_attr = f"    {draw(NAMES)} = torch.zeros(2)\n" if draw(st.booleans()) else ""
    init_lines = "".join(f"        {line}\n" for line in init)
    forward_lines = "".join(f"        {line}\n" for line in forward)
    return (
        HEADER
        + f"class Fuzzed(nn.Module):\n{class_attr}    def __init__(self, dim=3):\n{before_super}"
        + f"        super().__init__()\n        self.lin = nn.Linear(2, 2)\n{init_lines}\n"
        + f"    def forward(self, x):\n{forward_lines}        return x\n"
    )


# --- mutations of the fixtures ---


def rename_imports(code: str, seed: int) -> str:
    """`nn` -> `tnn`, `torch` -> `T`, `F` -> `fn`: every use renamed consistently, as a user would."""
    alias = ["tnn", "T", "fn"][seed % 3]
    if alias == "tnn":
        code = re.sub(r"import torch\.nn as nn\b", "import torch.nn as tnn", code)
        return re.sub(r"(?<![\w.])nn\.", "tnn.", code)
    if alias == "T":
        code = re.sub(r"^import torch$", "import torch as T", code, flags=re.M)
        return re.sub(r"(?<![\w.'\"])torch\.", "T.", code)
    code = re.sub(r"import torch\.nn\.functional as F\b", "import torch.nn.functional as fn", code)
    return re.sub(r"(?<![\w.])F\.", "fn.", code)


def extra_nesting(code: str, seed: int) -> str:
    """The whole file one block deeper: under `if True:`, `try:` or a function."""
    head, tail = [("if True:\n", ""), ("try:\n", "except ImportError:\n    pass\n"), ("def build():\n", "")][seed % 3]
    return head + _indent(code, "    ") + ("\n" if not code.endswith("\n") else "") + tail


def comments_everywhere(code: str, seed: int) -> str:
    """A comment at the end of every line that can take one, and a comment line before every statement."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, SyntaxError):
        return code
    lines = code.splitlines(keepends=True)
    ends = {t.start[0] for t in tokens if t.type in (tokenize.NEWLINE, tokenize.NL) and t.start[0] <= len(lines)}
    starts = {t.start[0] for t in tokens if t.type == tokenize.INDENT} | {tokens[i + 1].start[0] for i, t in enumerate(tokens[:-1]) if t.type == tokenize.NEWLINE}
    out = []
    for row, line in enumerate(lines, 1):
        if row in starts and line.strip():
            out.append(line[: len(line) - len(line.lstrip())] + f"# note {seed}\n")
        if row in ends and not line.rstrip("\r\n").endswith("\\"):
            body = line.rstrip("\r\n")
            out.append(body + f"  # c{row}" + line[len(body):])
        else:
            out.append(line)
    return "".join(out)


def to_tabs(code: str, seed: int) -> str:
    return re.sub(r"^((?:    )+)", lambda m: "\t" * (len(m.group(1)) // 4), code, flags=re.M)


MUTATIONS: dict[str, Callable[[str, int], str]] = {
    "rename-imports": rename_imports,
    "extra-nesting": extra_nesting,
    "comments-everywhere": comments_everywhere,
    "tabs": to_tabs,
}


def encode(code: str, layout: str) -> bytes:
    data = code.encode()
    if layout in ("crlf", "bom+crlf"):
        data = data.replace(b"\n", b"\r\n")
    if layout.startswith("bom"):
        data = b"\xef\xbb\xbf" + data
    return data


@st.composite
def mutated_fixtures(draw: st.DrawFn) -> bytes:
    path = draw(st.sampled_from(FIXTURES))
    code = path.read_text()
    for name in draw(st.lists(st.sampled_from(sorted(MUTATIONS)), max_size=3, unique=True)):
        code = MUTATIONS[name](code, draw(st.integers(0, 2)))
    return encode(code, draw(st.sampled_from(["lf", "crlf", "bom", "bom+crlf"])))


JUNK = [b"\x00", b"\xff", b"\xef\xbb\xbf", b"(", b")", b"[", b"'", b'"""', b"\\", b"\r", b"\n", b"\t", b":", b"    ", b"\x0c", b"# coding: latin-1\n", b"\xe9"]


@st.composite
def corrupted_fixtures(draw: st.DrawFn) -> bytes:
    """Fixtures with bytes deleted, duplicated or replaced by junk: mostly broken input."""
    data = bytearray(draw(st.sampled_from(FIXTURES)).read_bytes())
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        action = draw(st.sampled_from(["insert", "delete", "replace"]))
        junk = draw(st.sampled_from(JUNK))
        if action == "insert":
            data[at:at] = junk
        elif action == "delete":
            del data[at : at + draw(st.integers(1, 40))]
        else:
            data[at : at + len(junk)] = junk
    return bytes(data)


def fuzz_settings(examples: Optional[int] = None) -> settings:
    return settings(
        max_examples=examples or EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        derandomize=examples is None and "BUFFERLINT_FUZZ_SEED" not in os.environ,
    )


# name -> (strategy of input bytes); scripts/fuzz.py runs the same with more examples.
STRATEGIES = {
    "grammar": hypothesmith.from_grammar().map(str.encode),
    "grammar-in-module": hypothesmith.from_grammar().map(lambda code: in_module(code).encode()),
    "libcst-trees-in-module": hypothesmith.from_node().map(lambda code: in_module(code).encode()),
    "module-programs": module_programs().map(str.encode),
    "mutated-fixtures": mutated_fixtures(),
    "corrupted-fixtures": corrupted_fixtures(),
}


@fuzz_settings()
@given(STRATEGIES["grammar"])
def test_generated_programs(data: bytes) -> None:
    check_properties(data)


@fuzz_settings()
@given(STRATEGIES["grammar-in-module"])
def test_generated_programs_inside_a_module(data: bytes) -> None:
    check_properties(data)


@fuzz_settings()
@given(STRATEGIES["libcst-trees-in-module"])
def test_generated_valid_trees_inside_a_module(data: bytes) -> None:
    check_properties(data)


@fuzz_settings()
@given(STRATEGIES["module-programs"], st.booleans())
def test_module_programs(data: bytes, unsafe: bool) -> None:
    check_properties(data, ALL_RULES_UNSAFE if unsafe else ALL_RULES)


@fuzz_settings()
@given(STRATEGIES["mutated-fixtures"])
def test_mutated_fixtures(data: bytes) -> None:
    check_properties(data)


@fuzz_settings()
@given(STRATEGIES["corrupted-fixtures"])
def test_corrupted_fixtures(data: bytes) -> None:
    check_properties(data)


@fuzz_settings()
@given(st.sampled_from(FIXTURES), st.sampled_from(["crlf", "bom", "bom+crlf"]))
def test_layout_does_not_change_what_is_fixed(path: Path, layout: str) -> None:
    """fix(crlf(x)) == crlf(fix(x)), and the same for a BOM: layout never changes a fix."""
    code = path.read_text()
    plain = fix_bytes(code.encode(), "fuzz.py", ALL_RULES_UNSAFE)
    laid_out = fix_bytes(encode(code, layout), "fuzz.py", ALL_RULES_UNSAFE)
    expected = None if plain.new_data is None else encode(plain.new_data.decode(), layout)  # type: ignore[union-attr]
    assert laid_out.new_data == expected
    assert _view(laid_out) == _view(plain)


def test_mutations_keep_fixtures_valid_python() -> None:
    """The mutations make awkward but valid code, so the properties above exercise the rules."""
    broken = []
    for path in FIXTURES:
        code = path.read_text()
        for name, mutate in MUTATIONS.items():
            for seed in range(3):
                try:
                    ast.parse(mutate(code, seed))
                except SyntaxError as error:
                    broken.append(f"{path.name} {name} {seed}: {error}")
    assert broken == []
