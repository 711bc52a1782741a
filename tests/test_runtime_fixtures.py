"""Torch-backed checks of fixed fixtures: same state_dict keys, same CPU outputs, buffers that follow
the module, and nothing left behind after `.to("meta")` once every finding is fixed."""

from __future__ import annotations

import ast
import contextlib
import re
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch

from bufferlint.lint import check_bytes
from tests.module_loading import load_module
from tests.fixture_cases import Case, Runtime, all_cases

CASES = [(c, r, unsafe) for c in all_cases() for r in c.runtimes() if not r.kind for unsafe in (False, True)]
META_CASES = [(c, r, unsafe) for c in all_cases() for r in c.runtimes() if r.kind == "meta" for unsafe in (False, True)]
CAST_CASES = [(c, r) for c in all_cases() for r in c.runtimes() if r.kind == "cast"]


HAS_GPU = torch.cuda.is_available()  # read before any test hides it


@pytest.fixture(autouse=True)
def same_on_every_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fixtures pick devices when imported (`"cuda" if torch.cuda.is_available() else "cpu"`), and
    these checks compare CPU outputs: on a GPU machine such a module would be built half on CUDA."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


def _load(path: Path) -> ModuleType:
    return load_module(path, prefix="bufferlint_fixture")


def _build(module: ModuleType, runtime: Runtime) -> Any:
    torch.manual_seed(0)
    return eval(runtime.build, {"torch": torch, **vars(module)})


def _inputs(module: ModuleType, runtime: Runtime) -> tuple[Any, ...]:
    torch.manual_seed(1)
    value = eval(runtime.input, {"torch": torch, **vars(module)})
    return value if isinstance(value, tuple) else (value,)


def _plain_tensors(root: Any) -> dict[str, Any]:
    """Tensors held in a module tree's `__dict__` outside `_parameters` and `_buffers`."""
    found = {}
    for prefix, sub in root.named_modules():
        for key, value in vars(sub).items():
            if isinstance(value, torch.Tensor) and not isinstance(value, torch.nn.Parameter):
                found[f"{prefix}.{key}".lstrip(".")] = value
    return found


def _assert_same_output(old: Any, new: Any) -> None:
    if isinstance(old, torch.Tensor):
        assert torch.equal(old, new), "outputs differ after the fix"
    elif isinstance(old, (tuple, list)):
        assert len(old) == len(new)
        for a, b in zip(old, new):
            _assert_same_output(a, b)
    else:
        assert old == new


@pytest.mark.parametrize(
    "case,runtime,unsafe", CASES, ids=[f"{c.id}-{r.build}-{'unsafe' if u else 'safe'}" for c, r, u in CASES]
)
def test_fixed_module_behaves_the_same(case: Case, runtime: Runtime, unsafe: bool, tmp_path: Path) -> None:
    fixed_text = case.expected_fixed(unsafe)
    if fixed_text is None:
        fixed_text = case.source
    fixed_path = tmp_path / case.path.name
    fixed_path.write_bytes(fixed_text)
    old_module, new_module = _load(case.path), _load(fixed_path)
    old, new = _build(old_module, runtime), _build(new_module, runtime)

    assert list(old.state_dict()) == list(new.state_dict()), "state_dict keys changed"
    new.load_state_dict(old.state_dict(), strict=True)
    with torch.no_grad():
        _assert_same_output(old(*_inputs(old_module, runtime)), new(*_inputs(new_module, runtime)))

    new_buffers = {name for name, _ in new.named_buffers()}
    old_buffers = {name for name, _ in old.named_buffers()}
    persistent_new = set(new.state_dict())
    old_parameters = {name for name, _ in old.named_parameters()}  # BUF008: a parameter keeps its key as a buffer
    for name in new_buffers - old_buffers - old_parameters:
        assert name not in persistent_new, f"new buffer {name} must be non-persistent"

    settings = replace(case.settings(unsafe), ignore_noqa=True)  # suppressed findings still stay behind
    remaining = check_bytes(fixed_text, case.path.name, settings).findings
    if not remaining:
        # Every attribute a finding named is now a buffer that follows the module; attributes the
        # analysis keeps quiet on purpose (caches, per-call state...) may stay plain.
        flagged = _flagged_attributes(check_bytes(case.source, case.path.name, settings).findings)
        moved = new.to("meta")
        left = {k: v.device for k, v in _plain_tensors(moved).items() if v.device.type != "meta" and k.rpartition(".")[2] in flagged}
        assert left == {}, f"tensors left behind after .to('meta'): {left}"
        for name in _plain_tensors(old):
            if name.rpartition(".")[2] in flagged:
                assert name in new_buffers, f"{name} did not become a buffer"


