"""Program order: what has run before a given call or statement, on some path.

A file is run in two ways: as a script (module body in order, the `if __name__ == "__main__":`
block included), and as an imported module whose functions are called later. The model lays
both out as *timelines* of steps (every call, and every small statement such as an assignment
or a `del`), in evaluation order:

- the script timeline: the module body with the main block;
- one timeline per function or method: the module's import-time steps (the main block
  excluded), then the function's body.

Calls to functions of the same module (`main()`, `setup(args)`), to methods of the same class
(`self.setup()`) and constructors of classes of the same module (`Trainer(cfg)` runs
`__init__`) are followed into their bodies, up to `MAX_DEPTH` calls deep. `import utils` /
`from .data import x` of a first-party module (a file found inside the project, see
`module_graph`) adds the events that module causes at import time, with their own file and
line, so "CUDA initialised at import of utils.py:3" is found; a call to a function of such a
module (`get_device()` after `from utils import get_device`, or `utils.get_device()`) adds the
events of that function's body. Those files are recorded in `FileContext.dependencies`. Such an
import or call is one step until a query reaches it (a step that can still be the answer): only
then is the other module summarised and its events laid out there, so that a query about an
environment write near the top of a file reads none of the modules its functions call.

"On some path": an `if` arm and its `else` arm are exclusive; an arm that ends in `return`
ends its function's path, one that ends in `raise`/`sys.exit()` ends the program's; inside a
loop, a step later in the body also precedes an earlier one (the next iteration).

Each call is classified with the lock-in table (`knowledge/lockin.toml`): the events it causes
(`"cuda_driver_init"`, `"torch_cuda_init"`, `"context_creation"`, `"device_activation"`, `"first_allocation"`,
`"process_group_init"`, `"first_collective"`, `"import_torch"`, `"compiler_config_import"`), with everything
they imply, plus `"process_launch"` for calls that start processes (subprocess, multiprocessing, spawn).
A decorator written without a call (`@torch.compile`) is the call it makes; a parameter's default is
evaluated where its `def` runs (a class body runs at import); an import is the event
of the modules it imports (`import torch` -> `import_torch`, `from torch._inductor import config` ->
`compiler_config_import`).

API (for rules; build through `ctx.program_order`, cached per file):

    order = ctx.program_order
    site = order.first_event_before(node, {"cuda_driver_init"})
    # -> Site(event="first_allocation", call="model.cuda()", line=12, file="train.py", via=None)
    #    or None. `node` is a Call or a small statement (Assign, AugAssign, Del, Expr, ...).
    #    CUDA_INIT_EVENTS (= every event that runs cuInit) is what a fork-after-CUDA rule asks for.
    order.first_event_after(node, {"process_launch"}, reached=True)   # after the node, in code it reaches
    order.first_call_after(node, {"torch.cuda.set_device"})           # a given call after the node
    order.first_event_after_return(call, {"process_group_init"})      # in the caller, after the call returned
    order.executed(node)                                 # does any timeline reach the node?
    order.entered_by(node)                               # the functions (and methods) whose call runs it

`Site.via` names the import or call that ran a call of another module ("`import utils` at line 2",
"`get_device()` at line 8"),
and then `Site.file`/`Site.line` are that module's (its path relative to the linted file's
directory when possible).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import libcst as cst

from gpumem_lint.knowledge.lockin import CUDA_INIT, lockin_table
from gpumem_lint.semantic.conditions import exclusive, repeated_tests, test_key
from gpumem_lint.semantic.env_writes import env_writes, module_string_constants
from gpumem_lint.semantic.imports import ImportTable, dotted_name
from gpumem_lint.semantic.walk import Walker

if TYPE_CHECKING:
    from gpumem_lint.semantic.module_graph import ImportSite, ModuleGraph

#: How many calls deep same-module functions are followed.
MAX_DEPTH = 4
#: A timeline stops following calls beyond this many steps (generated code, huge dispatchers).
MAX_STEPS = 20_000

LAUNCH = "process_launch"
#: Every event after which the CUDA driver is initialised (a forked child cannot use CUDA).
CUDA_INIT_EVENTS = lockin_table().events_implying(CUDA_INIT)

_EXIT_CALLS = frozenset({"sys.exit", "os._exit", "exit", "quit"})


@dataclass(frozen=True)
class Site:
    """Where an event happens: its event id, the call as written, its line and file."""

    event: str
    call: str
    line: int
    file: str
    via: str | None = None
    #: The line of `via` in this module: where the other module's code runs.
    via_line: int | None = None

    def where(self) -> str:
        """`line 5`, or `utils.py:3 (run by `import utils` at line 2)`."""
        if self.via is None:
            return f"line {self.line}"
        return f"{self.file}:{self.line} (run by {self.via})"


@dataclass(frozen=True)
class _Arm:
    if_id: int
    arm: int
    terminal: str | None  # "return" (ends the frame) or "exit" (ends the program)
    frame: int
    #: The test this arm takes, when the function tests that unchanged value again (`conditions`), and its value.
    test: tuple[str, bool] | None = None


@dataclass
class Step:
    node: cst.CSTNode
    events: frozenset[str]  # what the step causes, with every implied event
    event: str | None  # the event as classified (the most specific one)
    path: tuple[_Arm, ...]
    loops: tuple[int, ...]
    frames: tuple[int, ...]
    #: For a step that stands for another module's call: that call's site (`via` is added when reported).
    site: Site | None = None
    #: For an import or a call that runs another module's code: the steps of that code's events, made
    #: (and the module summarised) only when a query reaches this step.
    runs: Callable[[], list[Step]] | None = None
    #: The functions whose calls the step runs inside (outermost first).
    calls: tuple[cst.CSTNode, ...] = ()

    def expanded(self) -> list[Step]:
        """The steps this one stands for: itself, or what the other module's code does."""
        return self.runs() if self.runs is not None else [self]


