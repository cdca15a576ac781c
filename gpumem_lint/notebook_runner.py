"""Lint or fix one notebook for the runner: its joined code cells go through the engine as
one text, and the findings, fixes and diffs come back per cell (see `notebook`)."""

from __future__ import annotations

import difflib
from pathlib import Path

from gpumem_lint import notebook as nb
from gpumem_lint.autofix import fix_source, write_fixed
from gpumem_lint.cache import content_hash
from gpumem_lint.engine import lint_source, tool_diagnostic
from gpumem_lint.rules import UnreadableFile
from gpumem_lint.runner import FileResult, FixMode, Job


def notebook_job(job: Job, data: bytes, digest: str | None, rules, fix: FixMode | None) -> FileResult:
    try:
        notebook = nb.read_notebook(data)
    except nb.NotebookError as error:
        return FileResult(tuple(tool_diagnostic(UnreadableFile, job.display, rules, str(error))), digest=digest)
    dependencies: set[Path] = set()
    if fix is None:
        found = lint_source(notebook.text, job.display, rules, dependencies)
        return FileResult(tuple(nb.to_cells(notebook, found)), dependencies=frozenset(dependencies), digest=digest)
    outcome = fix_source(notebook.text, job.display, rules, unsafe=fix.unsafe, dependencies=dependencies)
    sources = nb.with_text(notebook, outcome.text) if outcome.text != notebook.text else {}
    if not sources:  # nothing changed, or a change across cells, which a notebook cannot take
        found = outcome.remaining if sources == {} else lint_source(notebook.text, job.display, rules)
        broken = outcome.broken if sources == {} else tuple(d.code for d in outcome.fixed)
        return FileResult(tuple(nb.to_cells(notebook, found)), broken=broken, digest=digest)
    written = nb.write_sources(notebook, sources, data)
    fixed_notebook = nb.read_notebook(written)
    remaining = tuple(nb.to_cells(fixed_notebook, outcome.remaining))
    fixed = tuple(nb.to_cells(notebook, outcome.fixed))
    if not fix.write:
        return FileResult(remaining, fixed, _diff(notebook, sources, job.display), outcome.broken)
    try:
        write_fixed(job.path, written)
    except OSError as error:
        unchanged = nb.to_cells(notebook, lint_source(notebook.text, job.display, rules))
        return FileResult(tuple(unchanged), digest=digest, write_error=error.strerror or str(error))
    return FileResult(remaining, fixed, "", outcome.broken, frozenset(dependencies), content_hash(written))


def _diff(notebook: nb.Notebook, sources: dict[int, str], display: str) -> str:
    """One unified diff per changed cell, named `path:cell N`."""
    diffs = []
    for cell in notebook.cells:
        if cell.number in sources:
            name = f"{display}:cell {cell.number}"
            after = sources[cell.number] + ("" if cell.had_final_newline else "\n")
            diffs.extend(
                difflib.unified_diff(
                    cell.source.splitlines(keepends=True), after.splitlines(keepends=True), name, name
                )
            )
    return "".join(diffs)
