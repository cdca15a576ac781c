"""`--fix`: lint, apply the allowed fixes, lint again, until nothing more changes.

A pass whose result does not parse is thrown away (the file keeps the last text that
did), so a fixed file always parses. The loop stops at a fixed point, which is why a
second `--fix` changes nothing. Files are written in their original encoding and BOM,
keeping mode and owner (`write_fixed`); a read-only file is never written.
"""

from __future__ import annotations

import codecs
import errno
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


def write_fixed(path: Path, data: bytes) -> None:
    """Give the file the fixed content, keeping its mode, owner and other hard links.

    Readers see the old file or the new one (a temporary file in the same directory, then
    `os.replace`), unless the replacement could not keep the owner or the links: then the file
    is rewritten in place. A symlink keeps pointing at its target, which is what gets rewritten.
    A file its user cannot write, or that nobody may write (mode 444), is refused (PermissionError).
    """
    target = path.resolve()
    status = target.stat()
    if not os.access(target, os.W_OK) or not status.st_mode & 0o222:
        raise PermissionError(errno.EACCES, "the file is read-only", str(path))
    if status.st_nlink > 1 or not _replace_atomically(target, data, status):
        with open(target, "r+b") as stream:
            stream.write(data)
            stream.truncate()


def _replace_atomically(target: Path, data: bytes, status: os.stat_result) -> bool:
    """False, with nothing changed, when the directory or the owner does not allow it."""
    try:
        descriptor, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except PermissionError:
        return False
    try:
        with os.fdopen(descriptor, "wb") as stream:
            stream.write(data)
            stream.flush()
            written = os.fstat(stream.fileno())
            if (written.st_uid, written.st_gid) != (status.st_uid, status.st_gid):
                os.fchown(stream.fileno(), status.st_uid, status.st_gid)
        os.chmod(temporary, status.st_mode & 0o7777)  # after the chown, which clears set-id bits
        os.replace(temporary, target)
    except PermissionError:
        os.unlink(temporary)
        return False
    except BaseException:
        os.unlink(temporary)
        raise
    return True
