"""GitHub Actions workflow commands: one annotation per finding, then one summary notice.

    ::error title=gpumem-lint (GML101),file=train.py,line=3,col=9,endLine=3,endColumn=21::`w.data` replaces ...

GitHub shows at most ten error and ten warning annotations per step and drops the rest
silently, so a final `::notice` gives the total per code and points to the full log.
Escaping follows actions/toolkit: `%`, CR and LF in the message; also `:` and `,` in
property values.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from rich.console import Console

from gpumem_lint.diagnostics import Diagnostic, Severity
from gpumem_lint.output.concise import printable

#: Annotations of one level GitHub shows per step.
SHOWN_PER_LEVEL = 10


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(diagnostic: Diagnostic) -> str:
    level = "error" if diagnostic.severity is Severity.ERROR else "warning"
    place = [("title", f"gpumem-lint ({diagnostic.code})"), ("file", diagnostic.path)]
    if diagnostic.cell is None:
        place += [
            ("line", diagnostic.start.row),
            ("col", diagnostic.start.column),
            ("endLine", diagnostic.end.row),
            ("endColumn", diagnostic.end.column),
        ]
    properties = ",".join(f"{key}={escape_property(str(value))}" for key, value in place)
    # The title names the code and GitHub shows the place: the message is only the finding. A
    # notebook's rows count in a cell, not in the file GitHub shows, so the message gives them.
    message = diagnostic.message
    if diagnostic.cell is not None:
        message = f"cell {diagnostic.cell}:{diagnostic.start.row}:{diagnostic.start.column}: {message}"
    if diagnostic.help:
        message += f"\n  help: {diagnostic.help}"
    # printable() keeps line feeds (escaped below as %0A) and replaces other control characters.
    return f"::{level} {properties}::{escape_data(printable(message))}"


def summary(diagnostics: Sequence[Diagnostic]) -> str | None:
    if not diagnostics:
        return None
    counts = Counter(diagnostic.code for diagnostic in diagnostics)
    per_code = ", ".join(f"{code} × {count}" for code, count in sorted(counts.items()))
    total = len(diagnostics)
    text = f"gpumem-lint found {total} problem{'' if total == 1 else 's'}: {per_code}."
    levels = Counter(diagnostic.severity for diagnostic in diagnostics)
    if any(count > SHOWN_PER_LEVEL for count in levels.values()):
        text += f" GitHub shows only {SHOWN_PER_LEVEL} annotations of each level per step; the log lists them all."
    return f"::notice title={escape_property('gpumem-lint summary')}::{escape_data(text)}"


def render(diagnostics: Sequence[Diagnostic], console: Console) -> None:
    for diagnostic in diagnostics:
        console.out(annotation(diagnostic), highlight=False)
    line = summary(diagnostics)
    if line:
        console.out(line, highlight=False)
