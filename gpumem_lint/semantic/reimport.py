"""What a child that re-imports the main module (spawn, forkserver) skips of its top-level code.

Besides `if __name__ == "__main__":` (the rules check that guard themselves), the body of an `if`
whose test is falsy in the child whatever the parent saw: a call whose value there is the framework's
default (`knowledge/processes.toml` [reimport_defaults]: a Streamlit widget outside a ScriptRunner,
F44), `current_process().name == "MainProcess"` (the child's name is its own: [reimport_values], F47), a name every binding of which is such a call (`submitted = col1.button("Run")`, `if
submitted:`), `x is not None` for a default of None, and `a and b` with either falsy. A widget is
called on the module (`st.button`) or on a container it made (`st.sidebar`, `col1` of `col1, col2 =
st.columns(2)`, `st.form("f")`); an argument that sets another default (`value=True`) makes its value
unknown.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import cache

import libcst as cst

from gpumem_lint.knowledge import data_text
from gpumem_lint.semantic.imports import ImportTable
from gpumem_lint.semantic.name_values import Binding, Unpacked, value_bindings
from gpumem_lint.semantic.walk import NodeIds

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

_FALSY = frozenset({"False", "None", "''"})
#: Statements whose blocks top-level code runs (an `if` is followed arm by arm; a definition runs nothing).
_COMPOUND = (cst.For, cst.While, cst.With, cst.Try, *((cst.TryStar,) if hasattr(cst, "TryStar") else ()))


@dataclass(frozen=True)
class Widget:
    default: str  # its value in the child, as Python source
    given: str | None  # the keyword of an argument that sets another default
    position: int | None  # and its position


@dataclass(frozen=True)
class ReimportDefaults:
    module: str
    containers: frozenset[str]
    container_attributes: frozenset[str]
    widgets: dict[str, Widget]
    current_process: frozenset[str]  # calls whose `.name` is the child's own in the child (F47)
    main_process_name: str


@cache
def reimport_defaults() -> ReimportDefaults:
    tables = tomllib.loads(data_text("processes.toml"))
    data, values = tables["reimport_defaults"], tables["reimport_values"]
    return ReimportDefaults(
        module=data["module"],
        containers=frozenset(data["containers"]),
        container_attributes=frozenset(data["container_attributes"]),
        widgets={
            name: Widget(spec["default"], spec.get("given"), spec.get("position"))
            for name, spec in data["widgets"].items()
        },
        current_process=frozenset(values["current_process"]),
        main_process_name=values["main_process_name"],
    )


def skipped_on_reimport(module: cst.Module, imports: ImportTable, text: str) -> set[int]:
    """Ids of every node of top-level code (not inside a definition) that a re-importing child does
    not run: the body of an `if` whose test is falsy there."""
    table = reimport_defaults()
    if table.module not in text and "current_process" not in text:
        return set()
    values = _ChildValues(table, imports, module)
    skipped = NodeIds()

    def scan(statements) -> None:
        for statement in statements:
            if isinstance(statement, cst.If):
                branch(statement)
            elif isinstance(statement, _COMPOUND):
                for block in _blocks(statement):
                    scan(_statements(block))

    def branch(node: cst.If) -> None:
        if values.falsy(node.test):
            skipped.walk(node.body)
        else:
            scan(_statements(node.body))
        if isinstance(node.orelse, cst.If):
            branch(node.orelse)
        elif node.orelse is not None:
            scan(_statements(node.orelse.body))

    scan(module.body)
    return skipped.ids


def _blocks(statement: cst.BaseCompoundStatement) -> list[cst.BaseSuite]:
    """The blocks of a `for`, `while`, `with` or `try` (an `if` is followed arm by arm)."""
    blocks = [statement.body]
    orelse = getattr(statement, "orelse", None)
    if orelse is not None:
        blocks.append(orelse.body)
    blocks.extend(handler.body for handler in getattr(statement, "handlers", ()))
    if (final := getattr(statement, "finalbody", None)) is not None:
        blocks.append(final.body)
    return blocks


def _statements(block: cst.BaseSuite):
    return block.body if isinstance(block, cst.IndentedBlock) else ()


class _ChildValues:
    """The values expressions of top-level code take in a re-importing child, where known."""

    def __init__(self, table: ReimportDefaults, imports: ImportTable, module: cst.Module) -> None:
        self.table = table
        self.imports = imports
        self.module = module
        self._bindings: dict[str, list[Binding]] | None = None

    def bindings(self, name: str) -> list[Binding]:
        if self._bindings is None:
            self._bindings = value_bindings(self.module)
        return self._bindings.get(name, [])

    def falsy(self, test: cst.BaseExpression) -> bool:
        if isinstance(test, cst.BooleanOperation):
            if isinstance(test.operator, cst.And):
                return self.falsy(test.left) or self.falsy(test.right)
            return self.falsy(test.left) and self.falsy(test.right)
        if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
            target = test.comparisons[0]
            if isinstance(target.operator, cst.IsNot) and _is_none(target.comparator):
                return self.defaults(test.left) == {"None"}
            if isinstance(target.operator, cst.Equal):
                return self._main_process_name(test.left, target.comparator) or self._main_process_name(
                    target.comparator, test.left
                )
            return False
        found = self.defaults(test)
        return found is not None and found <= _FALSY

    def _main_process_name(self, name: cst.BaseExpression, literal: cst.BaseExpression) -> bool:
        """`mp.current_process().name == "MainProcess"`: the child's name is its own (F47)."""
        return (
            isinstance(literal, cst.SimpleString)
            and literal.evaluated_value == self.table.main_process_name
            and isinstance(name, cst.Attribute)
            and name.attr.value == "name"
            and isinstance(name.value, cst.Call)
            and not name.value.args
            and self.imports.qualify(name.value.func) in self.table.current_process
        )

    def defaults(self, node: cst.BaseExpression, seen: frozenset[str] = frozenset()) -> set[str] | None:
        """The values `node` can have in the child, when each is a widget's default; else None."""
        if isinstance(node, cst.Call):
            default = self._widget_default(node)
            return None if default is None else {default}
        if isinstance(node, cst.Name) and node.value not in seen:
            values = self.bindings(node.value)
            if not values:
                return None
            found: set[str] = set()
            for value in values:
                if not isinstance(value, cst.BaseExpression):
                    return None
                inner = self.defaults(value, seen | {node.value})
                if inner is None:
                    return None
                found |= inner
            return found
        return None

    def _widget_default(self, call: cst.Call) -> str | None:
        func = call.func
        if not isinstance(func, cst.Attribute):
            return None
        widget = self.table.widgets.get(func.attr.value)
        if widget is None or not (self._is_module(func.value) or self.container(func.value)):
            return None
        positional = [arg for arg in call.args if arg.keyword is None]
        if any(arg.star for arg in call.args):
            return None
        if widget.given is not None and (
            any(arg.keyword is not None and arg.keyword.value == widget.given for arg in call.args)
            or (widget.position is not None and len(positional) > widget.position)
        ):
            return None
        return widget.default

    def _is_module(self, node: cst.BaseExpression) -> bool:
        return self.imports.qualify(node) == self.table.module

    def container(self, node: cst.BaseExpression | Unpacked, seen: frozenset[str] = frozenset()) -> bool:
        """`st.sidebar`, `st.columns(2)` (and its elements), `st.form("f")`, or a name bound only to them."""
        if isinstance(node, Unpacked):
            node = node.value
        if isinstance(node, cst.Subscript):
            return self.container(node.value, seen)
        if isinstance(node, cst.Attribute):
            return node.attr.value in self.table.container_attributes and self._is_module(node.value)
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            owner = node.func.value
            return node.func.attr.value in self.table.containers and (
                self._is_module(owner) or self.container(owner, seen)
            )
        if isinstance(node, cst.Name) and node.value not in seen:
            values = self.bindings(node.value)
            return bool(values) and all(v is not None and self.container(v, seen | {node.value}) for v in values)
        return False


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"
