"""What a fix must prove about other files (bufferlint/analysis/project_facts.py), through the CLI.

Each test writes a small project: a base class in another file that sets the attribute first, a
training script that unfreezes a parameter by name, a loader that builds models on the meta
device, a helper that builds complex tensors... and checks the finding, its fix tier and message.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path
from typing import Any, Optional

import pytest
import torch

from bufferlint.analysis.project_facts import FileFacts, file_facts
from bufferlint.cli import main

MODEL_HEAD = "import torch\nfrom torch import nn\n"


def _project(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _findings(capsys: pytest.CaptureFixture[str], root: Path, *extra: str) -> list[dict[str, Any]]:
    main(["--no-cache", "-j", "1", "--output-format", "json", "--exit-zero", "--select", "ALL", *extra, str(root)])
    return json.loads(capsys.readouterr().out)


def _summary(findings: list[dict[str, Any]]) -> list[tuple[str, int, str, str]]:
    return [
        (Path(f["filename"]).name, f["location"]["row"], f["code"], f["fix"]["applicability"] if f["fix"] else "none")
        for f in findings
    ]


MODEL = MODEL_HEAD + (
    "from pkg.base import Base\n\n\n"
    "class Model(Base):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.lin = nn.Linear(3, 3)\n"
    "        self.scale = torch.ones(3)\n\n"
    "    def forward(self, x):\n"
    "        return self.lin(x) * self.scale\n"
)


def test_a_base_in_another_file_that_sets_the_name_blocks_the_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _project(tmp_path / "p1", {
        "pkg/__init__.py": "",
        "pkg/base.py": MODEL_HEAD + "\n\nclass Base(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                       "        self.scale = torch.zeros(3)\n",
        "pkg/model.py": MODEL,
    })
    findings = _findings(capsys, root / "pkg")
    model = [f for f in findings if f["filename"].endswith("model.py")]
    assert _summary(model) == [("model.py", 10, "BUF001", "none")]
    assert "base class pkg.base.Base also sets `scale`, so register_buffer would raise KeyError" in model[0]["message"]
    # The hazard is real: the naive rewrite fails to construct.
    (root / "pkg" / "model.py").write_text(MODEL.replace(
        "self.scale = torch.ones(3)", 'self.register_buffer("scale", torch.ones(3), persistent=False)'
    ))
    sys.path.insert(0, str(root))
    try:
        for name in [m for m in sys.modules if m == "pkg" or m.startswith("pkg.")]:
            del sys.modules[name]
        from pkg.model import Model  # type: ignore[import-not-found]

        with pytest.raises(KeyError, match="already exists"):
            Model()
    finally:
        sys.path.remove(str(root))
        for name in [m for m in sys.modules if m == "pkg" or m.startswith("pkg.")]:
            del sys.modules[name]


def test_a_base_in_another_file_that_does_not_set_the_name_keeps_the_safe_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _project(tmp_path / "p2", {
        "pkg/__init__.py": "",
        "pkg/base.py": MODEL_HEAD + "\n\nclass Base(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                       "        self.other = 1\n",
        "pkg/model.py": MODEL,
    })
    assert _summary(_findings(capsys, root / "pkg")) == [("model.py", 10, "BUF001", "safe")]
    # Without the other file the base is unknown: the same fix is only unsafe, and says why.
    alone = _findings(capsys, root / "pkg" / "model.py", "--module-bases", "pkg.base.Base")
    assert _summary(alone) == [("model.py", 10, "BUF001", "unsafe")]
    assert "not proved that nothing sets `scale` before it is registered: base class pkg.base.Base was not found among the linted files" in alone[0]["message"]


@pytest.mark.parametrize(
    ("to_body", "expected"),
    [
        # walks every attribute: the class moves `scale` itself, no finding
        ("        for k in dir(self):\n            v = getattr(self, k)\n            if torch.is_tensor(v):\n"
         "                setattr(self, k, v.to(device))\n        return self\n", []),
        # only moves a generator of its own: `scale` is still left behind
        ("        self.rng_device = device\n        return super().to(device)\n", [("model.py", 10, "BUF001", "safe")]),
    ],
    ids=["walks-every-attribute", "moves-something-else"],
)
def test_an_own_to_in_a_base_of_another_file(to_body: str, expected: list[tuple[str, int, str, str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _project(tmp_path / "p3", {
        "pkg/__init__.py": "",
        "pkg/base.py": MODEL_HEAD + "\n\nclass Base(nn.Module):\n    def to(self, device):\n" + to_body,
        "pkg/model.py": MODEL,
    })
    assert _summary(_findings(capsys, root / "pkg")) == expected


FROZEN = MODEL_HEAD + (
    "\n\nclass Adapter(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.lin = nn.Linear(3, 3)\n"
    "        self.gate = nn.Parameter(torch.zeros(3), requires_grad=False)\n\n"
    "    def forward(self, x):\n"
    "        return self.lin(x) * self.gate\n"
)


# A helper that sets requires_grad to what it is given: it unfreezes only where a call gives it
# something other than False.
FLAG_HELPER = "def set_grad(model, flag=True):\n    for p in model.parameters():\n        p.requires_grad = flag\n"


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ("def train(model):\n    model.lin.weight.requires_grad = False\n", [("adapter.py", 9, "BUF008", "unsafe")]),
        ("def train(model):\n    model.gate.requires_grad = True\n", []),  # unfrozen by name
        ("def train(model):\n    for name, param in model.named_parameters():\n        param.requires_grad = 'gate' in name\n", []),
        # a filter whose words hold the name, or are part of it, may pick it
        ("def train(model):\n    for name, param in model.named_parameters():\n        param.requires_grad = name.endswith('adapter.gate')\n", []),
        ("def train(model):\n    for name, param in model.named_parameters():\n        param.requires_grad = 'ate' in name\n", []),
        # a filter that picks other names, or none: the finding stands, without a fix
        ("def train(model):\n    for name, param in model.named_parameters():\n        param.requires_grad = 'lin' in name\n", [("adapter.py", 9, "BUF008", "none")]),
        ("def train(model):\n    model.requires_grad_(True)\n", [("adapter.py", 9, "BUF008", "none")]),  # every parameter of some module
        ("def probe(x):\n    x = x.detach().requires_grad_(True)\n    return x\n", [("adapter.py", 9, "BUF008", "unsafe")]),
        ("import torch\n\n\ndef probe():\n    return torch.eye(3).requires_grad_()\n", [("adapter.py", 9, "BUF008", "unsafe")]),
        ("def probe(critic, obs, act):\n    tiled = act.unsqueeze(0).repeat(4, 1, 1).requires_grad_(True)\n    return critic(obs, tiled)\n", [("adapter.py", 9, "BUF008", "unsafe")]),
        # an fp16 master copy the script builds as its own Parameter: none of the model's
        ("from torch import nn\n\n\ndef master(params):\n    master_params = nn.Parameter(flatten(params))\n    master_params.requires_grad = True\n    return [master_params]\n", [("adapter.py", 9, "BUF008", "unsafe")]),
        # the same name bound to a Parameter in another function says nothing of this loop
        ("from torch import nn\n\n\ndef make(x):\n    param = nn.Parameter(x)\n    return param\n\n\ndef train(model):\n    for name, param in model.named_parameters():\n        param.requires_grad = True\n", [("adapter.py", 9, "BUF008", "none")]),
        (FLAG_HELPER + "\n\ndef train(model, ema):\n    set_grad(ema, False)\n    set_grad(model, flag=False)\n", [("adapter.py", 9, "BUF008", "unsafe")]),
        (FLAG_HELPER + "\n\ndef train(model, ema):\n    set_grad(ema, False)\n    set_grad(model)\n", [("adapter.py", 9, "BUF008", "none")]),  # the default turns it on
        (FLAG_HELPER + "\n\ndef train(model, on):\n    set_grad(model, on)\n", [("adapter.py", 9, "BUF008", "none")]),  # a flag not known to be False
    ],
    ids=[
        "freezes-only", "by-name", "by-name-filter", "filter-holds-name", "filter-part-of-name", "filter-of-other-names",
        "whole-module", "input-tensor", "factory-tensor", "tiled-input", "master-copy", "parameter-elsewhere", "flag-helper-given-false", "flag-helper-default", "flag-helper-unknown",
    ],
)
def test_a_frozen_parameter_is_reported_only_when_no_file_unfreezes_it(
    script: str, expected: list[tuple[str, int, str, str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _project(tmp_path / "p4", {"adapter.py": FROZEN, "train.py": script})
    findings = [f for f in _findings(capsys, root) if f["code"] == "BUF008"]
    assert _summary(findings) == expected
    if expected and expected[0][3] == "unsafe":
        assert "resuming one saved before the change fails" in findings[0]["fix"]["message"]
    elif expected:  # the finding names the loop it could not rule out
        assert re.search(r"no fix: \S*train\.py:\d+ turns requires_grad on for parameters it does not name; if it reaches `gate`", findings[0]["message"])


HOLDERS = (
    "from torch import nn\n\nfrom adapter import Adapter\n\n\n"
    "class Encoder(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.adapter_block = Adapter()\n\n\n"
    "class Classifier(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.backbone = Encoder()\n        self.head = nn.Linear(3, 2)\n"
)


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("backbone", []),  # picks `backbone.adapter_block.gate`: trained there
        ("adapter_block", []),
        ("head", [("adapter.py", 9, "BUF008", "none")]),  # picks only the classifier's own head
    ],
    ids=["outer-holder", "inner-holder", "other-attribute"],
)
def test_a_name_filter_that_picks_a_holder_attribute_unfreezes_what_it_holds(
    word: str, expected: list[tuple[str, int, str, str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`if "backbone" in name: p.requires_grad = True` over a classifier's parameters picks every
    parameter of the modules held as `backbone`, at any depth."""
    script = (
        "def finetune(model):\n    for name, p in model.named_parameters():\n"
        f"        if \"{word}\" in name:\n            p.requires_grad = True\n"
    )
    root = _project(tmp_path / "p4h", {"adapter.py": FROZEN, "models.py": HOLDERS, "train.py": script})
    findings = [f for f in _findings(capsys, root) if f["code"] == "BUF008"]
    assert _summary(findings) == expected


