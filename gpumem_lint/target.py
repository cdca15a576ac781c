"""Which Python version the linted code targets: `target-version = "py313"` in the
`[tool.gpumem-lint]` table of the nearest pyproject.toml, else the lower bound of its
`[project] requires-python` (as ruff reads it). Rules whose answer depends on the version —
the stdlib's default start method is fork on Linux up to 3.13 and forkserver from 3.14 — ask
through `rules/_boundaries.target_version(ctx)`.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

TARGET_VERSION = re.compile(r"^py3(\d{1,2})$")
_LOWER_BOUND = re.compile(r"(>=|==|~=)\s*3\.(\d+)")


@dataclass(frozen=True)
class Target:
    version: tuple[int, int] | None
    config: Path | None  # the pyproject.toml it came from


def parse_target_version(value: str) -> tuple[int, int] | None:
    """`"py313"` -> (3, 13); None when the value is not of that form."""
    match = TARGET_VERSION.match(value)
    return (3, int(match.group(1))) if match else None


def find_target(source: Path) -> Target:
    """The target of a file: from the nearest pyproject.toml above it that says one."""
    return _in_directory(source.parent)


@cache
def _in_directory(directory: Path) -> Target:
    candidate = directory / "pyproject.toml"
    if candidate.is_file():
        version = _read(candidate)
        if version is not None:
            return Target(version, candidate)
    if directory.parent == directory:
        return Target(None, None)
    return _in_directory(directory.parent)


def _read(path: Path) -> tuple[int, int] | None:
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None  # the configuration loader reports unreadable files
    table = document.get("tool", {}).get("gpumem-lint", {})
    configured = table.get("target-version") if isinstance(table, dict) else None
    if isinstance(configured, str):
        return parse_target_version(configured)
    requires = document.get("project", {}).get("requires-python")
    match = _LOWER_BOUND.search(requires) if isinstance(requires, str) else None
    return (3, int(match.group(2))) if match else None
