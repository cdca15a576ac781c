"""The `trace` subcommand's options (typer). Nothing here imports torch: the command imports it only to run.

Like `python`, everything after the script (or after `-m MODULE`) belongs to the program, options included:
`split_arguments` puts a `--` there before typer parses the line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from gpumem_lint.config import CliOverrides
from gpumem_lint.output import OutputFormat

#: Our options that take a value (their value is not the script).
_VALUED = (
    "--output-format",
    "--output-file",
    "-o",
    "--max-ops",
    "--max-seconds",
    "--trace-steps",
    "--select",
    "--extend-select",
    "--ignore",
    "--nproc-per-node",
)


def split_arguments(args: list[str]) -> list[str]:
    """`[opts] SCRIPT a b` -> `[opts] -- SCRIPT a b`; `[opts] -m MOD a b` -> `[opts] -m MOD -- a b`."""
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            return args
        if arg in ("-m", "--module"):
            return [*args[: index + 2], "--", *args[index + 2 :]]
        if arg.startswith("-m") and len(arg) > 2 and not arg.startswith("--"):
            return [*args[:index], "-m", arg[2:], "--", *args[index + 1 :]]
        if arg in _VALUED:
            index += 2
            continue
        if not arg.startswith("-") or arg == "-":
            return [*args[:index], "--", *args[index:]]
        index += 1
    return args


def trace(
    program: Annotated[
        Optional[list[str]],
        typer.Argument(metavar="SCRIPT [ARGS]...", help="The script to run and its arguments (or ARGS after -m)."),
    ] = None,
    module: Annotated[
        Optional[str], typer.Option("-m", "--module", metavar="MODULE", help="Run a module, as `python -m`.")
    ] = None,
    output_format: Annotated[
        OutputFormat, typer.Option(envvar="GPUMEM_LINT_OUTPUT_FORMAT", help="How to print findings.")
    ] = OutputFormat.FULL,
    output_file: Annotated[
        Optional[Path],
        typer.Option("--output-file", "-o", help="Write the report to this file (default: stderr, after the run)."),
    ] = None,
    max_ops: Annotated[
        Optional[int], typer.Option(min=0, help="Stop tracing after this many operators; the program goes on.")
    ] = None,
    max_seconds: Annotated[
        Optional[float], typer.Option(min=0, help="Stop tracing after this many seconds; the program goes on.")
    ] = None,
    trace_steps: Annotated[
        Optional[int],
        typer.Option(
            min=0,
            metavar="N",
            help="Trace the first N training steps (optimizer steps, else backward calls) and the next forward "
            "pass in full, then run at full speed, keeping only the hooks that cost nothing per operator.",
        ),
    ] = None,
    select: Annotated[Optional[list[str]], typer.Option(metavar="CODES", help="Report only these codes.")] = None,
    extend_select: Annotated[Optional[list[str]], typer.Option(metavar="CODES", help="Report these too.")] = None,
    ignore: Annotated[Optional[list[str]], typer.Option(metavar="CODES", help="Do not report these codes.")] = None,
    no_static: Annotated[
        bool, typer.Option("--no-static", help="Skip the static pass and its cross-reference.")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the findings, no summary.")] = False,
    nproc_per_node: Annotated[
        Optional[int],
        typer.Option(min=1, help="Run the program on this many ranks under torchrun, each traced; one report."),
    ] = None,
) -> None:
    """Run a script under the storage tracer and report the hazards that happened (needs torch)."""
    from gpumem_lint.trace.command import TraceOptions, UsageError, run_trace

    program = list(program or [])
    if module is None and not program:
        _fail("give a script to run, or -m MODULE")
    options = TraceOptions(
        script=None if module is not None else program[0],
        module=module,
        args=program if module is not None else program[1:],
        output_format=output_format,
        output_file=output_file,
        max_ops=max_ops,
        max_seconds=max_seconds,
        max_steps=trace_steps,
        overrides=CliOverrides(
            select=_split(select) if select is not None else None,
            extend_select=_split(extend_select),
            ignore=_split(ignore),
        ),
        static=not no_static,
        quiet=quiet,
        nproc_per_node=nproc_per_node,
    )
    try:
        run_trace(options)
    except UsageError as error:
        _fail(str(error))


def _split(values) -> tuple[str, ...]:
    return tuple(part.strip() for value in values or () for part in value.split(",") if part.strip())


def _fail(message: str):
    typer.echo(f"gpumem-lint: error: {message}", err=True)
    raise typer.Exit(2)
