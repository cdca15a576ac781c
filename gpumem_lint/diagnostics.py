"""The value types every layer shares: positions and diagnostics."""

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

    @property
    def sort_key(self) -> tuple:
        return (self.path, self.start.row, self.start.column, self.code, self.message)
