"""The semantic model rules query: imports, scopes, and the alias facts of each scope."""

from __future__ import annotations

from dataclasses import dataclass, replace

import libcst as cst

from gpumem_lint.semantic.call_depth import FOLLOWED_CALLS
from gpumem_lint.semantic.conditions import feasible_pairs, repeated_tests, tests_around
from gpumem_lint.semantic.flow import Mutator, ScopeAnalyzer, ScopeFacts
from gpumem_lint.semantic.imports import ImportTable
from gpumem_lint.semantic.scopes import Scope, ScopeCollector
from gpumem_lint.semantic.summaries import Returns, SummaryKey
from gpumem_lint.semantic.values import Grad, Passed


@dataclass
class SemanticModel:
    module: cst.Module
    imports: ImportTable
    facts: list[ScopeFacts]

    @classmethod
    def build(cls, module: cst.Module, grad_disabled: bool = False) -> SemanticModel:
        """`grad_disabled`: the file's code runs with autograd off (its package's import turns it off)."""
        collector = ScopeCollector(module)
        collector.walk(module)
        scopes = collector.finish()
        if grad_disabled:
            for scope in scopes:
                scope.no_grad = True
        facts = [_analysed(scope, collector.imports) for scope in scopes]
        mutators = _mutators(facts)
        passed = _passed(facts)
        returns = _returns(facts)
        if mutators or passed or returns:
            # Second pass, only where needed: a call to a function that writes its argument is a
            # write at the call site, so the caller's later reads count; a function whose callers
            # pass tensors that require grad starts from what they pass; a call's result is what
            # the function returns.
            facts = [
                _analysed(f.scope, collector.imports, mutators, passed.get(id(f.scope)), returns)
                if f.scope.calls & mutators.keys()
                or f.object_calls & mutators.keys()
                or id(f.scope) in passed
                or _calls_summarised(f.scope, returns)
                or any(tuple(call.split(".", 1)) in returns for call in f.object_calls)
                else f
                for f in facts
            ]
            # Grad reaches further along a chain of calls (`main` -> `show(t)` -> `denormalize(t)`),
            # and through a summarised result (`t = prepare(x)`): a function whose callers now pass
            # more than before starts again from that, a few calls deep at most.
            for _ in range(FOLLOWED_CALLS - 1):
                deeper = _passed(facts)
                changed = {key for key, table in deeper.items() if _same_facts(table) != _same_facts(passed.get(key))}
                if not changed:
                    break
                passed = deeper
                facts = [
                    _analysed(f.scope, collector.imports, mutators, passed[id(f.scope)], returns)
                    if id(f.scope) in changed
                    else f
                    for f in facts
                ]
        return cls(module, collector.imports, facts)

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)


def _analysed(scope: Scope, imports: ImportTable, *context) -> ScopeFacts:
    """The scope's facts, without what no single path reaches (`semantic/conditions.py`): the reads that
    only paths taking opposite arms of one unchanged test reach, and the writes to a saved tensor that
    need the saving from one arm of a test and the alias from the other. The scope is analysed again
    under each value of such a test, only where such a read or write was found."""
    facts = ScopeAnalyzer(scope, imports, *context).run()
    read_tests = repeated_tests(scope.body) if facts.reads or facts.own_reads else []
    saving_tests = tests_around(scope.body, [s.saving.node for s in facts.saved_writes]) if facts.saved_writes else []
    if not (read_tests or saving_tests):
        return facts
    runs = {
        test: [ScopeAnalyzer(scope, imports, *context, assumed={test: value}).run() for value in (True, False)]
        for test in dict.fromkeys(read_tests + saving_tests)
    }
    read = feasible_pairs({test: (_read_pairs(runs[test][0]), _read_pairs(runs[test][1])) for test in read_tests})
    saved = feasible_pairs({test: (_saved_pairs(runs[test][0]), _saved_pairs(runs[test][1])) for test in saving_tests})
    return replace(
        facts,
        reads=[r for r in facts.reads if read((id(r.write.node), id(r.node)))],
        own_reads={write: node for write, node in facts.own_reads.items() if read((id(write.node), id(node)))},
        saved_writes=[s for s in facts.saved_writes if saved((id(s.write.node), id(s.saving.node)))],
    )


def _read_pairs(facts: ScopeFacts) -> set[tuple[int, int]]:
    """Each read of a written value, as the ids of the write's node and the reading node."""
    return {(id(read.write.node), id(read.node)) for read in facts.reads} | {
        (id(write.node), id(node)) for write, node in facts.own_reads.items()
    }


