"""First-party imports: which files of the project an import statement runs, and what they do at import.

The engine lints one file at a time, so another module is read here, lazily: resolved relative
to the importing file's directory (Python puts a script's directory on `sys.path`), its package
(relative imports), and the project root (the nearest directory above with pyproject.toml,
setup.py or .git, and its `src/`), and the directories the importing file adds to `sys.path` as
literals (`sys.path.append("core")`). A directory without `__init__.py` is a namespace package
(PEP 420). Only files inside the project root are followed, at most
`MAX_IMPORT_DEPTH` imports deep. Each module's summary — the events it causes at import time, in
order, with its own file and line — is cached per process and per file version, shared with
the other processes of a run (`share_summaries`), and kept by the result cache for the next run
(`take_computed`): an entry names the content hash of every file it read, and is used only
while they all still hash the same. A summary reads only what the import can run
(`import_time_source.py`).
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from gpumem_lint.cache import content_hash
from gpumem_lint.cst_parse import parse_module
from gpumem_lint.fast_path import ast_statements, cpython_tree
from gpumem_lint.knowledge.lockin import lockin_table
from gpumem_lint.semantic import import_time_source as hollowing
from gpumem_lint.semantic.import_time_source import ImportStatements, import_time_source
from gpumem_lint.semantic.imports import dotted_name
from gpumem_lint.semantic.recent import Recent
from gpumem_lint.semantic.statement_lines import StatementLines, statement_lines

#: How many imports deep first-party modules are followed (the linted file's imports are depth 1).
MAX_IMPORT_DEPTH = 3
_ROOT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
#: Larger modules are not summarised (generated tables, vendored code).
_MAX_BYTES = 1_000_000


@dataclass(frozen=True)
class ImportSite:
    """An event another module causes at import: as `Site`, with the module's path."""

    event: str
    call: str
    line: int
    file: str
    path: Path


#: libcst's tree of a module's reduced text, that text, and its lines' numbers in the file (None: the same).
_Reading = tuple[cst.Module, str, list[int] | None] | ImportStatements


@dataclass(frozen=True)
class _Summary:
    sites: tuple[ImportSite, ...]
    files: frozenset[Path]  # the module and every first-party module it imports at import time
    #: How many imports deep below the module its summary asked (`ModuleGraph.height`): a summary
    #: made at depth d with d + height <= MAX_IMPORT_DEPTH met no limit, and holds at any depth
    #: where that still holds.
    height: int = field(default=0, compare=False)


class ModuleGraph:
    """Resolves the imports of one linted file; `dependencies` collects every file consulted."""

    def __init__(self, source: Path, depth: int = 1) -> None:
        self.source = source
        self.depth = depth
        self.root = project_root(source.parent)
        self.dependencies: set[Path] = set()
        #: 1 once this graph was asked about an import, and more for what that import's module asked.
        self.height = 0

    def import_sites(
        self, node: cst.Import | cst.ImportFrom | ast.Import | ast.ImportFrom, source: Path
    ) -> list[ImportSite]:
        """What an import statement (of libcst's tree, or of CPython's) in `source` causes in other modules."""
        self.height = max(self.height, 1)
        if self.depth > MAX_IMPORT_DEPTH:
            return []
        sites: list[ImportSite] = []
        for path in resolve_import(node, source, self.root):
            sites += self._sites(_summary(path, _mtime(path), self.depth))
        return sites

    def call_sites(self, node: cst.Import | cst.ImportFrom, module: str | None, function: str) -> list[ImportSite]:
        """The events a call to `function` of a first-party module causes (any path through it).

        `node` imported the module, or the function from it; `module` is the local name the
        statement bound for a module (`utils` in `utils.setup()`), None for `from m import setup`."""
        self.height = max(self.height, 1)
        if self.depth > MAX_IMPORT_DEPTH:
            return []
        files = resolve_import(node, self.source, self.root)
        if module is not None and isinstance(node, cst.ImportFrom):
            files = [file for file in files if _module_name(file) == module]
        elif module is None and isinstance(node, cst.ImportFrom):
            # `from pkg.launch import launch`: the function is in the module the statement names, the last of
            # the files its dotted name runs; files after those are submodules the imported names are.
            named = dotted_name(node.module) if node.module is not None else None
            files = files[: len(named.split(".")) if named else 0]
        if not files:
            return []
        path = files[-1]
        return self._sites(_function_summary(path, _mtime(path), self.depth, function))

    def _sites(self, summary: _Summary | None) -> list[ImportSite]:
        if summary is None:
            return []
        self.dependencies |= summary.files
        self.height = max(self.height, 1 + summary.height)
        return [
            ImportSite(site.event, site.call, site.line, display_path(site.path, self.source), site.path)
            for site in summary.sites
        ]


