"""Forward under the CUDA device-rule checker on meta (the mode CI exercises: no GPU)."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from bufferlint.verify.check import check_module, choose_target
from bufferlint.verify.errors import UsageError
from verify_support import MODELS, build, line_of


def where(marker: str) -> str:
    return f"fixtures/verify/verify_models.py:{line_of(MODELS, marker)}"


@pytest.fixture(autouse=True)
def no_gpu(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    """Pin the emulated path, so the assertions are the same on a machine with a GPU."""
    monkeypatch.chdir(MODELS.parents[2])  # locations print relative to the cwd
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


def test_plain_attribute_matmul_is_caught_although_plain_meta_accepts_it() -> None:
    module = build("PlainAttr")
    with torch.no_grad():  # the gap the checker closes: cpu @ meta runs silently
        assert module.to("meta")(torch.randn(2, 4, device="meta")).device.type == "meta"
    outcome = check_module(build("PlainAttr"), (torch.randn(2, 4),))
    assert outcome.mode == "meta-emulated"
    assert [s.path for s in outcome.strays] == ["table"]
    assert [(e.op, e.devices) for e in outcome.errors] == [("aten.mm.default", ["cpu", "meta"])]
    assert outcome.errors[0].location == f"fixtures/verify/verify_models.py:{line_of(MODELS, 'only the checker catches')}"
    assert outcome.forward == "ran"


def test_arange_without_device_in_forward() -> None:
    outcome = check_module(build("ArangeInForward"), (torch.randn(2, 4),))
    assert outcome.strays == []
    assert [(e.op, e.devices, e.location) for e in outcome.errors] == [
        ("aten.add.Tensor", ["cpu", "meta"], where("ARANGE-LINE"))
    ]
    assert "torch.arange(x.shape[-1])" in outcome.errors[0].source


def test_nested_mask_reported_once_per_line_across_layers() -> None:
    outcome = check_module(build("TinyGPT"), (torch.randn(2, 5, 8),))
    assert [s.path for s in outcome.strays] == ["blocks.0.attn.mask", "blocks.1.attn.mask"]
    assert [(e.op, e.location) for e in outcome.errors] == [("aten.masked_fill.Scalar", where("MASK-LINE"))]


def test_lists_dicts_and_helpers_fail_in_forward_too() -> None:
    outcome = check_module(build("Containers"), (torch.randn(2, 4),))
    assert [s.path for s in outcome.strays] == ["scales[0]", "scales[1]", "cache['bias']", "helper.table"]
    assert {e.op for e in outcome.errors} == {"aten.mul.Tensor", "aten.add.Tensor"}


def test_zero_dim_cpu_scalars_pass() -> None:
    outcome = check_module(build("ScalarConstants"), (torch.randn(2, 4),))
    assert outcome.errors == [] and outcome.forward == "ran"
    assert [(s.path, s.fatal) for s in outcome.strays] == [("eps", False)]


def test_correct_module_passes() -> None:
    outcome = check_module(build("RMSNorm", d=4), (torch.randn(2, 4),))
    assert (outcome.strays, outcome.errors, outcome.forward) == ([], [], "ran")


def test_item_on_meta_is_inconclusive_never_a_pass() -> None:
    outcome = check_module(build("DataDependent"), (torch.randn(3),))
    assert outcome.forward == "inconclusive"
    assert outcome.messages[0].startswith("inconclusive: forward stopped at aten._local_scalar_dense.default")
    assert where("ITEM-LINE") in outcome.messages[0]


@pytest.mark.parametrize("body", [lambda x: x[x > 0], lambda x: torch.nonzero(x), lambda x: x.cpu() + 1, lambda x: x.numpy()])
def test_other_data_dependent_ops_are_inconclusive(body) -> None:  # type: ignore[no-untyped-def]
    class Dyn(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return body(x)

    assert check_module(Dyn(), (torch.randn(4),)).forward == "inconclusive"


def test_hard_coded_cuda_in_forward_is_emulated_not_failed() -> None:
    outcome = check_module(build("HardcodedCuda"), (torch.randn(2, 4),))
    assert outcome.errors == [] and outcome.forward == "ran"
    assert [s.path for s in outcome.strays] == ["scale"]  # still a straggler .to() leaves behind


def test_cpu_index_tensors_are_allowed_like_on_cuda() -> None:
    class Gather(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(10, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x[torch.tensor([0, 1])] + self.emb.weight[torch.tensor([2, 3])]

    outcome = check_module(Gather(), (torch.randn(3, 4),))
    assert outcome.errors == [] and outcome.forward == "ran"


def test_cpu_table_indexed_by_device_indices_is_caught_like_on_cuda() -> None:
    """CUDA refuses a CPU tensor indexed from the GPU ("indices should be either on cpu or on the
    same device as the indexed tensor"); a real H200 run stopped at this line, so must the emulation."""

    class Lookup(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.table = torch.randn(5, 3)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.table[x.argmax(-1)] + x

    outcome = check_module(Lookup(), (torch.randn(2, 3),))
    assert [(e.op, e.devices) for e in outcome.errors] == [("aten.index.Tensor", ["cpu", "meta"])]
    assert "self.table[x.argmax(-1)]" in outcome.errors[0].source and outcome.forward == "ran"


def test_packed_sequence_lengths_stay_on_the_host_unreported() -> None:
    """`pack_padded_sequence` requires CPU lengths, on CUDA too: moving them would break the call."""

    class Packed(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.rnn = nn.LSTM(3, 3, batch_first=True)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            lengths = torch.full((x.shape[0],), x.shape[1], dtype=torch.long)
            packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
            return self.rnn(packed)[1][0]

    outcome = check_module(Packed(), (torch.randn(2, 5, 3),))
    assert (outcome.errors, outcome.forward) == ([], "ran"), outcome.messages


def test_forward_crash_is_reported_as_crashed() -> None:
    outcome = check_module(build("Buffered"), (torch.randn(2, 5),))  # wrong width
    assert outcome.forward == "crashed"
    assert outcome.messages[0].startswith("forward raised RuntimeError")


def test_without_input_only_the_walk_runs() -> None:
    outcome = check_module(build("PlainAttr"), None)
    assert outcome.forward == "skipped" and [s.path for s in outcome.strays] == ["table"]
    assert outcome.messages == ["forward skipped: no example input (give --input); only the stray-tensor walk ran"]


def test_device_choice() -> None:
    assert choose_target("auto") == (torch.device("meta"), "meta-emulated")
    assert choose_target("meta") == (torch.device("meta"), "meta-emulated")
    with pytest.raises(UsageError, match="torch.cuda.is_available"):
        choose_target("cuda")


class _Autocast(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.autocast(device_type=x.device.type):  # AUTOCAST-LINE
            return self.lin(x)


class _SeededNoise(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        generator = torch.Generator(device=x.device)  # GENERATOR-LINE
        return self.lin(x) + torch.rand(x.shape, generator=generator, device=x.device)


@pytest.mark.parametrize(("module", "cause"), [
    (_Autocast, "unsupported scalarType"), (_SeededNoise, "META device type not an accelerator"),
], ids=["autocast-on-the-input-device", "generator-on-the-input-device"])
def test_what_the_meta_device_cannot_run_is_inconclusive_not_a_failure(module: type, cause: str) -> None:
    """Correct code the emulation cannot run: never `crashed` (a failure of the user's code), and
    the message says that the emulation stopped, where, and what would finish the check."""
    outcome = check_module(module(), (torch.randn(2, 3),))
    assert (outcome.forward, outcome.errors) == ("inconclusive", [])
    message = outcome.messages[0]
    assert cause in message and "the emulation stopped there, not your code" in message and "--device cuda" in message
    marker = "AUTOCAST-LINE" if module is _Autocast else "GENERATOR-LINE"
    assert f"test_verify_device_check.py:{line_of(Path(__file__), marker)}" in message


def test_a_missing_meta_kernel_is_named_as_such_not_as_needing_values() -> None:
    class Compressed(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.ops.aten._cslt_compress(x)

    outcome = check_module(Compressed(), (torch.randn(2, 3),))
    assert outcome.forward == "inconclusive"
    assert "torch has no meta kernel for it" in outcome.messages[0] and "needs tensor values" not in outcome.messages[0]


def test_an_error_that_only_mentions_meta_is_the_users_crash() -> None:
    class Strict(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            raise ValueError("metadata missing for this batch")

    outcome = check_module(Strict(), (torch.randn(2, 3),))
    assert outcome.forward == "crashed" and outcome.messages[0].startswith("forward raised ValueError: metadata missing")


def test_code_behind_is_cuda_is_said_not_to_have_run() -> None:
    class Fused(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if x.is_cuda:  # IS-CUDA-LINE
                return self.lin(x) * 2
            return self.lin(x)

    outcome = check_module(Fused(), (torch.randn(2, 3),))
    line = line_of(Path(__file__), "IS-CUDA-LINE")
    assert outcome.forward == "ran" and outcome.messages == [
        f"note: forward reads .is_cuda (tests/verify/test_verify_device_check.py:{line}), which is False under emulation: "
        "what the code does with CUDA tensors did not run; a GPU checks it"
    ]


class _Anchors(nn.Module):
    """torchvision's anchor generator in our words: a list of tensors forward re-homes every call."""

    def __init__(self, rehome: bool) -> None:
        super().__init__()
        self.rehome = rehome
        self.lin = nn.Linear(4, 4)
        self.cells = [torch.ones(4), torch.zeros(4)]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.rehome:
            self.cells = [c.to(x.device) for c in self.cells]
        return self.lin(x) + self.cells[0]


def test_a_stray_forward_rehomes_is_listed_but_passes() -> None:
    outcome = check_module(_Anchors(rehome=True), (torch.randn(2, 4),))
    assert [(s.path, s.fatal) for s in outcome.strays] == [("cells[0]", False), ("cells[1]", False)]
    assert outcome.strays[0].note.startswith("forward puts it on the module's device on every call")
    assert (outcome.errors, outcome.forward) == ([], "ran")
    left = check_module(_Anchors(rehome=False), (torch.randn(2, 4),))
    assert [(s.path, s.fatal) for s in left.strays] == [("cells[0]", True), ("cells[1]", True)]
    assert [e.op for e in left.errors] == ["aten.add.Tensor"]


class _Spread(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.bias = torch.ones(3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.add(
            self.lin(x),
            self.bias,  # SPREAD-LINE
        )


def test_a_statement_spread_over_lines_is_shown_whole() -> None:
    [error] = check_module(_Spread(), (torch.randn(2, 3),)).errors
    assert error.source == "return torch.add( self.lin(x), self.bias,  # SPREAD-LINE )"
