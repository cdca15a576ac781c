"""Run findings meet static findings: one report, every finding with a source and a status.

- `trace` / `confirmed`: observed at run time, and the static check reports the same code at one of its lines.
- `trace` / `runtime-only`: observed at run time, missed by the static check (it belongs in a fixture).
- `trace` / `static-check-off`: observed at run time, with `--no-static`.
- `check` / `reached-not-observed`: a static finding whose line ran (an op or event was seen there) without the
  hazard happening on this run.
- `check` / `not-reached`: a static finding whose line never showed up at run time.
- `check` / `not-traced`: tracing stopped (`--max-ops`, `--max-seconds`, `--trace-steps`) before the run could show either.
Repeats are one finding with a count: every run-time finding of one static finding, of one line and code.
The static pass covers the script and every first-party module that was imported while it ran
(sites.executed_first_party_files).
"""

from __future__ import annotations

import ast
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from gpumem_lint.config import CliOverrides, load_settings
from gpumem_lint.diagnostics import Diagnostic, Position, RelatedLocation, Severity
from gpumem_lint.engine import lint_path, lint_source
from gpumem_lint.noqa import parse_suppressions
from gpumem_lint.output import counted, plural
from gpumem_lint.rules import RULES_BY_CODE
from gpumem_lint.selection import RuleSelection
from gpumem_lint.source import decode_source
from gpumem_lint.trace import notebooks
from gpumem_lint.trace.codes import FALLBACK_RULES
from gpumem_lint.trace.findings import FAILED_HERE, Finding
from gpumem_lint.trace.sites import Site, display_path

CONFIRMED = "confirmed"
RUNTIME_ONLY = "runtime-only"
STATIC_OFF = "static-check-off"
REACHED = "reached-not-observed"
NOT_REACHED = "not-reached"
NOT_TRACED = "not-traced"

_PREFIX = {
    CONFIRMED: "confirmed at run time: ",
    RUNTIME_ONLY: "seen at run time, missed by the static check: ",
    STATIC_OFF: "seen at run time (static check off): ",
    REACHED: "not observed at run time (the line ran): ",
    NOT_REACHED: "not reached at run time: ",
}


def static_findings(files: Sequence[Path], overrides: CliOverrides) -> list[Diagnostic]:
    diagnostics: list[Diagnostic] = []
    for path in files:
        settings = load_settings([str(path)], overrides)
        codes = RuleSelection.from_settings(settings).codes_for(path)
        rules = [RULES_BY_CODE[code] for code in codes]
        if notebooks.is_notebook(path):
            # In the rows of its joined cells, as the run's sites count them (notebooks.to_cells maps the report).
            notebook = notebooks.read(os.path.realpath(path))
            if notebook is not None:
                diagnostics.extend(lint_source(notebook.text, display_path(str(path)), rules))
            continue
        diagnostics.extend(lint_path(path, display_path(str(path)), rules))
    return [d for d in diagnostics if d.code in RULES_BY_CODE and not d.code.startswith("GML0")]


def cross_reference(
    findings: Iterable[Finding],
    evidence: Iterable[Finding],
    static: Sequence[Diagnostic],
    seen: set[tuple[str, int]],
    selected: frozenset[str],
    *,
    static_checked: bool = True,
    stopped_by: str | None = None,
) -> list[Diagnostic]:
    """`stopped_by`: the option that ended tracing early (`--max-ops`), None when the whole run was traced."""
    # A code no landed rule owns yet (a family still being written) is reported rather than dropped.
    observed = [f for f in findings if (f.code in selected or f.code not in RULES_BY_CODE) and not _suppressed(f)]
    by_line: dict[tuple[str, int, str], Diagnostic] = {(_absolute(d.path), d.start.row, d.code): d for d in static}
    confirmed: dict[tuple[str, int, str], list[Finding]] = {}
    unmatched: dict[tuple, list[Finding]] = {}
    for finding in observed:
        key = _match(finding, by_line)
        if key is None:
            unmatched.setdefault((finding.code, finding.site), []).append(finding)
        else:
            confirmed.setdefault(key, []).append(finding)
    for finding in evidence:
        key = _match(finding, by_line)
        if key is not None and key not in confirmed and finding.code in selected:
            confirmed[key] = [finding]
    report = [_confirmed(by_line[key], _merged(group)) for key, group in confirmed.items()]
    status = RUNTIME_ONLY if static_checked else STATIC_OFF
    report.extend(_runtime_only(_merged(group), status) for group in unmatched.values())
    seen_lines = {(os.path.realpath(path), line) for path, line in seen}
    for key, diagnostic in by_line.items():
        if key not in confirmed:
            reached = (key[0], key[1]) in seen_lines
            verdict, prefix = _unobserved(reached, stopped_by)
            report.append(replace(diagnostic, message=prefix + diagnostic.message, source="check", status=verdict))
    return sorted(report, key=lambda d: d.sort_key)


def summary(report: Sequence[Diagnostic]) -> list[str]:
    """The report's last lines: the hazards this run observed, by severity and status; then, apart, the static
    findings it did not observe (`check`'s own count would take those for hazards found)."""
    observed = [d for d in report if d.source == "trace"]
    unobserved = [d for d in report if d.source != "trace"]
    lines = [f"Found {counted(observed)} at run time ({_by_status(observed)})." if observed else "No hazards observed."]
    if unobserved:
        lines.append(f"{plural(len(unobserved), 'static finding')} not observed ({_by_status(unobserved)}).")
    return lines


