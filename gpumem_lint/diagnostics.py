"""The value types every layer shares: positions, fixes and diagnostics."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True, order=True)
class Position:
    """A 1-based line and 1-based column, as editors and ruff count them."""

    row: int
    column: int


class Applicability(str, Enum):
    """Whether a fix keeps the program's meaning (SAFE, applied by `--fix`) or may change
    what it does, uses or costs (UNSAFE, applied only with `--unsafe-fixes`), as in ruff."""

    SAFE = "safe"
    UNSAFE = "unsafe"


@dataclass(frozen=True, order=True)
class Edit:
    """Replace the text from `start` up to `end` (exclusive) by `content`; start == end inserts."""

    start: Position
    end: Position
    content: str


@dataclass(frozen=True)
class Fix:
    """Edits applied together or not at all. Rules build one with `gpumem_lint.fixes`."""

    edits: tuple
    applicability: Applicability
    #: What the fix does, for `--show-fixes` and machine formats; the rule's fix_title when None.
    title: str | None = None


@dataclass(frozen=True)
class RelatedLocation:
    """Another place in the story of a finding: where an alias was made, where it was read."""

    path: str
    start: Position
    message: str


@dataclass(frozen=True)
class Diagnostic:
    path: str
    start: Position
    end: Position
    code: str
    name: str
    message: str
    help: str | None
    severity: Severity
    fix: Fix | None = None
    #: Set by `gpumem-lint trace` only: "trace" (observed at run time) or "check" (a static finding it
    #: cross-referenced), how the run bore it out, and the other locations involved.
    source: str | None = None
    status: str | None = None
    related: tuple[RelatedLocation, ...] = ()
    #: In a notebook: the 1-based number of the cell, whose rows `start` and `end` count.
    cell: int | None = None

    @property
    def sort_key(self) -> tuple:
        return (self.path, self.cell or 0, self.start.row, self.start.column, self.code, self.message)


def fix_allowed(fix: Fix, unsafe: bool) -> bool:
    """Whether `--fix` applies the fix: a safe one always, an unsafe one with `--unsafe-fixes`."""
    return fix.applicability is Applicability.SAFE or unsafe
