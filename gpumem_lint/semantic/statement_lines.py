"""The line of a node's statement, for modules read only to summarise them.

libcst's PositionProvider renders the whole module to find positions: three times the cost
of parsing it. A summary needs a line for a handful of nodes, so statements are paired, in
source order, with CPython's (which carry line numbers and cost a fraction of a libcst
parse), and a node gets the line of the statement it belongs to. Only statements are walked
up front; the expressions of a statement are walked when a node is looked up, in order, until
it is found. When the two parsers do not see the same statements, the caller falls back to
PositionProvider.
"""

from __future__ import annotations

import libcst as cst

from gpumem_lint.fast_path import ast_statements, cpython_tree
from gpumem_lint.semantic.walk import child_nodes

_STATEMENT = (cst.BaseSmallStatement, cst.BaseCompoundStatement)
#: Parts of a compound statement that hold statements rather than expressions.
_CLAUSE = (
    cst.BaseSuite,
    cst.SimpleStatementLine,
    cst.Else,
    cst.ExceptHandler,
    cst.ExceptStarHandler,
    cst.Finally,
    cst.MatchCase,
)


class StatementLines:
    def __init__(self, statements: list[cst.CSTNode], lines: list[int]) -> None:
        self._statements = statements
        self._lines = lines
        self._found: dict[int, int] = {id(statement): line for statement, line in zip(statements, lines)}
        self._searched = 0  # statements whose expressions are already in `_found`

    def line(self, node: cst.CSTNode) -> int | None:
        while id(node) not in self._found and self._searched < len(self._statements):
            index = self._searched
            self._searched += 1
            for part in _own_parts(self._statements[index]):
                self._found.setdefault(id(part), self._lines[index])
        return self._found.get(id(node))


def statement_lines(module: cst.Module, text: str) -> StatementLines | None:
    """Lines for the nodes of `module`, or None when its statements do not pair up with CPython's."""
    tree = cpython_tree(text)
    if tree is None:
        return None
    lines = sorted((node.lineno, node.col_offset) for node in ast_statements(tree))
    statements: list[cst.CSTNode] = []

    def visit(node: cst.CSTNode) -> None:
        for child in child_nodes(node):
            if isinstance(child, _STATEMENT):
                statements.append(child)
                if isinstance(child, cst.BaseCompoundStatement):
                    visit(child)
            elif isinstance(child, _CLAUSE):
                visit(child)

    try:
        visit(module)
    except RecursionError:
        return None
    if len(statements) != len(lines):
        return None
    return StatementLines(statements, [line for line, _ in lines])


def _own_parts(statement: cst.CSTNode) -> list[cst.CSTNode]:
    """Every node of the statement that is not part of a statement nested in it."""
    parts: list[cst.CSTNode] = []
    stack = [child for child in child_nodes(statement) if not isinstance(child, (*_CLAUSE, *_STATEMENT))]
    while stack:
        node = stack.pop()
        parts.append(node)
        stack.extend(child_nodes(node))
    return parts
