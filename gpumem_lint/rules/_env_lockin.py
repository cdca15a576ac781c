"""What the GML3xx rules share: environment writes made after the event that locks the variable.

Removals (`del`, `pop`) restore an earlier state and are not reported, nor are test modules.
A rule names its code; the lock-in table (`knowledge/lockin.toml`) says which variables are its,
which event locks each, and what a late write does. A write is reported when, on some path, the
locking event ran before it (`ctx.program_order`), unless a process is started after it: then the
variable is for the children, which read their environment afresh (a launcher).
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

import libcst as cst

from gpumem_lint.context import FileContext
from gpumem_lint.diagnostics import Applicability, Edit, Fix, Position
from gpumem_lint.fixes import source_rows
from gpumem_lint.knowledge.lockin import Variable, lockin_table
from gpumem_lint.rules._bindings import bound_names, statement_blocks
from gpumem_lint.rules._boundaries import is_main_block
from gpumem_lint.rules._test_files import is_test_file
from gpumem_lint.rules.base import Report
from gpumem_lint.semantic.callers import Caller, callers_of, constructions_of, importers_of
from gpumem_lint.semantic.env_writes import (
    EnvWrite,
    env_writes,
    module_string_constants,
    string_value,
    variable_read,
    variables_read,
)
from gpumem_lint.semantic.imports import dotted_name
from gpumem_lint.semantic.module_graph import display_path
from gpumem_lint.semantic.program_order import LAUNCH, Site
from gpumem_lint.semantic.short_circuit import contradicts, guards, truthy_names
from gpumem_lint.semantic.walk import NodeIds, Walker, used_names

#: Every GML3xx rule looks for an environment write first.
ENV_TRIGGERS = ("environ", "putenv")
#: What a reported write looks like in source (removals are never reported). Files that only read
#: the environment — most that mention it — skip the program-order model and its cross-file reads.
#: Every form starts with `environ` or `putenv`, which the regex engine finds quickly.
ENV_WRITE = re.compile(
    r"environ(?:"
    r"\s*\[[^\]\n]*(?:\]\s*[-+*/%|&^@]?=(?!=)|$)"  # environ[KEY] = / += ..., or a key split over lines
    r"|\s*\.\s*(?:setdefault|update|__setitem__)\b"
    r"|\s+as\b"  # `from os import environ as env`: writes through the alias
    r")|putenv",
    re.MULTILINE,
)

_CONSEQUENCE = {
    "fatal": "makes the program crash",
    "inconsistent": "is only half applied",
    "ignored": "has no effect",
}


def late_env_writes(ctx: FileContext, code: str) -> Iterator[Report]:
    if is_test_file(ctx.path):
        return  # tests set the environment up for the code under test, and restore it
    table = lockin_table()
    candidates = [
        (write, rows)
        for write in ctx.shared(_writes)  # the same for each GML3xx rule
        if not _is_removal(write.node) and (rows := _applicable(table.rows_for(write.name, code), write, ctx))
    ]
    if not candidates:
        return
    order = ctx.program_order
    for write, rows in candidates:
        for row in rows:
            events = table.events_implying(row.event)
            site, caller = order.first_event_before(write.node, events, skip=_skipped_by_tests(write, ctx)), None
            if site is None:
                site, caller = _first_event_before_callers(write, events, ctx)
            if site is None:
                continue
            if caller is not None:
                if not _read_again(order, write, row, ctx, caller):
                    yield Report(write.node, _caller_message(write, row, site, caller, ctx), help=remedy(row))
            elif not _read_again(order, write, row, ctx):
                yield Report(
                    write.node, message(write, row, site), fix=_move_above_import(ctx, write, site), help=remedy(row)
                )
            break


def _first_event_before_callers(
    write: EnvWrite, events: frozenset[str], ctx: FileContext
) -> tuple[Site, Caller] | tuple[None, None]:
    """An event before a call, in another first-party module, of the module-level function or the
    constructor (`Exp(args)` runs `__init__`, which calls `self._acquire_device()`) whose call runs
    the write: what ran before that call ran before the write."""
    source = Path(ctx.path)
    if not source.is_file():
        return None, None
    top_level = {id(statement) for statement in ctx.module.body}
    # an earlier call of the same code set the variable, so a call after it writes nothing: not an event before it
    earlier = _calls_like if _once_only(write, ctx) else None
    for function, owner in ctx.program_order.entered_by(write.node):
        if owner is None and id(function) in top_level:
            callers = callers_of(source.resolve(), function.name.value)
        elif owner is not None and id(owner) in top_level and function.name.value == "__init__":
            callers = constructions_of(source.resolve(), owner.name.value)
        else:
            continue
        for caller in callers:
            ctx.dependencies.update((caller.path, *caller.through))
            skip = _other_than(caller.call, earlier(caller.call) if earlier is not None else None)
            if (site := caller.order.first_event_before(caller.call, events, skip=skip)) is not None:
                return site, caller
    return None, None


def _skipped_by_tests(write: EnvWrite, ctx: FileContext):
    """Events that cannot have run on the write's path: guarded by a short-circuit (`device == "" and not
    torch.cuda.is_available()`) that the write's own tests contradict (`elif device:`)."""
    truthy = frozenset().union(*(truthy_names(test) for test in _tests_around(write, ctx)))
    if not truthy:
        return None
    found = ctx.shared(_short_circuit_guards)
    return lambda step: any(contradicts(guard, truthy) for guard in found.get(id(step.node), ()))


def _short_circuit_guards(ctx: FileContext):
    return guards(ctx.module)


def _tests_around(write: EnvWrite, ctx: FileContext) -> list[cst.BaseExpression]:
    """The tests of the `if` / `elif` arms the write is in the body of."""
    path = _path_to(ctx.module.body, write.node) or []
    found = []
    for (block, index), (inner, _) in pairwise(path):
        arm = block[index]
        while isinstance(arm, cst.If):  # `if a: ... elif b: <write>`: b holds (a's value is not used)
            if inner == list(arm.body.body):
                found.append(arm.test)
                break
            arm = arm.orelse
    return found


def _other_than(call: cst.Call, skip):
    """What the call running the write runs before it was judged in its own code: not an event before it."""
    return lambda step: step.node is call or (skip is not None and skip(step))


def _calls_like(call: cst.Call):
    callee = dotted_name(call.func)
    return lambda step: isinstance(step.node, cst.Call) and dotted_name(step.node.func) == callee


def _once_only(write: EnvWrite, ctx: FileContext) -> bool:
    """A write that runs only while its variable is unset (`setdefault`, or under `if "X" not in os.environ:`,
    `os.environ.get("X") is None`, `not os.getenv("X")`): once it ran, the same code writes nothing again."""
    imports = ctx.program_order.imports
    if isinstance(write.node, cst.Call):
        return imports.qualify(write.node.func) == "os.environ.setdefault"
    return any(_tests_unset(test, write.name, imports) for test in _tests_around(write, ctx))


def _tests_unset(test: cst.BaseExpression, name: str, imports) -> bool:
    if isinstance(test, cst.BooleanOperation):
        return isinstance(test.operator, cst.And) and (
            _tests_unset(test.left, name, imports) or _tests_unset(test.right, name, imports)
        )
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return variable_read(test.expression, imports) == name  # `not os.getenv("X")`
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    (comparison,) = test.comparisons
    if isinstance(comparison.operator, cst.NotIn):  # `"X" not in os.environ`
        return string_value(test.left) == name and imports.qualify(comparison.comparator) == "os.environ"
    return (  # `os.environ.get("X") is None`
        isinstance(comparison.operator, cst.Is)
        and isinstance(comparison.comparator, cst.Name)
        and comparison.comparator.value == "None"
        and variable_read(test.left, imports) == name
    )


def _read_again(order, write: EnvWrite, row: Variable, ctx: FileContext, caller: Caller | None = None) -> bool:
    """Whether the value written still reaches a reader: a process started after the write (it reads
    its environment afresh), a later event that reads the variable again (a new process group), or
    the file also sets the same thing through the API (the variable is then for other readers).
    A write the import runs precedes every later call of the module's functions: what any of them
    starts or re-reads comes after it, and so does what the importers do after the import; what the
    `caller` whose call ran the write does after it returns comes after it too."""
    table = lockin_table()
    at_import = _runs_at_import(write, ctx)
    rereaders = frozenset().union(*(table.events_implying(event) for event in row.reread_by))
    if order.first_event_after(write.node, rereaders | {LAUNCH}, reached=not at_import):
        return True
    if caller is not None and caller.order.first_event_after_return(caller.call, rereaders | {LAUNCH}):
        return True
    if bool(row.api) and any(name in row.api for name in ctx.shared(_called_names)):
        return True
    if rereaders and _read_again_by_callers(write, rereaders, ctx):
        return True
    return at_import and _read_again_by_importers(rereaders | {LAUNCH}, ctx)


def _runs_at_import(write: EnvWrite, ctx: FileContext) -> bool:
    """At module level, outside a `__main__` block."""
    if not isinstance(ctx.shared(_write_scopes).get(id(write.node)), cst.Module):
        return False
    return not any(_holds(statement, write.node) for statement in ctx.module.body if is_main_block(statement))


def _read_again_by_callers(write: EnvWrite, rereaders: frozenset[str], ctx: FileContext) -> bool:
    """A write in a module-level function whose callers in other first-party modules run a rereading
    event after it returns (`init_distributed()`, then `init_device_mesh(...)`, which builds new groups).
    Callers in this file are already in its program order."""
    scope = ctx.shared(_write_scopes).get(id(write.node))
    source = Path(ctx.path)
    if not isinstance(scope, cst.FunctionDef) or not any(s is scope for s in ctx.module.body) or not source.is_file():
        return False
    for caller in callers_of(source.resolve(), scope.name.value):
        ctx.dependencies.add(caller.path)
        if caller.order.first_event_after_return(caller.call, rereaders):
            return True
    return False


def _read_again_by_importers(events: frozenset[str], ctx: FileContext) -> bool:
    """A module that other first-party modules import: what runs after the import is theirs (a training
    script imports the datasets package, whose module sets the variable, then spawns workers that read it)."""
    source = Path(ctx.path)
    if not source.is_file():
        return False
    for importer in importers_of(source.resolve()):
        ctx.dependencies.add(importer.path)
        order, statement = importer.order, importer.statement
        if order is not None and statement is not None and order.first_event_after(statement, events, reached=True):
            return True
    return False


def _holds(statement: cst.CSTNode, node: cst.CSTNode) -> bool:
    ids = NodeIds()
    ids.walk(statement)
    return id(node) in ids.ids


def message(write: EnvWrite, row: Variable, site: Site, where: str | None = None) -> str:
    event = lockin_table().events.get(site.event)
    phrase = event.phrase if event else "it was read"
    where = where or site.where()
    return f"`{write.name}` set here {_CONSEQUENCE[row.consequence]}: {phrase} by `{site.call}` at {where}"


def _caller_message(write: EnvWrite, row: Variable, site: Site, caller: Caller, ctx: FileContext) -> str:
    """As `message`, the event being in the module whose call ran the write (paths from the linted file)."""
    here = Path(ctx.path).resolve()
    caller_file = display_path(caller.path, here)
    if site.via is None:
        where = f"{caller_file}:{site.line}"
    else:  # in a module the caller imports or calls: its path is the caller's
        where = f"{display_path(caller.path.parent / site.file, here)}:{site.line} (run by {site.via} in {caller_file})"
    call, line = caller.order.text_and_line(caller.call)
    return f"{message(write, row, site, where)}, before `{call}` at {caller_file}:{line} runs this code"


def remedy(row: Variable) -> str:
    """The lock-in table's remedy for this variable, as a help line."""
    return row.remedy[0].upper() + row.remedy[1:]


def _move_above_import(ctx: FileContext, write: EnvWrite, site: Site) -> Fix | None:
    """Move the write's statement above the statement of its block that runs the locking event
    (`import torch`, the first CUDA call, `init_process_group`, or a call or import that runs it in
    another function or module): a one-line write, or an `if` with no `else` that holds only
    environment writes (`if args.debug: os.environ[...] = "1"`), when nothing in between binds a name
    it reads and `os` is imported above. A write in a function whose event ran at module level
    (`import torch`) moves to module level when it reads only names bound there above it (a literal
    write). Unsafe: whatever ran in between no longer sees the old value."""
    path = _path_to(ctx.module.body, write.node)
    if path is None:
        return None  # not a statement of its own
    line = site.line if site.via is None else site.via_line
    env_nodes = {id(w.node) for w in ctx.shared(_writes)}
    positions = ctx.positions
    block, index = path[-1]
    if positions[block[index]].start.line != positions[block[index]].end.line:
        return None
    for depth in range(len(path) - 1, 0, -1):  # an `if` made only of environment writes
        if (locking := _locking(ctx, block, index, line)) is not None:
            break
        outer_block, outer_index = path[depth - 1]
        holder = outer_block[outer_index]
        if isinstance(holder, (cst.FunctionDef, cst.ClassDef)):
            return _move_to_module(ctx, path[:depth], block, index, line, site)
        if not (isinstance(holder, cst.If) and holder.orelse is None and _only_env_writes(holder, env_nodes)):
            return None
        block, index = outer_block, outer_index
    else:
        locking = _locking(ctx, block, index, line)
    if locking is None:
        return None  # the event runs around this block, or in a caller
    moved = block[index]
    above = positions[locking].start.line
    if not any(_binds_environ(s, ctx) and positions[s].start.line < above for s in ctx.module.body):
        return None  # `os` must already be imported where the write moves to
    skipped = block[block.index(locking) : index]
    if used_names(moved) & set().union(*(bound_names(s) for s in skipped)):
        return None  # it reads a name that the statements it moves above bind
    return _moved(ctx, moved, above, _title(ctx, locking, site), lambda text: text)


def _move_to_module(ctx: FileContext, holders, block, index: int, line: int, site: Site) -> Fix | None:
    """A write in a function (or a method) whose locking event ran at module level: move it above the
    module's statement that runs the event, when every name it reads is bound at module level above
    that statement, and the function keeps a statement."""
    positions = ctx.positions
    if len(block) < 2 or not all(isinstance(b[i], (cst.FunctionDef, cst.ClassDef)) for b, i in holders):
        return None  # only functions and classes around it: it runs whenever its function does
    locking = _locking(ctx, ctx.module.body, len(ctx.module.body), line)
    if locking is None:
        return None
    above = positions[locking].start.line
    bound_above = set().union(*(bound_names(s) for s in ctx.module.body if positions[s].end.line < above))
    if not _read_names(block[index]) <= bound_above:
        return None  # it reads a local, a parameter or a name bound later (a builtin too, to be sure)
    return _moved(ctx, block[index], above, _title(ctx, locking, site), textwrap.dedent)


def _title(ctx: FileContext, locking: cst.CSTNode, site: Site) -> str:
    """Above the event's call, or above the statement that runs it in another function or module."""
    span = ctx.positions[locking]
    if site.via is None and span.start.line <= site.line <= span.end.line:
        return f"Move the write above `{site.call}`"
    return f"Move the write above line {span.start.line}, which runs `{site.call}`"


def _moved(ctx: FileContext, moved: cst.CSTNode, above: int, title: str, indent) -> Fix:
    positions = ctx.positions
    start, end = positions[moved].start.line, positions[moved].end.line
    text = indent("".join(source_rows(ctx.text, start, end)))
    return Fix(
        (
            Edit(Position(above, 1), Position(above, 1), text if text.endswith("\n") else text + "\n"),
            Edit(Position(start, 1), Position(end + 1, 1), ""),
        ),
        Applicability.UNSAFE,
        title,
    )


def _locking(ctx: FileContext, block: list, index: int, line: int) -> cst.CSTNode | None:
    """The statement before `block[index]` whose lines hold the locking event, or that calls, by its
    name, the module-level function whose lines hold it (`device = get_device(args)`). A definition
    holds lines it does not run."""
    positions = ctx.positions
    function = next(
        (
            s.name.value
            for s in ctx.module.body
            if isinstance(s, cst.FunctionDef) and positions[s].start.line <= line <= positions[s].end.line
        ),
        None,
    )
    return next(
        (
            s
            for s in block[:index]
            if not isinstance(s, (cst.FunctionDef, cst.ClassDef))
            and (positions[s].start.line <= line <= positions[s].end.line or function in _called_names_in(s))
        ),
        None,
    )


def _only_env_writes(statement: cst.If, env_nodes: set[int]) -> bool:
    return all(
        isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 and id(_written(line.body[0])) in env_nodes
        for line in statement.body.body
    )


def _written(small: cst.BaseSmallStatement) -> cst.CSTNode:
    """What an environment write's node is: the assignment itself, or the call of an expression statement."""
    return small.value if isinstance(small, cst.Expr) else small


def _path_to(body, node: cst.CSTNode) -> list[tuple[list, int]] | None:
    """(block, index) from the module down to the one-statement line whose statement is `node`."""
    for index, statement in enumerate(body):
        if isinstance(statement, cst.SimpleStatementLine):
            if len(statement.body) == 1 and _written(statement.body[0]) is node:
                return [(list(body), index)]
            continue
        for child in statement_blocks(statement):
            if (found := _path_to(child, node)) is not None:
                return [(list(body), index), *found]
    return None


def _binds_environ(statement: cst.CSTNode, ctx: FileContext) -> bool:
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    imports = ctx.program_order.imports
    return any(
        isinstance(small, (cst.Import, cst.ImportFrom))
        and any(
            imports.qualify_name(alias.evaluated_alias or alias.evaluated_name) in {"os", "os.environ"}
            for alias in (small.names if not isinstance(small.names, cst.ImportStar) else ())
        )
        for small in statement.body
    )


def _is_removal(node: cst.CSTNode) -> bool:
    if isinstance(node, cst.Del):
        return True
    return (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value in {"pop", "unsetenv", "__delitem__"}
    )


def _applicable(rows: list[Variable], write: EnvWrite, ctx: FileContext) -> list[Variable]:
    """Rows restricted to some values (the allocator backend) apply to writes of a matching literal; a
    write of the value of a variable the runtime reads as the same setting (`CUDA_VISIBLE_DEVICES =
    os.environ.pop("HIP_VISIBLE_DEVICES")`, or through local names: `val = os.environ.pop(...)`, then
    `os.environ["CUDA_VISIBLE_DEVICES"] = val`) renames what it applied, and changes nothing."""
    value = string_value(write.value)
    renamed = _renamed(write, ctx) if any(row.same_mask for row in rows) else None
    return [
        row
        for row in rows
        if (row.value is None or (value is not None and row.value.search(value)))
        and not (renamed and renamed <= row.same_mask | {write.name})
    ]


def _renamed(write: EnvWrite, ctx: FileContext) -> frozenset[str] | None:
    """The variables the written value is read from, following local names in the write's scope."""
    imports = ctx.program_order.imports
    if (variable := variable_read(write.value, imports)) is not None:
        return frozenset({variable})
    if not isinstance(write.value, cst.Name):
        return None
    return variables_read(write.value, ctx.shared(_write_scopes).get(id(write.node), ctx.module), imports)


def _write_scopes(ctx: FileContext) -> dict[int, cst.Module | cst.FunctionDef]:
    """The function (or the module) each environment write's node is in, by the node's id."""
    finder = _Scopes(ctx)
    finder.walk(ctx.module)
    return finder.scopes


def _called_names(ctx: FileContext) -> set[str]:
    """Every call's qualified name in the module (one walk, for every write and rule that asks)."""
    collector = _CallNames(ctx.program_order.imports)
    collector.walk(ctx.module)
    return collector.names


class _CallNames(Walker):
    def __init__(self, imports) -> None:
        self.imports = imports
        self.names: set[str] = set()

    def visit_Call(self, node: cst.Call) -> None:
        name = self.imports.qualify(node.func)
        if name is not None:
            self.names.add(name)


def _writes(ctx: FileContext) -> list[EnvWrite]:
    collector = _WriteCollector(ctx)
    collector.walk(ctx.module)
    return collector.writes


class _WriteCollector(Walker):
    def __init__(self, ctx: FileContext) -> None:
        self.imports = ctx.program_order.imports
        self.constants = module_string_constants(ctx.module)
        self.writes: list[EnvWrite] = []

    def _add(self, node: cst.CSTNode) -> None:
        self.writes.extend(env_writes(node, self.imports, self.constants))

    def visit_Assign(self, node: cst.Assign) -> None:
        self._add(node)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._add(node)

    def visit_Del(self, node: cst.Del) -> None:
        self._add(node)

    def visit_Call(self, node: cst.Call) -> None:
        self._add(node)


class _Scopes(_WriteCollector):
    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self.stack: list[cst.Module | cst.FunctionDef] = [ctx.module]
        self.scopes: dict[int, cst.Module | cst.FunctionDef] = {}

    def _add(self, node: cst.CSTNode) -> None:
        self.scopes[id(node)] = self.stack[-1]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.stack.append(node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.stack.pop()


def _called_names_in(node: cst.CSTNode) -> set[str]:
    """The plain names called inside `node` (`get_device` of `device = get_device(args)`)."""
    calls = _PlainCalls()
    calls.walk(node)
    return calls.names


class _PlainCalls(Walker):
    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name):
            self.names.add(node.func.value)


def _read_names(node: cst.CSTNode) -> set[str]:
    """The names `node` reads, without the attribute names after a dot (`os` of `os.environ[...]`)."""
    reads = _Reads()
    reads.walk(node)
    return reads.names


class _Reads(Walker):
    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        self.walk(node.value)
        return False
