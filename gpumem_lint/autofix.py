"""`--fix`: lint, apply the allowed fixes, lint again, until nothing more changes.

A pass whose result does not parse is thrown away (the file keeps the last text that
did), so a fixed file always parses. The loop stops at a fixed point, which is why a
second `--fix` changes nothing. Files are written atomically (a temporary file in the
same directory, then `os.replace`), in their original encoding, BOM and permissions.
"""

from __future__ import annotations

import codecs
import io
import os
import tempfile
import tokenize
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gpumem_lint.diagnostics import Diagnostic
from gpumem_lint.engine import lint_source
from gpumem_lint.fixes import apply_fixes
from gpumem_lint.rules.base import Rule

#: Fixes can uncover or unblock other fixes; a chain longer than this is a bug in a fix.
MAX_PASSES = 10


@dataclass(frozen=True)
class FixOutcome:
    text: str
    #: Findings whose fixes were applied, pass after pass.
    fixed: tuple[Diagnostic, ...]
    #: What is left to report in the final text.
    remaining: tuple[Diagnostic, ...]
    #: Codes of fixes thrown away because the result did not parse (a bug to report).
    broken: tuple[str, ...] = ()


def fix_source(
    text: str, display: str, rules: Sequence[type[Rule]], *, unsafe: bool, dependencies: set[Path] | None = None
) -> FixOutcome:
    """`dependencies`, when given, receives the files the final findings depend on."""
    fixed: list[Diagnostic] = []
    found: set[Path] = set()
    diagnostics = lint_source(text, display, rules, found)
    broken: tuple[str, ...] = ()
    for _ in range(MAX_PASSES):
        applied = apply_fixes(text, diagnostics, unsafe=unsafe)
        if not applied.fixed:
            break
        if not parses(applied.text, display):
            broken = tuple(d.code for d in applied.fixed)
            break
        text = applied.text
        fixed.extend(applied.fixed)
        found = set()
        diagnostics = lint_source(text, display, rules, found)
    if dependencies is not None:
        dependencies |= found
    return FixOutcome(text, tuple(fixed), tuple(diagnostics), broken)


def parses(text: str, display: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, display, "exec", dont_inherit=True, flags=0x400)  # ast.PyCF_ONLY_AST
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def encode_like(text: str, original: bytes) -> bytes:
    """`text` in the encoding `original` was decoded from, with its BOM if it had one."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(original).readline)
    if original.startswith(codecs.BOM_UTF8):
        return codecs.BOM_UTF8 + text.encode("utf-8")
    return text.encode(encoding)


def write_atomically(path: Path, data: bytes) -> None:
    """Readers see the old file or the new one, never half of one; the mode is kept.
    A symlink keeps pointing at its target, which is what gets rewritten."""
    target = path.resolve()
    mode = target.stat().st_mode
    descriptor, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "wb") as stream:
            stream.write(data)
        os.chmod(temporary, mode & 0o7777)
        os.replace(temporary, target)
    except BaseException:
        os.unlink(temporary)
        raise