_NAMED = re.compile(r"^(?:Tensor attribute `(\w+)`|`\w+\.(\w+)` is moved)")


def _flagged_attributes(findings: list[Any]) -> set[str]:
    """The attributes BUF001 and BUF002 findings name."""
    names = set()
    for finding in findings:
        match = _NAMED.match(finding.message)
        if finding.code in ("BUF001", "BUF002") and match:
            names.add(match.group(1) or match.group(2))
    return names


def _fixed_path(case: Case, unsafe: bool, tmp_path: Path) -> Path:
    fixed_text = case.expected_fixed(unsafe)
    fixed_path = tmp_path / case.path.name
    fixed_path.write_bytes(case.source if fixed_text is None else fixed_text)
    return fixed_path


def _device_errors(module: ModuleType, runtime: Runtime) -> list[str]:
    from bufferlint.verify.check import check_module

    outcome = check_module(_build(module, runtime), _inputs(module, runtime), device="meta")
    assert outcome.forward == "ran", outcome.messages
    return [f"{e.op} {e.devices} at {e.location}" for e in outcome.errors]


@pytest.mark.parametrize(
    "case,runtime,unsafe", META_CASES, ids=[f"{c.id}-{r.build}-{'unsafe' if u else 'safe'}" for c, r, u in META_CASES]
)
def test_fix_mixes_no_devices_the_original_kept_apart(case: Case, runtime: Runtime, unsafe: bool, tmp_path: Path) -> None:
    """On the meta device under CUDA's rules: where the original's forward mixes no devices (its
    per-call moves heal what `.to()` left behind), the fixed module's must not either: a dropped
    move that was needed shows up here."""
    old_module, new_module = _load(case.path), _load(_fixed_path(case, unsafe, tmp_path))
    before = _device_errors(old_module, runtime)
    after = _device_errors(new_module, runtime)
    if not before:
        assert after == [], f"the fix makes forward mix devices: {after}"
    assert len(after) <= len(before)


@pytest.mark.parametrize("case,runtime", CAST_CASES, ids=[f"{c.id}-{r.build}" for c, r in CAST_CASES])
def test_safe_fix_casts_nothing_the_original_kept(case: Case, runtime: Runtime, tmp_path: Path) -> None:
    """Cast with `.to(torch.bfloat16)`, the safe-fixed module computes what the original does: a
    table the code keeps in its own dtype (complex, pinned, bucket boundaries) was not registered."""
    old_module, new_module = _load(case.path), _load(_fixed_path(case, False, tmp_path))
    old, new = _build(old_module, runtime).to(torch.bfloat16), _build(new_module, runtime).to(torch.bfloat16)
    inputs = tuple(x.to(torch.bfloat16) if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in _inputs(old_module, runtime))
    with torch.no_grad():
        _assert_same_output(old(*inputs), new(*inputs))


def test_buf007_findings_are_the_buffers_that_require_grad() -> None:
    """fixtures/buf007/no_grad_cache.py: BUF007 reports exactly the buffers that require grad once
    registered (grad mode decides for values computed from a parameter, not for the rest)."""
    case = next(c for c in all_cases() if c.id == "buf007/no_grad_cache")
    findings = check_bytes(case.source, str(case.path), case.settings()).findings
    reported = {re.search(r"Buffer `(\w+)`", f.message).group(1) for f in findings}  # type: ignore[union-attr]
    module = load_module(case.path).OffsetAttention(2, torch.tensor([0, 3, 1]))
    module.eval()
    module.refresh()
    requiring = {name for name, buffer in module.named_buffers() if buffer.requires_grad}
    assert reported == requiring == {"raw", "fresh", "outside"}


