"""`--add-noqa`: suppress every current finding with a `# noqa: CODE` comment, to adopt the
tool on an existing code base and fix findings one by one later.

The comment goes on the finding's first line, or its last when the first ends inside a
multi-line string or with a backslash continuation (a comment there would change the code);
codes join a `# noqa: ...` already on the line. Tool findings (syntax and read errors,
internal errors) and GML002 are not suppressed: they call for a change, not a comment.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Sequence

from gpumem_lint.diagnostics import Diagnostic, Edit, Position
from gpumem_lint.fixes import apply_edits
from gpumem_lint.noqa import line_directive

_NOT_SUPPRESSIBLE = frozenset({"GML001", "GML002", "GML003", "GML009"})
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def add_noqa(text: str, diagnostics: Sequence[Diagnostic]) -> tuple[str, int]:
    """The text with the directives added, and how many lines got one."""
    wanted = [d for d in diagnostics if d.code not in _NOT_SUPPRESSIBLE]
    if not wanted:
        return text, 0
    blocked = _rows_that_cannot_take_a_comment(text)
    if blocked is None:
        return text, 0
    codes_by_row: dict[int, set[str]] = {}
    for diagnostic in wanted:
        row = next((r for r in (diagnostic.start.row, diagnostic.end.row) if r not in blocked), None)
        if row is not None:
            codes_by_row.setdefault(row, set()).add(diagnostic.code)
    lines = _LINE_BREAK.split(text)
    edits = []
    for row, codes in sorted(codes_by_row.items()):
        line = lines[row - 1]
        listed = ", ".join(sorted(codes))
        match = line_directive(line)
        if match is not None and match.group("codes"):
            at = Position(row, match.end("codes") + 1)
            edits.append(Edit(at, at, f", {listed}"))
        else:
            end = Position(row, len(line.rstrip()) + 1)
            edits.append(Edit(end, Position(row, len(line) + 1), f"  # noqa: {listed}"))
    return apply_edits(text, edits), len(edits)


def _rows_that_cannot_take_a_comment(text: str) -> set[int] | None:
    """Rows that end inside a multi-line token or with a line continuation; None if untokenizable."""
    blocked: set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(text, newline=None).readline):
            if token.start[0] < token.end[0] and token.type != tokenize.NL:
                blocked.update(range(token.start[0], token.end[0]))
    except (tokenize.TokenError, SyntaxError):
        return None
    for row, line in enumerate(_LINE_BREAK.split(text), start=1):
        if line.rstrip().endswith("\\"):
            blocked.add(row)
    return blocked
