"""Each finding with the source lines around it, the span underlined, and the remedy.

model.py:2:7: GML001 invalid syntax
  |
1 | import torch
2 | def f(:
  |       ^ GML001
3 |     pass
  |
help: Fix the syntax error; nothing else in this file was checked
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

from gpumem_lint.diagnostics import Applicability, Diagnostic, Fix
from gpumem_lint.output.concise import header, printable
from gpumem_lint.output.source_lines import SourceLines

CONTEXT_LINES = 2
TAB_SIZE = 4


def render(
    diagnostics: Sequence[Diagnostic],
    console: Console,
    fixable: Callable[[Diagnostic], bool] = lambda _: False,
    sources: SourceLines | None = None,
) -> None:
    sources = sources or SourceLines()
    for diagnostic in diagnostics:
        console.print(header(diagnostic, fixable(diagnostic)))
        lines = sources.of(diagnostic.path, diagnostic.cell)
        if lines is not None and 1 <= diagnostic.start.row <= len(lines):
            console.print(code_frame(diagnostic, lines))
        if diagnostic.help:
            console.print(Text.assemble(("help", "bold cyan"), ": ", printable(diagnostic.help)))
        if diagnostic.fix is not None:
            console.print(Text.assemble(("fix", "bold cyan"), ": ", printable(fix_line(diagnostic.fix))))
        console.print()


def fix_line(fix: Fix) -> str:
    """What the fix does and how to apply it; unsafe fixes say why they need opting in."""
    what = fix.title or "available"
    if fix.applicability is Applicability.SAFE:
        return f"{what} (safe: `--fix`)"
    return f"{what} (unsafe, may change behaviour or memory use: `--fix --unsafe-fixes`)"


def code_frame(diagnostic: Diagnostic, lines: list[str]) -> Text:
    """The start row with its neighbours; the underline covers the span's part of the start row."""
    row = diagnostic.start.row
    # The empty "line" after a final newline is shown only when the finding is on it (at EOF).
    shown_rows = len(lines) - 1 if lines[-1] == "" else len(lines)
    first, last = max(1, row - CONTEXT_LINES), min(max(shown_rows, row), row + CONTEXT_LINES)
    width = len(str(last))
    gutter = (f"{'':>{width}} |", "blue")
    frame = Text.assemble(gutter, "\n")
    for number in range(first, last + 1):
        source = _shown(lines[number - 1])
        frame.append_text(Text.assemble((f"{number:>{width}} |", "blue"), f" {source}" if source else "", "\n"))
        if number == row:
            start, length = _underline(diagnostic, lines[row - 1])
            frame.append_text(
                Text.assemble(gutter, " " * (start + 1), ("^" * length + " " + diagnostic.code, "bold red"), "\n")
            )
    frame.append_text(Text.assemble(gutter))
    return frame


def _underline(diagnostic: Diagnostic, line: str) -> tuple[int, int]:
    """Screen offset and width of the carets, measured in terminal cells after tab expansion."""
    start_col = diagnostic.start.column - 1
    if diagnostic.end.row == diagnostic.start.row:
        end_col = diagnostic.end.column - 1
    else:
        end_col = len(line)  # a multi-line span is underlined to the end of its first line
    start = cell_len(_shown(line[:start_col]))
    end = cell_len(_shown(line[:end_col]))
    return start, max(1, end - start)


def _shown(source: str) -> str:
    return printable(source.expandtabs(TAB_SIZE))
