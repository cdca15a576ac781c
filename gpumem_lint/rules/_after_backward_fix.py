"""The fix of a write autograd cannot see, made too early: move it just below the `backward()` it preceded.

`backward()` computes gradients from the memory the forward pass saved, so a `.data` write before it
changes them unseen (F1). Moved below, `backward()` reads the values the forward pass used, and what
runs after `backward()` (the optimizer step, the next iteration) still sees the write.
"""

from __future__ import annotations

import libcst as cst

from gpumem_lint.context import FileContext
from gpumem_lint.diagnostics import Position
from gpumem_lint.fixes import Applicability, Edit, Fix, source_rows
from gpumem_lint.knowledge import knowledge
from gpumem_lint.rules._bindings import bound_names, statement_blocks
from gpumem_lint.semantic.walk import Walker, used_names


def move_below_backward(ctx: FileContext, write: cst.CSTNode, backward: cst.CSTNode) -> Fix | None:
    """Move the statement holding `write` below the one-line statement holding `backward`, in the
    block that holds both, when the statements it passes (the backward's too) bind no name it uses
    and use none it binds, neither leaves the block early (`return`, `break`, ...), and it reads no
    attribute `backward()` writes (`p.grad`: it would read this step's gradient instead)."""
    found = _shared_block(ctx, ctx.module.body, write, backward)
    if found is None:
        return None
    block, first, last = found
    moved, passed = block[first], block[first + 1 : last + 1]
    if not isinstance(block[last], cst.SimpleStatementLine) or any(_exits(s) for s in (moved, *passed)):
        return None
    if _reads_attribute(moved, knowledge().backward_writes):
        return None
    used_passed = set().union(*(used_names(s) for s in passed))
    bound_passed = set().union(*(bound_names(s) for s in passed))
    if bound_names(moved) & used_passed or bound_passed & used_names(moved):
        return None
    positions = ctx.positions
    start, end = positions[moved].start.line, positions[moved].end.line
    below = positions[block[last]].end.line
    text = "".join(source_rows(ctx.text, start, end))
    tail = source_rows(ctx.text, below, below)[0]
    if tail.endswith(("\n", "\r")):
        at = Position(below + 1, 1)
    else:  # backward() ends the file without a line break
        at, text = Position(below, len(tail) + 1), "\n" + text.rstrip("\r\n")
    return Fix(
        (Edit(Position(start, 1), Position(end + 1, 1), ""), Edit(at, at, text)),
        Applicability.UNSAFE,
        f"Move the write below `{ctx.code(backward)}`",
    )


def _shared_block(ctx: FileContext, body, first: cst.CSTNode, second: cst.CSTNode):
    """(block, i, j): the innermost statement list whose statement i holds `first` and j > i `second`."""
    positions = ctx.positions

    def holder(node: cst.CSTNode) -> int | None:
        span = positions[node]
        return next(
            (
                index
                for index, statement in enumerate(body)
                if (positions[statement].start.line, positions[statement].start.column)
                <= (span.start.line, span.start.column)
                and (span.end.line, span.end.column) <= (positions[statement].end.line, positions[statement].end.column)
            ),
            None,
        )

    i, j = holder(first), holder(second)
    if i is None or j is None or i > j:
        return None
    if i < j:
        return list(body), i, j
    for child in statement_blocks(body[i]):
        if (found := _shared_block(ctx, child, first, second)) is not None:
            return found
    return None


def _exits(statement: cst.CSTNode) -> bool:
    finder = _Exits()
    finder.walk(statement)
    return finder.found


class _Exits(Walker):
    """A statement that leaves its block before its end: moving code across it changes what runs."""

    def __init__(self) -> None:
        self.found = False

    def _exit(self, node: cst.CSTNode) -> None:
        self.found = True

    visit_Return = visit_Raise = visit_Break = visit_Continue = visit_Yield = _exit


def _reads_attribute(node: cst.CSTNode, names: frozenset[str]) -> bool:
    finder = _Attributes(names)
    finder.walk(node)
    return finder.found


class _Attributes(Walker):
    def __init__(self, names: frozenset[str]) -> None:
        self.names = names
        self.found = False

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.found = self.found or node.attr.value in self.names