def _module_name(file: Path) -> str:
    return file.parent.name if file.name == "__init__.py" else file.stem


# A lint run does not change the tree it reads: file-system answers are cached per process.
@lru_cache(maxsize=4096)
def project_root(directory: Path) -> Path:
    for candidate in (directory, *directory.parents):
        if any((candidate / marker).exists() for marker in _ROOT_MARKERS):
            return candidate
    return directory


def resolve_import(
    node: cst.Import | cst.ImportFrom | ast.Import | ast.ImportFrom, source: Path, root: Path
) -> tuple[Path, ...]:
    """The first-party files an import statement (of libcst's tree, or CPython's) executes, outermost package first."""
    if isinstance(node, ast.Import):
        return _resolve_modules(tuple(alias.name for alias in node.names), source, root)
    if isinstance(node, ast.ImportFrom):
        names = tuple(alias.name for alias in node.names if alias.name != "*")
        return _resolve_from(node.module or "", node.level, names, source, root)
    if isinstance(node, cst.Import):
        modules = tuple(name for alias in node.names if (name := dotted_name(alias.name)))
        return _resolve_modules(modules, source, root)
    names = (
        ()
        if isinstance(node.names, cst.ImportStar)
        else tuple(alias.name.value for alias in node.names if isinstance(alias.name, cst.Name))
    )
    module = dotted_name(node.module) if node.module is not None else ""
    if module is None:
        return ()
    return _resolve_from(module, len(node.relative), names, source, root)


# Modules import the same packages again and again: resolutions are cached per process.
@lru_cache(maxsize=65536)
def _resolve_modules(modules: tuple[str, ...], source: Path, root: Path) -> tuple[Path, ...]:
    found: list[Path] = []
    for name in modules:
        found.extend(_absolute(name.split("."), source, root)[0])
    return tuple(_dedupe(found, source))


@lru_cache(maxsize=65536)
def _resolve_from(module: str, dots: int, names: tuple[str, ...], source: Path, root: Path) -> tuple[Path, ...]:
    parts = module.split(".") if module else []
    if dots:
        base = source.parent
        for _ in range(dots - 1):
            base = base.parent
        if not base.is_relative_to(root):
            return ()
        files, _ = _walk_package(base, parts, root)
        # `from . import x` / `from .pkg import x`: x may be a submodule.
        package = base.joinpath(*parts)
        files += [file for name in names if (file := _module_file(package / name)) is not None]
        return tuple(_dedupe(files, source))
    files, package = _absolute(parts, source, root)
    if package is not None:
        files += [file for name in names if (file := _module_file(package / name)) is not None]
    return tuple(_dedupe(files, source))


#: `sys.path.append("droid_slam")`, `sys.path.insert(0, "../core")`: a literal directory a script adds.
_SYS_PATH_LITERAL = re.compile(r"""sys\.path\.(?:append|insert)\(\s*(?:\d+\s*,\s*)?r?["']([^"'\n]+)["']\s*\)""")


@lru_cache(maxsize=4096)
def _added_bases(source: Path, root: Path) -> tuple[Path, ...]:
    """The directories `source` adds to `sys.path` as literals, read from its script's directory (or the
    root, where such scripts are run from), inside the root: research scripts import their packages so."""
    try:
        text = source.read_text(encoding="utf-8") if source.stat().st_size <= _MAX_BYTES else ""
    except (OSError, UnicodeDecodeError):
        return ()
    if "sys.path" not in text:
        return ()
    bases = []
    for directory in _SYS_PATH_LITERAL.findall(text):
        for base in (source.parent / directory, root / directory):
            resolved = _resolved(base)
            if resolved.is_dir() and resolved.is_relative_to(root):
                bases.append(resolved)
    return tuple(dict.fromkeys(bases))


