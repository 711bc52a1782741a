"""The stray-tensor walk: every tensor .to() leaves behind, named by attribute path."""
from __future__ import annotations

import dataclasses
import functools

import pytest
import torch
from torch import nn

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
