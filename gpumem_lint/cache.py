"""The result cache, so an unchanged file is not parsed again.

    .gpumem_lint_cache/            (or --cache-dir / GPUMEM_LINT_CACHE_DIR)
        CACHEDIR.TAG               backup tools skip the directory
        .gitignore                 "*": git ignores it, and itself
        <version>/<key>.json       one file per tool build and project root

An entry is looked up by absolute path and is valid only while the file's content hash,
the codes selected for it, and the content hash of every file its findings depend on
(first-party modules it imports, `FileContext.dependencies`) are unchanged. The key of
the results file covers the tool version, a fingerprint of the tool's own files (their
sizes and mtimes, so an edited checkout never serves results of its former self), the
project root and the working directory.

The same file keeps the summaries of the first-party modules the linted files import
(`semantic/module_graph.py`), so that a run which lints an edited file does not summarise
its unchanged imports again; each names the content hash of every file it read.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from gpumem_lint import __version__
from gpumem_lint.diagnostics import Applicability, Diagnostic, Edit, Fix, Position, Severity

DEFAULT_DIRECTORY = ".gpumem_lint_cache"
_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by gpumem-lint.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n"
)
_PACKAGE = Path(__file__).resolve().parent


def content_hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


class Cache:
    def __init__(self, directory: Path, project_root: Path) -> None:
        self.directory = directory
        self.file = directory / __version__ / f"{_results_key(project_root)}.json"
        stored = _load(self.file)
        self._entries: dict[str, dict[str, Any]] = stored.get("files", {})
        #: Summaries of imported modules, by module_graph's key (the module's path first).
        self.summaries: dict[str, dict[str, Any]] = stored.get("summaries", {})
        self._changed = False
        self._dependency_hashes: dict[str, str | None] = {}

    def lookup(self, path: Path, display: str, digest: str, codes: Sequence[str]) -> list[Diagnostic] | None:
        entry = self._entries.get(str(path))
        try:
            if entry is None or entry["hash"] != digest or entry["codes"] != list(codes):
                return None
            if any(self._hash_of(dependency) != recorded for dependency, recorded in entry["dependencies"].items()):
                return None
            return [_diagnostic_from(display, item) for item in entry["diagnostics"]]
        except (KeyError, TypeError, ValueError, AttributeError):  # an entry written by hand or damaged
            return None

    def store(
        self,
        path: Path,
        digest: str,
        codes: Sequence[str],
        diagnostics: Iterable[Diagnostic],
        dependencies: Iterable[Path],
    ) -> None:
        recorded = {str(dependency): self._hash_of(str(dependency)) for dependency in sorted(dependencies)}
        if None in recorded.values():
            return  # a dependency vanished while linting: do not remember a result nothing can validate
        self._entries[str(path)] = {
            "hash": digest,
            "codes": list(codes),
            "dependencies": recorded,
            "diagnostics": [_diagnostic_to(diagnostic) for diagnostic in diagnostics],
        }
        self._changed = True

    def store_summaries(self, entries: dict[str, dict[str, Any]]) -> None:
        if entries:
            self.summaries.update(entries)
            self._changed = True

    def save(self) -> None:
        """Write the results file atomically; a cache that cannot be written is silently skipped."""
        if not self._changed:
            return
        # Files deleted since they were linted would otherwise stay in the cache for ever.
        self._entries = {path: entry for path, entry in self._entries.items() if os.path.exists(path)}
        self.summaries = {key: entry for key, entry in self.summaries.items() if os.path.exists(key.split("\0", 1)[0])}
        try:
            _prepare(self.directory)
            self.file.parent.mkdir(parents=True, exist_ok=True)
            import tempfile

            descriptor, temporary = tempfile.mkstemp(dir=self.file.parent, suffix=".tmp")
            with os.fdopen(descriptor, "w", encoding="utf-8") as stream:
                json.dump({"files": self._entries, "summaries": self.summaries}, stream, separators=(",", ":"))
            os.replace(temporary, self.file)
        except OSError:
            return

    def _hash_of(self, path: str) -> str | None:
        if path not in self._dependency_hashes:
            try:
                self._dependency_hashes[path] = content_hash(Path(path).read_bytes())
            except OSError:
                self._dependency_hashes[path] = None
        return self._dependency_hashes[path]


def clean(directory: Path) -> bool:
    """Remove the cache directory; False when there was none."""
    if not directory.is_dir():
        return False
    import shutil

    shutil.rmtree(directory)
    return True


def _prepare(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name, content in (("CACHEDIR.TAG", _TAG), (".gitignore", "# Created by gpumem-lint automatically.\n*\n")):
        marker = directory / name
        if not marker.exists():
            marker.write_text(content, encoding="utf-8")


def _results_key(project_root: Path) -> str:
    """Messages name files relative to the working directory, so it is part of the key too."""
    digest = hashlib.blake2b(digest_size=8)
    digest.update(f"{project_root}\0{Path.cwd()}".encode())
    for file in sorted(_PACKAGE.rglob("*")):
        if file.suffix in (".py", ".json", ".toml") and "__pycache__" not in file.parts:
            status = file.stat()
            digest.update(f"{file.relative_to(_PACKAGE)}:{status.st_size}:{status.st_mtime_ns}".encode())
    return digest.hexdigest()


def _load(file: Path) -> dict[str, dict[str, Any]]:
    """The results file's two tables, `files` and `summaries` (empty when missing or damaged)."""
    try:
        stored = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(stored, dict):
        return {}
    return {name: table for name in ("files", "summaries") if isinstance(table := stored.get(name), dict)}


def _diagnostic_to(diagnostic: Diagnostic) -> list:
    fix = diagnostic.fix
    return [
        [diagnostic.start.row, diagnostic.start.column, diagnostic.end.row, diagnostic.end.column],
        diagnostic.code,
        diagnostic.name,
        diagnostic.message,
        diagnostic.help,
        diagnostic.severity.value,
        None
        if fix is None
        else [
            fix.applicability.value,
            fix.title,
            [[e.start.row, e.start.column, e.end.row, e.end.column, e.content] for e in fix.edits],
        ],
        diagnostic.cell,
    ]


def _diagnostic_from(display: str, item: list) -> Diagnostic:
    (start_row, start_column, end_row, end_column), code, name, message, help_text, severity, fix, cell = item
    return Diagnostic(
        display,
        Position(start_row, start_column),
        Position(end_row, end_column),
        code,
        name,
        message,
        help_text,
        Severity(severity),
        None if fix is None else _fix_from(fix),
        cell=cell,
    )


def _fix_from(item: list) -> Fix:
    applicability, title, edits = item
    return Fix(
        tuple(Edit(Position(a, b), Position(c, d), content) for a, b, c, d, content in edits),
        Applicability(applicability),
        title,
    )
