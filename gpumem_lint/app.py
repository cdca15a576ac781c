"""The typer application: every command and option of `gpumem-lint`, with its help.

`cli.main` runs it for every command line but the common forms of `check`, which it parses
itself (typer and rich cost a small run a third of its start-up). Exit codes follow ruff:
0 no findings, 1 findings, 2 a usage, configuration or internal error.
"""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Annotated, NoReturn, Optional

import typer

from gpumem_lint import __version__
from gpumem_lint.cache import clean as remove_cache
from gpumem_lint.check_command import CACHE_DIR_VARIABLE, Request, Selectors, cache_directory, run_check, split
from gpumem_lint.config import CliOverrides, ConfigError, load_settings
from gpumem_lint.output import OutputFormat
from gpumem_lint.trace import cli as trace_command

app = typer.Typer(
    name="gpumem-lint",
    help="Find tensor-sharing and GPU-memory hazards in PyTorch code.",
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.command()(trace_command.trace)


class RulesFormat(str, Enum):
    TEXT = "text"
    JSON = "json"


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"gpumem-lint {__version__}")
        raise typer.Exit()


_FIXING = "Fixing"
_SELECTORS = "Comma-separated codes or prefixes (GML101, GML1, ALL); repeatable."
SelectOption = Annotated[Optional[list[str]], typer.Option(metavar="CODES", help=f"Run only these rules. {_SELECTORS}")]
ExtendSelectOption = Annotated[
    Optional[list[str]], typer.Option(metavar="CODES", help=f"Run these rules as well. {_SELECTORS}")
]
IgnoreOption = Annotated[Optional[list[str]], typer.Option(metavar="CODES", help=f"Skip these rules. {_SELECTORS}")]


@app.callback()
def _root(
    version: Annotated[
        Optional[bool],
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit."),
    ] = None,
) -> None:
    """Find tensor-sharing and GPU-memory hazards in PyTorch code."""


