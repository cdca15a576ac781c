"""What a name is bound to in its scope: every binding, with its value where it has one.

Flow-insensitive and conservative: a question answered from these holds for every value the name
can take only when every binding is understood. `name = value` gives the value; an unpacking
`a, b = value` gives `Unpacked(value)` (an element of it); every other binding gives None: a
parameter, a loop or `with` target, `+=`, `:=`, an import, a definition, a `global` or `nonlocal`
declaration (which hands the name to other code).
"""

from __future__ import annotations

from typing import NamedTuple

import libcst as cst

from gpumem_lint.semantic.walk import Walker


class Unpacked(NamedTuple):
    """A target of an unpacking (`col1, col2 = st.columns(2)`): one element of `value`."""

    value: cst.BaseExpression


Binding = cst.BaseExpression | Unpacked | None


def value_bindings(scope: cst.Module | cst.FunctionDef) -> dict[str, list[Binding]]:
    """Each name `scope` binds, with each binding's value. For the module, functions and classes are
    read too (a `global` rebinds a module name; any of their names counts, to be safe)."""
    binder = _ValueBinder(isinstance(scope, cst.Module))
    if isinstance(scope, cst.FunctionDef):
        for param in _parameters(scope.params):
            binder.bind(param.name.value, None)
        binder.walk(scope.body)
    else:
        binder.walk(scope)
    return binder.values


def _parameters(params: cst.Parameters) -> list[cst.Param]:
    star = [params.star_arg] if isinstance(params.star_arg, cst.Param) else []
    kwargs = [params.star_kwarg] if params.star_kwarg is not None else []
    return [*params.posonly_params, *params.params, *star, *params.kwonly_params, *kwargs]


class _ValueBinder(Walker):
    def __init__(self, module: bool) -> None:
        self.module = module
        self.values: dict[str, list[Binding]] = {}

    def bind(self, name: str, value: Binding) -> None:
        self.values.setdefault(name, []).append(value)

    def _targets(self, target: cst.BaseExpression, value: Binding) -> None:
        if isinstance(target, cst.Name):
            self.bind(target.value, value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            element_value = Unpacked(value) if isinstance(value, cst.BaseExpression) else None
            if isinstance(value, (cst.Tuple, cst.List)) or any(
                not isinstance(e.value, cst.Name) for e in target.elements
            ):
                element_value = None  # a tuple of values, a starred or nested target: not one element each
            for element in target.elements:
                self._targets(element.value, element_value)
        elif isinstance(target, cst.StarredElement):
            self._targets(target.value, None)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._targets(target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._targets(node.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._targets(node.target, None)

    def visit_For(self, node: cst.For) -> None:
        self._targets(node.target, None)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._targets(node.target, None)

    def visit_AsName(self, node: cst.AsName) -> None:
        self._targets(node.name, None)

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        self.bind((node.evaluated_alias or node.evaluated_name).split(".")[0], None)

    def visit_Global(self, node: cst.Global) -> None:
        for item in node.names:
            self.bind(item.name.value, None)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        for item in node.names:
            self.bind(item.name.value, None)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.bind(node.name.value, None)
        return self.module  # a function may rebind a module's name (`global`); its own names are its own

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self.bind(node.name.value, None)
        return self.module

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False