@dataclass
class _Where:
    path: tuple[_Arm, ...] = ()
    loops: tuple[int, ...] = ()
    frames: tuple[int, ...] = (0,)
    calls: tuple[cst.CSTNode, ...] = ()  # functions being followed (recursion guard)
    self_class: cst.ClassDef | None = None


@dataclass
class _Definitions:
    functions: dict[str, cst.FunctionDef] = field(default_factory=dict)  # module level, last wins
    classes: dict[str, cst.ClassDef] = field(default_factory=dict)
    all_functions: list[tuple[cst.FunctionDef, cst.ClassDef | None]] = field(default_factory=list)


class _DefinitionCollector:
    """Imports and function definitions, from statements only: neither can sit inside an expression."""

    def __init__(self) -> None:
        self.imports = ImportTable()
        #: local name -> (the import statement, the imported name for `from m import name`, else None)
        self.bound: dict[str, tuple[cst.Import | cst.ImportFrom, str | None]] = {}
        self.definitions = _Definitions()

    def collect(self, body: Iterable[cst.CSTNode], owner: cst.ClassDef | None = None) -> None:
        for statement in body:
            # `if x: import y` puts small statements straight into the block.
            for small in statement.body if isinstance(statement, cst.SimpleStatementLine) else (statement,):
                if isinstance(small, cst.Import):
                    self._import(small)
                elif isinstance(small, cst.ImportFrom):
                    self._import_from(small)
            if isinstance(statement, cst.FunctionDef):
                self.definitions.all_functions.append((statement, owner))
                self.collect(_body(statement.body))  # a def inside a method is not a method
            elif isinstance(statement, cst.ClassDef):
                self.collect(_body(statement.body), statement)
            elif isinstance(statement, cst.BaseCompoundStatement):
                for block in _blocks(statement):
                    self.collect(_body(block), owner)

    def _import(self, node: cst.Import) -> None:
        self.imports.add(node)
        for alias in node.names:
            name = dotted_name(alias.name)
            if name:
                local = alias.asname.name.value if alias.asname else name.split(".", 1)[0]  # type: ignore[union-attr]
                self.bound[local] = (node, None)

    def _import_from(self, node: cst.ImportFrom) -> None:
        self.imports.add(node)
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            if isinstance(alias.name, cst.Name):
                local = alias.asname.name.value if alias.asname else alias.name.value  # type: ignore[union-attr]
                self.bound[local] = (node, alias.name.value)


def _blocks(statement: cst.BaseCompoundStatement) -> list[cst.BaseSuite]:
    """The blocks of a compound statement, in source order: body, `except`/`case` clauses, `else`/`elif`, `finally`."""
    blocks = [] if isinstance(statement, cst.Match) else [statement.body]
    blocks += [clause.body for clause in (*getattr(statement, "handlers", ()), *getattr(statement, "cases", ()))]
    orelse = getattr(statement, "orelse", None)
    if isinstance(orelse, cst.If):
        blocks += _blocks(orelse)
    elif orelse is not None:
        blocks.append(orelse.body)
    finalbody = getattr(statement, "finalbody", None)
    if finalbody is not None:
        blocks.append(finalbody.body)
    return blocks


