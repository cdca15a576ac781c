"""The line of a node's statement, for modules read only to summarise them.

libcst's PositionProvider renders the whole module to find positions: three times the cost
of parsing it. A summary needs a line for a handful of nodes, so statements are paired, in
source order, with CPython's (which carry line numbers and cost a fraction of a libcst
parse), and a node gets the line of the statement it belongs to. When the two parsers do
not see the same statements, the caller falls back to PositionProvider.
"""

from __future__ import annotations

import ast
import warnings

import libcst as cst

from gpumem_lint.semantic.walk import child_nodes

_STATEMENT = (cst.BaseSmallStatement, cst.BaseCompoundStatement)


def statement_lines(module: cst.Module, text: str) -> dict[int, int] | None:
    """`id(node) -> line` for every node below a statement, or None when the statements do not pair up."""
    try:
        with warnings.catch_warnings():  # CPython's SyntaxWarnings are not ours to print
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    lines = sorted((node.lineno, node.col_offset) for node in ast.walk(tree) if isinstance(node, ast.stmt))
    owners: dict[int, int] = {}
    count = 0

    def visit(node: cst.CSTNode, statement: int) -> None:
        nonlocal count
        if isinstance(node, _STATEMENT):
            statement = count
            count += 1
        owners[id(node)] = statement
        for child in child_nodes(node):
            visit(child, statement)

    try:
        for child in child_nodes(module):
            visit(child, -1)
    except RecursionError:
        return None
    if count != len(lines):
        return None
    return {node: lines[index][0] for node, index in owners.items() if index >= 0}