def test_buf008_reports_the_frozen_parameters_that_can_be_buffers() -> None:
    """fixtures/buf008/device_anchor.py: BUF008 reports a frozen parameter exactly when the class
    still works with it as a buffer; a parameter that is only there so that next(self.parameters())
    finds the device is not reported (as a buffer, that lookup raises StopIteration), nor an empty
    one nothing reads."""
    case = next(c for c in all_cases() if c.id == "buf008/device_anchor")
    findings = check_bytes(case.source, str(case.path), case.settings()).findings
    reported = _attributes_named(findings)
    module = load_module(case.path)
    inputs = {
        "ImageFeeder": ([torch.zeros(2)],), "Centered": (torch.randn(2, 3),), "Padded": (torch.randn(2, 3),),
        "DtypeProbe": (torch.randn(2, 3),),
    }
    still_working = set()
    for name, args in inputs.items():
        built = getattr(module, name)()
        frozen = [n for n, p in built.named_parameters() if not p.requires_grad]
        for attr in frozen:
            built.register_buffer(attr, built._parameters.pop(attr).detach())
        try:
            built(*args)
        except StopIteration:
            continue
        still_working.update(frozen)
    assert reported == still_working == {"center", "spare", "dummy"}  # not Sketch's empty, unread `_dummy`


def _attributes_named(findings: list[Any]) -> set[str]:
    """The attribute each finding's message names first (`Tensor attribute `table` is ...`)."""
    return {re.search(r"`(\w+)`", f.message).group(1) for f in findings}  # type: ignore[union-attr]


def _reporting_classes(case: Case, findings: list[Any]) -> set[str]:
    """The names of the fixture's top-level classes that hold a finding."""
    classes = [n for n in ast.parse(case.source).body if isinstance(n, ast.ClassDef)]
    return {next(c.name for c in classes if c.lineno <= f.location.row <= (c.end_lineno or c.lineno)) for f in findings}


def test_attributes_no_construction_gives_are_none_in_every_instance() -> None:
    """fixtures/trust/never_given.py: the blocks reported are exactly those whose `mask` holds a
    tensor in some instance the file builds; in the others it is None in every instance."""
    case = next(c for c in all_cases() if c.id == "trust/never_given")
    findings = check_bytes(case.source, str(case.path), case.settings()).findings
    reported = _reporting_classes(case, findings)
    module = load_module(case.path)
    holding = set()
    for tower in (module.VisionTower(), module.TextTower()):
        for block in tower.modules():
            if isinstance(getattr(block, "mask", None), torch.Tensor):
                holding.add(type(block).__name__)
    assert sorted(f.code for f in findings) == ["BUF001", "BUF002"]
    assert reported == holding == {"CausalBlock"}


def test_tensors_a_holder_moves_along_are_not_reported() -> None:
    """fixtures/trust/held_moves.py: the head strides reported are exactly those that stay behind
    when the detector holding the head is moved (one detector's `_apply` moves its head's strides
    along, the other's only the grid)."""
    case = next(c for c in all_cases() if c.id == "trust/held_moves")
    findings = check_bytes(case.source, str(case.path), case.settings()).findings
    reported = _reporting_classes(case, findings)
    module = load_module(case.path)
    left_behind = set()
    for detector in (module.Detector(), module.GridDetector()):
        detector.to("meta")
        if any(t.device.type != "meta" for t in (getattr(detector.head, n, None) for n in ("stride", "anchor_stride")) if t is not None):
            left_behind.add(type(detector.head).__name__)
    assert [f.code for f in findings] == ["BUF001"]
    assert reported == left_behind == {"GridHead"}


def test_tables_built_under_a_device_context_are_not_reported() -> None:
    """fixtures/trust/device_context.py: built the way the file's own callers build them (the
    decoder's caches under `with torch.device(...)`, the encoder's table without), the tables
    that stay off the device once the models move there are exactly those reported."""
    case = next(c for c in all_cases() if c.id == "trust/device_context")
    findings = check_bytes(case.source, str(case.path), case.settings()).findings
    reported = _attributes_named(findings)
    module = load_module(case.path)
    decoder, encoder = module.Decoder(), module.Encoder()
    with torch.device("meta"):
        decoder.setup_caches()
    encoder.build_tables()
    left = set()
    for model in (decoder.to("meta"), encoder.to("meta")):
        left |= {name for name, value in vars(model).items() if isinstance(value, torch.Tensor) and value.device.type != "meta"}
    assert [f.code for f in findings] == ["BUF001"]
    assert reported == left == {"table"}


