"""One line per finding: `path:row:col: CODE message`, the format editors and CI logs parse."""

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


def printable(text: str) -> str:
    """Replace each unprintable character by U+FFFD, which keeps columns aligned."""
    return _UNPRINTABLE.sub("\ufffd", text)
