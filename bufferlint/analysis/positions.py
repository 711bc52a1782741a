"""Positions for a few nodes, without libcst's whole-tree position metadata.

`MetadataWrapper(...).resolve(PositionProvider)` records a range for every node of the module and
costs about as much as parsing the file again. A finding needs the range of its own node only, so
this generates the module's code once (as printing it would) and tracks lines and columns only
inside the subtrees of the wanted nodes; before each of them the line and column are caught up by
counting newlines in the text generated so far. The ranges are exactly PositionProvider's (same
codegen state class, same rules for syntactic positions), which a test checks on real files.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Optional

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider
from libcst.metadata.position_provider import NEWLINE_RE, PositionProvidingCodegenState


class _Recorder:
    """Stands in for the metadata provider: the codegen state writes ranges into `_computed`."""

    def __init__(self) -> None:
        self._computed: dict[cst.CSTNode, CodeRange] = {}


@dataclass(frozen=False)
class _TargetedState(PositionProvidingCodegenState):
    targets: frozenset[int] = frozenset()  # id() of the wanted nodes
    depth: int = 0  # how many wanted nodes enclose the node being generated
    synced: int = 0  # tokens[:synced] are already counted in line/column

    def add_indent_tokens(self) -> None:
        if self.depth:
            super().add_indent_tokens()
        else:
            self.tokens.extend(self.indent_tokens)

    def add_token(self, value: str) -> None:
        if self.depth:
            super().add_token(value)
        else:
            self.tokens.append(value)

    def before_codegen(self, node: cst.CSTNode) -> None:
        if id(node) in self.targets:
            if not self.depth:
                self._catch_up()
            self.depth += 1
        if self.depth:
            super().before_codegen(node)

    def after_codegen(self, node: cst.CSTNode) -> None:
        if self.depth:
            super().after_codegen(node)
        if id(node) in self.targets:
            self.depth -= 1
            if not self.depth:
                self.synced = len(self.tokens)

    @contextmanager
    def record_syntactic_position(
        self, node: cst.CSTNode, *, start_node: Optional[cst.CSTNode] = None, end_node: Optional[cst.CSTNode] = None
    ) -> Iterator[None]:
        if not self.depth:
            yield
            return
        with super().record_syntactic_position(node, start_node=start_node, end_node=end_node):
            yield

    def _catch_up(self) -> None:
        text = "".join(self.tokens[self.synced :])
        self.synced = len(self.tokens)
        segments = NEWLINE_RE.split(text)
        if len(segments) == 1:
            self.column += len(text)
        else:
            self.line += len(segments) - 1
            self.column = len(segments[-1])


@dataclass
class NodePositions:
    """Ranges of the requested nodes of one module (PositionProvider's ranges)."""

    module: cst.Module
    ranges: dict[cst.CSTNode, CodeRange] = field(default_factory=dict)

    def add(self, nodes: Iterable[cst.CSTNode]) -> None:
        missing = [n for n in nodes if n not in self.ranges]
        if missing:
            self.ranges.update(positions_of(self.module, missing))

    def get(self, node: cst.CSTNode) -> Optional[CodeRange]:
        if node not in self.ranges:
            self.add([node])
        return self.ranges.get(node)


def positions_of(module: cst.Module, nodes: Iterable[cst.CSTNode]) -> dict[cst.CSTNode, CodeRange]:
    wanted = list(nodes)
    recorder = _Recorder()
    state = _TargetedState(
        default_indent=module.default_indent,
        default_newline=module.default_newline,
        provider=recorder,  # type: ignore[arg-type]
        targets=frozenset(id(n) for n in wanted),
    )
    try:
        module._codegen(state)
    except Exception:  # a libcst whose codegen internals differ: take the slow, public road
        return dict(MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider))
    return {n: recorder._computed[n] for n in wanted if n in recorder._computed}