def test_pins_moved_to_a_device_local_run_where_the_predictions_live(tmp_path: Path) -> None:
    """fixtures/buf004/device_local.py: the original cannot build its placeholder losses without a
    GPU; the unsafe fix builds them on the device the forward read off its predictions."""
    case = next(c for c in all_cases() if c.id == "buf004/device_local")
    outputs = {"logits": torch.randn(2, 3)}
    targets = [{"labels": torch.tensor([1])}, {"labels": torch.tensor([], dtype=torch.long)}]
    fixed = _load(_fixed_path(case, True, tmp_path)).SetLoss()
    losses = fixed(outputs, targets)
    assert {k: v.device.type for k, v in losses.items()} == {"ce": "cpu", "empty": "cpu", "count": "cpu"}
    if HAS_GPU:  # the original pins its placeholders to the GPU, away from the CPU predictions
        original = _load(case.path).SetLoss()(outputs, targets)
        assert {k: v.device.type for k, v in original.items()} == {"ce": "cpu", "empty": "cuda", "count": "cuda"}
    else:
        with pytest.raises((AssertionError, RuntimeError)):
            _load(case.path).SetLoss()(outputs, targets)


def test_the_fix_refused_for_a_subclass_list_would_raise(tmp_path: Path) -> None:
    """fixtures/trust/subclass_values.py: the registration BUF001 declines for `Table.scale` makes
    `ListTable()` raise TypeError, while the one it offers for `Encoding.pe` leaves every
    subclass constructible (the runtime cases above compare their outputs)."""
    case = next(c for c in all_cases() if c.id == "trust/subclass_values")
    text = case.source.decode().replace(
        "self.scale = torch.ones(n)", 'self.register_buffer("scale", torch.ones(n), persistent=False)'
    )
    forced = tmp_path / "forced.py"
    forced.write_text(text)
    module = _load(forced)
    module.Table(4)
    with pytest.raises(TypeError, match="as buffer 'scale'"):
        module.ListTable(4)
    fixed = _load(_fixed_path(case, False, tmp_path))
    assert [type(fixed.__dict__[n](8)).__name__ for n in ("Encoding", "RelativeEncoding", "LearnedEncoding")] == [
        "Encoding", "RelativeEncoding", "LearnedEncoding"
    ]


def test_the_fix_refused_under_a_float32_holder_would_round(tmp_path: Path) -> None:
    """fixtures/trust/kept_float_by_holder.py: PairEncoder.half() puts its RadialBasis back in
    float32. The plain centres stay exact through it; registered as a buffer (the fix BUF001
    declines) they come back rounded to float16, and the distances expanded on them move."""
    case = next(c for c in all_cases() if c.id == "trust/kept_float_by_holder")
    forced = tmp_path / "forced.py"
    forced.write_text(case.source.decode().replace(
        "self.centres = torch.linspace(0.0, stop, k) / 3.0",
        'self.register_buffer("centres", torch.linspace(0.0, stop, k) / 3.0, persistent=False)',
    ))
    original, registered = (_load(path).PairEncoder().half() for path in (case.path, forced))
    assert original.basis.centres.dtype == registered.basis.centres.dtype == torch.float32
    exact = torch.linspace(0.0, 5.0, 16) / 3.0
    assert torch.equal(original.basis.centres, exact)
    assert torch.equal(registered.basis.centres, exact.half().float())
    assert not torch.equal(registered.basis.centres, exact)


