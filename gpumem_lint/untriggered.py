"""A file that shows no trigger word of any rule selected for it, answered without the rules.

Every rule's findings need one of its trigger words in the file (`Rule.triggers`; the engine
runs no rule whose words are all absent). When none shows, the engine's whole answer is what
CPython's own parser says about the syntax (GML001) and, for bytes that cannot be decoded,
GML003: so this module gives that answer from `rule_triggers.json` (the words, names and help
lines of the rules, written by scripts/generate_rule_triggers.py) without importing the rules
or libcst, which is most of a small run's start-up. A `# noqa` comment (GML002 may judge it),
a notebook, any trigger word, or a rule the table does not list yet sends the file to the
engine, as before (tests/test_untriggered.py fails while the table is stale).
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from gpumem_lint.diagnostics import Diagnostic, Position, Severity
from gpumem_lint.source import decode_source, undecodable_reason

_TABLE = Path(__file__).with_name("rule_triggers.json")
_PYTHON2_SHEBANG = re.compile(r"#![^\n]*\bpython2(?:\.\d+)?\b")
_INVALID_SYNTAX = "GML001"
_UNUSED_SUPPRESSION = "GML002"
_UNREADABLE_FILE = "GML003"


@cache
def rule_table() -> dict[str, dict]:
    """Each rule's code -> its name, severity, fix_title and trigger words."""
    return json.loads(_TABLE.read_text(encoding="utf-8"))


def answer(data: bytes, display: str, codes: Sequence[str]) -> list[Diagnostic] | None:
    """The engine's findings in a `.py` file whose text shows no trigger of `codes`, or None
    when a rule may flag it (the engine must lint it)."""
    try:
        text = decode_source(data)
    except (SyntaxError, UnicodeDecodeError, LookupError) as error:
        return _tool_diagnostic(_UNREADABLE_FILE, display, codes, 1, 1, undecodable_reason(data, error))
    table = rule_table()
    if any(code not in table for code in codes):
        return None  # a rule newer than the table: the engine knows its words
    if any(word in text for code in codes for word in table[code]["triggers"]):
        return None
    if _UNUSED_SUPPRESSION in codes and "noqa" in text.lower():
        return None
    found = syntax_error(text, display)
    return _tool_diagnostic(_INVALID_SYNTAX, display, codes, *found) if found else []


def python2_script(text: str) -> bool:
    """`#!/usr/bin/env python2`, `#!/usr/bin/python2.7`: a script for Python 2."""
    return _PYTHON2_SHEBANG.match(text) is not None


def syntax_error(text: str, display: str) -> tuple[int, int, str] | None:
    """(row, column, message) of what CPython's parser refuses in `text`, in its own words; None
    when it accepts it, or when the text is a script for Python 2 (`#!/usr/bin/env python2`): its
    shell runs it so, and no Python 3 parser is meant to accept it."""
    if python2_script(text):
        return None
    try:
        with warnings.catch_warnings():  # CPython's SyntaxWarnings are not ours to print
            warnings.simplefilter("ignore")
            compile(text, display, "exec", dont_inherit=True, flags=0x400)  # ast.PyCF_ONLY_AST
    except SyntaxError as error:
        return error.lineno or 1, error.offset or 1, error.msg
    except (ValueError, RecursionError, MemoryError) as error:
        return 1, 1, f"cannot parse file: {error}"
    return None


def _tool_diagnostic(
    code: str, display: str, codes: Sequence[str], row: int, column: int, message: str
) -> list[Diagnostic]:
    if code not in codes:
        return []
    rule = rule_table()[code]
    position = Position(row, column)
    return [
        Diagnostic(
            display, position, position, code, rule["name"], message, rule["fix_title"], Severity(rule["severity"])
        )
    ]