class ProgramOrder:
    def __init__(
        self,
        module: cst.Module,
        display: str,
        line_of,
        graph: ModuleGraph | None = None,
        source: Path | None = None,
    ) -> None:
        """`line_of(node) -> int` gives lines for sites; `graph` resolves first-party imports of `source`."""
        self._module = module
        self._display = display
        self._line_of = line_of
        self._graph = graph
        self._source = source
        self._table = lockin_table()
        collector = _DefinitionCollector()
        collector.collect(module.body)
        self.imports = collector.imports
        self._bound = collector.bound
        self._definitions = collector.definitions
        for statement in module.body:
            if isinstance(statement, cst.FunctionDef):
                self._definitions.functions[statement.name.value] = statement
            elif isinstance(statement, cst.ClassDef):
                self._definitions.classes[statement.name.value] = statement
        self._constants = module_string_constants(module)
        self._main = False  # whether `if __name__ == "__main__":` blocks run (the script timeline)
        self._ids = itertools.count(1)
        self._timelines: list[list[Step]] | None = None
        self._repeated: dict[int, frozenset[str]] = {}  # id of a function -> the unchanged tests it repeats
        #: For each timeline, where the module's import first enters the function the timeline calls (the
        #: end of the import when it never does, or for the script's timeline).
        self._entered: list[int] = []
        self._index: dict[int, list[tuple[int, int]]] = {}

    # -- queries -------------------------------------------------------------------------------

    def first_event_before(
        self, node: cst.CSTNode, events: Collection[str], skip: Callable[[Step], bool] | None = None
    ) -> Site | None:
        """The earliest step causing one of `events` that runs before `node` on some path; a step
        `skip` accepts is passed over with what it runs."""
        return self._first(node, events, before=True, skip=skip)

    def first_event_after(self, node: cst.CSTNode, events: Collection[str], reached: bool = False) -> Site | None:
        """The earliest step causing one of `events` that runs after `node` on some path.

        With `reached=True`, only steps the node's own code reaches count: the rest of its function
        (and what that calls), or of the module run as a script — not every function of the module
        that might be called after the module-level node ran."""
        return self._first(node, events, before=False, reached=reached)

    def first_event_after_return(self, call: cst.Call, events: Collection[str]) -> Site | None:
        """The earliest step causing one of `events` after `call` returned, in code the call's own code
        reaches (as `first_event_after(..., reached=True)`): what the called function did is not counted."""
        wanted = frozenset(events)

        def matches(step: Step) -> bool:
            return step.node is not call and bool(step.events & wanted)

        return self._first(call, (), before=False, reached=True, matches=matches)

    def imported(self, local: str) -> tuple[cst.Import | cst.ImportFrom, str | None] | None:
        """The import statement that binds `local`, and the name it imports for `from m import name`."""
        return self._bound.get(local)

    def executed(self, node: cst.CSTNode) -> bool:
        return id(node) in self._occurrences()

    def text_and_line(self, node: cst.CSTNode) -> tuple[str, int]:
        """The node as written (shortened) and its line."""
        return short_code(self._module.code_for_node(node)), self._line_of(node)

    def entered_by(self, node: cst.CSTNode) -> list[tuple[cst.FunctionDef, cst.ClassDef | None]]:
        """The functions and methods (with their class) whose call runs `node`: its own, and those that
        call it, as far as calls are followed."""
        imported = len(self._import_steps())
        functions = self._definitions.all_functions
        occurrences = self._occurrences().get(id(node), ())
        timelines = sorted({index for index, position in occurrences if index and position >= imported})
        return [functions[index - 1] for index in timelines]  # timeline 0 is the script's

    def function_sites(self, name: str) -> list[Site]:
        """The first site of each event a call of the module-level function (or class) `name` causes: its summary."""
        definition = self._definitions.functions.get(name)
        if definition is None and name in self._definitions.classes:
            definition = _method(self._definitions.classes[name], "__init__")
        if definition is None:
            return []
        steps: list[Step] = []
        owner = self._definitions.classes.get(name)
        where = _Where(frames=(next(self._ids),), calls=(definition,), self_class=owner)
        self._function_body(definition, where, steps, depth=0)
        return self._first_of_each_event(steps)

    def import_time_sites(self) -> list[Site]:
        """The first site of each event this module causes when imported (any path): a module summary."""
        return self._first_of_each_event(self._import_steps())

    def _first_of_each_event(self, steps: list[Step]) -> list[Site]:
        # An importer sees all of a module's events at the importing statement's place in its
        # program, so only the first of each kind can ever be the first event before something:
        # keeping one per kind stops summaries growing with the size of the import graph.
        first: dict[str, Step] = {}
        for done in (done for step in steps for done in step.expanded()):
            if done.event is not None:
                first.setdefault(done.event, done)
        return [self._site(step) for step in first.values()]

    def first_call_after(self, node: cst.CSTNode, names: Collection[str], reached: bool = True) -> Site | None:
        """The earliest call to one of the qualified `names` (`"torch.cuda.set_device"`) after `node`."""
        wanted = frozenset(names)

        def matches(step: Step) -> bool:
            return isinstance(step.node, cst.Call) and self.imports.qualify(step.node.func) in wanted

        return self._first(node, (), before=False, reached=reached, matches=matches)

    def _first(
        self, node: cst.CSTNode, events: Collection[str], before: bool, reached: bool = False, matches=None, skip=None
    ) -> Site | None:
        wanted = frozenset(events)
        matches = matches or (lambda step: bool(step.events & wanted))
        best: tuple[tuple[int, int], Step] | None = None
        timelines = self._timelines_built()
        imported = len(self._import_steps())
        for timeline_index, position in self._occurrences().get(id(node), ()):
            if reached and timeline_index > 0 and position < imported:
                continue  # the module-level prefix of a function's timeline
            timeline = timelines[timeline_index]
            target = timeline[position]
            entered = self._entered[timeline_index]
            for index, step in enumerate(timeline):
                if index == position or (skip is not None and skip(step)):
                    continue
                if entered <= index < imported:
                    # The import itself calls the function (`main()` unguarded): what it runs from that call
                    # on is that one call, in the order the body gives, not something run before a later call.
                    continue
                ordered = index < position if before else index > position
                if not ordered and not _same_loop(step, target):
                    continue
                # Direct order first, then the loop's next iteration.
                rank = index if ordered else len(timeline) + index
                if (best is not None and rank > best[0][0]) or not (
                    _compatible(step, target) if before else _compatible(target, step)
                ):
                    continue  # other modules' code is summarised only for a step that can still be the answer
                for order, done in enumerate(step.expanded()):
                    if matches(done) and (best is None or (rank, order) < best[0]):
                        best = ((rank, order), done)
                        break
        return self._site(best[1]) if best else None

    def _site(self, step: Step) -> Site:
        if step.site is not None:
            return replace(step.site, via=self._via(step.node), via_line=self._line_of(step.node))
        return Site(
            step.event or "", short_code(self._module.code_for_node(step.node)), self._line_of(step.node), self._display
        )

    # -- building ------------------------------------------------------------------------------

    def _occurrences(self) -> dict[int, list[tuple[int, int]]]:
        self._timelines_built()
        return self._index

    def _timelines_built(self) -> list[list[Step]]:
        if self._timelines is None:
            prefix = self._import_steps()
            timelines = [self._build(self._module.body, main=True)]
            first_call: dict[int, int] = {}  # id of a function -> the first step of the import inside it
            for index, step in enumerate(prefix):
                for function in step.calls:
                    first_call.setdefault(id(function), index)
            self._entered = [len(prefix)]
            for function, owner in self._definitions.all_functions:
                self._entered.append(first_call.get(id(function), len(prefix)))
                steps = list(prefix)
                where = _Where(frames=(next(self._ids),), calls=(function,), self_class=owner)
                self._function_body(function, where, steps, depth=0)
                timelines.append(steps)
            self._timelines = timelines
            for timeline_index, timeline in enumerate(timelines):
                for position, step in enumerate(timeline):
                    if step.runs is None:  # steps standing for another module's calls are not queried
                        self._index.setdefault(id(step.node), []).append((timeline_index, position))
        return self._timelines

    def _import_steps(self) -> list[Step]:
        if not hasattr(self, "_import_cache"):
            self._import_cache = self._build(self._module.body, main=False)
        return self._import_cache

    def _build(self, body: Iterable[cst.CSTNode], main: bool) -> list[Step]:
        steps: list[Step] = []
        self._main = main
        self._block(body, _Where(), steps, depth=0)
        return steps

    def _block(self, body: Iterable[cst.CSTNode], where: _Where, steps: list[Step], depth: int) -> None:
        for statement in body:
            self._statement(statement, where, steps, depth)

    def _statement(self, node: cst.CSTNode, where: _Where, steps: list[Step], depth: int) -> None:
        if isinstance(node, cst.SimpleStatementLine):
            for small in node.body:
                self._expression(small, where, steps, depth)
                steps.append(self._step(small, where, steps))
        elif isinstance(node, cst.FunctionDef):
            for decorator in node.decorators:
                self._expression(decorator.decorator, where, steps, depth)
                if not isinstance(decorator.decorator, cst.Call):
                    steps.append(self._step(decorator.decorator, where, steps))
            for default in _defaults(node.params):  # evaluated as the `def` runs: `device="cuda" if ... else "cpu"`
                self._expression(default, where, steps, depth)
        elif isinstance(node, cst.ClassDef):
            for decorator in node.decorators:
                self._expression(decorator.decorator, where, steps, depth)
            for arg in node.bases:
                self._expression(arg.value, where, steps, depth)
            self._block(_body(node.body), where, steps, depth)
        elif isinstance(node, cst.If):
            self._if(node, where, steps, depth)
        elif isinstance(node, (cst.For, cst.While)):
            head = node.iter if isinstance(node, cst.For) else node.test
            loop = _Where(where.path, (*where.loops, next(self._ids)), where.frames, where.calls, where.self_class)
            self._expression(head, where if isinstance(node, cst.For) else loop, steps, depth)
            self._block(_body(node.body), loop, steps, depth)
            if node.orelse is not None:
                self._block(_body(node.orelse.body), where, steps, depth)
        elif isinstance(node, cst.With):
            for item in node.items:
                self._expression(item.item, where, steps, depth)
            self._block(_body(node.body), where, steps, depth)
        elif isinstance(node, (cst.Try, cst.TryStar)):
            self._block(_body(node.body), where, steps, depth)
            for handler in node.handlers:
                self._block(_body(handler.body), where, steps, depth)
            if node.orelse is not None:
                self._block(_body(node.orelse.body), where, steps, depth)
            if node.finalbody is not None:
                self._block(_body(node.finalbody.body), where, steps, depth)
        elif isinstance(node, cst.Match):
            self._expression(node.subject, where, steps, depth)
            if_id = next(self._ids)
            for arm, case in enumerate(node.cases):
                self._block(_body(case.body), self._arm(where, if_id, arm, case.body), steps, depth)

    def _if(self, node: cst.If, where: _Where, steps: list[Step], depth: int) -> None:
        if _is_main_guard(node.test):
            if self._main:
                self._block(_body(node.body), where, steps, depth)
            elif isinstance(node.orelse, cst.Else):
                self._block(_body(node.orelse.body), where, steps, depth)
            return
        self._expression(node.test, where, steps, depth)
        if_id = next(self._ids)
        test = self._repeated_test(node.test, where)
        self._block(_body(node.body), self._arm(where, if_id, 0, node.body, test), steps, depth)
        otherwise = (test[0], not test[1]) if test else None
        if isinstance(node.orelse, cst.If):
            self._if(node.orelse, self._arm(where, if_id, 1, None, otherwise), steps, depth)
        elif isinstance(node.orelse, cst.Else):
            self._block(_body(node.orelse.body), self._arm(where, if_id, 1, node.orelse.body, otherwise), steps, depth)

    def _arm(self, where: _Where, if_id: int, arm: int, body, test: tuple[str, bool] | None = None) -> _Where:
        terminal = self._terminal(body) if body is not None else None
        entry = _Arm(if_id, arm, terminal, where.frames[-1], test)
        return _Where((*where.path, entry), where.loops, where.frames, where.calls, where.self_class)

    def _repeated_test(self, test: cst.BaseExpression, where: _Where) -> tuple[str, bool] | None:
        """The test's key and the value its first arm takes, when the function running it tests that
        unchanged value more than once (`if notebook_mode == False:` ... `if notebook_mode:`)."""
        if not where.calls:
            return None  # module level: its names are bound as it runs
        function = where.calls[-1]
        repeated = self._repeated.get(id(function))
        if repeated is None:
            repeated = self._repeated[id(function)] = frozenset(repeated_tests(_body(function.body)))
        key = test_key(test) if repeated else None
        return key if key is not None and key[0] in repeated else None

    def _terminal(self, body) -> str | None:
        statements = _body(body)
        if not statements or not isinstance(statements[-1], cst.SimpleStatementLine):
            return None
        last = statements[-1].body[-1]
        if isinstance(last, cst.Return):
            return "return"
        if isinstance(last, cst.Raise):
            return "exit"
        if isinstance(last, cst.Expr) and isinstance(last.value, cst.Call):
            name = self.imports.qualify(last.value.func) or dotted_name(last.value.func)
            if name in _EXIT_CALLS:
                return "exit"
        return None

    def _expression(self, node: cst.CSTNode, where: _Where, steps: list[Step], depth: int) -> None:
        """Every call in `node`, arguments before the call that receives them."""
        for call in _calls_in_order(node):
            steps.append(self._step(call, where, steps))
            if isinstance(call.func, (cst.Name, cst.Attribute)) and depth < MAX_DEPTH and len(steps) < MAX_STEPS:
                self._follow(call, where, steps, depth)

    def _follow(self, call: cst.Call, where: _Where, steps: list[Step], depth: int) -> None:
        function, owner = self._callee(call.func, where)
        if function is None:
            self._follow_other_module(call, where, steps)
            return
        if function in where.calls:
            return
        inner = _Where(where.path, where.loops, (*where.frames, next(self._ids)), (*where.calls, function), owner)
        self._function_body(function, inner, steps, depth + 1)

    def _follow_other_module(self, call: cst.Call, where: _Where, steps: list[Step]) -> None:
        """`setup()` imported from, or `utils.setup()` called on, a first-party module: its events."""
        if self._graph is None:
            return
        graph, func = self._graph, call.func
        if isinstance(func, cst.Name) and func.value in self._bound:
            node, imported = self._bound[func.value]
            if imported is None:
                return
            module, function = None, imported
        elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value in self._bound:
            node, imported = self._bound[func.value.value]
            module, function = imported or _bound_module(node, func.value.value), func.attr.value
        else:
            return
        steps.append(self._other_module(call, where, lambda: graph.call_sites(node, module, function), named=True))

    def _other_module(
        self, node: cst.CSTNode, where: _Where, sites: Callable[[], list[ImportSite]], named: bool
    ) -> Step:
        """A step for `node`, an import or a call that runs another module's code, whose events (the
        `sites` of that code) become steps when a query first reaches it. An event the table does not
        list (a process launch) stands for itself after a call (`named`), for nothing after an import."""
        events = self._table.events

        def steps() -> list[Step]:
            return [
                Step(
                    node,
                    events[site.event].closure if site.event in events else frozenset({site.event} if named else ()),
                    site.event,
                    where.path,
                    where.loops,
                    where.frames,
                    Site(site.event, site.call, site.line, site.file),
                    calls=where.calls,
                )
                for site in sites()
            ]

        lazy = functools.cache(steps)
        return Step(node, frozenset(), None, where.path, where.loops, where.frames, runs=lazy, calls=where.calls)

    def _via(self, node: cst.CSTNode) -> str:
        """The import or call of this module that ran another module's code: found only for a site that
        is reported (a call's line may need every position of the module)."""
        code = self._module.code_for_node(node)
        text = " ".join(code.split()) if isinstance(node, (cst.Import, cst.ImportFrom)) else short_code(code)
        return f"`{text}` at line {self._line_of(node)}"

    def _function_body(self, function: cst.FunctionDef, where: _Where, steps: list[Step], depth: int) -> None:
        main = self._main
        self._block(_body(function.body), where, steps, depth)
        self._main = main

    def _callee(self, func: cst.BaseExpression, where: _Where) -> tuple[cst.FunctionDef | None, cst.ClassDef | None]:
        if isinstance(func, cst.Name):
            if func.value in self._definitions.functions:
                return self._definitions.functions[func.value], None
            cls = self._definitions.classes.get(func.value)
            if cls is not None:
                return _method(cls, "__init__"), cls
        elif (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value == "self"
            and where.self_class is not None
        ):
            return _method(where.self_class, func.attr.value), where.self_class
        return None, None

    def _step(self, node: cst.CSTNode, where: _Where, steps: list[Step]) -> Step:
        event = None
        if isinstance(node, cst.Call):
            event = self._classify(node, steps)
        elif isinstance(node, (cst.Name, cst.Attribute)):  # a decorator written without a call: `@torch.compile`
            event = self._called_event(self.imports.qualify(node))
        elif isinstance(node, (cst.Import, cst.ImportFrom)):
            event = self._import_event(node, where, steps)
        events = self._table.events[event].closure if event in self._table.events else frozenset()
        if isinstance(node, (cst.Import, cst.ImportFrom)) and imports_torch(_imported_modules(node)):
            events |= self._table.events["import_torch"].closure  # `from torch.utils.cpp_extension import load`
        if event == LAUNCH:
            events = frozenset({LAUNCH})
        return Step(node, events, event, where.path, where.loops, where.frames, calls=where.calls)

    def _import_event(self, node: cst.Import | cst.ImportFrom, where: _Where, steps: list[Step]) -> str | None:
        """`import torch` is an event; a first-party import adds that module's import-time events first."""
        graph, source = self._graph, self._source
        if graph is not None and source is not None:
            steps.append(self._other_module(node, where, lambda: graph.import_sites(node, source), named=False))
        return module_event(_imported_modules(node))

    def _classify(self, call: cst.Call, steps: list[Step]) -> str | None:
        table = self._table
        name = self.imports.qualify(call.func)
        if name is not None:
            if name in table.non_triggers:
                return None
            if name in table.launch_calls:
                return LAUNCH
            for event in _SPECIFIC_FIRST:
                spec = table.events[event]
                if name in spec.cuda_argument_calls and not _names_cuda_device(_first_argument(call, "device_type")):
                    continue
                if name in spec.calls_with_keyword and _given(_keyword(call, spec.calls_with_keyword[name])):
                    return event
                if name in spec.disabled_by and _is_false(_keyword(call, spec.disabled_by[name])):
                    continue
                if name in spec.calls or name in spec.cuda_argument_calls:
                    if spec.unless_env and self._env_written_before(spec.unless_env, steps):
                        return None
                    return event
        if isinstance(call.func, cst.Attribute):
            method = call.func.attr.value
            if method in table.launch_methods and name is not None:
                return LAUNCH
            for event in _SPECIFIC_FIRST:
                spec = table.events[event]
                if method in spec.methods:
                    return event
                if method in spec.device_methods and _names_cuda_device(_first_argument(call, spec.device_keyword)):
                    return event
        allocation = table.events["first_allocation"]
        if name is not None and name.startswith(_NOT_FACTORIES):
            return None
        if name is not None and name.startswith("torch."):
            device = _keyword(call, allocation.device_keyword)
            if device is not None and _names_cuda_device(device):
                return "first_allocation"
        if any(_literal_gpu(_keyword(call, keyword)) for keyword in allocation.literal_device_keywords):
            return "first_allocation"
        return None

    def _called_event(self, name: str | None) -> str | None:
        """The event a function applied as a decorator causes (`@torch.compile` is `torch.compile(f)`)."""
        return next((event for event in _SPECIFIC_FIRST if name in self._table.events[event].calls), None)

    def _env_written_before(self, variable: str, steps: list[Step]) -> bool:
        return any(
            write.name == variable for step in steps for write in env_writes(step.node, self.imports, self._constants)
        )


