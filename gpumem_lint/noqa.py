"""Suppression comments: `# noqa`, `# noqa: GML101, GML102`, and the file-level
`# gpumem-lint: noqa` / `# gpumem-lint: noqa: GML101`."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_CODES = r"[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*"
_LINE_NOQA = re.compile(rf"#\s*noqa(?::\s*(?P<codes>{_CODES}))?", re.IGNORECASE)
_FILE_NOQA = re.compile(rf"#\s*gpumem-lint:\s*noqa(?::\s*(?P<codes>{_CODES}))?", re.IGNORECASE)

#: Stands for "every code" in a directive.
ALL = frozenset({"*"})


def _codes(match: re.Match[str]) -> frozenset[str]:
    raw = match.group("codes")
    if not raw:
        return ALL
    return frozenset(code.upper() for code in re.split(r"[\s,]+", raw.strip()) if code)


@dataclass(frozen=True)
class Suppressions:
    file_codes: frozenset[str] = frozenset()
    line_codes: dict[int, frozenset[str]] = field(default_factory=dict)

    def suppresses(self, code: str, rows: tuple[int, ...]) -> bool:
        return self.suppressing_row(code, rows) is not None

    def suppressing_row(self, code: str, rows: tuple[int, ...]) -> int | None:
        """The row of the directive that suppresses `code` on `rows`: 0 for a file-level one."""
        if "*" in self.file_codes or code in self.file_codes:
            return 0
        for row in rows:
            codes = self.line_codes.get(row)
            if codes is not None and ("*" in codes or code in codes):
                return row
        return None


def parse_suppressions(text: str) -> Suppressions:
    """Find directives on each 1-based line. A file-level directive is not also a line one."""
    if "noqa" not in text and "NOQA" not in text:
        return Suppressions()
    file_codes: set[str] = set()
    line_codes: dict[int, frozenset[str]] = {}
    for row, line in enumerate(text.splitlines(), start=1):
        if "#" not in line:
            continue
        file_match = _FILE_NOQA.search(line)
        if file_match:
            file_codes |= _codes(file_match)
            continue
        line_match = line_directive(line)
        if line_match:
            line_codes[row] = _codes(line_match)
    return Suppressions(frozenset(file_codes), line_codes)


def line_directive(line: str) -> re.Match[str] | None:
    """A line's `# noqa` directive; its group "codes" spans the codes, None for a bare `# noqa`.

    A file-level `# gpumem-lint: noqa` is not a line directive.
    """
    if _FILE_NOQA.search(line):
        return None
    return _LINE_NOQA.search(line)
