"""Automatic fixes: how a rule declares one, and how a fix is applied to source text.

A rule attaches a fix to a finding; the engine locates it, `--fix` applies it:

    from gpumem_lint.fixes import Applicability, Fix, insert_after

    yield Report(call, message, fix=Fix((insert_after(call, ".clone()"),), Applicability.UNSAFE))

- Edits name nodes: `replace(node, code)`, `insert_before(node, code)`, `insert_after(node, code)`
  (the code is text, or a libcst node rendered as code). An `Edit(start, end, content)` with 1-based
  positions (end exclusive) works too. The edits of one fix are applied together or not at all.
- Applicability, as in ruff: SAFE keeps the program's meaning and is applied by `--fix`; UNSAFE may
  change what the program does, or the memory it uses (a `.clone()` allocates), and is applied only
  with `--unsafe-fixes`.
- A rule with a fix declares it (`fix_applicability = Applicability.UNSAFE`, shown on its page), says
  why in its `## Fix safety` section, and gives the fixed source of its INVALID examples
  (`Invalid(code, lines, fixed=...)`); the tests apply the fixes and compare.

`apply_fixes` guarantees: fixes whose edits overlap an already chosen one wait for the next pass; a
line with a `# noqa` comment is never changed by a fix (except GML002's, which edits the comment).
Re-linting, the re-parse check and writing files are `autofix`'s job.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

import libcst as cst
from libcst.metadata import CodeRange

from gpumem_lint.diagnostics import Applicability, Diagnostic, Edit, Fix, Position, fix_allowed
from gpumem_lint.noqa import parse_suppressions

__all__ = ["Applicability", "Edit", "Fix", "apply_fixes", "insert_after", "insert_before", "replace"]

#: The unused-suppression rule: the one whose fixes edit suppression comments.
_SUPPRESSION_RULE = "GML002"
# Python counts rows at these line breaks (as libcst positions do).
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


class _Where(Enum):
    REPLACE = "replace"
    BEFORE = "before"
    AFTER = "after"


@dataclass(frozen=True)
class NodeEdit:
    """An edit relative to a node of the tree; the engine turns it into an `Edit`."""

    node: cst.CSTNode
    content: str
    where: _Where


def replace(node: cst.CSTNode, code: str | cst.CSTNode) -> NodeEdit:
    return NodeEdit(node, _code(code), _Where.REPLACE)


def insert_before(node: cst.CSTNode, code: str | cst.CSTNode) -> NodeEdit:
    return NodeEdit(node, _code(code), _Where.BEFORE)


def insert_after(node: cst.CSTNode, code: str | cst.CSTNode) -> NodeEdit:
    return NodeEdit(node, _code(code), _Where.AFTER)


def _code(code: str | cst.CSTNode) -> str:
    return code if isinstance(code, str) else cst.Module(body=[]).code_for_node(code)


def locate(fix: Fix, positions: Mapping[cst.CSTNode, CodeRange]) -> Fix:
    """The same fix with every node edit turned into a positioned `Edit`."""
    return Fix(tuple(sorted(_locate_edit(edit, positions) for edit in fix.edits)), fix.applicability, fix.title)


def _locate_edit(edit: Edit | NodeEdit, positions: Mapping[cst.CSTNode, CodeRange]) -> Edit:
    if isinstance(edit, Edit):
        return edit
    span = positions[edit.node]
    start = Position(span.start.line, span.start.column + 1)
    end = Position(span.end.line, span.end.column + 1)
    if edit.where is _Where.BEFORE:
        return Edit(start, start, edit.content)
    if edit.where is _Where.AFTER:
        return Edit(end, end, edit.content)
    return Edit(start, end, edit.content)


@dataclass(frozen=True)
class Applied:
    text: str
    #: The findings whose fixes were applied, in position order.
    fixed: tuple[Diagnostic, ...]


def apply_fixes(text: str, diagnostics: Sequence[Diagnostic], *, unsafe: bool) -> Applied:
    """Apply every allowed fix that does not collide with an earlier one (one pass)."""
    candidates = [d for d in diagnostics if d.fix is not None and d.fix.edits and fix_allowed(d.fix, unsafe)]
    if not candidates:
        return Applied(text, ())
    noqa_rows = set(parse_suppressions(text).line_codes)
    candidates.sort(key=lambda d: (d.fix.edits[0].start, d.sort_key))
    chosen: list[Diagnostic] = []
    edits: list[Edit] = []
    for diagnostic in candidates:
        fix_edits = list(diagnostic.fix.edits)
        if diagnostic.code != _SUPPRESSION_RULE and _touches(fix_edits, noqa_rows):
            continue
        if edits and _collides(edits, fix_edits):
            continue
        chosen.append(diagnostic)
        edits.extend(fix_edits)
    return Applied(apply_edits(text, edits), tuple(chosen))


def _touches(edits: Sequence[Edit], rows: set[int]) -> bool:
    return any(row in rows for edit in edits for row in range(edit.start.row, edit.end.row + 1))


def _collides(taken: Sequence[Edit], new: Sequence[Edit]) -> bool:
    """Overlapping spans, or two insertions at one point (their order would be a guess)."""
    return any(
        a.start < b.end and b.start < a.end or a.start == b.start and (a.start == a.end or b.start == b.end)
        for a in taken
        for b in new
    )


def apply_edits(text: str, edits: Sequence[Edit]) -> str:
    """Apply non-overlapping edits; positions refer to `text` before any of them."""
    starts = line_starts(text)
    pieces: list[str] = []
    cursor = 0
    for edit in sorted(edits):
        begin, end = offset(starts, edit.start), offset(starts, edit.end)
        pieces.append(text[cursor:begin])
        pieces.append(edit.content)
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces)


def source_line(text: str, row: int) -> str:
    """Row `row` (1-based) of `text` as Python counts rows: form feeds and other characters that
    `str.splitlines` breaks at are inside a line."""
    starts = line_starts(text)
    end = starts[row] if row < len(starts) else len(text)
    return _LINE_BREAK.sub("", text[starts[row - 1] : end])


def source_rows(text: str, start: int, end: int | None = None) -> list[str]:
    """Rows `start` to `end` (1-based, inclusive; None: to the end) with their line breaks, as
    Python counts rows (a form feed is inside a row)."""
    starts = line_starts(text)
    last = len(starts) if end is None else min(end, len(starts))
    return [text[starts[row - 1] : starts[row] if row < len(starts) else len(text)] for row in range(start, last + 1)]


def line_starts(text: str) -> list[int]:
    """Offsets where each 1-based row begins (index 0 is row 1)."""
    return [0, *(match.end() for match in _LINE_BREAK.finditer(text))]


def offset(starts: Sequence[int], position: Position) -> int:
    return starts[position.row - 1] + position.column - 1