#: Most specific first: a call listed under several events counts as the strongest one.
_SPECIFIC_FIRST = (
    "first_collective",
    "first_allocation",
    "device_activation",
    "context_creation",
    "torch_cuda_init",
    "cuda_driver_init",
    "process_group_init",
    "compiler_config_import",
)
#: torch namespaces whose `device=` argument selects where to look, not where to allocate.
_NOT_FACTORIES = (
    "torch.cuda.",
    "torch.autocast",
    "torch.amp.",
    "torch.device",
    "torch.distributed.",
    "torch.backends.",
    "torch.compile",
    "torch.utils.data.",
)
_DEVICE_WORDS = ("cuda", "gpu", "device", "rank")


def _names_cuda_device(node: cst.BaseExpression | None) -> bool:
    """`"cuda"`, `"cuda:0"`, `torch.device("cuda", i)`, `0`, or a name that says so (`device`, `local_rank`)."""
    if node is None:
        return False
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return isinstance(value, str) and value.startswith("cuda")
    if isinstance(node, cst.FormattedString):
        return any(
            isinstance(part, cst.FormattedStringText) and part.value.startswith("cuda") for part in node.parts[:1]
        )
    if isinstance(node, cst.Integer):
        return True
    if isinstance(node, cst.IfExp):
        return _names_cuda_device(node.body) or _names_cuda_device(node.orelse)
    if isinstance(node, cst.Call):
        name = dotted_name(node.func) or ""
        return name.endswith("device") and _names_cuda_device(_first_argument(node, "type"))
    name = dotted_name(node)
    if name is None:
        return False
    last = name.rsplit(".", 1)[-1].lower()
    return "cpu" not in last and any(word in last for word in _DEVICE_WORDS)