def _by_status(report: Sequence[Diagnostic]) -> str:
    statuses = Counter(d.status for d in report)
    order = (CONFIRMED, RUNTIME_ONLY, STATIC_OFF, REACHED, NOT_REACHED, NOT_TRACED)
    return ", ".join(f"{statuses[status]} {status}" for status in order if statuses[status])


def _unobserved(reached: bool, stopped_by: str | None) -> tuple[str, str]:
    if stopped_by is None:
        status = REACHED if reached else NOT_REACHED
        return status, _PREFIX[status]
    if reached:
        return NOT_TRACED, f"the line ran, but tracing stopped at {stopped_by} before the hazard could show: "
    return NOT_TRACED, f"tracing stopped at {stopped_by} before this line: "


def _merged(group: list[Finding]) -> Finding:
    """One finding for repeats of one site: the first one's story, the count of them all."""
    return replace(group[0], count=sum(finding.count for finding in group)) if len(group) > 1 else group[0]


def _match(finding: Finding, by_line) -> tuple[str, int, str] | None:
    """The static finding at one of the run's lines; else one with the same code in the same function (a
    numpy-side write, for one, is never seen at run time, so its line cannot be); for a crash, else one with
    the same code in the same file."""
    sites = _sites(finding)
    for site in sites:
        key = (os.path.realpath(site.path), site.line, finding.code)
        if key in by_line:
            return key
    scopes = {(os.path.realpath(site.path), _scope(site.path, site.line)) for site in sites}
    for key in by_line:
        path, line, code = key
        if code == finding.code and (path, _scope(path, line)) in scopes:
            return key
    if finding.crash:
        files = {path for path, _ in scopes}
        return next((key for key in by_line if key[2] == finding.code and key[0] in files), None)
    return None


def _scope(path: str, line: int) -> tuple[int, int]:
    """The line span of the innermost function around `line` ((0, 0) at module level)."""
    best = (0, 0)
    for start, end in _function_spans(path):
        if start <= line <= end and start >= best[0]:
            best = (start, end)
    return best


_SPANS: dict[str, list[tuple[int, int]]] = {}


def _function_spans(path: str) -> list[tuple[int, int]]:
    if path not in _SPANS:
        try:
            tree = ast.parse("\n".join(_source_lines(path)))
        except (SyntaxError, ValueError):
            tree = None
        _SPANS[path] = [
            (node.lineno, node.end_lineno or node.lineno)
            for node in (ast.walk(tree) if tree else ())
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        ]
    return _SPANS[path]


def _sites(finding: Finding) -> list[Site]:
    return [site for site in (finding.site, *(s for _, s in finding.related)) if site is not None]


def _confirmed(static: Diagnostic, finding: Finding) -> Diagnostic:
    failed_elsewhere = finding.crash and finding.site and finding.site.line != static.start.row
    if failed_elsewhere:
        finding = replace(finding, related=[*finding.related, (FAILED_HERE, finding.site)])
    return replace(
        static,
        message=_PREFIX[CONFIRMED] + static.message + _story(finding),
        source="trace",
        status=CONFIRMED,
        related=_related(finding),
    )


def _runtime_only(finding: Finding, status: str) -> Diagnostic:
    rule = RULES_BY_CODE.get(finding.code) or FALLBACK_RULES.get(finding.code)
    site = finding.site or next(iter(_sites(finding)), None)
    path = display_path(site.path) if site else "<unknown>"
    row = site.line if site else 1
    start, end = Position(row, 1), Position(row, _line_length(site) + 1 if site else 1)
    return Diagnostic(
        path=path,
        start=start,
        end=end,
        code=finding.code,
        name=rule.name if rule else finding.code,
        message=_PREFIX[status] + finding.message + _story(finding),
        help=rule.fix_title if rule else None,
        severity=rule.severity if rule else Severity.ERROR,
        source="trace",
        status=status,
        related=_related(finding),
    )


def _story(finding: Finding) -> str:
    parts = [f"{label} at {site}" for label, site in finding.related if site is not None]
    if finding.count > 1:
        parts.append(f"{finding.count} times")
    if finding.pid is not None:
        parts.append(f"in child process {finding.pid}")
    if finding.ranks:
        parts.append(f"on rank{'s' if len(finding.ranks) > 1 else ''} {', '.join(map(str, finding.ranks))}")
    return f" [{'; '.join(parts)}]" if parts else ""


def _related(finding: Finding) -> tuple[RelatedLocation, ...]:
    return tuple(
        RelatedLocation(display_path(site.path), Position(site.line, 1), label)
        for label, site in finding.related
        if site is not None
    )


def _absolute(display: str) -> str:
    return os.path.realpath(display)


def _line_length(site: Site) -> int:
    lines = _source_lines(site.path)
    return len(lines[site.line - 1].rstrip()) if 0 < site.line <= len(lines) else 0


def _suppressed(finding: Finding) -> bool:
    """`# noqa: CODE` on the reported line silences the run-time finding too."""
    if finding.site is None:
        return False
    text = "\n".join(_source_lines(finding.site.path))
    return parse_suppressions(text).suppresses(finding.code, (finding.site.line,))


_LINES: dict[str, list[str]] = {}


def _source_lines(path: str) -> list[str]:
    if path not in _LINES and notebooks.is_notebook(path):
        notebook = notebooks.read(os.path.realpath(path))
        _LINES[path] = notebook.text.splitlines() if notebook is not None else []
    if path not in _LINES:
        try:
            _LINES[path] = decode_source(Path(path).read_bytes()).splitlines()
        except (OSError, SyntaxError, UnicodeDecodeError, LookupError):
            _LINES[path] = []
    return _LINES[path]
