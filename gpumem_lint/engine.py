"""Lint one file: decode, pre-filter, parse, run the rules, locate, suppress.

Every failure of a single file becomes a diagnostic for that file (GML001
invalid syntax, GML003 unreadable file, GML009 internal error), so one bad file
never stops a run.
"""

from __future__ import annotations

import re
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

import libcst as cst

from gpumem_lint.context import FileContext
from gpumem_lint.cst_parse import parse_module
from gpumem_lint.deep_stack import call_on_deep_stack, on_deep_stack
from gpumem_lint.diagnostics import Diagnostic, Position
from gpumem_lint.fast_path import reduce_source
from gpumem_lint.fixes import locate
from gpumem_lint.noqa import parse_suppressions
from gpumem_lint.rules import InternalError, InvalidSyntax, UnreadableFile
from gpumem_lint.rules.base import Report, Rule
from gpumem_lint.rules.gml002_unused_suppression import UnusedSuppression, unused_suppressions
from gpumem_lint.semantic.values import fresh_serials
from gpumem_lint.source import decode_source, undecodable_reason
from gpumem_lint.untriggered import python2_script, syntax_error


def lint_path(path: Path, display: str, rules: Sequence[type[Rule]]) -> list[Diagnostic]:
    try:
        data = path.read_bytes()
    except OSError as error:
        return tool_diagnostic(UnreadableFile, display, rules, f"cannot read file: {error.strerror or error}")
    return lint_bytes(data, display, rules)


def lint_bytes(
    data: bytes, display: str, rules: Sequence[type[Rule]], dependencies: set[Path] | None = None
) -> list[Diagnostic]:
    try:
        text = decode_source(data)
    except (SyntaxError, UnicodeDecodeError, LookupError) as error:
        return tool_diagnostic(UnreadableFile, display, rules, undecodable_reason(data, error))
    return lint_source(text, display, rules, dependencies)


def lint_source(
    text: str, display: str, rules: Sequence[type[Rule]], dependencies: set[Path] | None = None
) -> list[Diagnostic]:
    """The findings in one file; `dependencies`, when given, collects the other files they depend on."""
    used: set[tuple[int, str]] = set()
    arguments = (text, display, rules, used, set() if dependencies is None else dependencies)
    try:
        diagnostics = _check(*arguments)
    except RecursionError:
        # Nested deeper than the default stack allows: CPython may refuse the file (over 200
        # nested brackets); otherwise the file is valid and analysed on a deeper stack.
        diagnostics = _syntax_only(text, display, rules) or call_on_deep_stack(_check, *arguments)
    if UnusedSuppression in rules:
        diagnostics = sorted(
            [*diagnostics, *unused_suppressions(text, display, rules, diagnostics, used)], key=lambda d: d.sort_key
        )
    return diagnostics


def _check(
    text: str, display: str, rules: Sequence[type[Rule]], used: set[tuple[int, str]], dependencies: set[Path]
) -> list[Diagnostic]:
    """The rules' findings; `used` collects (row, code) of each `# noqa` that suppressed one."""
    with fresh_serials():  # the same findings whatever this process linted before
        return _checked(text, display, rules, used, dependencies)


def _checked(
    text: str, display: str, rules: Sequence[type[Rule]], used: set[tuple[int, str]], dependencies: set[Path]
) -> list[Diagnostic]:
    active = active_rules(text, rules)
    if not active or "\x00" in text:  # CPython refuses NUL bytes, libcst does not
        return _syntax_only(text, display, rules)
    try:
        module, origin = _parse(text, active)
    except cst.ParserSyntaxError as error:
        if python2_script(text):
            return []  # no Python 3 parser is meant to accept it (untriggered.py `syntax_error`)
        # CPython's own parser pinpoints errors better than libcst's; fall back to libcst.
        return _syntax_only(text, display, rules) or _syntax_diagnostic(error, display, rules)
    except (RecursionError, MemoryError) as error:
        return tool_diagnostic(InvalidSyntax, display, rules, f"cannot parse file: {type(error).__name__}")
    ctx = FileContext(display, text, module, origin=origin)
    reports: list[tuple[type[Rule], Report]] = []
    for rule in active:
        try:
            reports.extend((rule, report) for report in rule().check(ctx))
        except RecursionError:
            if not on_deep_stack():
                raise  # retried on a deeper stack
            return tool_diagnostic(InternalError, display, rules, f"file nested too deeply for {rule.code}")
        except Exception:
            return _internal_error(display, rules, rule)
    dependencies |= ctx.dependencies
    if not reports:
        return []
    return _locate_and_suppress(ctx, reports, used)


