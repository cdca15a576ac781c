"""The fix of a write autograd forbids: run the statement under `with torch.no_grad():`."""

from __future__ import annotations

import ast

import libcst as cst

from gpumem_lint.context import FileContext
from gpumem_lint.diagnostics import Position
from gpumem_lint.fixes import Applicability, Edit, Fix, source_line


def under_no_grad(ctx: FileContext, node: cst.CSTNode) -> Fix | None:
    """Wrap the one-line statement holding `node`; None when the line holds more than that
    statement (`if c: w.add_(1)`, `a; b`) or torch is not imported under a name."""
    torch = ctx.semantic.imports.local_name("torch")
    span = ctx.positions[node]
    if torch is None or span.start.line != span.end.line:
        return None
    row = span.start.line
    line = source_line(ctx.text, row)
    statement = line.strip()
    try:
        parsed = ast.parse(statement).body
    except SyntaxError:
        return None
    if len(parsed) != 1 or not isinstance(parsed[0], (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign)):
        return None
    indent = line[: len(line) - len(line.lstrip())]
    start, end = Position(row, len(indent) + 1), Position(row, len(line.rstrip()) + 1)
    wrapped = f"with {torch}.no_grad():\n{indent}    {statement}"
    return Fix((Edit(start, end, wrapped),), Applicability.UNSAFE, f"Run `{statement}` under `{torch}.no_grad()`")