@pytest.mark.parametrize(
    ("script", "fix"),
    [
        ("def resume(optimizer, ckpt):\n    optimizer.load_state_dict(ckpt['optimizer'])\n", None),
        ("def resume(model, opt, ckpt):\n    model.load_state_dict(ckpt['model'])\n    opt.load_state_dict(ckpt['opt'])\n", None),
        ("def resume(trainer, model, path):\n    trainer.fit(model, ckpt_path=path)\n", None),
        ("def resume(trainer, model, data, path):\n    trainer.fit(\n        model=model,\n        datamodule=data,\n        ckpt_path=path,\n    )\n", None),
        ("def resume(accelerator, path):\n    accelerator.load_state(path)\n", None),
        ("def train(runner, cfg):\n    if cfg.resume_from:\n        runner.resume(cfg.resume_from)\n", None),  # mmcv
        ("def main(cfg, args):\n    if args.resume_from is not None:\n        cfg.resume_from = args.resume_from\n", None),  # mmcv's tools/train.py
        ("def show(cfg):\n    return cfg.resume_from == 'none'\n", "unsafe"),  # only read
        ("def load(model, ckpt):\n    model.load_state_dict(ckpt['model'])\n", "unsafe"),  # weights only
        ("def load(layers, files):\n    for layer in layers:\n        layer.load_state(files)\n", "unsafe"),  # a layer's own weight loader
        ('def merge(cfg, params):\n    """params: overrides, e.g. ["training.resume=True"]"""\n    return cfg\n', "unsafe"),
        ("def merge(cfg):\n    return cfg  # a caller may set resume=True\n", "unsafe"),
    ],
    ids=["optimizer", "short-name", "lightning", "lightning-multiline", "accelerate", "mmcv-runner", "mmcv-config", "mmcv-config-read", "weights-only", "layer-weights", "docstring", "comment"],
)
def test_a_frozen_parameter_has_no_fix_where_optimizer_state_is_resumed(
    script: str, fix: Optional[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Resuming an optimizer saved before the change fails once a parameter turns into a buffer."""
    root = _project(tmp_path / "p4r", {"adapter.py": FROZEN, "train.py": script})
    findings = [f for f in _findings(capsys, root) if f["code"] == "BUF008"]
    assert _summary(findings) == [("adapter.py", 9, "BUF008", fix or "none")]
    if fix is None:
        message = findings[0]["message"]
        assert "no fix: the project restores optimizer state (" in message and "train.py:" in message


VENDORED_TRAINER = "from tracker.admin import settings\n\n\ndef resume(optimizer, state):\n    optimizer.load_state_dict(state['optimizer'])\n"
OWN_TRAINER = "from pkg.adapter import Adapter\n\n\ndef resume(optimizer, state):\n    optimizer.load_state_dict(state['optimizer'])\n"


@pytest.mark.parametrize(
    ("trainers", "cited"),
    [
        ({"external/tracker/trainer.py": VENDORED_TRAINER}, "external/tracker/trainer.py:5"),
        ({"external/tracker/trainer.py": VENDORED_TRAINER, "tools/train.py": OWN_TRAINER}, "tools/train.py:5"),
        ({"external/tracker/trainer.py": VENDORED_TRAINER, "pkg/engine/loop.py": VENDORED_TRAINER}, "pkg/engine/loop.py:5"),
    ],
    ids=["vendored-only", "own-script", "same-folder"],
)
def test_the_optimizer_resume_cited_is_the_one_that_may_reach_the_class(
    trainers: dict[str, str], cited: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Any optimizer state load in the run keeps BUF008 from a fix; the one named is the one that
    may restore this class's optimizer: a file importing its package or in its folder before a
    trainer vendored elsewhere, which restores some other model's optimizer."""
    root = _project(tmp_path / "p4v", {"pkg/__init__.py": "", "pkg/adapter.py": FROZEN, **trainers})
    monkeypatch.chdir(root)
    main(["--no-cache", "-j", "1", "--output-format", "json", "--exit-zero", "."])
    findings = [f for f in json.loads(capsys.readouterr().out) if f["code"] == "BUF008"]
    assert _summary(findings) == [("adapter.py", 9, "BUF008", "none")]
    assert f"no fix: the project restores optimizer state ({cited}), " in findings[0]["message"]


@pytest.mark.parametrize(
    ("world", "expected"),
    [
        ("    def imagine(self):\n        self.requires_grad_(True)\n", []),
        ("    def imagine(self):\n        self.heads.requires_grad_()\n", []),
        ("    def imagine(self):\n        self.requires_grad_(False)\n", [("adapter.py", 9, "BUF008", "unsafe")]),
    ],
    ids=["whole-holder", "held-attribute", "freezing"],
)
def test_a_frozen_parameter_a_holder_unfreezes_wholesale(
    world: str, expected: list[tuple[str, int, str, str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A model that holds the class (here through a subclass that builds it) and turns
    requires_grad on for itself trains the frozen parameter too."""
    files = {
        "adapter.py": FROZEN,
        "world.py": MODEL_HEAD + "\n\nclass World(nn.Module):\n" + world,
        "agent.py": MODEL_HEAD + "from adapter import Adapter\nfrom world import World\n\n\n"
        "class Agent(World):\n    def __init__(self):\n        super().__init__()\n        self.heads = Adapter()\n",
    }
    root = _project(tmp_path / "p4h", files)
    findings = [f for f in _findings(capsys, root) if f["code"] == "BUF008"]
    assert _summary(findings) == expected


@pytest.mark.parametrize(
    ("script", "site"),
    [
        ("import torch\n\n\ndef widen(model, p):\n    kept = model.adapter.gate\n    model.adapter.gate = p\n    return kept\n", "train.py:6"),
        ("class Other:\n    def __init__(self):\n        self.gate = 1\n", None),  # its own attribute
        ("def show(model):\n    print(model.adapter.gate == 0)\n", None),  # a comparison sets nothing
        ("import torch\n\n\ndef configure(args):\n    args.gate = 0.5\n", None),  # a setting of the program, no module
        ("import torch\n\n\ndef setup(trainer):\n    trainer.cfg.gate = 0.5\n", None),
        ("class Counter:\n    def __init__(this):\n        this.gate = 0\n", None),  # its own, under another name
        ("class Counter:\n    @staticmethod\n    def reset(this, value):\n        this.gate = value\n", "train.py:4"),  # no instance there
        ("import torch\n\n\ndef adapt(model):\n    model.adapter.gate = torch.nn.Parameter(torch.ones(3))\n", "train.py:5"),
        ("from torch import nn\n\n\ndef adapt(model, stats):\n    model.adapter.gate = nn.Parameter(stats.mean * 255, requires_grad=False)\n", "train.py:5"),
        # never a Parameter: on a module's Parameter it would raise TypeError, so another object's
        ("def rescale(box, s):\n    box.gate = box.gate * s\n", None),
        ("import torch\n\n\ndef reset(box):\n    box.gate = torch.zeros(3)\n", None),
        # a torch layer the script builds itself is none of the project's classes
        ("import torch\n\n\ndef stem(w):\n    proj = torch.nn.Linear(3, 3)\n    proj.gate = torch.nn.Parameter(w)\n    return proj\n", None),
        ("import torch\n\n\ndef stem(w, make):\n    proj = torch.nn.Linear(3, 3)\n    proj = make(proj)\n    proj.gate = torch.nn.Parameter(w)\n", "train.py:7"),
    ],
    ids=[
        "swapped-by-a-script", "own-attribute-of-another-class", "compared", "a-setting", "a-setting-of-another-object",
        "own-attribute-named-this", "static-method-argument", "a-new-parameter", "a-new-parameter-of-arithmetic", "arithmetic",
        "a-factory", "a-torch-layer-built-here", "a-name-bound-otherwise-too",
    ],
)
def test_a_frozen_parameter_set_from_outside_has_no_fix(
    script: str, site: Optional[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Code that assigns the name on the module from outside may put an nn.Parameter there (the
    buffer turns back into a parameter) and then a tensor (TypeError)."""
    root = _project(tmp_path / "p4o", {"adapter.py": FROZEN, "train.py": script})
    findings = [f for f in _findings(capsys, root) if f["code"] == "BUF008"]
    assert _summary(findings) == [("adapter.py", 9, "BUF008", "unsafe" if site is None else "none")]
    if site is not None:
        assert f"no fix: `gate` is set on an object from outside its class ({root / site})" in findings[0]["message"]


@pytest.mark.parametrize(
    "script",
    [
        "import torch\n\n\ndef on_meta(x):\n    return x.device == torch.device('meta')\n",
        "from accelerate import init_empty_weights\n\n\ndef build(cls):\n    with init_empty_weights():\n        return cls()\n",
        "import torch\n\n\ndef lazy_storage(dtype, size):\n    return torch.storage.TypedStorage(size, dtype=dtype, device='meta')\n",
        "import torch\n\nnone_tensor = torch.empty((1, 1), device=\"meta\")\n",
    ],
    ids=["device-comparison", "init-empty-weights-keeps-buffers", "lazy-checkpoint-storage", "placeholder-tensor"],
)
def test_what_is_not_meta_device_construction(script: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _project(tmp_path / "p5m", {"masked.py": CONSTANT, "loader.py": script})
    assert _summary(_findings(capsys, root)) == [("masked.py", 9, "BUF001", "safe"), ("masked.py", 12, "BUF003", "unsafe")]


def test_a_test_that_unfreezes_its_own_models_is_no_unfreezing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = "def test_grad(model):\n    model.requires_grad_(True)\n"
    root = _project(tmp_path / "p4t", {"adapter.py": FROZEN, "tests/test_grad.py": script})
    assert _summary([f for f in _findings(capsys, root) if f["code"] == "BUF008"]) == [("adapter.py", 9, "BUF008", "unsafe")]
    root = _project(tmp_path / "p4u", {"adapter.py": FROZEN, "train.py": script.replace("test_grad", "train")})
    assert _summary([f for f in _findings(capsys, root) if f["code"] == "BUF008"]) == [("adapter.py", 9, "BUF008", "none")]


CONSTANT = MODEL_HEAD + (
    "\n\nclass Masked(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.lin = nn.Linear(3, 3)\n"
    "        self.keep = torch.ones(3)\n\n"
    "    def forward(self, x):\n"
    "        bias = torch.tensor([1.0, 2.0, 3.0]).to(x.device)\n"
    "        return self.lin(x) * self.keep + bias\n"
)


def test_a_project_that_builds_on_the_meta_device(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    loader = "import torch\n\n\ndef load(cls, state):\n    with torch.device('meta'):\n        model = cls()\n" \
             "    model.to_empty(device='cpu')\n    model.load_state_dict(state)\n    return model\n"
    root = _project(tmp_path / "p5", {"masked.py": CONSTANT, "loader.py": loader})
    findings = _findings(capsys, root)
    assert _summary(findings) == [("masked.py", 9, "BUF001", "unsafe"), ("masked.py", 12, "BUF003", "none")]
    assert "the project builds modules on the meta device (" in findings[0]["message"]
    assert "load_state_dict() never restores a non-persistent buffer" in findings[1]["message"]
    # A module built on meta with a tensor among its arguments is one.
    loader = "import torch\n\n\ndef build(cls):\n    return cls(torch.zeros(3), device='meta')\n"
    root = _project(tmp_path / "p5a", {"masked.py": CONSTANT, "loader.py": loader})
    assert _summary(_findings(capsys, root)) == [("masked.py", 9, "BUF001", "unsafe"), ("masked.py", 12, "BUF003", "none")]
    # A test building one tensor on meta is not such a project.
    root = _project(tmp_path / "p6", {"masked.py": CONSTANT, "tests/test_masked.py": "import torch\n\nx = torch.zeros(1, device='meta')\n"})
    assert _summary(_findings(capsys, root)) == [("masked.py", 9, "BUF001", "safe"), ("masked.py", 12, "BUF003", "unsafe")]


def test_a_subclass_in_another_file_that_binds_the_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _project(tmp_path / "p7", {
        "pkg/__init__.py": "",
        "pkg/masked.py": CONSTANT,
        "pkg/sub.py": "from pkg.masked import Masked\n\n\nclass Sub(Masked):\n    keep = None\n",
    })
    findings = [f for f in _findings(capsys, root / "pkg") if f["code"] == "BUF001"]
    assert _summary(findings) == [("masked.py", 9, "BUF001", "unsafe")]
    assert "subclass pkg.sub.Sub (another file) may also set `keep`" in findings[0]["message"]


@pytest.mark.parametrize(
    ("helper", "expected"),
    [
        ("import torch\n\n\ndef table(n):\n    return torch.polar(torch.ones(n), torch.arange(n).float())\n", "none"),
        ("import torch\n\n\ndef table(n):\n    return torch.arange(n).float()\n", "safe"),
    ],
    ids=["complex", "real"],
)
def test_a_helper_of_another_file_that_builds_the_table(helper: str, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = MODEL_HEAD + (
        "from pkg.tables import table\n\n\nclass Rotary(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.lin = nn.Linear(4, 4)\n        self.freqs = torch.as_tensor(table(4))\n\n    def forward(self, x):\n        return self.lin(x) * self.freqs\n"
    )
    root = _project(tmp_path / "p8", {"pkg/__init__.py": "", "pkg/tables.py": helper, "pkg/rotary.py": model})
    assert _summary(_findings(capsys, root / "pkg")) == [("rotary.py", 10, "BUF001", expected)]
    # Linted alone, the helper's file is unknown: the fix cannot be proved safe.
    assert _summary(_findings(capsys, root / "pkg" / "rotary.py")) == [("rotary.py", 10, "BUF001", "unsafe")]


PARAMETERLESS = MODEL_HEAD + (
    "\n\nclass Window(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.window = torch.hann_window(4)\n\n"
    "    def forward(self, x):\n"
    "        return x * self.window.to(x.device)\n"
)


@pytest.mark.parametrize(
    ("holder", "expected"),
    [
        ("from window import Window\nfrom torch import nn\n\n\nclass Model(nn.Module):\n    def __init__(self):\n"
         "        super().__init__()\n        self.window = Window()\n", "unsafe"),
        ("from window import Window\n\n\ndef features(x):\n    return Window()(x)\n", "none"),
    ],
    ids=["held-by-a-module", "used-standalone"],
)
def test_a_parameterless_module_drops_its_move_only_when_a_module_holds_it(
    holder: str, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _project(tmp_path / "p9", {"window.py": PARAMETERLESS, "user.py": holder})
    assert _summary([f for f in _findings(capsys, root) if f["code"] == "BUF002"]) == [("window.py", 11, "BUF002", expected)]


def test_a_private_parameterless_module_held_by_a_module(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`self.proposal = _ProposalLayer(...)`: a class named with a leading underscore is held too."""
    holder = ("from window import _Window\nfrom torch import nn\n\n\nclass Model(nn.Module):\n    def __init__(self):\n"
              "        super().__init__()\n        self.window = _Window()\n")
    root = _project(tmp_path / "p9p", {"window.py": PARAMETERLESS.replace("class Window", "class _Window"), "user.py": holder})
    assert _summary([f for f in _findings(capsys, root) if f["code"] == "BUF002"]) == [("window.py", 11, "BUF002", "unsafe")]


def test_a_project_that_sets_its_default_device(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = "import torch\n\ntorch.set_default_device('cuda')\n"
    root = _project(tmp_path / "p10", {"masked.py": CONSTANT, "run.py": script})
    assert [f["code"] for f in _findings(capsys, root)] == ["BUF003"]


def test_a_change_in_another_file_is_seen_through_the_cache(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _project(tmp_path / "p11", {"adapter.py": FROZEN, "train.py": "def train(model):\n    pass\n"})
    cache = str(tmp_path / "cache")
    run = ["-j", "1", "--output-format", "json", "--exit-zero", "--cache-dir", cache, str(root)]
    main(run)
    assert [f["code"] for f in json.loads(capsys.readouterr().out)] == ["BUF008"]
    (root / "train.py").write_text("def train(model):\n    model.gate.requires_grad = True\n")
    main(run)
    assert json.loads(capsys.readouterr().out) == []
    assert torch.__version__  # torch is imported only for the construction test above


MASKED_BLOCK = MODEL_HEAD + (
    "\n\nclass Block(nn.Module):\n"
    "    def __init__(self, width, mask: torch.Tensor = None):\n"
    "        super().__init__()\n"
    "        self.lin = nn.Linear(width, width)\n"
    "        self.mask = mask\n\n"
    "    def forward(self, x):\n"
    "        self.mask = self.mask.to(x.device) if self.mask is not None else None\n"
    "        return self.lin(x) if self.mask is None else self.lin(x) + self.mask\n\n\n"
    "class Tower(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.block = Block(4)\n"
)


@pytest.mark.parametrize(
    "other, expected",
    [
        ("from pkg.blocks import Tower\n", []),  # only the tower is used elsewhere: no block gets a mask
        ("from pkg.blocks import Block\n", [("blocks.py", 9, "BUF001", "unsafe"), ("blocks.py", 12, "BUF002", "unsafe")]),
        ("from pkg import blocks\n", [("blocks.py", 9, "BUF001", "unsafe"), ("blocks.py", 12, "BUF002", "unsafe")]),
        ("from pkg.blocks import *\n", [("blocks.py", 9, "BUF001", "unsafe"), ("blocks.py", 12, "BUF002", "unsafe")]),
        # a module imported under an alias reaches only the names read on it
        ("import pkg.blocks as blocks\n\ntower = blocks.Tower()\n", []),
        ("import pkg.blocks as blocks\n\nblock = blocks.Block(4, mask=None)\n", [("blocks.py", 9, "BUF001", "unsafe"), ("blocks.py", 12, "BUF002", "unsafe")]),
        ("import pkg.blocks as blocks\n\nnet = getattr(blocks, 'Tower')()\n", [("blocks.py", 9, "BUF001", "unsafe"), ("blocks.py", 12, "BUF002", "unsafe")]),
        ("import pkg.blocks as blocks\n\nnet = blocks.__dict__['Block'](4)\n", [("blocks.py", 9, "BUF001", "unsafe"), ("blocks.py", 12, "BUF002", "unsafe")]),
        ("import pkg.blocks as blocks\nfrom pkg import blocks as again\n\ntower = blocks.Tower()\n", [("blocks.py", 9, "BUF001", "unsafe"), ("blocks.py", 12, "BUF002", "unsafe")]),
    ],
    ids=[
        "tower-only", "block-imported", "module-imported", "star-imported", "alias-reads-tower", "alias-reads-block",
        "alias-handed-on", "alias-dict", "alias-and-another-import",
    ],
)
def test_an_argument_no_construction_gives(other: str, expected: list[tuple[str, int, str, str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`self.mask = mask` (default None) is always None when the file builds the class without a
    mask and no import of the run reaches the class: another file may build it with one."""
    root = _project(tmp_path, {"pkg/__init__.py": "", "pkg/blocks.py": MASKED_BLOCK, "pkg/train.py": other})
    assert _summary(_findings(capsys, root)) == expected


PLAIN_TABLE = MODEL_HEAD + (
    "\n\nclass Warp(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.axes = torch.eye(3)\n\n"
    "    def forward(self, x):\n"
    "        return x @ self.axes.to(x.device)\n"
)


@pytest.mark.parametrize(
    "script, fix",
    [
        ("import json\n\n\ndef load(path):\n    return json.load(open(path))\n", "safe"),
        ("import pickle\n\n\ndef load(path):\n    return pickle.load(open(path, 'rb'))\n", "safe"),  # data, mostly
        ("import dill\n\n\ndef load(path):\n    return dill.load(open(path, 'rb'))\n", "unsafe"),
        ("def reload(old, new):\n    copy_params_and_buffers(old, new, require_all=True)\n", "unsafe"),
    ],
    ids=["no-pickles", "pickle-load", "dill-load", "name-matched-copy"],
)
def test_a_project_that_restores_pickled_modules(script: str, fix: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A module pickled before the fix lacks the new buffer, and a copy of parameters and buffers
    matched by name (StyleGAN's `copy_params_and_buffers(..., require_all=True)`) fails on it:
    the BUF001 fix is then unsafe, and says why."""
    root = _project(tmp_path, {"warp.py": PLAIN_TABLE, "tools.py": script})
    findings = [f for f in _findings(capsys, root) if f["code"] == "BUF001"]
    assert _summary(findings) == [("warp.py", 8, "BUF001", fix)]
    assert ("restores pickled modules or copies parameters and buffers by name (" in findings[0]["message"]) == (fix == "unsafe")



RENDERER = MODEL_HEAD + (
    "\n\nclass Renderer(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.register_buffer('box', torch.zeros(6))\n"
)
FIELD = MODEL_HEAD + (
    "from {package}.renderer import Renderer\n\n\n"
    "class Field(Renderer):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.lin = nn.Linear(3, 3)\n"
    "        self.box = torch.ones(6)\n\n"
    "    def forward(self, x):\n"
    "        return self.lin(x) * self.box[:3]\n"
)


@pytest.mark.parametrize(
    "package, expected",
    [("nerf", []), ("somelib", [("field.py", 10, "BUF001", "unsafe")])],
    ids=["hidden-in-the-run", "outside-the-run"],
)
def test_a_base_whose_module_name_another_file_shares(package: str, expected: list[tuple[str, int, str, str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Research code run from its root imports folders without `__init__.py` by path
    (`from nerf.renderer import Renderer`); two such files `nerf/renderer.py` and
    `dnerf/renderer.py` share the module name `renderer`, so the base cannot be told apart. It is
    in the run, and may register the name as a buffer (here it does): no finding. A base from a
    package the run does not hold keeps the finding, with the unknown base named in the unsafe
    fix. (`--module-bases` makes the subclass a module, as a project's other subclasses would.)"""
    files = {"nerf/renderer.py": RENDERER, "dnerf/renderer.py": RENDERER, "fields/field.py": FIELD.format(package=package)}
    root = _project(tmp_path, files)
    findings = [f for f in _findings(capsys, root, "--module-bases", "Renderer") if f["code"] == "BUF001"]
    assert _summary(findings) == expected
    if expected:
        assert f"base class {package}.renderer.Renderer was not found among the linted files" in findings[0]["message"]


HEAD = MODEL_HEAD + (
    "\n\nclass Head(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.conv = nn.Conv2d(3, 3, 1)\n"
    "        self.stride = torch.tensor([8.0, 16.0])\n\n"
    "    def forward(self, x):\n"
    "        return self.conv(x) * self.stride[0]\n"
)
HOLDER = MODEL_HEAD + (
    "\n\nclass Detector(nn.Module):\n"
    "    def __init__(self, head):\n"
    "        super().__init__()\n"
    "        self.head = head\n\n"
    "    def forward(self, x):\n"
    "        return self.head(x)\n\n"
    "    def _apply(self, fn):\n"
    "        self = super()._apply(fn)\n"
    "        self.head.{attr} = fn(self.head.{attr})\n"
    "        return self\n\n\n"
    "def build():\n"
    "    from {package}.head import Head\n"
    "    return Detector(Head())\n"
)


@pytest.mark.parametrize(
    "attr, package, expected",
    [
        ("stride", "det.heads", []),
        ("stride", "other", [("head.py", 9, "BUF001", "safe")]),
        ("grid", "det.heads", [("head.py", 9, "BUF001", "safe")]),
    ],
    ids=["moved-by-the-holder", "holder-imports-another-head", "holder-moves-another-attribute"],
)
def test_a_module_whose_holder_moves_its_tensor(
    attr: str, package: str, expected: list[tuple[str, int, str, str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """YOLO's `Model._apply` moves the detection head's `stride` along (`self.detect.stride =
    fn(self.detect.stride)`), in a file that imports the head class (here inside a builder, from a
    folder without `__init__.py`, spelled by its path): the head's plain tensor follows the model,
    so it is no finding. A holder that imports some other head, or moves another attribute,
    leaves the finding in place."""
    files = {"det/heads/head.py": HEAD, "det/detector.py": HOLDER.format(attr=attr, package=package)}
    root = _project(tmp_path, files)
    findings = [f for f in _findings(capsys, root) if f["code"] == "BUF001"]
    assert _summary(findings) == expected


STAGE = MODEL_HEAD + (
    "__all__ = ['Backbone']\n\n\n"
    "class Stage(nn.Module):\n"
    "    def __init__(self, pos: torch.Tensor):\n"
    "        super().__init__()\n"
    "        self.lin = nn.Linear(4, 4)\n"
    "        self.pos = pos\n\n"
    "    def forward(self, x):\n"
    "        return self.lin(x) + self.pos\n\n\n"
    "class Backbone(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        pos = nn.Parameter(torch.zeros(4))\n"
    "        self.stage = Stage(pos)\n\n"
    "    def forward(self, x):\n"
    "        return self.stage(x)\n"
)


@pytest.mark.parametrize(
    "exports, expected",
    [("['Backbone']", []), ("['Backbone', 'Stage']", [("stage.py", 10, "BUF001", "unsafe")])],
    ids=["star-import-skips-it", "star-import-takes-it"],
)
def test_a_star_import_reaches_only_what_all_exports(
    exports: str, expected: list[tuple[str, int, str, str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`from .stage import *` in the package takes only what `__all__` lists: where it leaves the
    stage class out, every construction of it is in its own file (given an `nn.Parameter`, which
    the assignment registers), so it is no finding; where `__all__` exports it, other files may
    build it with a plain tensor, and the finding stays."""
    files = {"pkg/__init__.py": "from .stage import *\n", "pkg/stage.py": STAGE.replace("['Backbone']", exports)}
    root = _project(tmp_path, files)
    assert _summary([f for f in _findings(capsys, root) if f["code"] == "BUF001"]) == expected


def test_a_file_written_for_onnx_export_has_no_device_findings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same decoder reports its plain table and its device-less factory in `decoder.py`, and
    nothing in `decoder_onnx.py`, `onnx/decoder.py` (a package folder named for the format) or
    `ensemble_export.py` that uses `torch.onnx`."""
    source = (Path(__file__).parent.parent / "fixtures" / "trust" / "decoder_onnx.py").read_text()
    # named for exporting and using torch.onnx: written for ONNX too; named so but not: checked
    with_onnx = source.replace("import torch\n", "import torch\nimport torch.onnx.operators\n", 1)
    root = _project(tmp_path / "p_onnx", {
        "pkg/__init__.py": "", "pkg/decoder.py": source, "pkg/decoder_onnx.py": source,
        "pkg/onnx/__init__.py": "", "pkg/onnx/decoder.py": source, "pkg/onnxruntime_decoder.py": source,
        "pkg/ensemble_export.py": with_onnx, "pkg/export_results.py": source,
    })
    by_file: dict[str, list[str]] = {}
    for finding in _findings(capsys, root):
        relative = Path(finding["filename"]).relative_to(root).as_posix()
        by_file.setdefault(relative, []).append(finding["code"])
    expected = ["BUF010", "BUF001", "BUF011", "BUF011"]
    assert by_file == {"pkg/decoder.py": expected, "pkg/onnxruntime_decoder.py": expected, "pkg/export_results.py": expected}



DEVICE_BASE = MODEL_HEAD + (
    "\n\nclass BaseModel(nn.Module):\n"
    "    def __init__(self, gpu=-1):\n"
    "        super().__init__()\n"
    "        self.device = torch.device(f'cuda:{gpu}' if gpu >= 0 else 'cpu')\n\n"
    "    def model_to_device(self):\n"
    "        self.to(device=self.device)\n"
)
DEVICE_MODELS = MODEL_HEAD + (
    "from pkg.base import BaseModel\n\n\n"
    "class FieldInteraction(BaseModel):\n"
    "    def __init__(self, n):\n"
    "        super().__init__()\n"
    "        self.weight = nn.Parameter(torch.randn(n, n))\n"
    "        self.mask = torch.triu(torch.ones(n, n)).to(self.device)\n"
    "        self.pair_weight = torch.randn(n, n, requires_grad=True, device=self.device)\n"
    "        self.model_to_device()\n\n"
    "    def forward(self, x):\n"
    "        return x @ (self.weight * self.mask * self.pair_weight)\n\n\n"
    "class Conjunctions(BaseModel):\n"
    "    def __init__(self, n):\n"
    "        super().__init__()\n"
    "        self.weight = nn.Parameter(torch.randn(n, n))\n"
    "        self.order = torch.arange(n).flip(0)\n\n"
    "    def forward(self, x):\n"
    "        return (x @ self.weight)[:, self.order.to(self.device)]\n\n\n"
    "class Weighted(BaseModel):\n"
    "    def __init__(self, n, weights: torch.Tensor):\n"
    "        super().__init__()\n"
    "        self.lin = nn.Linear(n, n)\n"
    "        self.weights = weights\n\n"
    "    def forward(self, x):\n"
    "        return self.lin(x) * self.weights\n"
)


def test_a_base_of_another_file_that_keeps_its_own_device(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A model whose base (in another file) keeps `self.device`, moves itself there and builds
    its tables there: the class places its tensors itself (no finding), as with a `self.device`
    of its own. A table it copies to that device on every call is still reported, and so is a
    tensor that asks for gradients (placed there, but never trained: it is no Parameter), and one
    stored as the caller handed it in (the design never placed it)."""
    root = _project(tmp_path / "dev", {"pkg/__init__.py": "", "pkg/base.py": DEVICE_BASE, "pkg/models.py": DEVICE_MODELS})
    assert [(name, row, code) for name, row, code, _ in _summary(_findings(capsys, root / "pkg"))] == [
        ("models.py", 11, "BUF001"), ("models.py", 22, "BUF001"), ("models.py", 25, "BUF002"), ("models.py", 32, "BUF001"),
    ]
    # Without the base's file nothing says so: the table placed at construction is reported too.
    alone = _findings(capsys, root / "pkg" / "models.py", "--module-bases", "pkg.base.BaseModel")
    assert [(f["location"]["row"], f["code"]) for f in alone] == [(10, "BUF001"), (11, "BUF001"), (22, "BUF001"), (25, "BUF002"), (32, "BUF001")]


@pytest.mark.parametrize(
    ("files", "linted"),
    [
        # namespace folders: `ldm/` and `ldm/models/` have no __init__.py, so the base's module
        # name is `diffusion.base`, while the import spells `ldm.models.diffusion.base`
        ({"ldm/models/diffusion/__init__.py": "", "ldm/models/diffusion/base.py": "BASE",
          "ldm/models/diffusion/model.py": "MODEL:ldm.models.diffusion.base"}, "ldm"),
        # the repository's own folder is a package (`proj.models.base`), its scripts import from inside it
        ({"proj/__init__.py": "", "proj/models/__init__.py": "", "proj/models/base.py": "BASE",
          "proj/models/model.py": "MODEL:models.base"}, "proj"),
    ],
    ids=["namespace-folders", "package-root-imported-from-inside"],
)
def test_a_base_whose_import_path_and_module_name_differ_by_leading_folders(
    files: dict[str, str], linted: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The base is found by the rest of the path, so its assignment of the name declines the fix
    (KeyError) instead of an unsafe fix that would break the constructor."""
    base = MODEL_HEAD + "\n\nclass Base(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.scale = torch.zeros(3)\n"
    texts = {name: base if text == "BASE" else MODEL.replace("pkg.base", text[len("MODEL:"):]) if text else "" for name, text in files.items()}
    root = _project(tmp_path / "layout", texts)
    model = [f for f in _findings(capsys, root / linted) if f["filename"].endswith("model.py")]
    assert _summary(model) == [("model.py", 10, "BUF001", "none")]
    assert "also sets `scale`, so register_buffer would raise KeyError" in model[0]["message"]


REGISTERING_BASE = MODEL_HEAD + (
    "\n\nclass OptimModule(nn.Module):\n"
    "    def register(self, name, tensor, lr=None):\n"
    "        if lr == 0.0:\n"
    "            self.register_buffer(name, tensor)\n"
    "        else:\n"
    "            self.register_parameter(name, nn.Parameter(tensor))\n"
)


@pytest.mark.parametrize(
    ("registration", "expected"),
    [
        # the helper registers only `kernel`: `smooth` stays a plain tensor, moved per call (the
        # fix stays unsafe: what a helper setting computed names sets first is not proved)
        ('self.register("kernel", torch.randn(3), lr=0.0)', [("kernel.py", 11, "BUF001", "unsafe"), ("kernel.py", 14, "BUF002", "unsafe")]),
        # a computed name may be `smooth`: nothing is claimed about it
        ('self.register(self.key, torch.randn(3), lr=0.0)', []),
    ],
    ids=["literal-name", "computed-name"],
)
def test_a_base_helper_that_registers_the_names_it_is_given(
    registration: str, expected: list[tuple[str, int, str, str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kernel = MODEL_HEAD + (
        "from pkg.optim import OptimModule\n\n\n"
        "class Kernel(OptimModule):\n"
        "    def __init__(self, key='kernel'):\n"
        "        super().__init__()\n"
        "        self.key = key\n"
        f"        {registration}\n"
        "        self.smooth = torch.ones(3) / 3\n\n"
        "    def forward(self, x):\n"
        "        return x * self.kernel * self.smooth.to(x.device)\n"
    )
    root = _project(tmp_path / "reg", {"pkg/__init__.py": "", "pkg/optim.py": REGISTERING_BASE, "pkg/kernel.py": kernel})
    assert _summary(_findings(capsys, root / "pkg")) == expected


THROWAWAY = MODEL_HEAD + (
    "\n\nclass Pool(nn.Module):\n"
    "    def __init__(self, size, device='cpu'):\n"
    "        super().__init__()\n"
    "        self.eps = torch.FloatTensor([1e-8] * size).to(device)\n\n"
    "    def forward(self, x):\n"
    "        return x / (x.sum(-1, keepdim=True) + self.eps)\n"
)


@pytest.mark.parametrize(
    "user, expected",
    [
        ("from pkg.pool import Pool\n\n\ndef pooled(x):\n    return Pool(3, x.device)(x)\n", []),
        ("from pkg.pool import Pool\n\n\ndef pooled(x):\n    pool = Pool(3, x.device)\n    return pool(x)\n", []),
        ("from pkg.pool import Pool\n\n\ndef pooled(x):\n    pool = Pool(3)\n    pool.cuda()\n    return pool(x)\n", [("pool.py", 8, "BUF001", "none")]),
        ("from pkg.pool import Pool\n\n\ndef make():\n    return Pool(3)\n", [("pool.py", 8, "BUF001", "none")]),
        ("from pkg.pool import Pool\n\nFACTORY = {'pool': 'Pool'}\n\n\ndef pooled(x):\n    return Pool(3, x.device)(x)\n", [("pool.py", 8, "BUF001", "none")]),
        ("import pkg.pool\n\n\ndef pooled(x):\n    return pkg.pool.Pool(3, x.device)(x)\n", [("pool.py", 8, "BUF001", "none")]),
        ("from pkg.pool import Pool\n\n\ndef pooled(x, pool=None):\n    pool = Pool(3)\n    return pool(x)\n", [("pool.py", 8, "BUF001", "none")]),
        # moved after it is built, but built on the device of the input it is then called with,
        # which every construction names: the design of a device argument, no finding
        ("from pkg.pool import Pool\n\n\ndef pooled(x):\n    pool = Pool(3, x.device).cuda()\n    return pool(x)\n", []),
        ("from pkg.pool import Pool\n\n\ndef pooled(x):\n    pool = Pool(3).cuda()\n    return pool(x)\n", [("pool.py", 8, "BUF001", "none")]),
        ("from pkg.pool import Pool as Smoother\nfrom torch import nn\n\n\nclass Net(nn.Module):\n    def __init__(self):\n"
         "        super().__init__()\n        self.smooth = Smoother(3)\n\n\ndef pooled(x):\n    return Smoother(3, x.device)(x)\n",
         [("pool.py", 8, "BUF001", "none")]),
    ],
    ids=[
        "called-at-once", "local-only-called", "local-moved", "returned", "named-in-a-string", "through-the-module",
        "parameter-rebound", "moved-where-built", "moved-built-on-host", "kept-under-another-name",
    ],
)
def test_a_module_the_project_only_builds_for_one_call(user: str, expected: list[tuple[str, int, str, str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A class every construction of which, in every file, is called once and dropped is never
    moved: a tensor it builds on the device it is handed is no finding. One kept, returned,
    moved or named as a string anywhere (a registry may build it) stays a finding."""
    root = _project(tmp_path, {"pkg/__init__.py": "", "pkg/pool.py": THROWAWAY, "pkg/user.py": user})
    assert _summary(_findings(capsys, root)) == expected


def test_a_module_only_a_test_builds_for_one_call_is_no_throwaway(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A library class the repository builds only in its tests (`l1 = Penalty(p); l1(x)`) is
    built by users, who may keep and move it: the test's one-call build proves nothing."""
    test = "from pkg.pool import Pool\n\n\ndef test_pool():\n    pool = Pool(3, 'cpu')\n    assert pool(1) is not None\n"
    root = _project(tmp_path, {"pkg/__init__.py": "", "pkg/pool.py": THROWAWAY, "tests/test_pool.py": test})
    assert _summary(_findings(capsys, root)) == [("pool.py", 8, "BUF001", "none")]


def test_a_class_a_package_re_exports_is_no_throwaway(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`from .pool import Pool` in the package's `__init__`: the library's public API, which users
    build and keep, whatever its own code does with it."""
    user = "from pkg.pool import Pool\n\n\ndef pooled(x):\n    return Pool(3, x.device)(x)\n"
    root = _project(tmp_path, {"pkg/__init__.py": "from .pool import Pool\n", "pkg/pool.py": THROWAWAY, "pkg/user.py": user})
    assert _summary(_findings(capsys, root)) == [("pool.py", 8, "BUF001", "none")]


BASIS = MODEL_HEAD + (
    "\n\nclass Basis(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.centres = torch.linspace(0.0, 5.0, 8)\n\n"
    "    def forward(self, d):\n"
    "        return d.unsqueeze(-1) - self.centres\n\n\n"
    "class Encoder(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.basis = Basis()\n\n"
    "    def forward(self, d):\n"
    "        return self.basis(d)\n"
)


@pytest.mark.parametrize(
    ("holder", "fix"),
    [
        ("    def half(self):\n        super().half()\n        self.encoder = self.encoder.float()\n        return self\n", "none"),
        ("    def bfloat16(self):\n        super().bfloat16()\n        self.encoder.to(torch.float32)\n        return self\n", "none"),
        ("    def prepare(self):\n        self.half()\n        self.encoder.float()\n", "none"),  # a method that casts to half first
        ("    def reset(self):\n        self.encoder = self.encoder.float()\n", "safe"),  # no cast to half before it
        ("    def half(self):\n        super().half()\n        self.other = self.other.float()\n        return self\n", "safe"),  # another module
    ],
    ids=["half-override", "bfloat16-to-float32", "method-that-halves", "no-half-cast", "another-module"],
)
def test_a_module_a_holder_keeps_in_float32(holder: str, fix: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A holder in another file whose cast to half puts the module it holds back in float32: the
    tensors of that module and of the modules it holds, at any depth, stay exact only as plain
    attributes (a buffer is rounded to half first), so BUF001 offers no fix there."""
    files = {
        "pkg/layers.py": BASIS,
        "pkg/model.py": MODEL_HEAD + "from pkg.layers import Encoder\n\n\nclass Model(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.encoder = Encoder()\n"
        "        self.other = nn.Linear(2, 2)\n\n" + holder,
    }
    findings = [f for f in _findings(capsys, _project(tmp_path / "p", files)) if f["code"] == "BUF001"]
    assert _summary(findings) == [("layers.py", 8, "BUF001", fix)]
    if fix == "none":
        assert "back to float32 after Model is cast to half" in findings[0]["message"]


def test_tests_and_benchmarks_have_no_device_findings_unless_asked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same decoder in `tests/`, `benchmarks/` and a `test_*.py` file of test functions reports
    nothing by default (a test builds its modules on the device it tests); an evaluation script
    named `test_*.py` that runs as `__main__` is no test and keeps its findings. `--check-tests`
    and `check-tests = true` bring the others back, the same as in the package."""
    source = (Path(__file__).parent.parent / "fixtures" / "trust" / "decoder_onnx.py").read_text()
    files = {
        "pkg/__init__.py": "", "pkg/decoder.py": source, "tests/test_decoder.py": source,
        "pkg/test_utils.py": source + "\n\ndef test_builds():\n    pass\n", "benchmarks/decoder.py": source,
        "demo/test_ap_on_data.py": source + "\n\nif __name__ == '__main__':\n    pass\n",
    }

    def by_file(root: Path, *extra: str) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for finding in _findings(capsys, root, *extra):
            found.setdefault(Path(finding["filename"]).relative_to(root).as_posix(), []).append(finding["code"])
        return found

    expected = ["BUF010", "BUF001", "BUF011", "BUF011"]
    root = _project(tmp_path / "default", files)
    assert by_file(root) == {"pkg/decoder.py": expected, "demo/test_ap_on_data.py": expected}
    everywhere = {path: expected for path in files if path.endswith(("decoder.py", "_utils.py", "_data.py"))}
    assert by_file(root, "--check-tests") == everywhere
    configured = _project(tmp_path / "configured", {**files, "pyproject.toml": "[tool.bufferlint]\ncheck-tests = true\n"})
    assert by_file(configured) == everywhere


REGION = MODEL_HEAD + (
    "\n\nclass Region(nn.Module):\n"
    "    def __init__(self, anchors):\n"
    "        super().__init__()\n"
    "        self.lin = nn.Linear(2, 2)\n"
    "        self.anchors = torch.tensor(anchors).view(-1, 2)\n\n"
    "    def forward(self, x):\n"
    "        return self.lin(x) * self.anchors[0]\n"
)


@pytest.mark.parametrize(
    ("script", "fix"),
    [
        ("import os\n\n\ndef build(block, layer):\n    layer.anchors = [float(a) for a in block['anchors'].split(',')]\n", "unsafe"),
        ("import os\n\n\ndef build(block, layer):\n    layer.anchors = 3\n", "unsafe"),
        ("import torch\n\n\ndef build(layer):\n    layer.anchors = torch.ones(2, 2)\n", "safe"),  # a tensor: a buffer takes it
        ("def build(layer):\n    return layer.anchors\n", "safe"),
    ],
    ids=["list", "number", "tensor", "read-only"],
)
def test_a_tensor_attribute_set_to_a_plain_value_from_outside_has_an_unsafe_fix(
    script: str, fix: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Another file sets the name to a list or a number on some object: if that is this module,
    a buffer refuses the value (TypeError) where the plain attribute took it."""
    root = _project(tmp_path / "p5", {"region.py": REGION, "darknet.py": script})
    findings = [f for f in _findings(capsys, root) if f["code"] == "BUF001"]
    assert _summary(findings) == [("region.py", 9, "BUF001", fix)]
    if fix == "unsafe":
        assert f"unsafe: `anchors` is set to a plain Python value on an object outside its class ({root / 'darknet.py'}:5)" in findings[0]["message"]


def test_file_facts_survive_the_index_cache_field_for_field() -> None:
    """The index cache stores FileFacts as a list (to_json) and reads it back by position
    (from_json): every field must come back where it was, or cached runs read other facts."""
    source = (
        "import pickle\nimport torch\nfrom torch import nn\n__all__ = ['Adapter']\n\n\n"
        "class Adapter(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.gate = nn.Parameter(torch.zeros(3), requires_grad=False)\n\n"
        "    def to(self, device):\n        self.gate.data = self.gate.data.to(device)\n        return self\n\n\n"
        "def train(model, optimizer, ckpt, box, layer, other):\n"
        "    model.gate.requires_grad = True\n    optimizer.load_state_dict(ckpt['optimizer'])\n"
        "    torch.set_default_device('cuda')\n    layer.anchors = [1.0, 2.0]\n    box.gate = other\n"
        "    with torch.device('cuda'):\n        model.setup_caches()\n    return pickle.load(open('m.pkl', 'rb'))\n"
        "\n\nREQUIRES = ['torch==1.4.0']\n"
    )
    facts = file_facts(ast.parse(source), "pkg.train", source.encode())
    assert facts.set_outside and facts.set_outside_plain and facts.unfrozen and facts.resumes_optimizer and facts.old_torch
    assert FileFacts.from_json(json.loads(json.dumps(facts.to_json()))) == facts


@pytest.mark.parametrize(
    ("requirement", "fix"),
    [
        ("torch==1.4.0", "none"), ("torch<1.6", "none"), ("torch<=1.5.1", "none"), ("torch==0.4.1", "none"),
        ("torch==1.6.0", "safe"), ("torch>=1.4", "safe"), ("torch<1.10", "safe"), ("torch==1.13.1", "safe"),
    ],
)
def test_a_project_pinning_torch_below_1_6_gets_no_fix(requirement: str, fix: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`register_buffer(..., persistent=False)` raises TypeError before torch 1.6: a setup.py
    that pins an older torch leaves the rewrite without a safe (or any) form."""
    setup = f"from setuptools import setup\n\nsetup(name='m', install_requires=['numpy', '{requirement}'])\n"
    root = _project(tmp_path / "p6", {"masked.py": CONSTANT, "setup.py": setup})
    findings = [f for f in _findings(capsys, root) if f["code"] == "BUF001"]
    assert _summary(findings) == [("masked.py", 9, "BUF001", fix)]
    if fix == "none":
        assert f"no fix: the project pins torch below 1.6 ({root / 'setup.py'}:3)" in findings[0]["message"]


def test_a_pin_quoted_in_prose_pins_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Documentation that quotes a pin in backticks (``"torch==1.4.0"``) declares no requirement:
    the fix keeps its safe form."""
    notes = 'NOTES = """An old release pinned `"torch==1.4.0"` in its setup.py."""\n'
    root = _project(tmp_path / "p7", {"masked.py": CONSTANT, "notes.py": notes})
    findings = [f for f in _findings(capsys, root) if f["code"] == "BUF001"]
    assert _summary(findings) == [("masked.py", 9, "BUF001", "safe")]


TRAINABLE_ONLY = (
    "import torch\n\n\ndef make_optimizer(net, lr):\n"
    "    params = [p for p in net.parameters() if p.requires_grad]\n    return torch.optim.Adam(params, lr)\n"
)
TIMM_GROUPS = (
    "import torch\nimport timm.optim.optim_factory as optim_factory\n\n\ndef make_optimizer(net, lr):\n"
    "    groups = optim_factory.add_weight_decay(net, 0.05)\n    return torch.optim.AdamW(groups, lr)\n"
)
SCHEDULER_DEMO = "\n\nif __name__ == '__main__':\n    demo = torch.optim.Adam([torch.zeros(3, 64, 3, 3)], lr=2e-4)\n"
RESUME = "from optim import make_optimizer\n\n\ndef resume(net, state):\n    opt = make_optimizer(net, 0.1)\n    opt.load_state_dict(state['optimizer'])\n"


@pytest.mark.parametrize(
    ("builder", "fix"),
    [
        (TRAINABLE_ONLY, "unsafe"),
        (TRAINABLE_ONLY.replace(" if p.requires_grad", ""), "none"),
        (TIMM_GROUPS, "unsafe"),
        (TIMM_GROUPS.replace("optim_factory.add_weight_decay(net, 0.05)", "list(net.parameters())"), "none"),
        (TRAINABLE_ONLY + SCHEDULER_DEMO, "unsafe"),
        (TRAINABLE_ONLY + SCHEDULER_DEMO.replace("[torch.zeros(3, 64, 3, 3)]", "[net.weight]"), "none"),
    ],
    ids=["trainable-only", "every-parameter", "timm-groups", "plain-groups", "scheduler-demo", "demo-over-a-weight"],
)
def test_a_resumed_optimizer_given_only_trainable_parameters_never_held_a_frozen_one(
    builder: str, fix: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Resuming is harmless when every optimizer the project builds skips parameters that do not
    require grad (itself, or through timm's `add_weight_decay`): the frozen one was never in it,
    so turning it into a buffer changes no group. An optimizer over tensors the call builds from
    constants (a scheduler's demo) holds no module's parameters; one over a weight may."""
    root = _project(tmp_path / "p4t", {"adapter.py": FROZEN, "optim.py": builder, "train.py": RESUME})
    findings = [f for f in _findings(capsys, root) if f["code"] == "BUF008"]
    assert _summary(findings) == [("adapter.py", 9, "BUF008", fix)]
    assert ("the project restores optimizer state (" in findings[0]["message"]) is (fix == "none")
    # the message says where the constant is kept: no optimizer of the project holds it here
    assert ("(the project's optimizers take only trainable ones)" in findings[0]["message"]) is (fix == "unsafe")
    assert ("a constant in parameters() and the optimizer" in findings[0]["message"]) is (fix == "none")


MASKED_BLOCKS = MODEL_HEAD + (
    "\n\nclass Block(nn.Module):\n"
    "    def __init__(self, width: int, mask: torch.Tensor = None):\n"
    "        super().__init__()\n"
    "        self.attn = nn.MultiheadAttention(width, 2)\n"
    "        self.mask = mask\n\n"
    "    def forward(self, x):\n"
    "        self.mask = self.mask.to(device=x.device) if self.mask is not None else None\n"
    "        return x + self.attn(x, x, x, need_weights=False, attn_mask=self.mask)[0]\n"
    "\n\nclass Stack(nn.Module):\n"
    "    def __init__(self, width: int, depth: int, mask: torch.Tensor = None):\n"
    "        super().__init__()\n"
    "        self.blocks = nn.Sequential(*[Block(width, mask) for _ in range(depth)])\n\n"
    "    def forward(self, x):\n"
    "        return self.blocks(x)\n"
)
TOWER_HEAD = MODEL_HEAD + "from pkg.blocks import Stack\n\n\nclass Tower(nn.Module):\n    def __init__(self, width=8):\n        super().__init__()\n"
TOWER_TAIL = "\n    def forward(self, x):\n        return self.stack(x)\n"


@pytest.mark.parametrize(
    ("tower", "expected"),
    [
        (TOWER_HEAD + "        self.stack = Stack(width, 2)\n" + TOWER_TAIL, []),
        (TOWER_HEAD + "        self.stack = Stack(width, 2, mask=None)\n" + TOWER_TAIL, []),
        (TOWER_HEAD + "        self.stack = Stack(width, 2, torch.ones(2, 2).bool())\n" + TOWER_TAIL,
         [("blocks.py", 9, "BUF001", "unsafe"), ("blocks.py", 12, "BUF002", "unsafe")]),
        (TOWER_HEAD + "        self.stack = Stack(width, 2, mask=torch.ones(2, 2).bool())\n" + TOWER_TAIL,
         [("blocks.py", 9, "BUF001", "unsafe"), ("blocks.py", 12, "BUF002", "unsafe")]),
        (TOWER_HEAD + "        options = {'mask': None}\n        self.stack = Stack(width, 2, **options)\n" + TOWER_TAIL,
         [("blocks.py", 9, "BUF001", "unsafe"), ("blocks.py", 12, "BUF002", "unsafe")]),
        (TOWER_HEAD + "        self.stack = Stack(width, 2)\n        self.kind = Stack\n" + TOWER_TAIL,
         [("blocks.py", 9, "BUF001", "unsafe"), ("blocks.py", 12, "BUF002", "unsafe")]),
        (TOWER_HEAD.replace("import Stack", "import Stack as Layers") + "        self.stack = Layers(width, 2, None)\n" + TOWER_TAIL,
         [("blocks.py", 9, "BUF001", "unsafe"), ("blocks.py", 12, "BUF002", "unsafe")]),
    ],
    ids=["left-out", "given-none", "given-by-position", "given-by-keyword", "star-arguments", "handed-around", "renamed"],
)
def test_an_argument_no_file_of_the_run_gives(tower: str, expected: list[tuple[str, int, str, str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A block stores an optional mask its stack passes down; the stack is built in another file.
    Where every call there leaves the mask out or passes None, every instance holds None and no
    finding is made; a call that gives one, may give one (`**options`), or a use of the class the
    file's calls do not show (handed around, imported under another name) keeps the findings."""
    root = _project(tmp_path, {"pkg/__init__.py": "", "pkg/blocks.py": MASKED_BLOCKS, "pkg/tower.py": tower})
    assert _summary(_findings(capsys, root)) == expected


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"pkg/__init__.py": "from .blocks import Stack\n"}, [("blocks.py", 9, "BUF001", "unsafe"), ("blocks.py", 12, "BUF002", "unsafe")]),
        ({"pkg/__init__.py": "", "pkg/registry.py": "from pkg import blocks\n\n\ndef build(name, **kw):\n    return getattr(blocks, name)(**kw)\n"},
         [("blocks.py", 9, "BUF001", "unsafe"), ("blocks.py", 12, "BUF002", "unsafe")]),
        ({"pkg/__init__.py": "", "pkg/text.py": "from pkg.blocks import Stack\n\n\ndef text_stack(mask):\n    return Stack(8, 2, mask)\n"},
         [("blocks.py", 9, "BUF001", "unsafe"), ("blocks.py", 12, "BUF002", "unsafe")]),
        ({"pkg/__init__.py": "", "pkg/other.py": MODEL_HEAD + "\n\nclass Stack(nn.Module):\n    def __init__(self, mask=None):\n        super().__init__()\n\n\ndef text_stack(mask):\n    return Stack(mask)\n"},
         []),
    ],
    ids=["re-exported", "module-handed-around", "a-second-caller-gives-it", "another-class-of-that-name"],
)
def test_an_argument_never_given_needs_every_caller(files: dict[str, str], expected: list[tuple[str, int, str, str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The proof needs every way the run may build the class: a package that re-exports it (its
    users build it), its module handed around as a value, or a second caller that passes a mask
    keep the findings; a call of another class that shares the name does not."""
    tower = TOWER_HEAD + "        self.stack = Stack(width, 2)\n" + TOWER_TAIL
    root = _project(tmp_path, {"pkg/blocks.py": MASKED_BLOCKS, "pkg/tower.py": tower, **files})
    assert _summary(_findings(capsys, root)) == expected



def test_a_class_named_in_lower_case_is_not_proved_across_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The run's text is read for capitalised class names only: a class spelled `qStack` (as
    acquisition functions are) that another file imports keeps its findings."""
    blocks = MASKED_BLOCKS.replace("Stack", "qStack")
    tower = (TOWER_HEAD + "        self.stack = Stack(width, 2)\n" + TOWER_TAIL).replace("Stack", "qStack")
    root = _project(tmp_path, {"pkg/__init__.py": "", "pkg/blocks.py": blocks, "pkg/tower.py": tower})
    assert _summary(_findings(capsys, root)) == [("blocks.py", 9, "BUF001", "unsafe"), ("blocks.py", 12, "BUF002", "unsafe")]

MEMORY_BASE = MODEL_HEAD + (
    "\n\nclass Stateful(nn.Module):\n"
    "    def __setattr__(self, name, value):\n"
    "        memory = self.__dict__.get('_memory')\n"
    "        if memory is not None and name in memory:\n"
    "            memory[name] = value\n"
    "        else:\n"
    "            super().__setattr__(name, value)\n"
)
MEMORY_USER = MODEL_HEAD + "from pkg.base import {base}\n\n\nclass Trace({base}):\n" + (
    "    def __init__(self, width):\n"
    "        super().__init__()\n"
    "        self.synapse = nn.Linear(width, width)\n"
    "        self.trace = None\n\n"
    "    def forward(self, x):\n"
    "        if self.trace is None:\n"
    "            self.trace = torch.zeros(*self.synapse.weight.shape)\n"
    "        return self.synapse(x) + x @ self.trace\n"
)


@pytest.mark.parametrize(("base", "expected"), [("Stateful", []), ("Plain", [("trace.py", 14, "BUF001", "none")])])
def test_a_base_in_another_file_that_overrides_setattr(base: str, expected: list[tuple[str, int, str, str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A base class of another file that overrides `__setattr__` decides where an assigned tensor
    is kept (a spiking layer's memory table): no finding. A base that does not keeps the finding."""
    plain = MODEL_HEAD + "\n\nclass Plain(nn.Module):\n    pass\n"
    root = _project(tmp_path, {"pkg/__init__.py": "", "pkg/base.py": MEMORY_BASE + plain, "pkg/trace.py": MEMORY_USER.format(base=base)})
    assert _summary(_findings(capsys, root)) == expected


NODE_TABLES = MODEL_HEAD + (
    "\n\nclass NodeTables(nn.Module):\n"
    "    def __init__(self, features, device='cpu'):\n"
    "        super().__init__()\n"
    "        self.features = torch.as_tensor(features).to(device)\n"
    "        self.proj = nn.Linear(4, 4)\n\n"
    "    def forward(self, ids):\n"
    "        return self.proj(self.features[ids])\n"
)


@pytest.mark.parametrize(
    "script, expected",
    [
        # every construction names the device: no instance takes the host default
        ("from pkg.tables import NodeTables\n\n\ndef build(args, f):\n    if args.model == 'NodeTables':\n"
         "        return NodeTables(f, device=args.device)\n    return NodeTables(f, args.device)\n", []),
        # named in a comment, or among the choices of a setting: still only built in calls
        ("from pkg.tables import NodeTables\n\n\ndef build(args, f):\n    # NodeTables keeps its tables on args.device\n"
         "    if args.model in ['NodeTables', 'Other']:\n        return NodeTables(f, device=args.device)\n", []),
        # one construction leaves the device out: that instance builds its table on the host
        ("from pkg.tables import NodeTables\n\n\ndef build(args, f):\n    return NodeTables(f), NodeTables(f, device=args.device)\n",
         [("tables.py", 8, "BUF001", "safe")]),
        # arguments handed on with ** may leave it out
        ("from pkg.tables import NodeTables\n\n\ndef build(f, **kw):\n    return NodeTables(f, **kw)\n", [("tables.py", 8, "BUF001", "safe")]),
        # a registry that names the class as a value may build it any way
        ("from pkg.tables import NodeTables\n\nMODELS = {'tables': NodeTables}\n\n\ndef build(args, f):\n"
         "    return NodeTables(f, device=args.device)\n", [("tables.py", 8, "BUF001", "safe")]),
        # a registry's `dict(type=...)` names it as a string that is no comparison
        ("from pkg.tables import NodeTables\n\nCONFIG = dict(type='NodeTables')\n\n\ndef build(args, f):\n"
         "    return NodeTables(f, device=args.device)\n", [("tables.py", 8, "BUF001", "safe")]),
        # the module imported as a value: other builds are unseen
        ("from pkg import tables\n\n\ndef build(args, f):\n    return tables.NodeTables(f, device=args.device)\n",
         [("tables.py", 8, "BUF001", "safe")]),
        # never built: nothing shows a caller names the device
        ("", [("tables.py", 8, "BUF001", "safe")]),
    ],
    ids=["always-given", "comment-and-choices", "one-leaves-it-out", "double-star", "registry-value", "registry-string", "module-imported", "never-built"],
)
def test_a_host_default_device_every_construction_names(
    script: str, expected: list[tuple[str, int, str, str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`__init__(self, ..., device="cpu")` building `.to(device)`: a finding while some instance may
    take the host default, none once every construction of the run names the device."""
    root = _project(tmp_path, {"pkg/__init__.py": "", "pkg/tables.py": NODE_TABLES, "pkg/train.py": script})
    assert _summary(_findings(capsys, root)) == expected


@pytest.mark.parametrize(
    ("core", "fix"),
    [
        ("class Core(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.conv = nn.Conv2d(3, 3, 1)\n", "unsafe"),
        ("class Core:\n    def __init__(self):\n        self.scale = 2.0\n", "none"),  # no module: nothing moves the holder
    ],
    ids=["module-core", "plain-core"],
)
def test_a_module_class_built_through_a_relative_import_moves_its_holder(
    core: str, fix: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`from .core import Core`, then `self.core = Core()`: a holder of a module with weights is
    moved by whoever runs it, so a constant it rebuilds per call can be hoisted (unsafe)."""
    flow = MODEL_HEAD + (
        "from .core import Core\n\n\n"
        "class Flow(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.core = Core()\n\n"
        "    def forward(self, images):\n"
        "        mean = torch.tensor([123.675, 116.28, 103.53], device=images.device)\n"
        "        return images - mean.reshape(1, 3, 1, 1)\n"
    )
    root = _project(tmp_path / "p5", {"pkg/__init__.py": "", "pkg/models/__init__.py": "", "pkg/models/core.py": MODEL_HEAD + "\n\n" + core, "pkg/models/flow.py": flow})
    findings = [f for f in _findings(capsys, root) if f["code"] == "BUF003"]
    assert _summary(findings) == [("flow.py", 12, "BUF003", fix)]


_ENCODER = "from torch import nn\n\nfrom adapter import Adapter\n\n\nclass Encoder(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.adapter_block = Adapter()\n\n\n"
_UNFREEZE_BACKBONE = "        for block in [self.backbone]:\n            for p in block.parameters():\n                p.requires_grad = flag\n"


@pytest.mark.parametrize(
    ("models", "expected"),
    [
        (
            "class Classifier(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.backbone = Encoder()\n"
            "        self.head = nn.Linear(3, 2)\n\n    def tune(self, flag):\n" + _UNFREEZE_BACKBONE,
            [],
        ),
        (
            "class Classifier(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.backbone = nn.Linear(3, 3)\n"
            "        self.encoder = Encoder()\n\n    def tune(self, flag):\n" + _UNFREEZE_BACKBONE,
            [("adapter.py", 9, "BUF008", "unsafe")],
        ),
        (
            "class Base(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.backbone = Encoder()\n\n\n"
            "class Classifier(Base):\n    def tune(self, flag):\n" + _UNFREEZE_BACKBONE,
            [],
        ),
        (
            "class Classifier(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.head = nn.Linear(3, 2)\n\n"
            "    @staticmethod\n    def tune(model):\n        for p in model.parameters():\n            p.requires_grad = True\n",
            [("adapter.py", 9, "BUF008", "none")],
        ),
        (
            "class Classifier(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.head = nn.Linear(3, 2)\n\n"
            "    def tune(self):\n        for p in self.get_backbone().parameters():\n            p.requires_grad = True\n",
            [("adapter.py", 9, "BUF008", "none")],
        ),
    ],
    ids=["walks-the-holder", "walks-another-attribute", "held-through-a-base", "static-method", "method-result"],
)
def test_an_unfreezing_loop_over_the_instance_reaches_only_what_it_walks(
    models: str, expected: list[tuple[str, int, str, str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`for block in [self.backbone]: for p in block.parameters(): p.requires_grad = flag` in a
    method trains only what `backbone` holds, at any depth (also where a base builds it); a static
    method's argument or what a method returns may be any module."""
    root = _project(tmp_path / "p4l", {"adapter.py": FROZEN, "models.py": _ENCODER + models})
    findings = [f for f in _findings(capsys, root) if f["code"] == "BUF008"]
    assert _summary(findings) == expected
