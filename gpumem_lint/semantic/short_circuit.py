"""Calls that run only on one side of a short-circuit: `device == "" and not torch.cuda.is_available()`
calls `is_available()` only when `device == ""`, and `a or f()` calls `f` only when `a` is false.

`guards(module)` maps each call (by id) inside the right operand of an `and` / `or` to what must hold for
it to run: (left operand, the value it must have). `contradicts(guard, truthy)` says whether such a guard
cannot hold where the names `truthy` are true (`if device:`): `device == ""`, `device is None`, `not device`
and `device == 0` all need `device` false. Asked by the lock-in rules for the event before a late write:
under `elif device:`, the `is_available()` of `cpu = device == "cpu" or device == "" and not
torch.cuda.is_available()` never ran.
"""

from __future__ import annotations

from collections.abc import Collection

import libcst as cst

from gpumem_lint.semantic.walk import Walker

Guard = tuple[cst.BaseExpression, bool]


def guards(module: cst.Module) -> dict[int, tuple[Guard, ...]]:
    collector = _Guards()
    collector.walk(module)
    return collector.found


def contradicts(guard: Guard, truthy: Collection[str]) -> bool:
    test, holds = guard
    name = _falsy_name(test) if holds else _truthy_name(test)
    return name is not None and name in truthy


def truthy_names(test: cst.BaseExpression) -> frozenset[str]:
    """The names an `if` test being true holds true: `device`, each side of `a and b`."""
    if isinstance(test, cst.Name) and test.value not in ("True", "False", "None"):
        return frozenset({test.value})
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return truthy_names(test.left) | truthy_names(test.right)
    return frozenset()


def _falsy_name(test: cst.BaseExpression) -> str | None:
    """`x` where `test` being true needs `x` false: `not x`, `x == ""`, `x == 0`, `x is None`."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return test.expression.value if isinstance(test.expression, cst.Name) else None
    if not (isinstance(test, cst.Comparison) and isinstance(test.left, cst.Name) and len(test.comparisons) == 1):
        return None
    (comparison,) = test.comparisons
    if isinstance(comparison.operator, (cst.Equal, cst.Is)) and _falsy_literal(comparison.comparator):
        return test.left.value
    return None


def _truthy_name(test: cst.BaseExpression) -> str | None:
    """`x` where `test` being false needs `x` false: `x` itself (`x or f()` calls `f` only when `x` is false)."""
    return test.value if isinstance(test, cst.Name) else None


def _falsy_literal(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.SimpleString):
        return node.evaluated_value in ("", b"")
    if isinstance(node, cst.Integer):
        return node.evaluated_value == 0
    return isinstance(node, cst.Name) and node.value in ("None", "False")


class _Guards(Walker):
    def __init__(self) -> None:
        self.found: dict[int, tuple[Guard, ...]] = {}
        self._around: list[Guard] = []

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> bool:
        self.walk(node.left)
        self._around.append((node.left, isinstance(node.operator, cst.And)))
        self.walk(node.right)
        self._around.pop()
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False  # its calls run when it is called

    def visit_Call(self, node: cst.Call) -> None:
        if self._around:
            self.found[id(node)] = tuple(self._around)