def _literal_gpu(node: cst.BaseExpression | None) -> bool:
    """A literal GPU placement: `"cuda"`, `"cuda:1"`, `0`, `"auto"` (a device_map), not `"cpu"`/`-1`."""
    if isinstance(node, cst.Integer):
        return True
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return isinstance(value, str) and (value.startswith("cuda") or value in {"auto", "balanced", "sequential"})
    return False


def _first_argument(call: cst.Call, keyword: str | None) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is None and not arg.star:
            return arg.value
    return _keyword(call, keyword) if keyword else None


def _given(value: cst.BaseExpression | None) -> bool:
    """A keyword argument passed, with a value other than a literal `False` or `None` (`with_cuda=True`)."""
    return value is not None and not (isinstance(value, cst.Name) and value.value in {"False", "None"})


def _is_false(value: cst.BaseExpression | None) -> bool:
    """A keyword argument passed as the literal `False` (`autocast("cuda", enabled=False)`)."""
    return isinstance(value, cst.Name) and value.value == "False"


def _keyword(call: cst.Call, keyword: str | None) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    return None


def _compatible(earlier: Step, later: Step) -> bool:
    """Can `earlier` and `later` both run, in that order, on one path? Not through opposite arms of one
    `if`, nor of two tests of one unchanged value in the same call of a function."""
    arms = {arm.if_id: arm.arm for arm in later.path}
    tests = {(arm.frame, arm.test[0]): arm.test[1] for arm in later.path if arm.test is not None}
    for arm in earlier.path:
        taken = arms.get(arm.if_id)
        if taken is None:
            if arm.terminal == "exit" or (arm.terminal == "return" and arm.frame in later.frames):
                return False
            if arm.test is not None and tests.get((arm.frame, arm.test[0]), arm.test[1]) != arm.test[1]:
                return False
            if arm.test is not None and any(
                frame == arm.frame and exclusive(arm.test, (key, value)) for (frame, key), value in tests.items()
            ):
                return False  # `if len(ids) > 1:` ... `if len(ids) == 1:` in one call
        elif taken != arm.arm:
            return False
    return True


