"""The semantic model rules query: imports, scopes, and the alias facts of each scope."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from gpumem_lint.semantic.flow import Mutator, ScopeAnalyzer, ScopeFacts
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
        collector.walk(module)
        scopes = collector.finish()
        facts = [ScopeAnalyzer(scope, collector.imports).run() for scope in scopes]
        mutators = _mutators(facts)
        if mutators:
            # Second pass, only where needed: a call to a function that writes its
            # argument is a write at the call site, so the caller's later reads count.
            facts = [
                ScopeAnalyzer(f.scope, collector.imports, mutators).run() if f.scope.calls & mutators.keys() else f
                for f in facts
            ]
        return cls(module, collector.imports, facts)

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)


def _mutators(facts: list[ScopeFacts]) -> dict[str, Mutator]:
    """Module-level functions that write a tensor parameter in place."""
    found: dict[str, Mutator] = {}
    for fact in facts:
        scope = fact.scope
        if not scope.is_function or scope.is_method or scope.enclosing or scope.mentions_inplace:
            continue  # an `inplace` flag makes the mutation the caller's choice
        mutated, if_tensor = fact.mutated_params(), fact.mutated_params(evidence_needed=False)
        if if_tensor:
            found[scope.name] = Mutator(scope.name, tuple(scope.all_params), mutated, if_tensor - mutated)
    return found