def _saved_pairs(facts: ScopeFacts) -> set[tuple[int, int]]:
    """Each write to a saved tensor, as the ids of the write's node and the saving op's node."""
    return {(id(s.write.node), id(s.saving.node)) for s in facts.saved_writes}


def _passed(facts: list[ScopeFacts]) -> dict[int, dict[str, Passed]]:
    """For each module-level function (by id of its scope), the parameters its callers in this file
    pass a tensor that (may) require grad, joined over the calls; a caller that differentiates the call
    (`loss.backward()`, or `jacobian(f, x)` for `f`) trains it."""
    functions = {key: f.scope for f in facts if (key := called_key(f.scope)) is not None}
    found: dict[int, dict[str, Passed]] = {}
    for caller in facts:
        for name, arguments in caller.outgoing.items():
            callee = functions.get(name)
            if callee is None or callee is caller.scope:
                continue
            for key, value in arguments:
                parameter = (
                    key if isinstance(key, str) else (callee.all_params[key] if key < len(callee.all_params) else None)
                )
                grad = max((h.grad for h in value.handles), default=Grad.UNKNOWN)
                modules = {h.module for h in value.handles}
                module = modules.pop() if len(modules) == 1 else None
                saved = caller.outgoing_saved.get(id(value), frozenset())
                if parameter not in callee.params or (grad < Grad.MAY and module is None and not saved):
                    continue
                leaf = any(h.grad_leaf() is not None for h in value.handles)
                # a caller that a training caller passes tensors trains what it passes them on to
                training = (
                    caller.scope.trains
                    or caller.called_by_training
                    or name in caller.differentiated
                    or _differentiated_forward(caller)
                )
                passed = Passed(grad, leaf, training, module, saved)
                table = found.setdefault(id(callee), {})
                table[parameter] = table[parameter].join(passed) if parameter in table else passed
    return found


def _differentiated_forward(facts: ScopeFacts) -> bool:
    """A module's forward that returns what requires grad: a loss's backward runs through the helpers it
    calls (`self._fc(inputs, state)`), as through its own ops."""
    scope = facts.scope
    return (
        scope.is_forward
        and scope.classes is not None
        and scope.classes.is_module_class(scope.class_name)
        and facts.returns_grad is not Grad.NO
    )


def _same_facts(table: dict[str, Passed] | None) -> dict | None:
    """A table of what callers pass, comparable across analyses: each analysis makes its own `Saving`
    objects, so the ops that kept an argument are compared by where they are and what they kept."""
    if table is None:
        return None
    return {
        name: passed._replace(saved=frozenset((id(s.node), s.item) for s in passed.saved))
        for name, passed in table.items()
    }


def _returns(facts: list[ScopeFacts]) -> dict[SummaryKey, Returns]:
    """What module-level functions and methods return, where every `return` agrees (summaries.py)."""
    found: dict[SummaryKey, Returns] = {}
    for fact in facts:
        scope = fact.scope
        if fact.returns is not None and not scope.enclosing:
            found[scope.class_name, scope.name] = fact.returns
    return found


def _calls_summarised(scope: Scope, returns: dict[SummaryKey, Returns]) -> bool:
    return any(
        (scope.class_name, name[5:]) in returns if name.startswith("self.") else (None, name) in returns
        for name in scope.calls
    )


def called_key(scope: Scope) -> str | None:
    """How calls name a function of this file: `helper` for a module-level function, and
    `Class.method` for a method: the one calling an object runs (`Normalize.__call__`, `Block.forward`),
    or any other, as its class's methods call it (`self.reg(x)`)."""
    if not scope.is_function or scope.enclosing:
        return None
    if not scope.is_method:
        return scope.name
    return f"{scope.class_name}.{scope.name}"


def _mutators(facts: list[ScopeFacts]) -> dict[str, Mutator]:
    """Module-level functions, and the methods that calling an object runs, that write a tensor
    parameter in place."""
    found: dict[str, Mutator] = {}
    for fact in facts:
        scope = fact.scope
        key = called_key(scope)
        if key is None or scope.mentions_inplace:
            continue  # an `inplace` flag makes the mutation the caller's choice
        mutated = fact.mutated_params()
        if_tensor = fact.mutated_params(evidence_needed=False) | fact.written_if_tensor
        if if_tensor:
            found[key] = Mutator(key, tuple(scope.all_params), mutated, if_tensor - mutated)
    return found
