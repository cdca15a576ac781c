"""What a rule sees of one file: the tree, the source, and the shared semantic model."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from gpumem_lint.semantic.model import SemanticModel


@dataclass
class FileContext:
    path: str
    text: str
    module: cst.Module

    @cached_property
    def semantic(self) -> SemanticModel:
        """Built once, on the first rule that asks, and shared by every rule."""
        return SemanticModel.build(self.module)

    @cached_property
    def positions(self) -> dict[cst.CSTNode, CodeRange]:
        """Resolved only for files with findings: most files have none."""
        return MetadataWrapper(self.module, unsafe_skip_copy=True).resolve(PositionProvider)

    def line(self, node: cst.CSTNode) -> int:
        return self.positions[node].start.line

    def code(self, node: cst.CSTNode) -> str:
        """The source of a node, on one line, for messages."""
        return " ".join(self.module.code_for_node(node).split())
