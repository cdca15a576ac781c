"""What `gpumem-lint check` does once its options are parsed: lint files or standard input,
fix or diff, add noqa comments, report, and choose the exit code (ruff's contract).

It needs neither typer nor rich: `cli.main` parses the common forms of `check` itself and
calls `run_check`, so a run with nothing to report imports neither (a pre-commit run on a
few files); rich's Console is made only for a report that prints findings.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import IO, TYPE_CHECKING

from gpumem_lint.cache import DEFAULT_DIRECTORY, Cache
from gpumem_lint.config import CliOverrides, ConfigError, Settings, display_path, load_settings
from gpumem_lint.diagnostics import Diagnostic
from gpumem_lint.discovery import SourceFile, discover_files, missing_paths
from gpumem_lint.notebook import SUFFIX as NOTEBOOK_SUFFIX
from gpumem_lint.output import OutputFormat, summary, write_report
from gpumem_lint.progress import progress_bar, wanted
from gpumem_lint.runner import FixMode, Job, RunResult, lint_jobs, unified_diff
from gpumem_lint.selection import RuleSelection
from gpumem_lint.source import decode_source

if TYPE_CHECKING:
    from rich.console import Console

CACHE_DIR_VARIABLE = "GPUMEM_LINT_CACHE_DIR"
_TEXT_FORMATS = (OutputFormat.FULL, OutputFormat.CONCISE)


@dataclass(frozen=True)
class Request:
    output_format: OutputFormat
    quiet: bool = False
    statistics: bool = False
    exit_zero: bool = False
    fix: bool = False
    unsafe_fixes: bool = False
    diff: bool = False
    show_fixes: bool = False
    exit_non_zero_on_fix: bool = False
    add_noqa: bool = False
    use_cache: bool = True
    cache_dir: Path | None = None


@dataclass(frozen=True)
class Selectors:
    """The paths and rule selectors of a `check` command line."""

    paths: Sequence[str] | None = None
    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    force_exclude: bool = False
    config: Path | None = None
    stdin_filename: Path | None = None


class Report:
    """Where the report goes: stdout, stderr or an open file. rich's Console is made on first use;
    a report of nothing but its summary line is written as that Console would write it."""

    def __init__(self, stderr: bool = False, stream: IO[str] | None = None) -> None:
        self.stderr = stderr
        self.stream = stream

    @cached_property
    def console(self) -> Console:
        from rich.console import Console

        # Markup, emoji codes and highlighting are off: messages are printed as written, never wrapped.
        options = {"soft_wrap": True, "markup": False, "emoji": False, "highlight": False}
        if self.stream is None:
            return Console(stderr=self.stderr, **options)
        return Console(file=self.stream, no_color=True, color_system=None, **options)

    def line(self, text: str) -> None:
        if "console" in self.__dict__:
            self.console.print(text)
            return
        stream = self.stream or (sys.stderr if self.stderr else sys.stdout)
        stream.write(text + "\n")
        stream.flush()


def split(values: Sequence[str] | None) -> tuple[str, ...]:
    """`--select A,B --select C` -> ("A", "B", "C")."""
    return tuple(part.strip() for value in values or () for part in value.split(",") if part.strip())


def run_check(selectors: Selectors, request: Request, output_file: Path | None = None) -> int:
    """`gpumem-lint check`: lint the paths (or standard input), report, and return the exit code."""
    paths, stdin_filename = selectors.paths, selectors.stdin_filename
    from_stdin = paths == ["-"] or (stdin_filename is not None and not paths)
    arguments = [str(stdin_filename or ".")] if from_stdin else list(paths or ["."])
    try:
        overrides = CliOverrides(selectors.select, selectors.extend_select, selectors.ignore, selectors.force_exclude)
        settings = load_settings(arguments, overrides, selectors.config)
        selection = RuleSelection.from_settings(settings)
        files = [] if from_stdin else discover_files(arguments, settings)
    except ConfigError as error:
        _error(str(error))
        return 2
    # A path that names nothing is a usage error (exit 2), but the paths that exist are still linted.
    missing = [] if from_stdin else missing_paths(arguments)
    for argument in missing:
        _error(f"{argument}: no such file or directory")
    if from_stdin:
        # With --fix, stdout carries the fixed source, so the report goes to stderr.
        return _reporting(
            output_file,
            request.fix,
            lambda report: check_stdin(sys.stdin.buffer.read(), stdin_filename, selection, settings, request, report),
        )
    if not files and not missing and not request.quiet:
        _error_stream_line("warning: No Python files found under the given path(s)")
    code = _reporting(output_file, False, lambda report: check_files(files, selection, settings, request, report))
    return 2 if missing else code


def _reporting(output_file: Path | None, stderr: bool, work: Callable[[Report], int]) -> int:
    if output_file is None:
        return work(Report(stderr=stderr))
    try:
        with output_file.open("w", encoding="utf-8") as stream:
            return work(Report(stream=stream))
    except OSError as error:
        _error(f"{output_file}: cannot write output file: {error.strerror or error}")
        return 2


def cache_directory(settings: Settings, option: Path | None) -> Path:
    """--cache-dir, else GPUMEM_LINT_CACHE_DIR, else `.gpumem_lint_cache` in the project root."""
    chosen = option or (Path(os.environ[CACHE_DIR_VARIABLE]) if os.environ.get(CACHE_DIR_VARIABLE) else None)
    return Path(os.path.abspath(chosen)) if chosen else settings.project_root / DEFAULT_DIRECTORY


def check_files(
    files: Sequence[SourceFile], selection: RuleSelection, settings: Settings, request: Request, report: Report
) -> int:
    """Lint (fix, diff, add noqa to) `files`, report, and return the exit code."""
    jobs = [Job(file.path, file.display, selection.codes_for(file.path)) for file in files]
    fixing = request.fix or request.diff
    cache = Cache(cache_directory(settings, request.cache_dir), settings.project_root) if request.use_cache else None
    mode = FixMode(unsafe=request.unsafe_fixes, write=not request.diff) if fixing else None
    with progress_bar(len(jobs), wanted(len(jobs), request.quiet)) as advance:
        result = lint_jobs(jobs, cache=cache, fix=mode, on_file_done=advance)
    _warn_broken(result)
    if request.diff:
        return _report_diff(result, request)
    if request.add_noqa:
        return _add_noqa(files, result.diagnostics)
    code = _report(result.diagnostics, result.fixed, request, report)
    for display, reason in result.write_errors:
        _error(f"{display}: cannot write the fixes: {reason}")
    return 2 if result.write_errors else code


def check_stdin(
    data: bytes, filename: Path | None, selection: RuleSelection, settings: Settings, request: Request, report: Report
) -> int:
    """Standard input, named `filename` (for configuration and output) or `-`. With --fix the fixed
    source goes to stdout (and the report to `report`, stderr then), as editors expect."""
    cwd = Path.cwd()
    display = display_path(Path(os.path.abspath(filename)), cwd) if filename else "-"
    if (
        filename
        and settings.force_exclude
        and os.path.lexists(filename)
        and not discover_files([str(filename)], settings)
    ):
        if request.fix:
            sys.stdout.buffer.write(data)
        return 0  # excluded: passed through untouched
    from gpumem_lint.autofix import encode_like, fix_source
    from gpumem_lint.engine import lint_bytes
    from gpumem_lint.rules import RULES_BY_CODE

    codes = selection.codes_for(Path(os.path.abspath(filename))) if filename else selection.codes
    rules = [RULES_BY_CODE[code] for code in codes]
    if filename is not None and filename.suffix == NOTEBOOK_SUFFIX:
        if request.fix or request.diff:
            _error("a notebook on standard input can be linted, not fixed")
            return 2
        from gpumem_lint.notebook_runner import notebook_job

        result = notebook_job(Job(filename, display, tuple(codes)), data, None, rules, None)
        return _report(result.diagnostics, (), request, report, {display: data})
    try:
        text = decode_source(data)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        text = None
    if text is None or not (request.fix or request.diff):
        if request.fix:
            sys.stdout.buffer.write(data)  # not decodable: nothing to fix
        return _report(lint_bytes(data, display, rules), (), request, report, {display: data})
    outcome = fix_source(text, display, rules, unsafe=request.unsafe_fixes)
    if request.diff:
        diff = unified_diff(text, outcome.text, display) if outcome.text != text else ""
        result = RunResult(list(outcome.remaining), list(outcome.fixed), [diff] if diff else [])
        return _report_diff(result, request)
    fixed = encode_like(outcome.text, data)
    sys.stdout.buffer.write(fixed)
    sys.stdout.flush()
    return _report(list(outcome.remaining), list(outcome.fixed), request, report, {display: fixed})


def _report(
    diagnostics: Sequence[Diagnostic],
    fixed: Sequence[Diagnostic],
    request: Request,
    report: Report,
    linted: dict[str, bytes] | None = None,
) -> int:
    """`linted`: the contents linted that are not on disk (standard input), for code frames."""
    if not diagnostics and not fixed and request.output_format in _TEXT_FORMATS and not request.statistics:
        for line in [] if request.quiet else summary(diagnostics, fixed, request.unsafe_fixes):
            report.line(line)  # nothing to print but the summary: no need for rich
    else:
        write_report(
            diagnostics,
            report.console,
            request.output_format,
            quiet=request.quiet,
            show_statistics=request.statistics,
            fixed=fixed,
            unsafe_fixes=request.unsafe_fixes,
            show_fixes=request.show_fixes,
            linted=linted,
        )
    if request.exit_zero:
        return 0
    return 1 if diagnostics or (request.exit_non_zero_on_fix and fixed) else 0


def _report_diff(result: RunResult, request: Request) -> int:
    """`--diff`: the diffs on stdout, a count on stderr; exit 1 when there would be changes."""
    from gpumem_lint.output import counted, hidden_fixes, plural

    for diff in result.diffs:
        sys.stdout.write(diff)
    if not request.quiet:
        said = f"Would fix {counted(result.fixed)}" if result.fixed else "Nothing would be fixed"
        hidden = 0 if request.unsafe_fixes else hidden_fixes(result.diagnostics)
        hint = f" ({plural(hidden, 'more fix', 'more fixes')} with `--unsafe-fixes`)" if hidden else ""
        _error_stream_line(f"{said}{hint}.")
    return 1 if result.diffs else 0


def _add_noqa(files: Sequence[SourceFile], diagnostics: Sequence[Diagnostic]) -> int:
    from gpumem_lint.autofix import write_fixed

    by_display: dict[str, list[Diagnostic]] = {}
    for diagnostic in diagnostics:
        by_display.setdefault(diagnostic.path, []).append(diagnostic)
    added = 0
    failed = False
    for file in files:
        found = by_display.get(file.display)
        if not found:
            continue
        try:
            data = file.path.read_bytes()
        except OSError:
            continue
        new_data, count = _with_noqa(file, data, found)
        if not count:
            continue
        try:
            write_fixed(file.path, new_data)
        except OSError as error:
            _error(f"{file.display}: cannot add noqa directives: {error.strerror or error}")
            failed = True
        else:
            added += count
    _error_stream_line(f"Added {added} noqa directive{'' if added == 1 else 's'}.")
    return 2 if failed else 0


def _with_noqa(file: SourceFile, data: bytes, found: list[Diagnostic]) -> tuple[bytes, int]:
    """The file's new bytes and how many directives they add (0: leave the file alone)."""
    from gpumem_lint import notebook
    from gpumem_lint.add_noqa import add_noqa
    from gpumem_lint.autofix import encode_like, parses

    if file.path.suffix == notebook.SUFFIX:
        try:
            document = notebook.read_notebook(data)
        except notebook.NotebookError:
            return data, 0
        text, count = add_noqa(document.text, [notebook.to_text(document, d) for d in found if d.cell])
        sources = notebook.with_text(document, text) if count and parses(text, file.display) else None
        return (notebook.write_sources(document, sources, data), count) if sources else (data, 0)
    try:
        text = decode_source(data)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        return data, 0
    new_text, count = add_noqa(text, found)
    if not count or not parses(new_text, file.display):
        return data, 0
    return encode_like(new_text, data), count


def _error(message: str) -> None:
    _error_stream_line(f"gpumem-lint: error: {message}")


def _error_stream_line(text: str) -> None:
    """A line on stderr, as typer.echo(..., err=True) writes it."""
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def _warn_broken(result: RunResult) -> None:
    for display, code in result.broken:
        _error_stream_line(
            f"gpumem-lint: warning: a {code} fix in {display} would have left the file unparsable, so it was "
            "not applied; please report this with the file"
        )
