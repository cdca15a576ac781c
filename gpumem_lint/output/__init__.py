"""Report diagnostics in the format the user chose, then a ruff-style summary (text formats only)."""

from __future__ import annotations

import importlib
from collections import Counter
from collections.abc import Mapping, Sequence
from enum import Enum
from typing import TYPE_CHECKING

from gpumem_lint.diagnostics import Applicability, Diagnostic, Severity, fix_allowed

if TYPE_CHECKING:  # rich is imported by the renderers, for a report that prints something
    from rich.console import Console
    from rich.text import Text


class OutputFormat(str, Enum):
    FULL = "full"
    CONCISE = "concise"
    JSON = "json"
    JSON_LINES = "json-lines"
    SARIF = "sarif"
    GITHUB = "github"
    JUNIT = "junit"


_TEXT_FORMATS = (OutputFormat.FULL, OutputFormat.CONCISE)

#: The module that renders each format, imported only for the format a run asks for.
_RENDERERS = {
    OutputFormat.FULL: "full",
    OutputFormat.CONCISE: "concise",
    OutputFormat.JSON: "json_format",
    OutputFormat.JSON_LINES: "json_lines",
    OutputFormat.SARIF: "sarif",
    OutputFormat.GITHUB: "github",
    OutputFormat.JUNIT: "junit",
}


def _renderer(output_format: OutputFormat):
    return importlib.import_module(f"{__name__}.{_RENDERERS[output_format]}").render


def write_report(
    diagnostics: Sequence[Diagnostic],
    console: Console,
    output_format: OutputFormat,
    *,
    quiet: bool = False,
    show_statistics: bool = False,
    fixed: Sequence[Diagnostic] = (),
    unsafe_fixes: bool = False,
    show_fixes: bool = False,
    linted: Mapping[str, bytes] | None = None,
) -> None:
    """`show_statistics` replaces the findings with per-rule counts, as ruff's `--statistics` does.

    `fixed` are the findings `--fix` removed; `unsafe_fixes` says whether unsafe fixes count as available.
    `linted` holds the contents linted that are not on disk (standard input), by display path: code
    frames and fingerprints quote them.
    """
    if show_statistics:
        from gpumem_lint.output import statistics

        as_json = output_format in (OutputFormat.JSON, OutputFormat.JSON_LINES)
        statistics.render(diagnostics, console, as_json=as_json)
        return
    from gpumem_lint.output.source_lines import SourceLines

    render = _renderer(output_format)
    if output_format not in _TEXT_FORMATS:
        extra = {"sources": SourceLines(linted)} if output_format is OutputFormat.SARIF else {}
        render(diagnostics, console, **extra)
        return

    def fixable(diagnostic: Diagnostic) -> bool:
        return diagnostic.fix is not None and fix_allowed(diagnostic.fix, unsafe_fixes)

    extra = {"sources": SourceLines(linted)} if output_format is OutputFormat.FULL else {}
    render(diagnostics, console, fixable=fixable, **extra)
    if show_fixes and fixed:
        console.print(fixed_listing(fixed))
    if not quiet:
        for line in summary(diagnostics, fixed, unsafe_fixes):
            console.print(line)


def summary(diagnostics: Sequence[Diagnostic], fixed: Sequence[Diagnostic], unsafe_fixes: bool) -> list[str]:
    remaining, done = len(diagnostics), len(fixed)
    if remaining == 0 and done == 0:
        return ["All checks passed!"]
    found = f"Found {counted([*diagnostics, *fixed])}"
    lines = [f"{found} ({done} fixed, {remaining} remaining)." if done else f"{found}."]
    available = sum(d.fix is not None and fix_allowed(d.fix, unsafe_fixes) for d in diagnostics)
    hidden = 0 if unsafe_fixes else hidden_fixes(diagnostics)
    hint = f"{plural(hidden, 'hidden fix', 'hidden fixes')} can be enabled with the `--unsafe-fixes` option"
    if available:
        fixable = f"[*] {available} fixable with the `--fix` option"
        lines.append(f"{fixable} ({hint})." if hidden else f"{fixable}.")
    elif hidden:
        lines.append(f"No fixes available ({hint}).")
    return lines


def counted(diagnostics: Sequence[Diagnostic]) -> str:
    """"2 errors and 1 warning": the findings by severity, errors first."""
    severities = Counter(diagnostic.severity for diagnostic in diagnostics)
    parts = [plural(severities[severity], severity.value) for severity in Severity if severities[severity]]
    return " and ".join(parts) or "0 errors"


def hidden_fixes(diagnostics: Sequence[Diagnostic]) -> int:
    """Fixes that only `--unsafe-fixes` applies."""
    return sum(d.fix is not None and d.fix.applicability is Applicability.UNSAFE for d in diagnostics)


def plural(count: int, singular: str, plural_form: str | None = None) -> str:
    return f"{count} {singular if count == 1 else plural_form or singular + 's'}"


def fixed_listing(fixed: Sequence[Diagnostic]) -> Text:
    """`--show-fixes`: what was fixed, per file and code."""
    from rich.text import Text

    from gpumem_lint.output.concise import printable

    text = Text(f"Fixed {counted(fixed)}:\n")
    per_file: dict[str, Counter[tuple[str, str]]] = {}
    for diagnostic in fixed:
        per_file.setdefault(diagnostic.path, Counter())[(diagnostic.code, diagnostic.name)] += 1
    for path, counts in sorted(per_file.items()):
        text.append(f"- {printable(path)}:\n")
        for (code, name), count in sorted(counts.items()):
            text.append(f"    {count} × {code} ({name})\n")
    return text
