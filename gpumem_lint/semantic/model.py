"""The semantic model rules query: imports, scopes, and the alias facts of each scope."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from gpumem_lint.semantic.flow import ScopeAnalyzer, ScopeFacts
from gpumem_lint.semantic.imports import ImportTable
from gpumem_lint.semantic.scopes import ScopeCollector


@dataclass
class SemanticModel:
    module: cst.Module
    imports: ImportTable
    facts: list[ScopeFacts]

    @classmethod
    def build(cls, module: cst.Module) -> SemanticModel:
        collector = ScopeCollector(module)
        module.visit(collector)
        scopes = collector.finish()
        facts = [ScopeAnalyzer(scope, collector.imports).run() for scope in scopes]
        return cls(module, collector.imports, facts)

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)
