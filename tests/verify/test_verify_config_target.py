"""Target parsing, importing user code, and [tool.bufferlint.verify] tables (no subprocess)."""
from __future__ import annotations

from pathlib import Path

import pytest

from bufferlint.verify import config
from bufferlint.verify.errors import UsageError
from bufferlint.verify.target import Target, get_class, import_target_module, package_root, parse_target
from verify_support import MODELS


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.mark.parametrize("raw, message", [
    ("Buffered", "expected path/to/file.py::Class or package.module:Class"),
    ("missing.py::X", "no such file missing.py"),
    (f"{MODELS}::not-a-name", "is not a class name"),
    ("pkg..mod:X", "is not a module name"),
    (f"{MODELS.with_suffix('.txt')}::X", "is not a .py file"),
])
def test_bad_targets(raw: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_target(raw)


def test_both_target_forms() -> None:
    assert parse_target(f"{MODELS}::Outer.Inner") == Target(f"{MODELS}::Outer.Inner", "Outer.Inner", file=MODELS)
    assert parse_target("pkg.mod:Cls") == Target("pkg.mod:Cls", "Cls", module="pkg.mod")


def test_import_error_is_one_line_naming_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "broken_model.py", "import torch\n\nraise ImportError('needs the optional flash_attn package')\n")
    with pytest.raises(UsageError) as info:
        import_target_module(parse_target("broken_model.py::Net"))
    assert str(info.value) == (
        "cannot import broken_model.py: ImportError: needs the optional flash_attn package (at broken_model.py:3)"
    )


def test_package_file_imports_with_relative_imports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    write(tmp_path / "vpkg_rel" / "__init__.py", "")
    write(tmp_path / "vpkg_rel" / "layers.py", "SCALE = 3\n")
    write(tmp_path / "vpkg_rel" / "model.py", "from .layers import SCALE\nclass Net:\n    k = SCALE\n")
    assert package_root(tmp_path / "vpkg_rel" / "model.py") == (tmp_path, "vpkg_rel.model")
    target = parse_target(f"{tmp_path / 'vpkg_rel' / 'model.py'}::Net")
    assert get_class(import_target_module(target), target).k == 3


def test_missing_class_and_missing_module() -> None:
    target = parse_target(f"{MODELS}::NoSuchModel")
    with pytest.raises(UsageError, match="no class NoSuchModel in"):
        get_class(import_target_module(target), target)
    with pytest.raises(UsageError, match="cannot import no_such_pkg_xyz.models: no module named no_such_pkg_xyz"):
        import_target_module(parse_target("no_such_pkg_xyz.models:Net"))


PYPROJECT = """
[tool.bufferlint.verify."models.attn:Attention"]
kwargs = { d = 64, heads = 4 }
input = "torch.randn(2, 16, 64)"

[tool.bufferlint.verify."scripts/train.py::Head"]
kwargs = { n = 3 }
"""


def test_lookup_by_module_and_by_path(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", PYPROJECT)
    found = config.lookup(tmp_path / "models" / "attn.py", None, "Attention")
    assert found is not None and found.kwargs == {"d": 64, "heads": 4} and found.input == "torch.randn(2, 16, 64)"
    head = config.lookup(tmp_path / "scripts" / "train.py", None, "Head")
    assert head is not None and head.kwargs == {"n": 3} and head.input is None
    assert config.lookup(tmp_path / "scripts" / "train.py", None, "Other") is None


def test_lookup_src_layout_uses_the_import_name(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", PYPROJECT)
    found = config.lookup(tmp_path / "src" / "models" / "attn.py", None, "Attention")
    assert found is not None and found.kwargs["d"] == 64


def test_nearest_pyproject_wins(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", PYPROJECT)
    write(tmp_path / "models" / "pyproject.toml", '[tool.bufferlint.verify."attn:Attention"]\nkwargs = { d = 8 }\n')
    found = config.lookup(tmp_path / "models" / "attn.py", None, "Attention")
    assert found is not None and found.kwargs == {"d": 8}


def test_flags_override_the_table() -> None:
    found = config.ClassConfig({"d": 64, "heads": 4}, "torch.randn(1)", "file")
    merged = config.merge(found, {"d": 8}, "torch.randn(2)")
    assert (merged.kwargs, merged.input) == ({"d": 8, "heads": 4}, "torch.randn(2)")
    assert found.kwargs == {"d": 64, "heads": 4}  # not modified


@pytest.mark.parametrize("table, message", [
    ('kwargs = 3', "kwargs must be a table"),
    ('input = 3', "input must be a string"),
    ('kwarg = { d = 1 }', "unknown key"),
])
def test_bad_tables_are_usage_errors(tmp_path: Path, table: str, message: str) -> None:
    write(tmp_path / "pyproject.toml", f'[tool.bufferlint.verify."m:C"]\n{table}\n')
    with pytest.raises(UsageError, match=message):
        config.lookup(tmp_path / "m.py", None, "C")
