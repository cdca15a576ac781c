"""Whether every call of a function runs with autograd off, as its callers make it.

`PreActBottleneck.load_from` copies pretrained values into its parameters with `.copy_()` and has no
`no_grad` of its own; the model's `load_from`, in the module that imports it, calls it on each unit
inside `with torch.no_grad():`. Alone the method would raise; as the program runs it, nothing does.

The calls looked at are those of the function's name (`name(...)`, `x.name(...)`) in its own file and
in the first-party modules that import that file directly: objects of a class are made and used where
the class is imported, and a call of the same name further away is taken for another class's method.
Every such call must be inside `with torch.no_grad():` (or `inference_mode()`, `set_grad_enabled(False)`)
or in a function decorated with one, at least one call must be found, and the name must never be used
otherwise (`hook = unit.load_from`: called from anywhere). The files are read whole with CPython's
parser (the linted file's libcst tree may be hollowed by the fast path). Asked only for a finding
about to be reported.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from gpumem_lint.semantic.callers import importers_of, read_text

#: The last part of a context manager's or decorator's name that turns grad off.
_OFF = frozenset({"no_grad", "inference_mode"})


def called_only_without_grad(name: str, text: str, source: Path | None, dependencies: set[Path]) -> bool:
    """`text`: the source of the function's file, `source` its path, whose direct importers are read too
    (recorded in `dependencies`)."""
    found: list[bool] = []
    if not _calls(name, text, found):
        return False
    if source is not None and source.is_file():
        for importer in importers_of(source.resolve(), depth=1):
            dependencies.add(importer.path)
            if not _calls(name, read_text(importer.path) or "", found):
                return False
    return bool(found) and all(found)


def _calls(name: str, text: str, found: list[bool]) -> bool:
    """Adds whether each call of `name` in `text` runs with grad off; False if `name` is also used other
    than by calling it (or in a comment or a string), or the text does not parse."""
    if re.search(rf"\b{re.escape(name)}\b(?!\s*\()", text):
        return False
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    walker = _GradContext(name)
    walker.visit(tree)
    found.extend(walker.calls)
    return True


class _GradContext(ast.NodeVisitor):
    """The calls of one name, each with whether grad is off where it is made."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.off = [False]
        self.calls: list[bool] = []

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        decorators = getattr(node, "decorator_list", [])
        self.off.append(any(_turns_off(decorator) for decorator in decorators))  # a body runs where it is called
        self.generic_visit(node)
        self.off.pop()

    visit_AsyncFunctionDef = visit_Lambda = visit_FunctionDef

    def visit_With(self, node: ast.With | ast.AsyncWith) -> None:
        self.off.append(self.off[-1] or any(_turns_off(item.context_expr) for item in node.items))
        self.generic_visit(node)
        self.off.pop()

    visit_AsyncWith = visit_With

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if called == self.name:
            self.calls.append(self.off[-1])
        self.generic_visit(node)


def _turns_off(node: ast.expr) -> bool:
    """`torch.no_grad()`, `@torch.inference_mode()`, `torch.set_grad_enabled(False)`, `@no_grad`."""
    target = node.func if isinstance(node, ast.Call) else node
    last = target.attr if isinstance(target, ast.Attribute) else target.id if isinstance(target, ast.Name) else None
    if last == "set_grad_enabled":
        return isinstance(node, ast.Call) and bool(node.args) and _is_false(node.args[0])
    return last in _OFF


def _is_false(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is False
