"""First-party callers of a module's function, and importers of a module, in the other modules of its project.

Program order follows calls forward, into the modules a file imports; what runs after a function
returns is in its callers, which the file does not import. They are found by reading the project's
other Python files (under `module_graph.project_root`, hidden and environment directories skipped)
that name both the function and its module or package — a text filter first —, then parsing those and
resolving their imports (`module_graph.resolve_import`) to the file: `f()` after
`from pkg.mod import f`, `mod.f()` after `from pkg import mod` or `import pkg.mod as mod`.
`from pkg import f` counts when `pkg/__init__.py` imports `f` from the file (one re-export).

What a module runs when imported is followed after the import in its importers, and theirs, a few
imports up (`importers_of`): the import statements that resolve to the file.

Asked only for a finding that is about to be reported, and read once per process and file. The
files read become dependencies of the finding (the result cache re-checks them); a caller added
in a new file is seen once the linted file changes.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache
from pathlib import Path

import libcst as cst

from gpumem_lint.cst_parse import parse_module
from gpumem_lint.fast_path import ast_statements
from gpumem_lint.semantic.module_graph import ModuleGraph, lines_of, project_root, resolve_import
from gpumem_lint.semantic.program_order import ProgramOrder
from gpumem_lint.semantic.walk import Walker

#: Directories that hold no first-party code.
_SKIPPED = frozenset({"node_modules", "__pycache__", "site-packages", "dist-packages", "build", "dist"})
#: A project with more Python files than this is not searched (a monorepo, a vendored tree).
MAX_FILES = 5_000
#: How many imports up importers are followed (a dataset module, its package, the engine, the script).
IMPORT_DEPTH = 4
#: How many classes down first-party subclasses are followed (`Exp_Main(Exp_Basic)`, a model's variants).
SUBCLASS_DEPTH = 2
#: Larger files are not read (generated tables, vendored code).
_MAX_BYTES = 1_000_000


@dataclass(frozen=True)
class Caller:
    path: Path
    order: ProgramOrder  # the caller's module, with its own first-party imports followed
    call: cst.Call
    #: The modules of the subclasses it was found through (`constructions_of`): they decide it too.
    through: tuple[Path, ...] = ()


def callers_of(source: Path, function: str) -> Iterator[Caller]:
    """Calls of the module-level `function` (or class) of `source` (a resolved path) in the project's other
    modules, also through a name bound to it there (`Exp = Exp_Main`, then `Exp(args)`)."""
    root = project_root(source.parent)
    stem = source.parent.name if source.name == "__init__.py" else source.stem
    for path, module, order in _mentioning(source, function, root):
        finder = _Calls(function)
        finder.walk(module)
        for call, name in finder.found:
            if _resolves_to(name, order, function, path, root, source, stem):
                yield Caller(path, order, call)


def constructions_of(source: Path, cls: str) -> Iterator[Caller]:
    """Calls in the project's other modules that construct the module-level class `cls` of `source`, or a
    first-party subclass of it (up to `SUBCLASS_DEPTH` classes down): each runs `cls.__init__`."""
    frontier: list[tuple[Path, str, tuple[Path, ...]]] = [(source, cls, ())]
    seen = {(source, cls)}
    for _ in range(SUBCLASS_DEPTH + 1):
        found = []
        for path, name, through in frontier:
            for caller in callers_of(path, name):
                yield replace(caller, through=through)
            for subclass in _subclasses(path, name):
                if subclass not in seen:
                    seen.add(subclass)
                    found.append((*subclass, (*through, subclass[0])))
        frontier = found


def _subclasses(source: Path, cls: str) -> Iterator[tuple[Path, str]]:
    """The module-level classes of other modules whose bases name `cls` of `source`."""
    root = project_root(source.parent)
    stem = source.parent.name if source.name == "__init__.py" else source.stem
    for path, module, order in _mentioning(source, cls, root):
        for statement in module.body:
            if isinstance(statement, cst.ClassDef) and any(
                _resolves_to(base.value, order, cls, path, root, source, stem) for base in statement.bases
            ):
                yield path, statement.name.value


def _mentioning(source: Path, name: str, root: Path) -> Iterator[tuple[Path, cst.Module, ProgramOrder]]:
    """The project's other modules whose text names `name` and whose imports name `source`'s module or
    package (a text filter: a call resolves to `source` only through an import)."""
    stem = source.parent.name if source.name == "__init__.py" else source.stem
    package = source.parent.name  # `from pkg import f`, re-exported by pkg/__init__.py
    for path in _python_files(root):
        if path == source:
            continue
        text = read_text(path)
        if text is None or name not in text or _import_line_words(path).isdisjoint((stem, package)):
            continue
        parsed = parsed_module(path)
        if parsed is not None:
            yield path, *parsed


@dataclass(frozen=True)
class Importer:
    """A module that imports `imported`. Found with CPython's parser; libcst's tree of it, which most
    askers never need (an entry script's search walks through every package on the way up), is parsed
    when first asked for."""

    path: Path
    imported: Path

    @cached_property
    def order(self) -> ProgramOrder | None:
        """The importer's module, with its own first-party imports followed; None where libcst cannot parse it."""
        parsed = parsed_module(self.path)
        return parsed[1] if parsed is not None else None

    @cached_property
    def statement(self) -> cst.Import | cst.ImportFrom | None:
        """The first of its import statements that runs `imported`."""
        parsed = parsed_module(self.path)
        if parsed is None:
            return None
        root = project_root(self.imported.parent)
        finder = _Imports()
        finder.walk(parsed[0])
        return next((node for node in finder.found if self.imported in resolve_import(node, self.path, root)), None)


def importers_of(source: Path, depth: int = IMPORT_DEPTH) -> Iterator[Importer]:
    """The import statements in the project's other modules that run `source` (a resolved path), then
    those that run the importers, up to `depth` imports up; each importing file once."""
    root = project_root(source.parent)
    seen, frontier = {source}, [source]
    for _ in range(depth):
        reached = []
        for imported in frontier:
            for importer in _direct_importers(imported, root):
                yield importer
                if importer.path not in seen:
                    seen.add(importer.path)
                    reached.append(importer.path)
        frontier = reached


def _direct_importers(source: Path, root: Path) -> Iterator[Importer]:
    name = source.parent.name if source.name == "__init__.py" else source.stem
    for path in _python_files(root):
        if path == source or name not in _import_line_words(path):  # a text filter first
            continue
        if any(source in resolve_import(statement, path, root) for statement in _import_statements(path)):
            yield Importer(path, source)


def _resolves_to(
    func: cst.BaseExpression, order: ProgramOrder, function: str, path: Path, root: Path, source: Path, stem: str
) -> bool:
    if isinstance(func, cst.Name):
        bound = order.imported(func.value)
        if bound is None or bound[1] != function:
            return False
        files = resolve_import(bound[0], path, root)
        return bool(files) and (files[-1] == source or _reexports(files[-1], function, source, root))
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
        bound = order.imported(func.value.value)
        if bound is None:
            return False
        node, imported = bound
        files = resolve_import(node, path, root)
        if imported is not None:  # `from pkg import mod`, then `mod.f()`
            return imported == stem and source in files
        # `import pkg.mod as mod`, then `mod.f()`
        return isinstance(node, cst.Import) and any(alias.asname for alias in node.names) and files[-1:] == (source,)
    return False


def _reexports(package: Path, function: str, source: Path, root: Path) -> bool:
    """`pkg/__init__.py` imports `function` from `source` (`from pkg.mod import f`): `from pkg import f` is it."""
    if package.name != "__init__.py":
        return False
    parsed = parsed_module(package)
    bound = parsed[1].imported(function) if parsed is not None else None
    if bound is None or bound[1] != function:
        return False
    files = resolve_import(bound[0], package, root)
    return bool(files) and files[-1] == source


class _Calls(Walker):
    """The calls of `function`, each with the expression that names it: the call's own, or for a call of a
    name bound to it (`Exp = Exp_Main`), the bound value. Assignments are seen before the calls after them."""

    def __init__(self, function: str) -> None:
        self.function = function
        self.aliases: dict[str, cst.Name] = {}
        self.found: list[tuple[cst.Call, cst.BaseExpression]] = []

    def visit_Assign(self, node: cst.Assign) -> None:
        if isinstance(node.value, cst.Name) and node.value.value == self.function:
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    self.aliases[target.target.value] = node.value

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        name = (
            func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else None
        )
        if name == self.function:
            self.found.append((node, func))
        elif isinstance(func, cst.Name) and func.value in self.aliases:
            self.found.append((node, self.aliases[func.value]))


class _Imports(Walker):
    def __init__(self) -> None:
        self.found: list[cst.Import | cst.ImportFrom] = []

    def visit_Import(self, node: cst.Import) -> bool:
        self.found.append(node)
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        self.found.append(node)
        return False


# A lint run does not change the tree it reads: file-system answers are cached per process.
@lru_cache(maxsize=64)
def _python_files(root: Path) -> tuple[Path, ...]:
    found: list[Path] = []
    for directory, subdirectories, files in os.walk(root):
        if "pyvenv.cfg" in files:
            subdirectories[:] = []
            continue
        subdirectories[:] = sorted(d for d in subdirectories if not d.startswith(".") and d not in _SKIPPED)
        found.extend(Path(directory, name) for name in sorted(files) if name.endswith(".py"))
        if len(found) > MAX_FILES:
            return ()
    return tuple(found)


@lru_cache(maxsize=4096)
def read_text(path: Path) -> str | None:
    try:
        if path.stat().st_size > _MAX_BYTES:
            return None
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


# The words after `import` or `from` to the end of the line, or of the parenthesised names it opens
# (`from pkg import (\n a,\n b,\n)`): a module's stem among them is a possible import of it. One scan of
# each file, however many modules ask.
_IMPORT_LINE_TAIL = re.compile(r"(?:import|from)\b([^\n(]*(?:\([^)]*\))?[^\n]*)")
_WORD = re.compile(r"\w+")


@lru_cache(maxsize=4096)
def _import_line_words(path: Path) -> frozenset[str]:
    text = read_text(path) or ""
    return frozenset(word for tail in _IMPORT_LINE_TAIL.findall(text) for word in _WORD.findall(tail))


@lru_cache(maxsize=4096)
def _import_statements(path: Path) -> tuple[ast.Import | ast.ImportFrom, ...]:
    """Every import statement of the file, at any depth (CPython's tree: a tenth of libcst's cost; statements
    only, expressions hold none)."""
    try:
        tree = ast.parse(read_text(path) or "")
    except (SyntaxError, ValueError):
        return ()
    return tuple(node for node in ast_statements(tree) if isinstance(node, (ast.Import, ast.ImportFrom)))


@lru_cache(maxsize=256)
def parsed_module(path: Path) -> tuple[cst.Module, ProgramOrder] | None:
    text = read_text(path)
    if text is None:
        return None
    try:
        module = parse_module(text)
    except cst.ParserSyntaxError:
        return None
    return module, ProgramOrder(module, str(path), lines_of(module, text), ModuleGraph(path), path)
