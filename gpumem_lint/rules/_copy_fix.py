"""The fix of a snapshot that shares the module's tensors: copy them (`copy.deepcopy(model.state_dict())`)."""

from __future__ import annotations

import ast
import warnings

import libcst as cst

from gpumem_lint.context import FileContext
from gpumem_lint.diagnostics import Applicability, Edit, Position
from gpumem_lint.fixes import Fix, insert_after, insert_before, line_starts


def copy_the_tensors(ctx: FileContext, node: cst.CSTNode) -> Fix | None:
    """`m.state_dict()` -> `copy.deepcopy(m.state_dict())` (importing `copy` if needed), `v.detach()` -> `v.detach().clone()`."""
    if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)):
        return None
    method = node.func.attr.value
    if method == "detach":
        return Fix((insert_after(node, ".clone()"),), Applicability.UNSAFE, "Append `.clone()`")
    if method != "state_dict":
        return None
    imports = ctx.semantic.imports
    if imports.qualify(cst.Name("deepcopy")) == "copy.deepcopy":
        deepcopy, import_edit = "deepcopy", None
    elif imports.qualify(cst.Name("copy")) == "copy":
        deepcopy, import_edit = "copy.deepcopy", None
    else:
        deepcopy, import_edit = "copy.deepcopy", _import_copy(ctx.text)
        if import_edit is None:
            return None
    edits = (insert_before(node, f"{deepcopy}("), insert_after(node, ")"))
    title = f"Wrap `{ctx.code(node)}` in `{deepcopy}(...)`"
    return Fix(edits if import_edit is None else (import_edit, *edits), Applicability.UNSAFE, title)


def _import_copy(text: str) -> Edit | None:
    """`import copy` where isort would put it in the first block of top-level imports (or, without
    one, before the first statement after the docstring and `__future__` imports)."""
    try:
        with warnings.catch_warnings():  # CPython's SyntaxWarnings are not ours to print
            warnings.simplefilter("ignore")
            body = ast.parse(text).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    statements = [
        node
        for index, node in enumerate(body)
        if not (index == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))
        and not (isinstance(node, ast.ImportFrom) and node.module == "__future__")
    ]
    if not statements:
        return None
    block = []
    for node in statements[next((i for i, n in enumerate(statements) if _is_import(n)), len(statements)) :]:
        if not _is_import(node):
            break
        block.append(node)
    if not block:
        anchor, line = statements[0], "import copy\n\n"
    else:
        # Plain imports first, alphabetically, then `from` imports, as isort orders a block.
        anchor = next((node for node in block if isinstance(node, ast.ImportFrom) or node.names[0].name > "copy"), None)
        if anchor is None:
            if block[-1].end_lineno >= len(line_starts(text)):
                return None  # the block ends the file: there is no next line to insert at
            at = Position(block[-1].end_lineno + 1, 1)
            return Edit(at, at, "import copy\n")
        line = "import copy\n"
    if anchor.col_offset != 0:
        return None  # `x = 1; import os`: the line may start inside an earlier statement
    at = Position(anchor.lineno, 1)
    return Edit(at, at, line)


def _is_import(node: ast.stmt) -> bool:
    return isinstance(node, (ast.Import, ast.ImportFrom))
