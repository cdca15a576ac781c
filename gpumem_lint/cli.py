"""The command line: `gpumem-lint [check] PATH...`, `gpumem-lint rule CODE`, `gpumem-lint rules`.

Exit codes follow ruff: 0 no findings, 1 findings, 2 a usage, configuration or internal error.

The commands and their help are a typer application (`app.py`). The common forms of `check`
(paths and the options a pre-commit hook or a script passes: `-q`, `--no-cache`,
`--force-exclude`, `--select`, `--output-format`, ...) are parsed here instead, without
importing typer: start-up is most of a run on a few files. Any other command line, including
every mistake, goes to typer, which parses and reports it as it always has.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

_COMMANDS = ("check", "clean", "rule", "rules", "server", "trace")
_TOP_LEVEL_OPTIONS = ("-h", "--help", "--version")

#: `check`'s flags and options that `_quick_check` parses, by every spelling typer accepts.
_FLAGS = {"-q": "quiet", "--quiet": "quiet", "-n": "no_cache", "--no-cache": "no_cache"}
_FLAGS |= {"--force-exclude": "force_exclude", "-e": "exit_zero", "--exit-zero": "exit_zero"}
_OPTIONS = {"--select": "select", "--extend-select": "extend_select", "--ignore": "ignore"}
_OPTIONS |= {"--output-format": "output_format", "--config": "config", "--cache-dir": "cache_dir"}
_REPEATED = ("select", "extend_select", "ignore")
_OUTPUT_FORMAT_VARIABLE = "GPUMEM_LINT_OUTPUT_FORMAT"


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point. `gpumem-lint PATH...` means `gpumem-lint check PATH...`, as in ruff."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in (*_COMMANDS, *_TOP_LEVEL_OPTIONS):
        args.insert(0, "check")
    try:
        code = _quick_check(args[1:]) if args[0] == "check" else None
        if code is not None:
            raise SystemExit(code)
        from gpumem_lint.app import app, trace_command

        if args[0] == "trace":
            args = ["trace", *trace_command.split_arguments(args[1:])]
        app(args=args, prog_name="gpumem-lint")
    except SystemExit as done:
        if argv is None and args[0] != "trace":  # the program itself, not a caller in Python
            _exit_now(done.code)
        raise
    except Exception as error:
        import traceback

        traceback.print_exc()
        print(f"gpumem-lint: error: internal error: {error!r}; please report it", file=sys.stderr)
        sys.exit(2)


def _quick_check(arguments: Sequence[str]) -> int | None:
    """Run `check` with these arguments when they are all paths and options of `_FLAGS` and
    `_OPTIONS` spelt out (`--select X` or `--select=X`), and return the exit code; None for
    any other command line, left to typer."""
    values: dict[str, object] = {name: [] for name in _REPEATED}
    paths: list[str] = []
    at = 0
    while at < len(arguments):
        argument = arguments[at]
        at += 1
        if not argument.startswith("-"):
            paths.append(argument)
            continue
        name, given, value = argument.partition("=")
        if name in _FLAGS and not given:
            values[_FLAGS[name]] = True
            continue
        if name not in _OPTIONS:
            return None  # `-`, `--`, `-qn`, --help, --fix, a typo: typer's
        if not given:
            if at == len(arguments) or arguments[at].startswith("-"):
                return None
            value, at = arguments[at], at + 1
        if _OPTIONS[name] in _REPEATED:
            values[_OPTIONS[name]].append(value)
        else:
            values[_OPTIONS[name]] = value
    from gpumem_lint.check_command import Request, Selectors, run_check, split
    from gpumem_lint.output import OutputFormat

    output_format = values.get("output_format", os.environ.get(_OUTPUT_FORMAT_VARIABLE, OutputFormat.FULL.value))
    if output_format not in {choice.value for choice in OutputFormat}:
        return None  # typer says what the choices are
    selectors = Selectors(
        paths or None,
        split(values["select"]) if values["select"] else None,
        split(values["extend_select"]),
        split(values["ignore"]),
        bool(values.get("force_exclude")),
        Path(values["config"]) if "config" in values else None,
    )
    request = Request(
        OutputFormat(output_format),
        quiet=bool(values.get("quiet")),
        exit_zero=bool(values.get("exit_zero")),
        use_cache=not values.get("no_cache"),
        cache_dir=Path(values["cache_dir"]) if "cache_dir" in values else None,
    )
    return run_check(selectors, request)


def _exit_now(code: object) -> NoReturn:
    """Exit without tearing the interpreter down: freeing every module (libcst's thousand classes
    among them) costs a run about 0.05 s and changes nothing once the command is done, as mypy
    found. Not for `trace`, whose program's exit handlers must run."""
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing more to say
            stream.flush()
    os._exit(code or 0)
