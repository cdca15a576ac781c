"""`gpumem-lint trace`: run the program under the tracer, then report what happened.

The program's stdout is left alone: the report goes to stderr after the program has finished (or to
`--output-file`). Exit code: the program's own when it is not 0; else 1 when a hazard was observed; else 0.
An uncaught KeyboardInterrupt ends the process by SIGINT, as it does under python. With `--nproc-per-node`
the command starts torchrun, whose ranks each run this command and leave their observation to it (ranks.py).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from gpumem_lint.config import CliOverrides
from gpumem_lint.output import OutputFormat, write_report


@dataclass(frozen=True)
class TraceOptions:
    script: str | None
    module: str | None
    args: list[str]
    output_format: OutputFormat
    output_file: Path | None
    max_ops: int | None
    max_seconds: float | None
    overrides: CliOverrides
    max_steps: int | None = None
    static: bool = True
    quiet: bool = False
    nproc_per_node: int | None = None


class UsageError(Exception):
    pass


#: What trace needs beyond the linter is torch alone (pyproject's [trace] extra); gpumem-lint is not on PyPI, so
#: `pip install 'gpumem-lint[trace]'` fails. The CUDA builds are chosen on pytorch.org's install page.
INSTALL_HINT = "pip install torch (a CUDA build: https://pytorch.org/get-started/locally/)"


def run_trace(options: TraceOptions) -> None:
    """Never returns: the process ends with the program's exit status (see the module docstring)."""
    if not _importable("torch"):
        raise UsageError(f"`gpumem-lint trace` needs PyTorch in this environment: {INSTALL_HINT}")
    if options.script is not None:
        _check_readable(options.script)
    if options.output_file is not None:
        _check_writable(options.output_file)
    if options.nproc_per_node is not None:
        _run_ranks(options)
    from gpumem_lint.trace import launcher
    from gpumem_lint.trace.ranks import rank_folder, write_rank_observation
    from gpumem_lint.trace.session import Session

    records = Path(tempfile.mkdtemp(prefix="gpumem-lint-trace-"))
    session = Session(
        records, max_ops=options.max_ops, max_seconds=options.max_seconds, max_steps=options.max_steps
    )
    ranks = rank_folder()

    def finish() -> bool:
        """Report (or, in a rank, leave the observation for the command that started torchrun)."""
        session.stop()
        script = _script_path(options)
        observation = session.observation(script)
        shutil.rmtree(records, ignore_errors=True)
        if ranks is not None:
            write_rank_observation(ranks, observation)
            return False  # a rank exits with the program's code: the command decides
        return _report(observation, options, script)

    def report_at_os_exit(code: int) -> int:
        observed = finish()
        sys.stderr.flush()  # not stdout: what the program left unflushed is lost, as under python
        return code or (1 if observed else 0)

    session.on_os_exit = report_at_os_exit
    session.install()
    if options.module is not None:
        outcome = launcher.run_module(options.module, options.args, session.on_uncaught)
    elif is_notebook(options.script):
        outcome = launcher.run_notebook(options.script, options.args, session.on_uncaught)
    else:
        outcome = launcher.run_script(options.script, options.args, session.on_uncaught)
    launcher.shut_down()
    if os.getpid() != session.pid or session.is_child:
        # A child forked by the program that returned instead of exiting: it leaves records, no report.
        session.write_child_records()
        sys.exit(outcome.exit_code)
    observed = finish()
    sys.stdout.flush()
    sys.stderr.flush()
    if outcome.interrupted:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    sys.exit(outcome.exit_code or (1 if observed else 0))


