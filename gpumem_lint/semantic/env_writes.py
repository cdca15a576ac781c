"""Writes to the process environment: `os.environ[...] =`, `update`, `setdefault`, `pop`, `del`, `putenv`.

Reading the environment is never a write. A key that is not a literal string (nor a module-level
string constant) is not reported: the analysis cannot say which variable it is.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from gpumem_lint.semantic.imports import ImportTable
from gpumem_lint.semantic.name_values import value_bindings

_ENVIRON = "os.environ"
_KEY_VALUE_METHODS = {"os.environ.setdefault", "os.environ.__setitem__", "os.putenv"}
_KEY_ONLY_METHODS = {"os.environ.pop", "os.environ.__delitem__", "os.unsetenv"}


@dataclass(frozen=True)
class EnvWrite:
    node: cst.CSTNode  # the statement (Assign, AugAssign, Del) or the Call
    name: str
    value: cst.BaseExpression | None  # None for a deletion, or when the value is not one expression


_READS = frozenset({"os.environ.pop", "os.environ.get", "os.getenv"})


def variable_read(node: cst.BaseExpression | None, imports: ImportTable) -> str | None:
    """The variable an expression takes its value from: `os.environ["X"]`, `os.environ.get("X")`,
    `os.environ.pop("X")`, `os.getenv("X")`. A default other than `None` is a value of its own (what
    the variable holds when it is unset), so a read with one is not the variable's value."""
    if isinstance(node, cst.Subscript) and imports.qualify(node.value) == _ENVIRON and len(node.slice) == 1:
        index = node.slice[0].slice
        return string_value(index.value) if isinstance(index, cst.Index) else None
    if isinstance(node, cst.Call) and imports.qualify(node.func) in _READS and node.args:
        default = [arg.value for arg in node.args[1:]]
        if any(not (isinstance(value, cst.Name) and value.value == "None") for value in default):
            return None
        return string_value(node.args[0].value)
    return None


def variables_read(
    node: cst.BaseExpression | None, scope: cst.Module | cst.FunctionDef, imports: ImportTable
) -> frozenset[str] | None:
    """The variables an expression's value is read from: one read (`os.environ.pop("X")`), or a name
    whose every binding in `scope` is such a value, directly or through other names (`val =
    os.environ.pop("X")`, then `mask = val`). None when a value may come from anything else: a
    parameter, a name the scope does not bind, a loop, an unpacking, an augmented assignment, any
    other expression. Flow-insensitive: every binding counts, wherever it is."""
    bindings = None
    found: set[str] = set()
    pending, seen = [node], set()
    while pending:
        value = pending.pop()
        if (variable := variable_read(value, imports)) is not None:
            found.add(variable)
            continue
        if not isinstance(value, cst.Name):
            return None
        if value.value in seen:
            continue
        seen.add(value.value)
        if bindings is None:
            bindings = value_bindings(scope)
        values = bindings.get(value.value)
        if not values or any(not isinstance(v, cst.BaseExpression) for v in values):
            return None  # not bound here (a parameter, a global), or bound by something other than `=`
        pending.extend(values)
    return frozenset(found)


def string_value(node: cst.BaseExpression | None, constants: dict[str, str] | None = None) -> str | None:
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    if isinstance(node, cst.ConcatenatedString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    if isinstance(node, cst.Name) and constants:
        return constants.get(node.value)
    return None


def module_string_constants(module: cst.Module) -> dict[str, str]:
    """`NAME = "literal"` at module level, assigned once: keys such as `ENV = "CUDA_VISIBLE_DEVICES"`."""
    found: dict[str, str | None] = {}
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Assign) and len(small.targets) == 1:
                target = small.targets[0].target
                if isinstance(target, cst.Name):
                    value = string_value(small.value)
                    found[target.value] = value if target.value not in found else None
    return {name: value for name, value in found.items() if value is not None}


def env_writes(node: cst.CSTNode, imports: ImportTable, constants: dict[str, str] | None = None) -> Iterator[EnvWrite]:
    """The environment writes a small statement or a call makes (not those of nested calls)."""
    if isinstance(node, (cst.Assign, cst.AugAssign)):
        targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
        for target in targets:
            name = _environ_key(target, imports, constants)
            if name is not None:
                yield EnvWrite(node, name, node.value)
    elif isinstance(node, cst.Del):
        elements = node.target.elements if isinstance(node.target, cst.Tuple) else [node.target]
        for element in elements:
            target = element.value if isinstance(element, cst.Element) else element
            name = _environ_key(target, imports, constants)
            if name is not None:
                yield EnvWrite(node, name, None)
    elif isinstance(node, cst.Call):
        yield from _call_writes(node, imports, constants)


def _environ_key(target: cst.BaseExpression, imports: ImportTable, constants) -> str | None:
    if not isinstance(target, cst.Subscript) or imports.qualify(target.value) != _ENVIRON:
        return None
    if len(target.slice) != 1 or not isinstance(target.slice[0].slice, cst.Index):
        return None
    return string_value(target.slice[0].slice.value, constants)


def _call_writes(call: cst.Call, imports: ImportTable, constants) -> Iterator[EnvWrite]:
    function = imports.qualify(call.func)
    if function is None:
        return
    positional = [arg.value for arg in call.args if arg.keyword is None and not arg.star]
    if function in _KEY_VALUE_METHODS or function in _KEY_ONLY_METHODS:
        name = string_value(positional[0], constants) if positional else None
        if name is not None:
            value = positional[1] if function in _KEY_VALUE_METHODS and len(positional) > 1 else None
            yield EnvWrite(call, name, value)
    elif function == "os.environ.update":
        for arg in call.args:
            if arg.keyword is not None:
                yield EnvWrite(call, arg.keyword.value, arg.value)
            elif isinstance(arg.value, cst.Dict) and not arg.star:
                for element in arg.value.elements:
                    if isinstance(element, cst.DictElement):
                        name = string_value(element.key, constants)
                        if name is not None:
                            yield EnvWrite(call, name, element.value)
