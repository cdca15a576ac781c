"""The names a piece of code binds, and the blocks of statements it holds: what a fix that
moves a statement must not move it across, or take as unchanged."""

from __future__ import annotations

import libcst as cst

from gpumem_lint.semantic.walk import Walker


def bound_names(node: cst.CSTNode) -> set[str]:
    """Every name `node` assigns anywhere inside it: assignment and loop targets, `as` names,
    imports, and the functions and classes it defines."""
    binder = _Binder()
    binder.walk(node)
    return binder.names


class _Binder(Walker):
    def __init__(self) -> None:
        self.names: set[str] = set()

    def _target(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            self.names.add(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._target(element.value)
        elif isinstance(target, cst.StarredElement):
            self._target(target.value)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._target(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._target(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._target(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._target(node.target)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._target(node.target)

    def visit_AsName(self, node: cst.AsName) -> None:
        self._target(node.name)

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        if node.asname is None:
            self.names.add(node.evaluated_name.split(".")[0])

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.names.add(node.name.value)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.names.add(node.name.value)


def statement_blocks(statement: cst.CSTNode):
    """The statement lists directly inside a compound statement (its body, else, handlers, ...)."""
    for child in statement.children:
        if isinstance(child, cst.IndentedBlock):
            yield child.body
        elif not isinstance(child, cst.BaseExpression):
            yield from statement_blocks(child)
