"""Source sites: the first frame of the user's own code above the current call.

Frames in torch, the standard library, installed packages and gpumem-lint are skipped; the verdict is cached
per code object, so a walk costs a few dictionary lookups per frame.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, order=True)
class Site:
    path: str
    line: int

    def __str__(self) -> str:
        return f"{display_path(self.path)}:{self.line}"

    def to_json(self) -> list:
        return [self.path, self.line]

    @classmethod
    def from_json(cls, value: list) -> Site:
        return cls(value[0], value[1])


def display_path(path: str) -> str:
    """Relative to the current directory when below it, as `check` prints paths."""
    try:
        return os.path.relpath(path) if Path(path).resolve().is_relative_to(Path.cwd()) else path
    except (OSError, ValueError):
        return path


def _library_roots() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    roots = {paths["stdlib"], paths["platstdlib"], paths["purelib"], paths["platlib"]}
    roots.add(str(Path(__file__).resolve().parent.parent))  # gpumem_lint itself
    roots.update(p for p in sys.path if p.rstrip(os.sep).endswith(("site-packages", "dist-packages")))
    return tuple(sorted({os.path.realpath(r) + os.sep for r in roots if r}))


class SiteFinder:
    """`user_site()` returns the innermost frame outside library code, or None (no user frame on the stack)."""

    def __init__(self, extra_library_roots: tuple[str, ...] = ()) -> None:
        self._roots = _library_roots() + tuple(os.path.realpath(r) + os.sep for r in extra_library_roots)
        self._is_user: dict[object, bool] = {}
        #: Every user line a captured site pointed at: what the cross-reference calls "reached".
        self.seen: set[tuple[str, int]] = set()

    def is_user_file(self, filename: str) -> bool:
        if filename.startswith("<"):
            return False  # <frozen runpy>, <string>, <stdin>: nothing to point at
        return not os.path.realpath(filename).startswith(self._roots)

    def user_site(self, frame=None) -> Site | None:
        frame = frame or sys._getframe(1)
        is_user = self._is_user
        while frame is not None:
            code = frame.f_code
            verdict = is_user.get(code)
            if verdict is None:
                verdict = is_user[code] = self.is_user_file(code.co_filename)
            if verdict:
                key = (code.co_filename, frame.f_lineno)
                self.seen.add(key)
                return Site(*key)
            frame = frame.f_back
        return None


def executed_first_party_files(script: str | None, sites: SiteFinder) -> list[Path]:
    """The script and the imported modules that are the user's own code (not stdlib, packages, torch)."""
    files = {Path(script).resolve()} if script else set()
    for module in list(sys.modules.values()):
        filename = getattr(module, "__file__", None)
        if filename and filename.endswith(".py") and sites.is_user_file(filename):
            files.add(Path(filename).resolve())
    return sorted(path for path in files if path.is_file())
