"""Lint many files: in this process for a few, over all cores for many; same output either way."""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from gpumem_lint.diagnostics import Diagnostic
from gpumem_lint.engine import lint_path
from gpumem_lint.rules import RULES_BY_CODE

#: Below this many files a process pool costs more than it saves.
_PARALLEL_THRESHOLD = 16
#: Small chunks: one huge generated file must not hold up a whole batch.
_CHUNK_SIZE = 4

Job = tuple[Path, str, tuple[str, ...]]


def lint_jobs(jobs: Sequence[Job]) -> list[Diagnostic]:
    """Each job is (path, display path, selected codes). Results sorted by path, row, column."""
    workers = min(_available_cores(), len(jobs) // _PARALLEL_THRESHOLD)
    if workers <= 1:
        results = map(_lint_job, jobs)
        diagnostics = [d for result in results for d in result]
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            diagnostics = [d for result in pool.map(_lint_job, jobs, chunksize=_CHUNK_SIZE) for d in result]
    return sorted(diagnostics, key=lambda diagnostic: diagnostic.sort_key)


def _lint_job(job: Job) -> list[Diagnostic]:
    path, display, codes = job
    return lint_path(path, display, [RULES_BY_CODE[code] for code in codes])


def _available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