def _same_loop(a: Step, b: Step) -> bool:
    return bool(set(a.loops) & set(b.loops))


def _body(block) -> list[cst.CSTNode]:
    body = block.body if isinstance(block, (cst.IndentedBlock, cst.SimpleStatementSuite)) else block
    return list(body)


def _defaults(params: cst.Parameters) -> list[cst.BaseExpression]:
    every = (*params.posonly_params, *params.params, *params.kwonly_params)
    return [param.default for param in every if param.default is not None]


def _method(cls: cst.ClassDef, name: str) -> cst.FunctionDef | None:
    for statement in _body(cls.body):
        if isinstance(statement, cst.FunctionDef) and statement.name.value == name:
            return statement
    return None


def _bound_module(node: cst.Import | cst.ImportFrom, local: str) -> str:
    """The module name `import a.b as m` binds to `m` (b), or `import a.b` to `a` (a)."""
    for alias in node.names if isinstance(node, cst.Import) else ():
        name = dotted_name(alias.name) or ""
        if alias.asname is not None and alias.asname.name.value == local:  # type: ignore[union-attr]
            return name.rsplit(".", 1)[-1]
    return local


def short_code(code: str) -> str:
    """Code as a site shows it: on one line, at most 60 characters."""
    code = " ".join(code.split())
    return code if len(code) <= 60 else code[:57] + "..."


