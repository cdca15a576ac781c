"""Grad mode that a file's own packages switch off when they are imported.

Importing `pkg.models.llama` first runs `pkg/__init__.py` and `pkg/models/__init__.py`. An inference
server's package often disables autograd there, for the whole process (`torch.set_grad_enabled(False)`
at the top level of `text_generation_server/models/__init__.py`): no code of its modules records a graph,
so nothing they write in place can break a backward. The check reads each enclosing package's
`__init__.py` with CPython's parser and looks only at its top-level statements (a call under `if`,
in a function or in a `__main__` block may not run).
"""

from __future__ import annotations

import ast
import re
from functools import lru_cache
from pathlib import Path

#: What the linted file would need to turn grad mode back on.
_ENABLES = re.compile(r"enable_grad|set_grad_enabled\s*\(\s*(?!False\b)")


def grad_disabled_by_package(path: Path, text: str, consulted: set[Path]) -> bool:
    """Whether importing the packages that hold this file disables grad for it (unless the file turns it
    back on); `consulted` collects the `__init__.py` files read, which the answer depends on."""
    if _ENABLES.search(text):
        return False
    read, disabled = _packages(path.resolve().parent)
    consulted.update(read)
    return disabled


@lru_cache(maxsize=512)
def _packages(directory: Path) -> tuple[tuple[Path, ...], bool]:
    """The `__init__.py` files from `directory` up to the first that disables grad (or the last
    package), and whether one does: asked once per directory, not once per file."""
    init = directory / "__init__.py"
    if not init.is_file():
        return (), False
    if _disables_grad(init):
        return (init,), True
    above, disabled = _packages(directory.parent) if directory.parent != directory else ((), False)
    return (init, *above), disabled


def _disables_grad(init: Path) -> bool:
    try:
        tree = ast.parse(init.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return False
    torch_names = {"torch"}
    for statement in tree.body:
        if isinstance(statement, ast.Import):
            torch_names |= {alias.asname for alias in statement.names if alias.name == "torch" and alias.asname}
        elif isinstance(statement, ast.ImportFrom) and statement.module == "torch":
            if any(alias.name == "set_grad_enabled" for alias in statement.names):
                torch_names.add("")  # `from torch import set_grad_enabled`
        elif isinstance(statement, ast.Expr) and _turns_grad_off(statement.value, torch_names):
            return True
    return False


def _turns_grad_off(node: ast.expr, torch_names: set[str]) -> bool:
    """`torch.set_grad_enabled(False)` (or `set_grad_enabled(False)` imported from torch)."""
    if not (isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords):
        return False
    argument, func = node.args[0], node.func
    if not (isinstance(argument, ast.Constant) and argument.value is False):
        return False
    if isinstance(func, ast.Attribute) and func.attr == "set_grad_enabled":
        return isinstance(func.value, ast.Name) and func.value.id in torch_names
    return isinstance(func, ast.Name) and func.id == "set_grad_enabled" and "" in torch_names
