"""The stray-tensor walk: every tensor .to() leaves behind, named by attribute path."""
from __future__ import annotations

import dataclasses
import functools

import pytest
import torch
from torch import nn
from torch.nn.utils import prune

from bufferlint.verify.walk import find_stray_tensors


def strays(module: nn.Module, move_to: str | None = "meta") -> dict[str, object]:
    if move_to:
        module.to(move_to)
    return {s.path: s for s in find_stray_tensors(module)}


class Attn(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.mask = torch.ones(3, 3)
        self.register_buffer("ok", torch.ones(3), persistent=False)


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.Sequential(nn.Linear(3, 3), nn.ModuleDict({"attn": Attn()}))


@dataclasses.dataclass
class Scales:
    lo: torch.Tensor


class Holder:
    def __init__(self) -> None:
        self.table = torch.zeros(2)


class Everything(nn.Module):
    SHARED = torch.ones(2)

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(2, 2)
        self.plain = torch.randn(2, 2)
        self.cache = [torch.ones(1), (torch.zeros(2),)]
        self.named = {"k": torch.ones(2), 3: torch.ones(2)}
        self.cfg = Scales(torch.ones(2))
        self.helper = Holder()
        self.fn = functools.partial(torch.add, other=torch.ones(2))
        self.hidden = [nn.Linear(2, 2)]  # a module in a plain list: not registered
        self.eps = torch.tensor(1e-6)


def test_nested_submodule_path() -> None:
    found = strays(Net())
    assert list(found) == ["blocks.1.attn.mask"]
    assert found["blocks.1.attn.mask"].device == "cpu"
    assert found["blocks.1.attn.mask"].shape == [3, 3]


def test_every_container_and_helper_is_walked() -> None:
    found = strays(Everything())
    assert set(found) == {
        "plain", "cache[0]", "cache[1][0]", "named['k']", "named[3]", "cfg.lo", "helper.table",
        "fn.keywords['other']", "hidden[0].weight", "hidden[0].bias", "eps", "SHARED",
    }
    assert found["SHARED"].note == "class attribute of Everything: shared by all instances"
    assert all(s.device == "cpu" for s in found.values())


def test_zero_dim_tensors_are_listed_but_not_fatal() -> None:
    found = strays(Everything())
    assert found["eps"].fatal is False and found["eps"].shape == []
    assert found["plain"].fatal is True


def test_registered_parameters_and_buffers_are_not_strays() -> None:
    module = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    assert strays(module) == {}


def test_alias_of_a_buffer_is_left_behind_by_the_move() -> None:
    class Aliased(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("table", torch.ones(2), persistent=False)
            self.alias = self.table  # the move replaces the buffer, not the alias

    assert strays(Aliased(), move_to=None) == {}
    assert list(strays(Aliased())) == ["alias"]


def test_class_attribute_shadowed_by_an_instance_attribute_is_not_reported() -> None:
    class Shadow(nn.Module):
        table = torch.ones(2)

        def __init__(self) -> None:
            super().__init__()
            self.table = None  # the instance never sees the class tensor

    assert strays(Shadow()) == {}


@pytest.mark.parametrize("depth", [1, 5])
def test_reference_cycles_terminate(depth: int) -> None:
    module = Net()
    node: dict = {"t": torch.ones(2)}
    for _ in range(depth):
        node = {"next": node}
    node["self"] = module  # cycle back to the root
    module.graph = node
    assert "blocks.1.attn.mask" in strays(module)


def test_strays_deeper_than_any_fixed_bound_are_found() -> None:
    """A diffusion UNet's attention sits deeper than eight levels: the walk has no depth limit."""
    root = inner = nn.Sequential()
    for _ in range(40):
        child = nn.Sequential()
        inner.append(child)
        inner = child
    inner.append(Attn())
    path = ".".join(["0"] * 40) + ".0.mask"
    assert list(strays(root)) == [path]


def test_a_long_chain_of_helpers_is_walked_without_recursion() -> None:
    module = Net()
    node: dict = {"t": torch.ones(2)}
    for _ in range(5000):  # deeper than Python's recursion limit
        node = {"next": node}
    module.graph = node
    found = strays(module)
    assert "blocks.1.attn.mask" in found and any(p.endswith("['t']") for p in found)


def _weight_norm(lin: nn.Linear) -> nn.Module:
    return nn.utils.weight_norm(lin)


def _spectral_norm(lin: nn.Linear) -> nn.Module:
    return nn.utils.spectral_norm(lin)


def _pruned(lin: nn.Linear) -> nn.Module:
    prune.l1_unstructured(lin, "weight", 0.5)
    prune.random_unstructured(lin, "weight", 0.2)  # a PruningContainer of two
    return lin


@pytest.mark.filterwarnings("ignore::FutureWarning")  # weight_norm's deprecation notice
@pytest.mark.parametrize("wrap", [_weight_norm, _spectral_norm, _pruned], ids=["weight_norm", "spectral_norm", "prune"])
def test_weights_torch_recomputes_before_every_forward_are_no_strays(wrap) -> None:  # type: ignore[no-untyped-def]
    """Their hooks keep `weight` as a plain attribute rebuilt from registered tensors on every call;
    after a forward it still sits where the module was, and the next forward rebuilds it."""
    net = nn.Sequential(wrap(nn.Linear(3, 3)))
    net(torch.randn(2, 3))
    assert isinstance(vars(net[0])["weight"], torch.Tensor)
    net.other = torch.ones(2)  # a real stray beside them is still reported
    assert list(strays(net)) == ["other"]


def test_a_tensor_shared_by_several_blocks_lists_every_path() -> None:
    class Block(nn.Module):
        def __init__(self, mask: torch.Tensor) -> None:
            super().__init__()
            self.mask = mask

    class Stack(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            mask = torch.ones(3, 3)
            self.blocks = nn.ModuleList(Block(mask) for _ in range(3))

    [stray] = find_stray_tensors(Stack().to("meta"))
    assert (stray.path, stray.also) == ("blocks.0.mask", ["blocks.1.mask", "blocks.2.mask"])


def test_creation_sites_are_recorded_while_building() -> None:
    from bufferlint.verify.creation import CreationSites

    sites = CreationSites()
    with sites:
        net = Net()
        scratch = torch.zeros(2)  # freed tensors leave no site for what reuses their id
        del scratch
    [stray] = find_stray_tensors(net.to("meta"), sites.site)
    assert stray.path == "blocks.1.attn.mask" and stray.created.endswith(f"test_verify_walk.py:{_line('self.mask = torch.ones(3, 3)')}")
    assert find_stray_tensors(Net().to("meta"), sites.site)[0].created == ""  # built outside the recording


def _line(text: str) -> int:
    from pathlib import Path

    return next(n for n, line in enumerate(Path(__file__).read_text().splitlines(), 1) if text in line)