def test_per_call_histogram_as_a_buffer_would_mix_devices(tmp_path: Path) -> None:
    """fixtures/trust/filled_per_call.py: BalancedLoss rebuilds its counts on the host every call.
    Kept plain, its running counts stay beside them wherever the loss is moved; registered (the
    fix a false alarm would offer) they follow `.to()` and the running average mixes devices."""
    from bufferlint.verify.device_check import DataDependentOp, DeviceCheckMode

    case = next(c for c in all_cases() if c.id == "trust/filled_per_call")
    forced = tmp_path / "forced.py"
    forced.write_text(case.source.decode().replace(
        "self.last_counts = None", 'self.register_buffer("last_counts", None, persistent=False)'
    ))
    errors = {}
    for name, path in (("plain", case.path), ("buffer", forced)):
        torch.manual_seed(0)
        loss, pred, target = _load(path).BalancedLoss(4), torch.rand(6, 2), torch.rand(6, 2)
        loss(pred, target)
        loss.to("meta")
        checker = DeviceCheckMode(torch.device("meta"))
        with torch.no_grad(), checker, contextlib.suppress(DataDependentOp):  # meta counts have no values to copy back
            loss(pred, target)
        errors[name] = [(e.op, e.source.strip()) for e in checker.errors]
    assert errors["plain"] == []
    assert errors["buffer"][0] == ("aten.add.Tensor", "counts = self.momentum * self.last_counts + (1 - self.momentum) * counts")


def test_arguments_given_as_parameters_are_not_reported() -> None:
    """fixtures/trust/given_parameters.py: the stored arguments reported are exactly those that are
    plain tensors in the instances the file builds (a Parameter handed in is registered)."""
    case = next(c for c in all_cases() if c.id == "trust/given_parameters")
    findings = check_bytes(case.source, str(case.path), case.settings()).findings
    reported = _attributes_named(findings)
    module = load_module(case.path)
    plain = set()
    for backbone in (module.Backbone(), module.TokenBackbone()):
        plain |= {name.rpartition(".")[2] for name in _plain_tensors(backbone)}
    assert reported == plain == {"table"}


def test_the_unsafe_fix_of_a_threshold_table_moves_values_across_an_edge(tmp_path: Path) -> None:
    """fixtures/trust/thresholds.py: why the fix is only unsafe. Under `.half()` the registered
    edges are rounded (0.1 -> 0.0999755859375), so a gradient norm just above an edge falls in
    another bin than in the original, whose plain table stays float32."""
    case = next(c for c in all_cases() if c.id == "trust/thresholds")
    old = _load(case.path).BinnedLoss().half()
    new = _load(_fixed_path(case, True, tmp_path)).BinnedLoss().half()
    assert old.edges.dtype == torch.float32 and new.edges.dtype == torch.float16
    g = torch.tensor([0.09997558], dtype=torch.float16)  # at the fp16 rounding of 0.1
    assert bool((g >= old.edges[1:2]).item()) is False  # compared in float32
    assert bool((g >= new.edges[1:2]).item()) is True


def test_parameters_handed_down_through_blocks_are_not_reported() -> None:
    """fixtures/trust/given_parameters_through.py: the stored arguments BUF001 reports are exactly
    the plain tensors of the built models; the table handed down as a Parameter is registered in
    every layer that stores it."""
    case = next(c for c in all_cases() if c.id == "trust/given_parameters_through")
    findings = [f for f in check_bytes(case.source, str(case.path), case.settings()).findings if f.code == "BUF001"]
    reported = _attributes_named(findings)
    module = load_module(case.path)
    encoder, plain_encoder = module.Encoder(), module.PlainEncoder()
    plain = {name.rpartition(".")[2] for model in (encoder, plain_encoder) for name in _plain_tensors(model)}
    assert "layers.0.attention.positional_encoding" in dict(encoder.named_parameters(remove_duplicate=False))
    assert reported == plain == {"table"}


def test_matrix_a_helper_meets_only_on_the_host_stays_plain() -> None:
    """fixtures/trust/host_rebuilt_argument.py: the helper rebuilds the point on the host, so the
    matrix it is handed must stay there. The original works after the module moves (the meta
    device standing in for CUDA); with the matrix as a buffer, the same call mixes devices."""
    case = next(c for c in all_cases() if c.id == "trust/host_rebuilt_argument")
    findings = check_bytes(case.source, str(case.path), case.settings()).findings
    assert _attributes_named(findings) == {"basis"}
    module = load_module(case.path)
    point = torch.tensor([1.0, 2.0, 3.0])
    assert torch.equal(module.CameraRig(3).to("meta").world_to_local(point), torch.tensor([-1.0, 2.0, 3.0]))
    as_buffer = module.CameraRig(3)
    as_buffer.register_buffer("to_world", vars(as_buffer).pop("to_world"), persistent=False)
    with pytest.raises(RuntimeError, match="device"):
        as_buffer.to("meta").world_to_local(point)


