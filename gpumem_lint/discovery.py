"""Which files to lint: walk the PATH arguments, honouring excludes and .gitignore files.

Symlinked files are linted; symlinked directories are not entered (as git and ruff
do), so a link loop cannot trap the walk and no file is linted twice under two names.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from gpumem_lint.config import Settings, display_path, project_relative

if TYPE_CHECKING:  # pathspec is imported where a pattern is matched (a file named alone needs none)
    from pathspec import GitIgnoreSpec

#: Python files and Jupyter notebooks, as ruff lints by default.
LINTED_SUFFIXES = (".py", ".pyi", ".ipynb")


@dataclass(frozen=True, order=True)
class SourceFile:
    #: How the file is named in output: relative to the current directory when under it, with '/'.
    display: str
    path: Path


def missing_paths(arguments: Sequence[str], cwd: Path | None = None) -> list[str]:
    """The arguments that name nothing: each is reported, and the others are still linted."""
    cwd = Path(os.path.abspath(cwd or Path.cwd()))
    return [argument for argument in arguments if not os.path.lexists(cwd / argument)]


def discover_files(arguments: Sequence[str], settings: Settings, cwd: Path | None = None) -> list[SourceFile]:
    """Every file to lint, once each, sorted by display path. Missing arguments are skipped
    (`missing_paths` names them)."""
    cwd = Path(os.path.abspath(cwd or Path.cwd()))
    walker = _Walker(settings)
    found: set[SourceFile] = set()
    for argument in arguments:
        path = Path(os.path.abspath(cwd / argument))
        if not os.path.lexists(path):
            continue
        if settings.force_exclude and walker.excluded_with_ancestors(path):
            continue
        # An explicitly named file is linted whatever its suffix, as in ruff.
        files = walker.walk(path) if path.is_dir() else [path]
        found.update(SourceFile(display_path(file, cwd), file) for file in files)
    return sorted(found)


class _Walker:
    def __init__(self, settings: Settings) -> None:
        self.root = settings.project_root
        self.patterns = settings.exclude

    @cached_property
    def exclude(self) -> GitIgnoreSpec:
        from pathspec import GitIgnoreSpec

        return GitIgnoreSpec.from_lines(self.patterns)

    def excluded(self, path: Path, is_dir: bool, base: Path | None = None) -> bool:
        relative = project_relative(path, base or self.root)
        return self.exclude.match_file(relative + "/" if is_dir else relative)

    def excluded_with_ancestors(self, path: Path) -> bool:
        """For --force-exclude: a path is excluded if it or a directory above it (up to the root) is."""
        if self.excluded(path, path.is_dir()):
            return True
        return any(self.excluded(parent, True) for parent in path.parents if parent.is_relative_to(self.root))

    def walk(self, directory: Path) -> Iterator[Path]:
        if self.excluded_with_ancestors(directory):
            # Named explicitly inside an excluded tree (`gpumem-lint .venv/.../torch`): lint it,
            # judging excludes from the named directory down, as ruff does.
            yield from self._walk(directory, [], base=directory)
        else:
            yield from self._walk(directory, self._inherited_gitignores(directory))

    def _inherited_gitignores(self, directory: Path) -> list[tuple[Path, GitIgnoreSpec]]:
        """The .gitignore files between the project root and `directory` (exclusive) also apply."""
        if not directory.is_relative_to(self.root) or directory == self.root:
            return []
        ancestors = [parent for parent in directory.parents if parent.is_relative_to(self.root)]
        return [spec for parent in reversed(ancestors) if (spec := _read_gitignore(parent))]

    def _walk(
        self, directory: Path, gitignores: list[tuple[Path, GitIgnoreSpec]], base: Path | None = None
    ) -> Iterator[Path]:
        own = _read_gitignore(directory)
        if own:
            gitignores = [*gitignores, own]
        try:
            entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
        except OSError:
            return  # unreadable or vanished: nothing to lint here
        for entry in entries:
            path = Path(entry.path)
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
                is_file = not is_dir and entry.is_file()  # follows a link; False if it dangles
            except OSError:
                continue  # a link loop, or the entry vanished
            if not (is_dir or is_file) or self.excluded(path, is_dir, base) or _gitignored(path, is_dir, gitignores):
                continue
            if is_dir:
                yield from self._walk(path, gitignores, base)
            elif path.suffix in LINTED_SUFFIXES:
                yield path


def _read_gitignore(directory: Path) -> tuple[Path, GitIgnoreSpec] | None:
    try:
        lines = (directory / ".gitignore").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    from pathspec import GitIgnoreSpec

    return directory, GitIgnoreSpec.from_lines(lines)


def _gitignored(path: Path, is_dir: bool, gitignores: list[tuple[Path, GitIgnoreSpec]]) -> bool:
    """The innermost .gitignore with an opinion decides, so a nested `!keep.py` re-includes."""
    decision = None
    for base, spec in gitignores:
        relative = path.relative_to(base).as_posix()
        include = spec.check_file(relative + "/" if is_dir else relative).include
        if include is not None:
            decision = include
    return bool(decision)
