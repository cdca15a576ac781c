"""Lint many files: cached results first, then the rest in this process for a few files or
over all cores for many; the same sorted output either way.

With a `FixMode` each file is fixed as well (see `autofix`): written back atomically, or,
for `--diff`, turned into a unified diff and left alone.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from gpumem_lint import collector, untriggered
from gpumem_lint.cache import Cache, content_hash
from gpumem_lint.diagnostics import Diagnostic, Position, fix_allowed
from gpumem_lint.notebook import SUFFIX as NOTEBOOK_SUFFIX
from gpumem_lint.source import decode_source

if TYPE_CHECKING:
    from gpumem_lint.rules.base import Rule

#: Below this many files a process pool costs more than it saves.
_PARALLEL_THRESHOLD = 16
#: Small chunks: one huge generated file must not hold up a whole batch.
_CHUNK_SIZE = 4


@dataclass(frozen=True)
class Job:
    path: Path
    #: How output names the file.
    display: str
    #: The rule codes selected for this file.
    codes: tuple[str, ...]


@dataclass(frozen=True)
class FixMode:
    unsafe: bool = False
    #: False for `--diff`: compute the fixed text, leave the file as it is.
    write: bool = True


@dataclass(frozen=True)
class FileResult:
    diagnostics: tuple[Diagnostic, ...]
    fixed: tuple[Diagnostic, ...] = ()
    diff: str = ""
    #: Codes whose fixes were dropped because the file would not have parsed.
    broken: tuple[str, ...] = ()
    dependencies: frozenset[Path] = frozenset()
    #: Content hash of the text the diagnostics describe, when they may be cached.
    digest: str | None = None
    #: Why the fixed text could not be written (the file is left as it was).
    write_error: str | None = None
    #: Summaries of imported modules computed while linting it (module_graph.take_computed).
    summaries: dict = field(default_factory=dict)


@dataclass
class RunResult:
    diagnostics: list[Diagnostic] = field(default_factory=list)
    fixed: list[Diagnostic] = field(default_factory=list)
    #: One unified diff per file that `--diff` would change, in path order.
    diffs: list[str] = field(default_factory=list)
    #: (display path, code) of fixes that were dropped because the result did not parse.
    broken: list[tuple[str, str]] = field(default_factory=list)
    #: (display path, reason) of files whose fixes could not be written.
    write_errors: list[tuple[str, str]] = field(default_factory=list)


def lint_jobs(
    jobs: Sequence[Job],
    *,
    cache: Cache | None = None,
    fix: FixMode | None = None,
    on_file_done: Callable[[], None] | None = None,
    cores: int | None = None,
) -> RunResult:
    """Lint (and fix) every job; findings sorted by path, row, column."""
    results: list[FileResult | None] = [None] * len(jobs)
    pending: list[tuple[int, Job, bytes | None, str | None]] = []
    for index, job in enumerate(jobs):
        try:
            data = job.path.read_bytes()
        except OSError:
            pending.append((index, job, None, None))  # the worker reports it (GML003)
            continue
        digest = content_hash(data)
        cached = cache.lookup(job.path, job.display, digest, job.codes) if cache else None
        if cached is not None and not (fix and any(d.fix and fix_allowed(d.fix, fix.unsafe) for d in cached)):
            results[index] = FileResult(tuple(cached))
            if on_file_done:
                on_file_done()
            continue
        pending.append((index, job, data, digest))
    workers = min(cores or _available_cores(), len(pending) // _PARALLEL_THRESHOLD)
    if workers > 1:  # largest first: a large file handed out last would keep the other workers waiting
        pending.sort(key=lambda item: -len(item[2] or b""))
    else:  # a few files (a pre-commit run): those no selected rule can flag need neither the rules nor libcst
        pending = _answer_untriggered(pending, results, cache, on_file_done)
    work = [(job, data, digest, fix) for _, job, data, digest in pending]
    if work:
        _load_linter()  # before the heap is frozen; once, rather than in every worker the pool forks
        _lint(pending, work, workers, results, cache, on_file_done)
    if cache:
        cache.save()
    run = RunResult()
    for job, result in zip(jobs, results):
        run.diagnostics.extend(result.diagnostics)
        run.fixed.extend(result.fixed)
        if result.diff:
            run.diffs.append(result.diff)
        run.broken.extend((job.display, code) for code in result.broken)
        if result.write_error:
            run.write_errors.append((job.display, result.write_error))
    run.diagnostics.sort(key=lambda diagnostic: diagnostic.sort_key)
    run.fixed.sort(key=lambda diagnostic: diagnostic.sort_key)
    return run


def _lint(pending, work, workers: int, results, cache: Cache | None, on_file_done) -> None:
    """Lint in this process or over a pool; the summaries of imported modules the cache kept are
    used where they still hold, and those computed now are kept for the next run."""
    from gpumem_lint.semantic.module_graph import share_summaries

    known = cache.summaries if cache else None
    with collector.linting():
        if workers <= 1:
            share_summaries(None, known, keep=cache is not None)
            try:
                _collect(pending, map(_run_job, work), results, cache, on_file_done)
            finally:
                share_summaries(None)
            return
        import tempfile
        from concurrent.futures import ProcessPoolExecutor  # 14 ms to import: only for a pool

        with (
            tempfile.TemporaryDirectory(prefix="gpumem-lint-") as shared,
            ProcessPoolExecutor(
                max_workers=workers, initializer=share_summaries, initargs=(Path(shared), known, cache is not None)
            ) as pool,
        ):
            _collect(pending, pool.map(_run_job, work, chunksize=_CHUNK_SIZE), results, cache, on_file_done)


def _answer_untriggered(pending, results, cache, on_file_done) -> list:
    """Answer the pending `.py` files that show no trigger of their rules (`untriggered`); the rest."""
    left = []
    for item in pending:
        _, job, data, digest = item
        found = (
            None
            if data is None or job.path.suffix == NOTEBOOK_SUFFIX
            else untriggered.answer(data, job.display, job.codes)
        )
        if found is None:
            left.append(item)
            continue
        _collect([item], [FileResult(tuple(found), digest=digest)], results, cache, on_file_done)
    return left


def _collect(pending, outcomes, results, cache, on_file_done) -> None:
    for (index, job, _, _), outcome in zip(pending, outcomes):
        results[index] = outcome
        if cache and outcome.digest is not None:
            cache.store(job.path, outcome.digest, job.codes, outcome.diagnostics, outcome.dependencies)
        if cache:
            cache.store_summaries(outcome.summaries)
        if on_file_done:
            on_file_done()


def _run_job(work: tuple[Job, bytes | None, str | None, FixMode | None]) -> FileResult:
    """Lint one file, with the summaries of imported modules computed for it (for the cache)."""
    from gpumem_lint.semantic.module_graph import take_computed

    return replace(_lint_one(work), summaries=take_computed())


def _lint_one(work: tuple[Job, bytes | None, str | None, FixMode | None]) -> FileResult:
    job = work[0]
    try:
        return _lint_or_fix(*work)
    except Exception as error:
        from gpumem_lint.rules import InternalError

        if InternalError.code not in job.codes:
            return FileResult(())
        import traceback

        where = traceback.extract_tb(error.__traceback__)[-1]
        message = (
            f"internal error ({type(error).__name__} at {where.filename.rsplit('/', 1)[-1]}:{where.lineno}); "
            "please report it with this file"
        )
        start = Position(1, 1)
        return FileResult(
            (
                Diagnostic(
                    job.display,
                    start,
                    start,
                    InternalError.code,
                    InternalError.name,
                    message,
                    InternalError.fix_title,
                    InternalError.severity,
                ),
            )
        )


def _load_linter() -> dict[str, type[Rule]]:
    """The rules by code, with the engine (and libcst): loaded only for a file the cache cannot answer."""
    import gpumem_lint.engine  # noqa: F401
    from gpumem_lint.rules import RULES_BY_CODE

    return RULES_BY_CODE


def _lint_or_fix(job: Job, data: bytes | None, digest: str | None, fix: FixMode | None) -> FileResult:
    from gpumem_lint.engine import lint_bytes, lint_path

    rules = [_load_linter()[code] for code in job.codes]
    if data is None:
        return FileResult(tuple(lint_path(job.path, job.display, rules)))
    if job.path.suffix == NOTEBOOK_SUFFIX:
        from gpumem_lint.notebook_runner import notebook_job

        return notebook_job(job, data, digest, rules, fix)
    if fix is not None:
        try:
            text = decode_source(data)
        except (SyntaxError, UnicodeDecodeError, LookupError):
            pass  # not decodable: linting reports it, there is nothing to fix
        else:
            return _fix_job(job, data, text, digest, rules, fix)
    dependencies: set[Path] = set()
    diagnostics = lint_bytes(data, job.display, rules, dependencies)
    return FileResult(tuple(diagnostics), dependencies=frozenset(dependencies), digest=digest)


def _fix_job(job: Job, data: bytes, text: str, digest: str | None, rules, fix: FixMode) -> FileResult:
    from gpumem_lint.autofix import encode_like, fix_source, write_fixed
    from gpumem_lint.engine import lint_source

    dependencies: set[Path] = set()
    outcome = fix_source(text, job.display, rules, unsafe=fix.unsafe, dependencies=dependencies)
    if outcome.text == text:
        return FileResult(outcome.remaining, broken=outcome.broken, dependencies=frozenset(dependencies), digest=digest)
    if not fix.write:
        return FileResult(
            outcome.remaining, outcome.fixed, unified_diff(text, outcome.text, job.display), outcome.broken
        )
    written = encode_like(outcome.text, data)
    try:
        write_fixed(job.path, written)
    except OSError as error:
        # The file keeps its text, so its findings are those of that text.
        unchanged = lint_source(text, job.display, rules)
        return FileResult(tuple(unchanged), digest=digest, write_error=error.strerror or str(error))
    # What remains describes the new content: cache it under that content's hash.
    return FileResult(
        outcome.remaining, outcome.fixed, "", outcome.broken, frozenset(dependencies), content_hash(written)
    )


def unified_diff(before: str, after: str, display: str) -> str:
    import difflib

    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), fromfile=display, tofile=display
    )
    return "".join(line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n" for line in lines)


def _available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