def _is_main_guard(test: cst.BaseExpression) -> bool:
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    sides = [test.left, test.comparisons[0].comparator]
    names = [side for side in sides if isinstance(side, cst.Name) and side.value == "__name__"]
    strings = [side for side in sides if isinstance(side, cst.SimpleString) and side.evaluated_value == "__main__"]
    return bool(names and strings) and isinstance(test.comparisons[0].operator, cst.Equal)


def imports_torch(names: Iterable[str]) -> bool:
    """Whether importing these absolute modules imports torch (`import_torch` in the lock-in table)."""
    modules = lockin_table().events["import_torch"].modules
    return any(name.split(".", 1)[0] in modules for name in names)


def module_event(names: Iterable[str]) -> str | None:
    """The event importing these absolute modules causes: an event's `modules` in the lock-in table
    (`torch._inductor` for `compiler_config_import`, `catalyst` for `package_cuda_import`) match them and
    what is under them; `import_torch` matches any module of the packages it lists, after the others."""
    names = list(names)
    for event in lockin_table().events.values():
        submodules = [module for module in event.modules if "." in module or event.id != "import_torch"]
        if any(name == module or name.startswith(module + ".") for name in names for module in submodules):
            return event.id
    return "import_torch" if imports_torch(names) else None


def _imported_modules(node: cst.Import | cst.ImportFrom) -> list[str]:
    """The modules an import statement imports; for `from m import a` both `m` and `m.a` (`a` may be a submodule)."""
    if isinstance(node, cst.Import):
        return [name for alias in node.names if (name := dotted_name(alias.name))]
    if node.relative or node.module is None:
        return []
    module = dotted_name(node.module)
    if not module:
        return []
    names = () if isinstance(node.names, cst.ImportStar) else node.names
    return [module, *(f"{module}.{alias.name.value}" for alias in names if isinstance(alias.name, cst.Name))]


class _CallOrder(Walker):
    """Calls in evaluation order: a call's arguments (and receiver) before the call itself."""

    def __init__(self) -> None:
        self.calls: list[cst.Call] = []

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False  # runs when called, not here

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def leave_Call(self, node: cst.Call) -> None:
        self.calls.append(node)


def _calls_in_order(node: cst.CSTNode) -> list[cst.Call]:
    walker = _CallOrder()
    walker.walk(node)
    return walker.calls