def _absolute(parts: list[str], source: Path, root: Path) -> tuple[list[Path], Path | None]:
    """The files `import a.b` runs, and the directory of `a.b` when it is a package (else None). The
    directories the file adds to `sys.path` are read only when the usual places hold no such module."""
    usual = _absolute_in(dict.fromkeys((source.parent, root, root / "src")), parts, root)
    return usual or _absolute_in(_added_bases(source, root), parts, root) or ([], None)


def _absolute_in(bases, parts: list[str], root: Path) -> tuple[list[Path], Path | None] | None:
    for base in bases:
        if base.is_relative_to(root):
            files, found = _walk_package(base, parts, root)
            if found and parts:
                stem = base.joinpath(*parts)
                return files, stem if _is_package(stem, root) else None
    return None


def _walk_package(base: Path, parts: list[str], root: Path) -> tuple[list[Path], bool]:
    """`base/a/__init__.py`, `base/a/b.py` for a.b: every file that runs, stopping at the first missing, and
    whether every part was found. A directory without `__init__.py` is a namespace package (PEP 420,
    common in research code): it runs nothing, and its modules are found."""
    files: list[Path] = []
    current = base
    for part in parts:
        current = current / part
        file = _module_file(current)
        if file is None and _is_package(current, root):
            continue
        if file is None or not file.is_relative_to(root):
            return files, False
        files.append(file)
    return files, True


@lru_cache(maxsize=65536)
def _is_package(stem: Path, root: Path) -> bool:
    """A regular package (`stem/__init__.py`) or a namespace package (a directory, no `stem.py`) inside the root."""
    return stem.is_dir() and stem.is_relative_to(root) and not stem.with_suffix(".py").is_file()


@lru_cache(maxsize=65536)
def _module_file(stem: Path) -> Path | None:
    for candidate in (stem.with_suffix(".py") if stem.name else None, stem / "__init__.py"):
        if candidate is not None and candidate.is_file():
            return candidate
    return None


def _dedupe(files: list[Path], source: Path) -> list[Path]:
    seen = {_resolved(source)}
    result = []
    for file in files:
        resolved = _resolved(file)
        if resolved not in seen:
            seen.add(resolved)
            result.append(resolved)
    return result


@lru_cache(maxsize=65536)
def _resolved(path: Path) -> Path:
    return path.resolve()


