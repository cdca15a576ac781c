"""What a rule sees of one file: the tree, the source, and the shared semantic model."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import libcst as cst

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
