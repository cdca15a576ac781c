"""Cross-referencing run-time findings with static ones (gpumem_lint/trace/crossref.py): each case is a
source file, what the static check found, what the run observed, and the (row, code, source, status) report."""

from __future__ import annotations

import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from gpumem_lint.diagnostics import Diagnostic, Position, Severity
from gpumem_lint.trace.crossref import cross_reference, summary
from gpumem_lint.trace.findings import Finding
from gpumem_lint.trace.sites import Site

SOURCE = textwrap.dedent(
    """\
    import torch

    def smooth(hidden, updates):
        prev = hidden.detach()
        for u in updates:
            hidden.add_(u)
        return hidden - prev

    def other(x):
        x.add_(1)  # noqa: GML103
        return x
    """
)
SELECTED = frozenset({"GML101", "GML102", "GML103", "GML106"})


def static(path: Path, row: int, code: str = "GML103") -> Diagnostic:
    return Diagnostic(
        str(path), Position(row, 5), Position(row, 9), code, "name", "static message", None, Severity.ERROR
    )


def observed(path: Path, row: int, code: str = "GML103", related_row: int | None = None) -> Finding:
    related = [("read", Site(str(path), related_row))] if related_row else []
    return Finding(code, "run-time message", Site(str(path), row), related)


CASES = {
    # name: (static rows, run-time findings as (row, code, related row), evidence rows, seen rows, expected)
    "seen at the static line: confirmed": ([6], [(6, "GML103", 7)], [], [], {(6, "GML103", "trace", "confirmed")}),
    "matched through a related line": ([7], [(6, "GML103", 7)], [], [], {(7, "GML103", "trace", "confirmed")}),
    "same code in the same function: confirmed": (
        [4],
        [(6, "GML103", None)],
        [],
        [],
        {(4, "GML103", "trace", "confirmed")},
    ),
    "only at run time": ([], [(6, "GML103", None)], [], [], {(6, "GML103", "trace", "runtime-only")}),
    "static, line ran": ([6], [], [], [6], {(6, "GML103", "check", "reached-not-observed")}),
    "static, line never ran": ([6], [], [], [], {(6, "GML103", "check", "not-reached")}),
    "view evidence confirms a static finding": ([6], [], [6], [], {(6, "GML103", "trace", "confirmed")}),
    "view evidence alone is not reported": ([], [], [6], [], set()),
    "noqa on the run-time line": ([], [(10, "GML103", None)], [], [], set()),
    "a code the selection turned off": ([], [(6, "GML107", None)], [], [], set()),
    "a code no rule owns yet is kept": ([], [(6, "GML999", None)], [], [], {(6, "GML999", "trace", "runtime-only")}),
}


@pytest.mark.parametrize("name", CASES)
def test_cross_reference(tmp_path, name):
    static_rows, findings, evidence_rows, seen_rows, expected = CASES[name]
    path = tmp_path / "train.py"
    path.write_text(SOURCE, encoding="utf-8")
    report = cross_reference(
        [observed(path, row, code, related) for row, code, related in findings],
        [observed(path, row) for row in evidence_rows],
        [static(path, row) for row in static_rows],
        {(str(path), row) for row in seen_rows},
        SELECTED,
    )
    assert {(d.start.row, d.code, d.source, d.status) for d in report} == expected
    for diagnostic in report:
        if diagnostic.status == "confirmed" and findings and findings[0][2]:
            assert [(r.start.row, r.message) for r in diagnostic.related] == [(findings[0][2], "read")]


def test_repeats_of_one_line_are_one_finding_with_their_count(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(SOURCE, encoding="utf-8")
    confirming = [observed(path, 6, related_row=row) for row in (7, 7, 4)]
    runtime_only = [observed(path, 10, "GML101", related_row=row) for row in (4, 5)]
    report = cross_reference(confirming + runtime_only, [], [static(path, 6)], set(), SELECTED)
    assert [(d.start.row, d.status) for d in report] == [(6, "confirmed"), (10, "runtime-only")]
    assert all("2 times" in d.message or "3 times" in d.message for d in report)


@pytest.mark.parametrize(
    ("seen_rows", "message"),
    [([], "tracing stopped at --max-ops before this line: "), ([6], "the line ran, but tracing stopped at --max-ops")],
)
def test_static_findings_say_that_tracing_stopped(tmp_path, seen_rows, message):
    path = tmp_path / "train.py"
    path.write_text(SOURCE, encoding="utf-8")
    seen = {(str(path), row) for row in seen_rows}
    [diagnostic] = cross_reference([], [], [static(path, 6)], seen, SELECTED, stopped_by="--max-ops")
    assert diagnostic.status == "not-traced" and diagnostic.message.startswith(message)


def test_with_the_static_check_off_a_finding_does_not_claim_it_missed_something(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(SOURCE, encoding="utf-8")
    [diagnostic] = cross_reference([observed(path, 6)], [], [], set(), SELECTED, static_checked=False)
    assert diagnostic.status == "static-check-off"
    assert diagnostic.message.startswith("seen at run time (static check off): ")


def test_the_summary_counts_what_the_run_observed_apart_from_the_static_findings_it_did_not(tmp_path):
    """Issue 19 item 6: `check`'s "Found N errors" counted every static finding of a trace report as found."""
    path = tmp_path / "train.py"
    path.write_text(SOURCE, encoding="utf-8")
    warning = replace(static(path, 4, "GML102"), severity=Severity.WARNING)
    report = cross_reference(
        [observed(path, 6, related_row=7), observed(path, 10, "GML101")],
        [],
        [static(path, 6), warning, static(path, 9, "GML106")],
        {(str(path), 9)},
        SELECTED,
    )
    assert summary(report) == [
        "Found 2 errors at run time (1 confirmed, 1 runtime-only).",
        "2 static findings not observed (1 reached-not-observed, 1 not-reached).",
    ]
    assert summary([d for d in report if d.source == "check"]) == [
        "No hazards observed.",
        "2 static findings not observed (1 reached-not-observed, 1 not-reached).",
    ]
    assert summary([d for d in report if d.source == "trace"]) == [
        "Found 2 errors at run time (1 confirmed, 1 runtime-only)."
    ]


def test_the_summary_counts_warnings_as_warnings(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(SOURCE, encoding="utf-8")
    found = cross_reference([observed(path, 6)], [], [static(path, 6)], set(), SELECTED)
    warnings = [replace(d, severity=Severity.WARNING) for d in found]
    assert summary(warnings) == ["Found 1 warning at run time (1 confirmed)."]
    assert summary([]) == ["No hazards observed."]