def _mtime(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return -1


def display_path(path: Path, source: Path) -> str:
    """`path` as written from `source`'s directory (absolute on another drive)."""
    try:
        return Path(os.path.relpath(path, source.parent)).as_posix()
    except ValueError:
        return path.as_posix()


_IN_PROGRESS: set[Path] = set()


@lru_cache(maxsize=512)
def _summary(path: Path, mtime: int, depth: int) -> _Summary | None:
    """What importing `path` causes; None when it cannot be read or parsed, or is being summarised (a cycle)."""
    return _shared_summary(path, mtime, depth, None)


@lru_cache(maxsize=1024)
def _function_summary(path: Path, mtime: int, depth: int, function: str) -> _Summary | None:
    """What calling `function` of the module at `path` causes (its import-time events excluded)."""
    return _shared_summary(path, mtime, depth, function)


#: A directory where the worker processes of one run share the summaries they compute: the
#: modules a project's files import are mostly the same, and each would summarise them again.
_shared: Path | None = None
#: Summaries earlier runs computed (the result cache's), by `_key`, as `_entry` writes them.
_known: dict[str, dict] = {}
#: Summaries this process computed since `take_computed` last took them; None: none are kept.
_computed: dict[str, dict] | None = None


def share_summaries(directory: Path | None, known: dict[str, dict] | None = None, keep: bool = False) -> None:
    """Use `directory` (which lives as long as the run) to share summaries with the run's other
    processes, and `known` (entries earlier runs computed) where they still hold; with `keep`,
    the summaries computed are kept for `take_computed`."""
    global _shared, _known, _computed
    _shared = directory
    _known = known or {}
    _computed = {} if keep else None


def take_computed() -> dict[str, dict]:
    """The summaries this process computed since the last call, for the result cache to keep."""
    if not _computed:
        return {}
    found = dict(_computed)
    _computed.clear()
    return found


def _key(path: Path, depth: int | None, function: str | None) -> str:
    """A summary's key in the stores; depth None for one that met no depth limit (`_complete`)."""
    return f"{path}\0{'*' if depth is None else depth}\0{function or ''}\0{int(hollowing.enabled)}"


#: Summaries that met no depth limit, by (path, mtime, function, hollowing): each holds at every
#: depth d with d + height <= MAX_IMPORT_DEPTH, so a module imported at several depths is
#: summarised once.
_complete: dict[tuple[Path, int, str | None, bool], _Summary] = {}
_COMPLETE_LIMIT = 8192


def _shared_summary(path: Path, mtime: int, depth: int, function: str | None) -> _Summary | None:
    found = _complete.get((path, mtime, function, hollowing.enabled))
    if found is not None and depth + found.height <= MAX_IMPORT_DEPTH:
        return found
    keys = (_key(path, None, function), _key(path, depth, function))
    stored = _stored(keys, depth)
    if stored is not None:
        return stored
    summary = _summarise(path, mtime, depth, function)
    if summary is None:
        return None
    complete = depth + summary.height <= MAX_IMPORT_DEPTH
    if complete:
        if len(_complete) >= _COMPLETE_LIMIT:
            _complete.clear()
        _complete[(path, mtime, function, hollowing.enabled)] = summary
    if _shared is None and _computed is None:
        return summary
    entry = _entry(summary)
    if entry is None:
        return summary  # a file it read vanished: nothing can validate it later
    key = keys[0] if complete else keys[1]
    if _computed is not None:
        _computed[key] = entry
    if _shared is not None:
        shared = _shared / hashlib.sha1(key.encode()).hexdigest()
        partial = shared.with_name(f"{shared.name}.{os.getpid()}")
        try:
            partial.write_text(json.dumps(entry), encoding="utf-8")
            os.replace(partial, shared)  # readers see a whole entry or none
        except OSError:
            pass  # sharing is an optimisation: the summary stands
    return summary


def _stored(keys: tuple[str, str], depth: int) -> _Summary | None:
    """A summary an earlier run (`_known`) or another process of this run (`_shared`) made, that
    still holds: under the depth-free key if it holds at `depth`, else under this depth's."""
    for key in keys:
        found = _reused(_known.get(key))
        if found is None and _shared is not None:
            try:
                found = _reused(json.loads((_shared / hashlib.sha1(key.encode()).hexdigest()).read_bytes()))
            except (OSError, ValueError):
                pass  # not there (yet): another process may be computing it as well
        if found is not None and (key is keys[1] or depth + found.height <= MAX_IMPORT_DEPTH):
            return found
    return None


def _entry(summary: _Summary) -> dict | None:
    """A summary as JSON keeps it, with the content hash of every file it read."""
    hashes = {str(file): _content_hash(file, _mtime(file)) for file in sorted(summary.files)}
    if None in hashes.values():
        return None
    sites = [[site.event, site.call, site.line, site.file, str(site.path)] for site in summary.sites]
    return {"files": hashes, "sites": sites, "height": summary.height}


def _reused(entry: dict | None) -> _Summary | None:
    """The summary an entry holds, if every file it read still has the content it had."""
    if entry is None:
        return None
    try:
        files = [Path(file) for file in entry["files"]]
        if any(_content_hash(file, _mtime(file)) != entry["files"][str(file)] for file in files):
            return None
        sites = tuple(
            ImportSite(event, call, line, file, Path(path)) for event, call, line, file, path in entry["sites"]
        )
        return _Summary(sites, frozenset(files), int(entry["height"]))
    except (KeyError, TypeError, ValueError, AttributeError):  # damaged, or written by hand
        return None


@lru_cache(maxsize=65536)
def _content_hash(path: Path, mtime: int) -> str | None:
    if mtime < 0:
        return None
    try:
        return content_hash(path.read_bytes())
    except OSError:
        return None


def _summarise(path: Path, mtime: int, depth: int, function: str | None) -> _Summary | None:
    if mtime < 0 or path in _IN_PROGRESS:
        return None
    try:
        reading = _reading(path, mtime, function)
    except (OSError, cst.ParserSyntaxError, RecursionError, MemoryError, UnicodeDecodeError, SyntaxError, LookupError):
        return None
    if reading is None:
        return None
    if isinstance(reading, ImportStatements):
        return _import_statements_summary(reading, path, depth)
    module, text, origin = reading
    return summary_of(module, text, origin, path, depth, function)


#: A module is summarised for its import and for each function called from it, at each depth: what
#: each reads (`_reading`) is kept, and the module's text and CPython's tree (`_source`) for the next
#: function. CPython's trees take about 45 times their text, libcst's 30: at most 20 MiB in all.
_RECENT_SOURCES: Recent[tuple[str, ast.Module | None]] = Recent(budget=256 * 1024)
_RECENT_READINGS: Recent[_Reading] = Recent(budget=256 * 1024)


def _reading(path: Path, mtime: int, function: str | None) -> _Reading | None:
    """What a summary of the import (`function` None) or of a call to `function` reads: libcst's
    tree of the module's reduced text, that text and where its lines are in the file (None: all of
    it); or its import statements alone. None for a module too large to summarise."""
    key = (path, mtime, function, hollowing.enabled)
    found = _RECENT_READINGS.get(key)
    if found is not None:
        return found
    source = _source(path, mtime)
    if source is None:
        return None
    text, tree = source
    acts = _calls_that_act(tree, path) if function is None and tree is not None else None
    reduced = import_time_source(text, tree, function, acts)
    if isinstance(reduced, ImportStatements):  # all that such an import runs: no need for libcst
        _RECENT_READINGS.put(key, reduced, sum(len(statement) for _, statement in reduced.statements))
        return reduced
    if reduced is not None:
        text = reduced.text
    found = (parse_module(text), text, reduced.origin if reduced else None)
    _RECENT_READINGS.put(key, found, len(text))
    return found


def _source(path: Path, mtime: int) -> tuple[str, ast.Module | None] | None:
    """The text of the module at `path` and CPython's tree of it; None for a module too large to summarise."""
    from gpumem_lint.source import decode_source

    found = _RECENT_SOURCES.get((path, mtime))
    if found is None:
        data = path.read_bytes()
        if len(data) > _MAX_BYTES:
            return None
        text = decode_source(data)
        found = (text, cpython_tree(text))
        _RECENT_SOURCES.put((path, mtime), found, len(data))
    return found


def _import_statements_summary(imports: ImportStatements, path: Path, depth: int) -> _Summary:
    """The summary of a module whose import runs only its import statements, without libcst: what
    `summary_of` finds (each statement's first-party modules' events, then its own `import torch`;
    the first site of each event)."""
    from gpumem_lint.semantic.program_order import imports_torch, short_code

    _IN_PROGRESS.add(path)
    try:
        graph = ModuleGraph(path, depth + 1)
        first: dict[str, ImportSite] = {}
        for node, source in imports.statements:
            for site in graph.import_sites(node, path):
                first.setdefault(site.event, replace(site, path=_nested(site, graph)))
            if imports_torch(_absolute_modules(node)):
                site = ImportSite("import_torch", short_code(source), node.lineno, path.name, path)
                first.setdefault(site.event, site)
        return _Summary(tuple(first.values()), frozenset({path, *graph.dependencies}), graph.height)
    finally:
        _IN_PROGRESS.discard(path)


def _absolute_modules(node: ast.Import | ast.ImportFrom) -> list[str]:
    """The modules an import statement names absolutely (a relative import names none)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    return [node.module] if node.module and not node.level else []


def _calls_that_act(tree: ast.Module, path: Path) -> Callable[[ast.Call], bool]:
    """For the module at `path`: whether a call may cause an event (its name, or the keyword that
    places it on a device, is one the lock-in table knows) or run a first-party module's function.
    Names are compared as written and as imported (`init` for `from torch.cuda import init as i`)."""
    words, keywords = _event_words()
    root = project_root(path.parent)
    originals: dict[str, set[str]] = {}
    first_party: set[str] = set()
    for node in ast_statements(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.split(".", 1)[0]
                originals.setdefault(local, set()).add(alias.name.rsplit(".", 1)[-1])
                if _resolve_modules((alias.name,), path, root):
                    first_party.add(local)
        elif isinstance(node, ast.ImportFrom):
            names = tuple(alias.name for alias in node.names if alias.name != "*")
            resolved = _resolve_from(node.module or "", node.level, names, path, root)
            for alias in node.names:
                local = alias.asname or alias.name
                originals.setdefault(local, set()).add(alias.name)
                if resolved:
                    first_party.add(local)

    def acts(call: ast.Call) -> bool:
        if any(keyword.arg in keywords for keyword in call.keywords):
            return True
        func = call.func
        if isinstance(func, ast.Attribute):
            if func.attr in words:
                return True
            while isinstance(func, ast.Attribute):
                func = func.value
            return isinstance(func, ast.Name) and func.id in first_party
        if isinstance(func, ast.Name):
            return func.id in first_party or bool(({func.id} | originals.get(func.id, set())) & words)
        return False

    return acts


@lru_cache(maxsize=1)
def _event_words() -> tuple[frozenset[str], frozenset[str]]:
    """The last part of every call and method name the lock-in table classifies, and its device keywords."""
    table = lockin_table()
    words = {name.rsplit(".", 1)[-1] for name in (*table.launch_calls, *table.launch_methods)}
    keywords: set[str] = set()
    for event in table.events.values():
        names = (*event.calls, *event.cuda_argument_calls, *event.calls_with_keyword, *event.methods)
        words.update(name.rsplit(".", 1)[-1] for name in (*names, *event.device_methods))
        keywords.update(event.literal_device_keywords, event.calls_with_keyword.values())
        if event.device_keyword:
            keywords.add(event.device_keyword)
    return frozenset(words), frozenset(keywords)


def lines_of(module: cst.Module, text: str, origin: list[int] | None = None) -> Callable[[cst.CSTNode], int]:
    """`line_of(node)` for a module parsed from `text` (whose lines are `origin`'s, when given): CPython's
    statement lines, made at the first call; libcst's positions only for a node they do not place."""
    lines: list[StatementLines | None] = []
    positions: dict = {}

    def line_of(node: cst.CSTNode) -> int:
        if not lines:
            lines.append(statement_lines(module, text))
        line = lines[0].line(node) if lines[0] is not None else None
        if line is None:
            if not positions:
                positions.update(MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider))
            line = positions[node].start.line
        return origin[line - 1] if origin is not None else line

    return line_of


def summary_of(
    module: cst.Module, text: str, origin: list[int] | None, path: Path, depth: int, function: str | None
) -> _Summary:
    """The summary of the module at `path`, parsed from `text` (whose lines are `origin`'s, when given)."""
    from gpumem_lint.semantic.program_order import ProgramOrder

    _IN_PROGRESS.add(path)
    try:
        graph = ModuleGraph(path, depth + 1)
        order = ProgramOrder(module, path.name, lines_of(module, text, origin), graph, path)
        sites = tuple(
            # Events of modules it imports keep their own file; the module's own are at `path`.
            ImportSite(site.event, site.call, site.line, site.file, path if site.via is None else _nested(site, graph))
            for site in (order.import_time_sites() if function is None else order.function_sites(function))
        )
        return _Summary(sites, frozenset({path, *graph.dependencies}), graph.height)
    finally:
        _IN_PROGRESS.discard(path)


def _nested(site, graph: ModuleGraph) -> Path:
    return (graph.source.parent / site.file).resolve()
