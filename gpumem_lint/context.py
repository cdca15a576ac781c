"""What a rule sees of one file: the tree, the source, and the shared semantic model."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from gpumem_lint.semantic.model import SemanticModel
from gpumem_lint.semantic.module_graph import ModuleGraph
from gpumem_lint.semantic.program_order import ProgramOrder


@dataclass
class FileContext:
    path: str
    text: str
    module: cst.Module
    #: Other files whose content the findings depend on (first-party modules run at import).
    dependencies: set[Path] = field(default_factory=set)

    @cached_property
    def semantic(self) -> SemanticModel:
        """Built once, on the first rule that asks, and shared by every rule."""
        return SemanticModel.build(self.module)

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
    def positions(self) -> dict[cst.CSTNode, CodeRange]:
        """Resolved only for files with findings: most files have none."""
        return MetadataWrapper(self.module, unsafe_skip_copy=True).resolve(PositionProvider)

    def line(self, node: cst.CSTNode) -> int:
        return self.positions[node].start.line

    def code(self, node: cst.CSTNode) -> str:
        """The source of a node, on one line, for messages."""
        return " ".join(self.module.code_for_node(node).split())
