"""What a rule sees of one file: the tree, the source, and the shared semantic model."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

import libcst as cst
from libcst.metadata import CodePosition, CodeRange, MetadataWrapper, PositionProvider

from gpumem_lint.semantic.import_grad import grad_disabled_by_package
from gpumem_lint.semantic.model import SemanticModel
from gpumem_lint.semantic.module_graph import ModuleGraph
from gpumem_lint.semantic.program_order import ProgramOrder
from gpumem_lint.semantic.statement_lines import StatementLines, statement_lines
from gpumem_lint.statement_positions import StatementPositions

T = TypeVar("T")


@dataclass
class FileContext:
    path: str
    text: str
    module: cst.Module
    #: Other files whose content the findings depend on (first-party modules run at import).
    dependencies: set[Path] = field(default_factory=set)
    #: When `module` holds only part of `text`: origin[i] is the file's line of the module's line i + 1.
    origin: list[int] | None = None
    _shared: dict[Callable[[Any], Any], Any] = field(default_factory=dict, repr=False)

    def shared(self, derive: Callable[[FileContext], T]) -> T:
        """What `derive` finds in this file (it must depend on the file alone), derived once for
        every rule that asks: several rules read the same environment writes or Dataset classes."""
        if derive not in self._shared:
            self._shared[derive] = derive(self)
        return self._shared[derive]

    @cached_property
    def semantic(self) -> SemanticModel:
        """Built once, on the first rule that asks, and shared by every rule."""
        source = Path(self.path)
        disabled = source.is_file() and grad_disabled_by_package(source, self.text, self.dependencies)
        return SemanticModel.build(self.module, grad_disabled=disabled)

    @cached_property
    def program_order(self) -> ProgramOrder:
        """What runs before what (see semantic/program_order.py); first-party imports are read when the
        display path names a real file, and recorded in `dependencies`."""
        source = Path(self.path)
        graph = ModuleGraph(source.resolve()) if source.is_file() else None
        if graph is not None:
            graph.dependencies = self.dependencies  # filled as the order is built
        return ProgramOrder(self.module, self.path, self.line, graph, graph.source if graph else None)

    @cached_property
    def positions(self) -> Mapping[cst.CSTNode, CodeRange]:
        """Positions in the file, also when `module` was parsed from a reduction of it (fast_path.py).
        Asked for only in files with findings; most of those need a few, found by rendering only
        the top-level statements that hold them (statement_positions.py)."""
        if self._statement_lines is not None:
            return StatementPositions(self.module, self._statement_lines, lambda: self._all_positions)
        return self._all_positions

    @cached_property
    def _all_positions(self) -> Mapping[cst.CSTNode, CodeRange]:
        resolved = MetadataWrapper(self.module, unsafe_skip_copy=True).resolve(PositionProvider)
        return resolved if self.origin is None else _Relocated(resolved, self.origin)

    def line(self, node: cst.CSTNode) -> int:
        """The node's first line. A statement's (an import program order names, a write) comes from
        CPython's tree while positions are not resolved: most files never need them."""
        if "_all_positions" not in self.__dict__ and isinstance(node, cst.BaseSmallStatement):
            line = self._statement_lines.line(node) if self._statement_lines is not None else None
            if line is not None:
                return line
        return self.positions[node].start.line

    @cached_property
    def _statement_lines(self) -> StatementLines | None:
        return statement_lines(self.module, self.text) if self.origin is None else None

    def code(self, node: cst.CSTNode) -> str:
        """The source of a node, on one line, for messages."""
        return " ".join(self.module.code_for_node(node).split())


class _Relocated(Mapping):
    """Positions in a reduced module, read as positions in the file (columns are unchanged)."""

    def __init__(self, positions: Mapping[cst.CSTNode, CodeRange], origin: list[int]) -> None:
        self._positions = positions
        self._origin = origin

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        span = self._positions[node]
        return CodeRange(self._move(span.start), self._move(span.end))

    def _move(self, position: CodePosition) -> CodePosition:
        origin = self._origin
        # The end of a node that closes the reduced text lies one line past it.
        line = origin[position.line - 1] if position.line <= len(origin) else origin[-1] + position.line - len(origin)
        return CodePosition(line, position.column)

    def __iter__(self):
        return iter(self._positions)

    def __len__(self) -> int:
        return len(self._positions)
