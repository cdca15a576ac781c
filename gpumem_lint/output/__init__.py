"""Report diagnostics in the format the user chose, then a ruff-style summary line."""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum

from rich.console import Console

from gpumem_lint.diagnostics import Diagnostic
from gpumem_lint.output import concise, full, json_format, statistics


class OutputFormat(str, Enum):
    FULL = "full"
    CONCISE = "concise"
    JSON = "json"


_RENDERERS = {
    OutputFormat.FULL: full.render,
    OutputFormat.CONCISE: concise.render,
    OutputFormat.JSON: json_format.render,
}


def write_report(
    diagnostics: Sequence[Diagnostic],
    console: Console,
    output_format: OutputFormat,
    *,
    quiet: bool = False,
    show_statistics: bool = False,
) -> None:
    """`show_statistics` replaces the findings with per-rule counts, as ruff's `--statistics` does."""
    as_json = output_format is OutputFormat.JSON
    if show_statistics:
        statistics.render(diagnostics, console, as_json=as_json)
        return
    _RENDERERS[output_format](diagnostics, console)
    if not as_json and not quiet:
        console.print(_summary(len(diagnostics)))


def _summary(count: int) -> str:
    if count == 0:
        return "All checks passed!"
    return f"Found {count} error{'' if count == 1 else 's'}."
