"""The lines a report quotes (code frames, SARIF fingerprints): those of the text that was linted.

That is standard input's text when it was linted, the file on disk otherwise: display paths are
relative to the working directory (or absolute), so they open from it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from gpumem_lint.notebook import cell_source
from gpumem_lint.source import decode_source

# Python counts rows at these line breaks; str.splitlines also breaks at \f and others.
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


class SourceLines:
    def __init__(self, linted: Mapping[str, bytes] | None = None, base: Path | None = None) -> None:
        #: Contents that were linted but are not on disk (standard input), by display path.
        self._linted = dict(linted or {})
        self._base = base or Path()
        self._lines: dict[str, list[str] | None] = {}

    def contents(self, path: str) -> bytes | None:
        """The bytes of `path` as linted, or None when it cannot be read."""
        if path in self._linted:
            return self._linted[path]
        try:
            return (self._base / path).read_bytes()
        except OSError:
            return None

    def of(self, path: str, cell: int | None = None) -> list[str] | None:
        """The lines of `path` (of its cell `cell`, in a notebook), or None when it cannot be read."""
        key = f"{path}\0{cell}"
        if key not in self._lines:
            data = self._linted.get(path)
            text = _read(self._base / path, cell) if data is None else _decoded(data, cell)
            self._lines[key] = None if text is None else split_lines(text)
        return self._lines[key]


def split_lines(text: str) -> list[str]:
    return _LINE_BREAK.split(text)


def _read(path: Path, cell: int | None) -> str | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return _decoded(data, cell)


def _decoded(data: bytes, cell: int | None) -> str | None:
    try:
        return decode_source(data) if cell is None else cell_source(data, cell)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        return None
