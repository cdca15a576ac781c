"""The trace's code table (hazards.toml): which code each run-time hazard family and each explained exception
is reported under, and the name and remedy of codes the static rules may not define yet."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from gpumem_lint.diagnostics import Severity

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


@dataclass(frozen=True)
class Crash:
    code: str
    match: str
    says: str
    through: str | None = None


@dataclass(frozen=True)
class CodeInfo:
    """What the report needs of a rule: the static rules' own attributes of the same names."""

    name: str
    fix_title: str
    severity: Severity = Severity.ERROR


_TABLE = tomllib.loads(Path(__file__).with_name("hazards.toml").read_text(encoding="utf-8"))
CODES: dict[str, str] = _TABLE["families"]
CRASHES: tuple[Crash, ...] = tuple(Crash(**row) for row in _TABLE["crashes"])
FALLBACK_RULES: dict[str, CodeInfo] = {code: CodeInfo(**row) for code, row in _TABLE["rules"].items()}
