"""The trace's report in the text formats: each finding with the code frame of every line its story names (the
write and the line that saved, aliased or read the tensor), then one verdict line per static finding, with the fix
that `check --fix` applies to the ones this run confirmed (issue 20). Machine formats carry the same lines as
related locations (json `related`, SARIF `relatedLocations`) and the fix as `check` gives it."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import replace

from rich.console import Console
from rich.text import Text

from gpumem_lint.diagnostics import Applicability, Diagnostic, Position
from gpumem_lint.output.concise import header, printable, where
from gpumem_lint.output.full import code_frame, fix_line
from gpumem_lint.output.source_lines import SourceLines
from gpumem_lint.trace.crossref import CONFIRMED


def render_full(diagnostics: Sequence[Diagnostic], console: Console) -> None:
    sources = SourceLines()
    for diagnostic in diagnostics:
        console.print(header(diagnostic))
        lines = sources.of(diagnostic.path, diagnostic.cell)
        if lines is not None and 1 <= diagnostic.start.row <= len(lines):
            console.print(code_frame(diagnostic, lines))
        for frame in _related_frames(diagnostic, sources):
            console.print(frame)
        if diagnostic.help:
            console.print(Text.assemble(("help", "bold cyan"), ": ", printable(diagnostic.help)))
        if diagnostic.fix is not None:
            console.print(Text.assemble(("fix", "bold cyan"), ": ", printable(fix_line(diagnostic.fix))))
        console.print()


def _related_frames(diagnostic: Diagnostic, sources: SourceLines):
    """A labelled frame for each other line of the story (a notebook's related rows are named, not quoted: they
    count rows of a cell the location does not carry)."""
    shown = {(diagnostic.path, diagnostic.start.row)}
    for related in diagnostic.related:
        key = (related.path, related.start.row)
        if key in shown or diagnostic.cell is not None or related.path.endswith(".ipynb"):
            continue
        shown.add(key)
        lines = sources.of(related.path)
        if lines is None or not 1 <= related.start.row <= len(lines):
            continue
        line = lines[related.start.row - 1]
        start = len(line) - len(line.lstrip()) + 1
        at = replace(
            diagnostic,
            path=related.path,
            start=Position(related.start.row, start),
            end=Position(related.start.row, max(start + 1, len(line.rstrip()) + 1)),
            code=related.message,
        )
        yield Text.assemble(("note", "bold cyan"), f": {printable(related.message)} at ", (where(at), "bold"))
        yield code_frame(at, lines)


def verdicts(diagnostics: Sequence[Diagnostic]) -> list[str]:
    """One line per static finding: how this run bore it out, and for a confirmed one the fix that applies."""
    static = [d for d in diagnostics if d.source == "check" or d.status == CONFIRMED]
    if not static:
        return []
    lines = ["Verdicts on the static findings:"]
    for diagnostic in static:
        verdict = diagnostic.message.split(": ", 1)[0]  # the status prefix crossref put before the message
        line = f"  {where(diagnostic)} {diagnostic.code} {verdict}"
        if diagnostic.status == CONFIRMED and diagnostic.fix is not None:
            unsafe = diagnostic.fix.applicability is Applicability.UNSAFE
            command = f"gpumem-lint check --fix{' --unsafe-fixes' if unsafe else ''} {shlex.quote(diagnostic.path)}"
            line += f"; fix: {diagnostic.fix.title or diagnostic.help} ({'unsafe' if unsafe else 'safe'}: `{command}`)"
        elif diagnostic.status == CONFIRMED:
            line += "; no automatic fix"
        lines.append(printable(line))
    return lines