def test_a_kernel_with_a_spelled_dtype_runs_cast_only_as_a_buffer(tmp_path: Path) -> None:
    """fixtures/buf001/kernel_dtype.py: cast to bfloat16, the original Fourier front end fails
    (its float32 kernels meet a bfloat16 input in `F.conv1d`) and the safe-fixed one runs; the
    front end that casts its input to float32 first runs as it is, and is left unfixed."""
    case = next(c for c in all_cases() if c.id == "buf001/kernel_dtype")
    old, new = _load(case.path), _load(_fixed_path(case, False, tmp_path))
    signal = torch.randn(2, 1, 64, dtype=torch.bfloat16)
    with pytest.raises(RuntimeError):
        old.FourierFrames(16).to(torch.bfloat16)(signal)
    assert new.FourierFrames(16).to(torch.bfloat16)(signal).dtype == torch.bfloat16
    assert old.FloatFrames(16).to(torch.bfloat16)(signal).dtype == torch.bfloat16
    assert (case.path.with_suffix(".fixed.py").read_text().count("register_buffer")) == 2


def test_the_remedy_a_frozen_layer_weight_names_keeps_keys_and_output() -> None:
    """fixtures/buf008/layer_weight.py: the remedy BUF008 names for a frozen table put into a held
    layer (`del self.emb.weight`, then `self.emb.register_buffer("weight", ...)`) keeps the
    `state_dict()` key and the output, and takes the constant out of parameters()."""
    case = next(c for c in all_cases() if c.id == "buf008/layer_weight")
    findings = check_bytes(case.source, str(case.path), case.settings()).findings
    assert [(f.code, f.location.row) for f in findings] == [("BUF008", 24)]
    module = load_module(case.path)
    original, remedied = module.CalendarEmbedding(24, 8), module.CalendarEmbedding(24, 8)
    table = remedied.emb.weight.detach()
    del remedied.emb.weight
    remedied.emb.register_buffer("weight", table)
    hours = torch.randint(0, 24, (2, 5))
    assert list(remedied.state_dict()) == list(original.state_dict())
    remedied.load_state_dict(original.state_dict(), strict=True)
    assert torch.equal(remedied(hours), original(hours))
    assert list(original.parameters()) and not list(remedied.parameters())


def test_the_remedy_a_frozen_own_layer_weight_names_keeps_keys_and_output() -> None:
    """fixtures/buf008/own_layer_weight.py: the remedy BUF008 names for the frozen table a conv
    subclass puts into its own weight and bias (`del self.weight`, then
    `self.register_buffer("weight", ...)`) keeps the `state_dict()` keys, loads an old checkpoint
    strictly, gives the same output, follows `.to(torch.float64)`, and leaves parameters() empty."""
    case = next(c for c in all_cases() if c.id == "buf008/own_layer_weight")
    findings = check_bytes(case.source, str(case.path), case.settings()).findings
    assert [(f.code, f.location.row) for f in findings] == [("BUF008", 19), ("BUF008", 20), ("BUF008", 28), ("BUF008", 29)]
    module = load_module(case.path)
    original = module.ColourShift(255.0, (0.45, 0.44, 0.40), (0.5, 1.0, 2.0))
    remedied = module.ColourShift(255.0, (0.45, 0.44, 0.40), (0.5, 1.0, 2.0))
    for name in ("weight", "bias"):
        table = getattr(remedied, name).detach()
        delattr(remedied, name)
        remedied.register_buffer(name, table)
    image = torch.rand(2, 3, 8, 8)
    assert list(remedied.state_dict()) == list(original.state_dict())
    remedied.load_state_dict(original.state_dict(), strict=True)
    assert torch.equal(remedied(image), original(image))
    assert remedied.to(torch.float64)(image.double()).dtype == torch.float64
    assert list(original.parameters()) and not list(remedied.parameters())
