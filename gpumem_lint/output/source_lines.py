"""The lines a report quotes (code frames, SARIF fingerprints): those of the text that was linted.

That is standard input's text when it was linted, the file on disk otherwise: display paths are
relative to the working directory (or absolute), so they open from it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from gpumem_lint.source import decode_source

# Python counts rows at these line breaks; str.splitlines also breaks at \f and others.
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


class SourceLines:
    def __init__(self, linted: Mapping[str, str] | None = None, base: Path | None = None) -> None:
        #: Texts that were linted but are not on disk (standard input), by display path.
        self._linted = dict(linted or {})
        self._base = base or Path()
        self._lines: dict[str, list[str] | None] = {}

    def of(self, path: str) -> list[str] | None:
        """The lines of `path`, or None when it cannot be read or decoded."""
        if path not in self._lines:
            text = self._linted.get(path)
            self._lines[path] = None if text is None and (text := _read(self._base / path)) is None else split_lines(text)
        return self._lines[path]


def split_lines(text: str) -> list[str]:
    return _LINE_BREAK.split(text)


def _read(path: Path) -> str | None:
    try:
        return decode_source(path.read_bytes())
    except (OSError, SyntaxError, UnicodeDecodeError, LookupError):
        return None
