"""The part of an imported module that a summary can run: function bodies nothing calls are hollowed.

`module_graph` summarises every first-party module a linted file imports, and building
libcst's tree of each was most of a GML3xx run. Program order (`program_order.py`) enters a
function's body only when it follows a call: to a module-level function or class by name
(`setup()`, `Trainer()` runs `__init__`) or to a method through `self.name()`. So a body is
kept when its name is called by code that runs: at import (the module's and classes'
statements, decorators, base classes), or, for a function's summary, from that function;
and then by what those bodies call, until nothing new is reached. A name called anywhere
counts, whatever it is called on, which keeps more than program order follows, never less.

A hollowed body keeps its import statements, in order (the import table is module-wide),
or becomes `pass`. When nothing is kept and no import-time call can act (the caller says which
can), the import can only run its import statements: those are all a summary needs, and libcst
is not needed at all. `Reduction.origin` maps the lines back to the file's.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from gpumem_lint.fast_path import Reduction, ast_blocks, split_lines

#: Off: summaries read whole modules (bench/summary_equality.py compares the two).
enabled = True

_FUNCTION = (ast.FunctionDef, ast.AsyncFunctionDef)
_IMPORT = (ast.Import, ast.ImportFrom)
_SEMICOLON = re.compile(r"[ \t]*;")


@dataclass(frozen=True)
class ImportStatements:
    """All that an import can run: its import statements (not those in function bodies), in source
    order, each with its source as libcst renders the statement (with its `;`)."""

    statements: list[tuple[ast.Import | ast.ImportFrom, str]]


def import_time_source(
    text: str, tree: ast.Module | None, function: str | None = None, acts: Callable[[ast.Call], bool] | None = None
) -> Reduction | ImportStatements | None:
    """What a summary of importing the module (or calling its `function`) reads; None: the whole text.
    `tree` is CPython's tree of `text` (None when CPython rejects it).

    With `acts` (whether a call may cause an event or run another module's code), an import whose
    code calls nothing that acts, and no function of its own, causes only what its import
    statements do: those alone are returned."""
    if not enabled or tree is None:
        return None
    lines = split_lines(text)
    definitions = list(_definitions(tree.body, None))
    nodes = [] if function is not None else list(_import_time_nodes(tree.body, lines))
    called = {function} if function is not None else _called(nodes)
    kept: set[int] = set()
    while True:
        reached = [
            (node, owner)
            for node, owner in definitions
            if id(node) not in kept and (node.name in called or (node.name == "__init__" and owner in called))
        ]
        if not reached:
            break
        for node, _ in reached:
            kept.add(id(node))
            called |= _called(node.body)
    if function is None and acts is not None and not kept and not _anything_acts(nodes, acts):
        return _imports_only(lines, tree)
    spans = [_body_span(node, lines) for node, _ in definitions if id(node) not in kept and _own_lines(node, lines)]
    if function is not None:  # a call runs no class body: only its methods
        spans += [span for node in _classes(tree.body) for span in _class_statement_spans(node, lines)]
    if not spans:
        return None
    return _hollowed(lines, spans)


def _anything_acts(nodes: list[ast.AST], acts: Callable[[ast.Call], bool]) -> bool:
    """Whether import-time code calls something that acts."""
    return any(isinstance(node, ast.Call) and acts(node) for root in nodes for node in ast.walk(root))


def _imports_only(lines: list[str], tree: ast.Module) -> ImportStatements:
    statements = []
    for node in _import_time_imports(tree.body, lines):
        line = lines[_end(node) - 1].encode()
        semicolon = _SEMICOLON.match(line[node.end_col_offset :].decode(errors="replace"))
        # libcst counts a statement's `;` as part of it, and so does the site's text.
        statements.append((node, _segment(node, lines) + (semicolon.group(0) if semicolon else "")))
    return ImportStatements(statements)


def _import_time_imports(body: list[ast.stmt], lines: list[str]) -> Iterator[ast.stmt]:
    """The import statements that run at import, in source order (not those in function bodies
    or in the block of a `__main__` guard)."""
    for node in body:
        if isinstance(node, _IMPORT):
            yield node
        elif _is_main_guard(node, lines):
            yield from _import_time_imports(node.orelse, lines)
        elif not isinstance(node, _FUNCTION):
            for block in ast_blocks(node):
                yield from _import_time_imports(block, lines)


def _definitions(body: list[ast.stmt], owner: str | None) -> Iterator[tuple[ast.stmt, str | None]]:
    """Functions and methods outside any function body, with the name of the class they belong to."""
    for node in body:
        if isinstance(node, _FUNCTION):
            yield node, owner
        else:
            for block in ast_blocks(node):
                yield from _definitions(block, node.name if isinstance(node, ast.ClassDef) else owner)


def _import_time_nodes(body: list[ast.stmt], lines: list[str]) -> Iterator[ast.AST]:
    """Everything that runs at import: all but the bodies of functions (their headers run) and
    the block of a `__main__` guard."""
    for node in body:
        if _is_main_guard(node, lines):
            yield from _import_time_nodes(node.orelse, lines)
        elif isinstance(node, _FUNCTION):
            yield from node.decorator_list
            yield node.args
            if node.returns is not None:
                yield node.returns
        elif isinstance(node, ast.ClassDef):
            yield from (*node.decorator_list, *node.bases, *node.keywords)
            yield from _import_time_nodes(node.body, lines)
        else:
            yield from _import_time_nodes([child for block in ast_blocks(node) for child in block], lines)
            yield from (child for child in ast.iter_child_nodes(node) if not isinstance(child, (ast.stmt, *_CLAUSES)))


_CLAUSES = (ast.excepthandler, ast.match_case)


def _is_main_guard(node: ast.stmt, lines: list[str]) -> bool:
    """`if __name__ == "__main__":`, as program order reads it (its block runs only in a script;
    an `else` block at import). The literal must be one plain string, as libcst's `SimpleString`."""
    if not isinstance(node, ast.If) or not isinstance(test := node.test, ast.Compare) or len(test.comparators) != 1:
        return False
    if not isinstance(test.ops[0], ast.Eq):
        return False
    sides = [test.left, test.comparators[0]]
    names = [side for side in sides if isinstance(side, ast.Name) and side.id == "__name__"]
    strings = [side for side in sides if isinstance(side, ast.Constant) and _segment(side, lines) in _MAIN]
    return bool(names and strings)


_MAIN = ('"__main__"', "'__main__'")


def _called(nodes) -> set[str]:
    names: set[str] = set()
    for root in nodes:
        for node in ast.walk(root):
            if isinstance(node, ast.Call):
                if isinstance(node.func, ast.Name):
                    names.add(node.func.id)
                elif isinstance(node.func, ast.Attribute):
                    names.add(node.func.attr)
    return names


def _own_lines(node: ast.stmt, lines: list[str]) -> bool:
    """Whether the body starts on a line of its own (`def f(): return 1` stays as it is)."""
    first = node.body[0]
    decorators = getattr(first, "decorator_list", ())
    start = min(decorators, key=lambda d: d.lineno) if decorators else first
    before = lines[start.lineno - 1].encode()[: start.col_offset].decode(errors="replace")
    return before.strip() in ("", "@")


def _classes(body: list[ast.stmt]) -> Iterator[ast.ClassDef]:
    """The classes outside any function body (whose bodies a call of the module's functions never runs)."""
    for node in body:
        if isinstance(node, ast.ClassDef):
            yield node
        if not isinstance(node, _FUNCTION):
            for block in ast_blocks(node):
                yield from _classes(block)


def _class_statement_spans(node: ast.ClassDef, lines: list[str]) -> list[_Span]:
    """A class body's statements other than definitions, run by nothing a function summary follows,
    as spans that keep only their import statements (or `pass`, for a body left with nothing)."""
    if not _own_lines(node, lines):
        return []
    spans: list[_Span] = []
    run: list[ast.stmt] = []
    for statement in [*node.body, None]:
        if statement is not None and not _defines(statement):
            run.append(statement)
            continue
        if run:
            first = _start(run[0])
            spans.append(_Span(first, _end(run[-1]), _indentation(lines[first - 1]), _imports(run, lines)))
            run = []
    if all(not _defines(statement) for statement in node.body) and not any(span.statements for span in spans):
        spans[0].statements = ["pass"]
    return spans


def _defines(statement: ast.stmt) -> bool:
    """Whether a statement is, or holds, a function or class definition."""
    return any(isinstance(child, (*_FUNCTION, ast.ClassDef)) for child in ast.walk(statement))


def _start(node: ast.stmt) -> int:
    return min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])


