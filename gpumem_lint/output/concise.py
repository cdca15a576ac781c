"""One line per finding: `path:row:col: CODE message`, the format editors and CI logs parse;
`path:cell N:row:col: CODE message` in a notebook, as ruff writes it."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from rich.console import Console
from rich.text import Text

from gpumem_lint.diagnostics import Diagnostic

# Control characters and lone surrogates from a file name, message or source line
# must not reach the terminal: they could move the cursor or fail to encode.
_UNPRINTABLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def render(
    diagnostics: Sequence[Diagnostic], console: Console, fixable: Callable[[Diagnostic], bool] = lambda _: False
) -> None:
    for diagnostic in diagnostics:
        console.print(header(diagnostic, fixable(diagnostic)))


def header(diagnostic: Diagnostic, fixable: bool = False) -> Text:
    """`[*]` marks a finding that `--fix` (with the options given) would fix, as in ruff."""
    return Text.assemble(
        (printable(diagnostic.path), "bold"),
        (":", "cyan"),
        (f"cell {diagnostic.cell}", "bold") if diagnostic.cell is not None else "",
        (":", "cyan") if diagnostic.cell is not None else "",
        str(diagnostic.start.row),
        (":", "cyan"),
        str(diagnostic.start.column),
        (":", "cyan"),
        " ",
        (diagnostic.code, "bold red"),
        " ",
        ("[*] ", "cyan") if fixable else "",
        printable(diagnostic.message),
    )


def where(diagnostic: Diagnostic) -> str:
    """`path:row:col`, or `path:cell N:row:col` in a notebook."""
    cell = f"cell {diagnostic.cell}:" if diagnostic.cell is not None else ""
    return f"{diagnostic.path}:{cell}{diagnostic.start.row}:{diagnostic.start.column}"


def printable(text: str) -> str:
    """Replace each unprintable character by U+FFFD, which keeps columns aligned."""
    return _UNPRINTABLE.sub("\ufffd", text)