@app.command()
def check(
    paths: Annotated[
        Optional[list[str]], typer.Argument(help="Files or directories to lint (default: the current directory).")
    ] = None,
    select: SelectOption = None,
    extend_select: ExtendSelectOption = None,
    ignore: IgnoreOption = None,
    output_format: Annotated[
        OutputFormat, typer.Option(envvar="GPUMEM_LINT_OUTPUT_FORMAT", help="How to print findings.")
    ] = OutputFormat.FULL,
    output_file: Annotated[
        Optional[Path], typer.Option("--output-file", "-o", help="Write the report to this file, not stdout.")
    ] = None,
    statistics: Annotated[
        bool, typer.Option("--statistics", help="Print counts per rule instead of findings.")
    ] = False,
    exit_zero: Annotated[bool, typer.Option("--exit-zero", "-e", help="Exit 0 even when there are findings.")] = False,
    fix: Annotated[bool, typer.Option("--fix/--no-fix", help="Apply safe fixes.", rich_help_panel=_FIXING)] = False,
    unsafe_fixes: Annotated[
        bool,
        typer.Option("--unsafe-fixes", help="Apply (with --fix) or count unsafe fixes too.", rich_help_panel=_FIXING),
    ] = False,
    diff: Annotated[
        bool,
        typer.Option(
            "--diff", help="Print the fixes as a diff, change no file; exit 1 if any.", rich_help_panel=_FIXING
        ),
    ] = False,
    show_fixes: Annotated[
        bool, typer.Option("--show-fixes", help="List what --fix fixed.", rich_help_panel=_FIXING)
    ] = False,
    exit_non_zero_on_fix: Annotated[
        bool,
        typer.Option(
            "--exit-non-zero-on-fix",
            help="Exit 1 when something was fixed, even if nothing remains.",
            rich_help_panel=_FIXING,
        ),
    ] = False,
    add_noqa: Annotated[
        bool,
        typer.Option("--add-noqa", help="Add `# noqa: CODE` to every line with a finding.", rich_help_panel=_FIXING),
    ] = False,
    no_cache: Annotated[bool, typer.Option("--no-cache", "-n", help="Neither read nor write the cache.")] = False,
    cache_dir: Annotated[
        Optional[Path],
        typer.Option(
            envvar=CACHE_DIR_VARIABLE, help="Where to keep the cache (default: .gpumem_lint_cache in the project)."
        ),
    ] = None,
    stdin_filename: Annotated[
        Optional[Path],
        typer.Option(help="Lint standard input (also `-` as the path), named like this for configuration and output."),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the findings, no summary.")] = False,
    force_exclude: Annotated[
        bool, typer.Option("--force-exclude", help="Apply excludes to paths given on the command line too.")
    ] = False,
    config: Annotated[
        Optional[Path], typer.Option("--config", help="Use this pyproject.toml instead of searching for one.")
    ] = None,
) -> None:
    """Lint files and directories (the default command: `gpumem-lint PATH...` is the same)."""
    selectors = Selectors(
        paths,
        split(select) if select is not None else None,
        split(extend_select),
        split(ignore),
        force_exclude,
        config,
        stdin_filename,
    )
    request = Request(
        output_format,
        quiet,
        statistics,
        exit_zero,
        fix,
        unsafe_fixes,
        diff,
        show_fixes,
        exit_non_zero_on_fix,
        add_noqa,
        use_cache=not no_cache,
        cache_dir=cache_dir,
    )
    raise typer.Exit(run_check(selectors, request, output_file))


@app.command()
def clean(
    cache_dir: Annotated[
        Optional[Path], typer.Option(envvar=CACHE_DIR_VARIABLE, help="The cache to remove, if not the default.")
    ] = None,
) -> None:
    """Remove the cache of the project in the current directory."""
    try:
        settings = load_settings(["."], CliOverrides())
    except ConfigError as error:
        _fail(str(error))
    directory = cache_directory(settings, cache_dir)
    if remove_cache(directory):
        typer.echo(f"Removed cache at {directory}", err=True)


@app.command()
def server() -> None:
    """Run the language server on standard input and output (for editors)."""
    try:
        from gpumem_lint.server import serve
    except ImportError as error:
        _fail(f"the language server needs pygls ({error.name} is missing): pip install '.[server]' in a clone")
    serve()


@app.command()
def rule(code: Annotated[str, typer.Argument(help="A rule code, such as GML001.")]) -> None:
    """Print a rule's documentation."""
    from gpumem_lint.docs import render_rule_page
    from gpumem_lint.rules import RULES_BY_CODE

    rule_cls = RULES_BY_CODE.get(code.upper())
    if rule_cls is None:
        _fail(f"unknown rule code '{code}'; `gpumem-lint rules` lists them")
    from rich.console import Console

    page = render_rule_page(rule_cls)
    console = Console()
    if console.is_terminal:
        from rich.markdown import Markdown

        console.print(Markdown(page))
    else:
        typer.echo(page, nl=False)


@app.command("rules")
def list_rules(
    output_format: Annotated[
        RulesFormat, typer.Option(help="A table, or JSON with each full page.")
    ] = RulesFormat.TEXT,
) -> None:
    """List every rule."""
    from gpumem_lint.rules import ALL_RULES

    if output_format is RulesFormat.JSON:
        from gpumem_lint.docs import render_rule_page

        entries = [
            {
                "code": rule_cls.code,
                "name": rule_cls.name,
                "severity": rule_cls.severity.value,
                "summary": rule_cls.summary,
                "fix_title": rule_cls.fix_title,
                # As ruff's `fix_availability` field, with the tier: "safe", "unsafe", or null.
                "fix": rule_cls.fix_applicability.value if rule_cls.fix_applicability else None,
                "explanation": render_rule_page(rule_cls),
            }
            for rule_cls in ALL_RULES
        ]
        typer.echo(json.dumps(entries, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table("Code", "Name", "Severity", "Summary")
    for rule_cls in ALL_RULES:
        table.add_row(rule_cls.code, rule_cls.name, rule_cls.severity.value, rule_cls.summary)
    Console().print(table)


def _fail(message: str) -> NoReturn:
    _error(message)
    raise typer.Exit(2)


def _error(message: str) -> None:
    typer.echo(f"gpumem-lint: error: {message}", err=True)