def _end(node: ast.AST) -> int:
    return getattr(node, "end_lineno", None) or node.lineno


@dataclass
class _Span:
    """Lines `first` to `last` of the file, replaced by `statements` at `indent`."""

    first: int
    last: int
    indent: str
    statements: list[str]


def _body_span(node: ast.stmt, lines: list[str]) -> _Span:
    """A function's body, hollowed: its import statements, or `pass`."""
    first = _start(node.body[0])
    return _Span(first, _end(node), _indentation(lines[first - 1]), _imports(node.body, lines) or ["pass"])


def _hollowed(lines: list[str], spans: list[_Span]) -> Reduction:
    out: list[str] = []
    origin: list[int] = []
    line = 1  # the next line of the file to copy
    for span in sorted(spans, key=lambda span: span.first):
        out.extend(lines[line - 1 : span.first - 1])
        origin.extend(range(line, span.first))
        for statement in span.statements:
            out.append(span.indent + statement + "\n")
            origin.extend([span.first] * len(split_lines(statement)))
        line = span.last + 1
    tail = lines[line - 1 :]
    out.extend(tail)
    origin.extend(range(line, line + len(tail)))
    return Reduction("".join(out), origin)


def _imports(body: list[ast.stmt], lines: list[str]) -> list[str]:
    """The import statements nested in a body, in source order, as written (continuation lines too)."""
    if not any("import" in line for line in lines[_start(body[0]) - 1 : _end(body[-1])]):
        return []  # most bodies import nothing: no need to walk them
    found = sorted(
        (node for statement in body for node in ast.walk(statement) if isinstance(node, _IMPORT)),
        key=lambda node: (node.lineno, node.col_offset),
    )
    return [_segment(node, lines) for node in found]


def _segment(node: ast.stmt, lines: list[str]) -> str:
    """A statement's exact source; ast columns count UTF-8 bytes."""
    first, last = node.lineno - 1, _end(node) - 1
    if first == last:
        return lines[first].encode()[node.col_offset : node.end_col_offset].decode()
    head = lines[first].encode()[node.col_offset :].decode()
    tail = lines[last].encode()[: node.end_col_offset].decode()
    return head + "".join(lines[first + 1 : last]) + tail


def _indentation(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t\f"))]