def _run_ranks(options: TraceOptions) -> None:
    """`--nproc-per-node`: torchrun runs the program traced on each rank; one report of them all. Never returns."""
    from gpumem_lint.trace.ranks import run_ranks

    limits = [
        *(["--max-ops", str(options.max_ops)] if options.max_ops is not None else []),
        *(["--max-seconds", str(options.max_seconds)] if options.max_seconds is not None else []),
        *(["--trace-steps", str(options.max_steps)] if options.max_steps is not None else []),
    ]
    program = ["-m", options.module] if options.module is not None else [options.script]
    with tempfile.TemporaryDirectory(prefix="gpumem-lint-ranks-") as folder:
        code, observation = run_ranks(options.nproc_per_node, [*limits, *program, *options.args], Path(folder))
    observed = _report(observation, options, options.script)
    sys.exit(code or (1 if observed else 0))


def _report(observation, options: TraceOptions, script: str | None) -> bool:
    """Write the report; whether any hazard was observed. A failure here is ours: say so, keep the exit code.
    `script` decides which configuration applies (the current directory's without one)."""
    try:
        from gpumem_lint.config import load_settings
        from gpumem_lint.selection import RuleSelection
        from gpumem_lint.trace.crossref import cross_reference, static_findings
        from gpumem_lint.trace.notebooks import to_cells

        selected = frozenset(RuleSelection.from_settings(load_settings([script or "."], options.overrides)).codes)
        static = []
        if options.static:
            static = static_findings([Path(file) for file in observation.files], options.overrides)
        diagnostics = cross_reference(
            observation.findings,
            observation.evidence,
            static,
            observation.seen,
            selected,
            static_checked=options.static,
            stopped_by=observation.stopped_by,
        )
        diagnostics = to_cells(diagnostics, [*observation.files, *([script] if script else [])])
        console_options = {"soft_wrap": True, "markup": False, "emoji": False, "highlight": False}
        if options.output_file is not None:
            with options.output_file.open("w", encoding="utf-8") as stream:
                _write(diagnostics, Console(file=stream, no_color=True, color_system=None, **console_options), options)
        else:
            _write(diagnostics, Console(stderr=True, **console_options), options)
        return any(d.source == "trace" for d in diagnostics)
    except Exception as error:
        print(f"gpumem-lint trace: error: could not write the report ({error!r})", file=sys.stderr)
        return False


def _write(diagnostics, console: Console, options: TraceOptions) -> None:
    """`check`'s report, with a code frame for each line a finding's story names (report.py), then a verdict per
    static finding and the summary of a run (crossref.summary): what was observed, apart from what was not."""
    from gpumem_lint.trace.crossref import summary
    from gpumem_lint.trace.report import render_full, verdicts

    if options.output_format is OutputFormat.FULL:
        render_full(diagnostics, console)
    else:
        write_report(diagnostics, console, options.output_format, quiet=True)
    if not options.quiet and options.output_format in (OutputFormat.FULL, OutputFormat.CONCISE):
        for line in [*verdicts(diagnostics), *summary(diagnostics)]:
            console.print(line)


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ImportError:
        return False


def _script_path(options: TraceOptions) -> str | None:
    if options.script is not None:
        return options.script
    main = sys.modules.get("__main__")
    return getattr(main, "__file__", None)


def _check_readable(script: str) -> None:
    """A script python could not open, or a notebook that is not one, is a usage error: nothing runs, so there is
    nothing to report."""
    try:
        data = Path(script).read_bytes()
    except OSError as error:
        raise UsageError(f"{script}: cannot open the script to trace: {error.strerror or error}") from None
    if is_notebook(script):
        from gpumem_lint.notebook import NotebookError, read_notebook

        try:
            read_notebook(data)
        except NotebookError as error:
            raise UsageError(f"{script}: {error}") from None


def is_notebook(script: str | None) -> bool:
    """A notebook runs as its code cells (launcher.run_notebook), like `jupyter nbconvert --execute`."""
    from gpumem_lint.notebook import SUFFIX

    return script is not None and script.endswith(SUFFIX)


def _check_writable(path: Path) -> None:
    try:
        path.open("a", encoding="utf-8").close()
    except OSError as error:
        raise UsageError(f"{path}: cannot write output file: {error.strerror or error}") from None
