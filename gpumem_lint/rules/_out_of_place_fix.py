"""The fix of a write other tensors depend on: compute a new tensor instead (`x += y` -> `x = x + y`)."""

from __future__ import annotations

import libcst as cst

from gpumem_lint.context import FileContext
from gpumem_lint.fixes import Applicability, Fix, replace, source_line


def out_of_place(ctx: FileContext, node: cst.CSTNode) -> Fix | None:
    """`x += y` -> `x = x + y`, `x.mul_(y)` (a statement) -> `x = x.mul(y)`, for a plain name `x`."""
    if isinstance(node, cst.AugAssign) and isinstance(node.target, cst.Name):
        operator = ctx.code(node.operator).strip().removesuffix("=")
        target = node.target.value
        code = f"{target} = {target} {operator} {ctx.code(node.value)}"
    elif (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and isinstance(node.func.value, cst.Name)
        and node.func.attr.value.endswith("_")
        and not node.func.attr.value.endswith("__")
        and _is_statement(ctx, node)
    ):
        target = node.func.value.value
        code = f"{target} = {ctx.code(node.func)[:-1]}({ctx.code(node)[len(ctx.code(node.func)) + 1 :]}"
    else:
        return None
    return Fix((replace(node, code),), Applicability.UNSAFE, f"Write out of place: `{code}`")


def _is_statement(ctx: FileContext, node: cst.Call) -> bool:
    """The call is the whole statement on its line, so its result is not used."""
    span = ctx.positions[node]
    line = source_line(ctx.text, span.start.line)
    return span.start.line == span.end.line and line.strip() == ctx.code(node).strip()
