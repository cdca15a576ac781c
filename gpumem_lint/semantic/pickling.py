"""Callables that `pickle` cannot send to another process: a lambda (anywhere: pickle looks a
function up by its qualified name, and `<lambda>` names nothing), and a function defined inside
another function (`main.<locals>.init`). Module-level functions, classes and methods of module
classes are sent by reference and survive.

API: `unpicklable(value, scope, module)` says which of the two `value` is, or None: `value` is the
expression passed (`collate_fn=lambda b: b`, `target=init`), `scope` the function the call is
in (a name bound there to a lambda or a nested `def` is local; a name not bound there is looked
up at module level), or None at module level. The answer is an `Unpicklable`: what the value is
and the error pickling it raises (`AttributeError: Can't pickle local object` for a local object,
`PicklingError` for a module-level lambda).
`enclosing_functions(module)` maps each call (by id) to the innermost function around it.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from gpumem_lint.semantic.walk import Walker

_LOCAL = "`AttributeError: Can't pickle local object`"


@dataclass(frozen=True)
class Unpicklable:
    kind: str  # "a lambda", "a function defined inside another function"
    error: str


def unpicklable(
    value: cst.BaseExpression | None, scope: cst.FunctionDef | None, module: cst.Module
) -> Unpicklable | None:
    if isinstance(value, cst.Lambda):
        return Unpicklable("a lambda", _LOCAL if scope is not None else "`PicklingError`")
    if not isinstance(value, cst.Name):
        return None
    if scope is not None:
        local = _LocalBindings(value.value)
        local.walk(scope.body)
        if local.bound:
            return Unpicklable(local.kind, _LOCAL) if local.kind is not None else None
    module_level = _LocalBindings(value.value)
    for statement in module.body:
        if isinstance(statement, cst.SimpleStatementLine):
            module_level.walk(statement)
    return Unpicklable("a lambda", "`PicklingError`") if module_level.kind == "a lambda" else None


def enclosing_functions(module: cst.Module) -> dict[int, cst.FunctionDef]:
    collector = _Enclosing()
    collector.walk(module)
    return collector.found


class _LocalBindings(Walker):
    """What `name` is bound to in a function body: `name = lambda ...` or `def name(...)` (the last wins)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.kind: str | None = None
        self.bound = False  # whether the scope binds the name at all

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        if node.name.value == self.name:
            self.kind, self.bound = "a function defined inside another function", True
        return False  # its own locals are not this scope's

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Assign(self, node: cst.Assign) -> None:
        if any(isinstance(t.target, cst.Name) and t.target.value == self.name for t in node.targets):
            self.kind, self.bound = ("a lambda" if isinstance(node.value, cst.Lambda) else None), True


class _Enclosing(Walker):
    def __init__(self) -> None:
        self.stack: list[cst.FunctionDef] = []
        self.found: dict[int, cst.FunctionDef] = {}

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.stack.append(node)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.stack.pop()

    def visit_Call(self, node: cst.Call) -> None:
        if self.stack:
            self.found[id(node)] = self.stack[-1]
