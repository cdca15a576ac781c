"""Positions of a module's nodes, rendered one top-level statement at a time.

libcst's PositionProvider renders the whole module, recording a range for every node: six times
the cost of rendering it, twice that of parsing it. A file with a finding needs the positions of
a handful of nodes. A top-level statement starts at column 0 and no enclosing block indents it,
so rendered alone (in a module of its own, with the file's indentation and newline) its nodes
have the columns they have in the file and lines shifted by one amount: the line CPython gives
its first small statement (`StatementLines`) less the line that statement has when rendered
alone. Anything else (a node outside every statement, a statement CPython did not pair) is
looked up in the whole module's positions, resolved then.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

import libcst as cst
from libcst.metadata import CodePosition, CodeRange, MetadataWrapper, PositionProvider

from gpumem_lint.semantic.statement_lines import StatementLines
from gpumem_lint.semantic.walk import child_nodes


class StatementPositions(Mapping):
    def __init__(
        self,
        module: cst.Module,
        lines: StatementLines,
        whole: Callable[[], Mapping[cst.CSTNode, CodeRange]],
    ) -> None:
        self._module = module
        self._lines = lines
        self._whole = whole
        self._statement_of: dict[int, int] = {}  # node id -> index of its top-level statement
        self._walked = 0  # top-level statements whose nodes are in `_statement_of`
        self._rendered: dict[int, tuple[Mapping[cst.CSTNode, CodeRange], int] | None] = {}

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        index = self._statement_index(node)
        rendered = self._render(index) if index is not None else None
        if rendered is None:
            return self._whole()[node]
        positions, shift = rendered
        span = positions[node]
        return CodeRange(_moved(span.start, shift), _moved(span.end, shift))

    def _statement_index(self, node: cst.CSTNode) -> int | None:
        body = self._module.body
        while id(node) not in self._statement_of and self._walked < len(body):
            index, self._walked = self._walked, self._walked + 1
            pending: list[cst.CSTNode] = [body[index]]
            while pending:
                part = pending.pop()
                self._statement_of[id(part)] = index
                pending.extend(child_nodes(part))
        return self._statement_of.get(id(node))

    def _render(self, index: int) -> tuple[Mapping[cst.CSTNode, CodeRange], int] | None:
        if index not in self._rendered:
            statement = self._module.body[index]
            alone = self._module.with_changes(body=[statement], header=(), footer=())
            positions = MetadataWrapper(alone, unsafe_skip_copy=True).resolve(PositionProvider)
            anchor = _first_small_statement(statement)
            line = self._lines.line(anchor) if anchor is not None else None
            self._rendered[index] = None if line is None else (positions, line - positions[anchor].start.line)
        return self._rendered[index]

    def __iter__(self) -> Iterator[cst.CSTNode]:
        return iter(self._whole())

    def __len__(self) -> int:
        return len(self._whole())


def _first_small_statement(statement: cst.CSTNode) -> cst.BaseSmallStatement | None:
    """The statement's first small statement in source order (every block holds one)."""
    pending = [statement]
    while pending:
        node = pending.pop()
        if isinstance(node, cst.BaseSmallStatement):
            return node
        pending.extend(reversed(child_nodes(node)))
    return None


def _moved(position: CodePosition, shift: int) -> CodePosition:
    return CodePosition(position.line + shift, position.column)