def active_rules(text: str, rules: Sequence[type[Rule]]) -> list[type[Rule]]:
    """The rules whose pre-filters the text passes: a trigger word, and the file trigger if any."""
    shown: dict[re.Pattern[str], bool] = {}  # a family's rules share a file trigger: search once

    def shows(pattern: re.Pattern[str]) -> bool:
        if pattern not in shown:
            shown[pattern] = pattern.search(text) is not None
        return shown[pattern]

    return [
        rule
        for rule in rules
        if rule.triggers
        and any(t in text for t in rule.triggers)
        and (rule.file_trigger is None or shows(rule.file_trigger))
    ]


def _parse(text: str, active: Sequence[type[Rule]]) -> tuple[cst.Module, list[int] | None]:
    """The module libcst needs for these rules, and where its lines are in the file (None: all of it)."""
    reduction = reduce_source(text, active)
    if reduction is not None:
        try:
            return parse_module(reduction.text), reduction.origin
        except (cst.ParserSyntaxError, RecursionError, MemoryError):
            pass  # the full parse reports what is wrong, as it always has
    return parse_module(text), None


def _locate_and_suppress(
    ctx: FileContext, reports: list[tuple[type[Rule], Report]], used: set[tuple[int, str]]
) -> list[Diagnostic]:
    positions = ctx.positions
    suppressions = parse_suppressions(ctx.text)
    display = ctx.path
    diagnostics: dict[tuple, Diagnostic] = {}
    for rule, report in reports:
        span = positions[report.node]
        start = Position(span.start.line, span.start.column + 1)
        end = Position(span.end.line, span.end.column + 1)
        suppressing_row = suppressions.suppressing_row(rule.code, (start.row, end.row))
        if suppressing_row is not None:
            used.add((suppressing_row, rule.code))
            continue
        # One finding per rule and position: `x.sub_(m).div_(s)` is one write statement.
        key = (rule.code, start)
        if key in diagnostics and diagnostics[key].end >= end:
            continue
        fix = locate(report.fix, positions) if report.fix else None
        diagnostics[key] = Diagnostic(
            display, start, end, rule.code, rule.name, report.message, report.help or rule.fix_title, rule.severity, fix
        )
    return sorted(diagnostics.values(), key=lambda d: d.sort_key)


def _syntax_only(text: str, display: str, rules: Sequence[type[Rule]]) -> list[Diagnostic]:
    """A file no rule can flag is not given to libcst; CPython still checks its syntax."""
    if InvalidSyntax not in rules:
        return []
    found = syntax_error(text, display)
    return [_diagnostic(InvalidSyntax, display, *found)] if found else []  # CPython's words


def _syntax_diagnostic(error: cst.ParserSyntaxError, display: str, rules) -> list[Diagnostic]:
    if InvalidSyntax not in rules:
        return []
    message = f"CPython accepts this file but libcst cannot parse it: {error.message}"
    return [_diagnostic(InvalidSyntax, display, error.raw_line, error.raw_column + 1, message)]


def _internal_error(display: str, rules, rule: type[Rule]) -> list[Diagnostic]:
    where = traceback.extract_tb(sys.exc_info()[2])[-1]
    message = (
        f"internal error in {rule.code} ({where.filename.rsplit('/', 1)[-1]}:{where.lineno}); "
        "please report it with this file"
    )
    return tool_diagnostic(InternalError, display, rules, message)


def tool_diagnostic(rule: type[Rule], display: str, rules, message: str) -> list[Diagnostic]:
    return [_diagnostic(rule, display, 1, 1, message)] if rule in rules else []


def _diagnostic(rule: type[Rule], display: str, row: int, column: int, message: str) -> Diagnostic:
    position = Position(row, column)
    return Diagnostic(display, position, position, rule.code, rule.name, message, rule.fix_title, rule.severity)
