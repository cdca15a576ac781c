"""Process boundaries across one module: which start method is in force, which function
runs on the other side of a crossing (a function of the module, a method of `self`, either through
`functools.partial`, whose leading arguments fill the first parameters), and what each of its
parameters receives.

Built from the scopes' `ProcessFacts` (semantic/processes.py). The start method of the
stdlib default depends on the Python version the code targets (fork on Linux up to 3.13,
forkserver from 3.14); without a target version, Linux up to 3.13 is assumed. macOS and
Windows default to spawn on every version: a default start method pickles there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cached_property

import libcst as cst

from gpumem_lint.semantic.flow import ScopeAnalyzer, ScopeFacts
from gpumem_lint.semantic.imports import ImportTable
from gpumem_lint.semantic.name_values import value_bindings
from gpumem_lint.semantic.process_classes import ProcessClasses, process_classes
from gpumem_lint.semantic.processes import (
    FRESH_METHODS,
    START_METHODS,
    UNKNOWN_METHOD,
    Crossing,
    process_table,
)
from gpumem_lint.semantic.values import Value
from gpumem_lint.semantic.worker_code import PARTIAL_FUNCTIONS

#: How many partials of partials are looked through.
_PARTIAL_DEPTH = 3


@dataclass(frozen=True)
class StartMethod:
    name: str | None  # "fork", "spawn", "forkserver"; None: cannot be known statically
    default: bool = False  # the platform default, not chosen by the code
    node: cst.Call | None = None  # the `set_start_method(...)` call that chose it

    @property
    def forks(self) -> bool:
        return self.name == "fork"

    @property
    def pickles(self) -> bool:
        """Whether children start fresh and receive what they are handed by pickling, on some platform
        the code may run on: spawn and forkserver, and any platform default, since macOS and Windows
        start with spawn whatever Linux does (processes.toml [start_method])."""
        return self.name in FRESH_METHODS or (self.default and process_table().other_platforms_default in FRESH_METHODS)


@dataclass(frozen=True)
class Receiver:
    """The function run on the other side of a crossing, and what it receives."""

    crossing: Crossing
    sender: ScopeFacts
    facts: ScopeFacts
    received: dict[str, Value]  # parameter -> value handed over

    def parameters_receiving(self, storages) -> list[str]:
        """The parameters that receive (part of) one of `storages`."""
        return [
            name
            for name, value in self.received.items()
            if any(h.storage.related(storage) for h in value.handles for storage in storages)
        ]


class ProcessModel:
    def __init__(
        self,
        facts: list[ScopeFacts],
        imports: ImportTable,
        target_version: tuple[int, int] | None = None,
        entry_method: Callable[[], str | None] | None = None,
    ) -> None:
        """`entry_method()`: the start method every entry script that imports the module sets, if any
        (asked only when the module sets none itself)."""
        self.facts = facts
        self.imports = imports
        self.target_version = target_version
        self._entry_method = entry_method
        self._reanalysed: dict[tuple, ScopeFacts] = {}
        self._bound: dict[int, dict] = {}  # id of a scope's node -> its names' bindings

    # ---------------------------------------------------------------- queries

    def crossings(self) -> list[tuple[ScopeFacts, Crossing]]:
        return [(facts, crossing) for facts in self.facts for crossing in facts.processes.crossings]

    def start_method(self, crossing: Crossing) -> StartMethod:
        method = crossing.start_method
        if method == UNKNOWN_METHOD:
            return StartMethod(None)
        if method is not None:
            return StartMethod(method)
        return self._module_method

    def default_start_method(self) -> StartMethod:
        """The start method of a launch that names none (a DataLoader without `multiprocessing_context`):
        the module's `set_start_method(...)`, else the stdlib default for the target version."""
        return self._module_method

    @cached_property
    def classes(self) -> ProcessClasses:
        """Which methods of the module's classes run in a child, and the queues their `self.` attributes hold."""
        return process_classes(self.facts)

    def pickled(self, crossing: Crossing) -> bool:
        """Whether tensors cross by pickling, which moves a CPU tensor's memory into shared
        memory in place (F12): queues, pipes, pools, spawn and forkserver children, and children
        started with the platform default, spawn on macOS and Windows. A forked child gets a
        copy-on-write copy instead (F13)."""
        if crossing.kind not in ("process", "spawn"):
            return True
        return self.start_method(crossing).pickles

    def receiver(self, sender: ScopeFacts, crossing: Crossing) -> Receiver | None:
        facts = self._target(sender, crossing.target)
        if facts is None or not crossing.arguments:
            return None
        scope = facts.scope
        target, filled = self._called(sender, crossing.target)
        positional = list(scope.all_params)
        if scope.is_method and isinstance(target, cst.Attribute):
            positional = positional[1:]  # a bound method: `self` is not passed
        positional = positional[filled:]  # nor what a `functools.partial` fills
        received: dict[str, Value] = {}
        for key, value in crossing.arguments:
            name = key if isinstance(key, str) else positional[key] if key < len(positional) else None
            if name is not None and name in scope.params and value.handles:
                received[name] = value
        if not received:
            return None
        objects = sender.processes.process_objects
        channels = {
            name
            for name, value in received.items()
            if any(h in objects and objects[h].kind in ("queue", "pipe") for h in value.handles)
        }
        return Receiver(crossing, sender, self._reanalysed_with(facts, received, channels), received)

    def target_facts(self, sender: ScopeFacts, crossing: Crossing) -> ScopeFacts | None:
        """The facts of the same-module function the crossing runs on the other side."""
        return self._target(sender, crossing.target)

    # ---------------------------------------------------------------- helpers

    def _reanalysed_with(self, facts: ScopeFacts, received: dict[str, Value], channels: set[str]) -> ScopeFacts:
        """The target analysed again knowing which parameters the caller fills with tensors
        (`targets[rank] = -1` is a tensor write only if `targets` is a tensor) and with
        queues or pipes (`results.put(t)` sends)."""
        scope = facts.scope
        tensors = {name for name, value in received.items() if value.tensor and not value.container}
        missing = tuple(sorted(name for name in tensors if not scope.params.get(name)))
        if not missing and not channels:
            return facts
        key = (id(scope), missing, tuple(sorted(channels)))
        if key not in self._reanalysed:
            params = {name: True if name in missing else tensor for name, tensor in scope.params.items()}
            analyzer = ScopeAnalyzer(replace(scope, params=params), self.imports)
            analyzer.channel_parameters = frozenset(channels)
            self._reanalysed[key] = analyzer.run()
        return self._reanalysed[key]

    def child_facts(self, sender: ScopeFacts, crossing: Crossing) -> ScopeFacts | None:
        """What the function run on the other side does, knowing what it receives."""
        receiver = self.receiver(sender, crossing)
        return receiver.facts if receiver is not None else self._target(sender, crossing.target)

    def _called(self, sender: ScopeFacts, target: cst.BaseExpression | None) -> tuple[cst.BaseExpression | None, int]:
        """The callable a crossing runs, seen through `functools.partial(f, *args, **kwargs)` (written in
        the call, or bound to a local name by the only assignment of that name in the sender's scope),
        and how many leading positional parameters the partials fill."""
        filled = 0
        for _ in range(_PARTIAL_DEPTH):
            if isinstance(target, cst.Name):
                bindings = self._bindings(sender).get(target.value, ())
                if len(bindings) != 1 or not isinstance(bindings[0], cst.Call):
                    break
                target = bindings[0]
            if not (
                isinstance(target, cst.Call) and self.imports.qualify(target.func) in PARTIAL_FUNCTIONS and target.args
            ):
                break
            function, *given = target.args
            if function.keyword is not None or function.star:
                break
            filled += sum(1 for arg in given if arg.keyword is None and not arg.star)
            target = function.value
        return target, filled

    def _bindings(self, sender: ScopeFacts) -> dict:
        scope = sender.scope.node
        if id(scope) not in self._bound:
            self._bound[id(scope)] = value_bindings(scope)
        return self._bound[id(scope)]

    def _target(self, sender: ScopeFacts, target: cst.BaseExpression | None) -> ScopeFacts | None:
        target, _ = self._called(sender, target)
        if isinstance(target, cst.Name):
            caller = sender.scope
            inner = (*caller.enclosing, caller.name) if caller.is_function else ()
            for facts in self.facts:
                scope = facts.scope
                if (
                    scope.is_function
                    and scope.name == target.value
                    and not scope.is_method
                    and scope.enclosing in ((), inner)
                ):
                    return facts
        if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Call):  # `Worker(net).run`
            made = target.value.func.value if isinstance(target.value.func, cst.Name) else None
            method = target.attr.value
            return next((f for f in self.facts if f.scope.class_name == made and f.scope.name == method), None)
        if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name):
            cls = self._class_of(sender, target.value.value)
            for facts in self.facts:
                scope = facts.scope
                if cls is not None and scope.class_name == cls and scope.name == target.attr.value:
                    return facts
        return None

    def _class_of(self, sender: ScopeFacts, name: str) -> str | None:
        """The class of this module whose method `name.method` is: `self`'s, or that of the instance the only
        assignment of `name` in the sender's scope makes (`tracker = Tracker()`, then `target=tracker.spin`)."""
        if name == "self":
            return sender.scope.class_name
        bindings = self._bindings(sender).get(name, ())
        if len(bindings) == 1 and isinstance(bindings[0], cst.Call) and isinstance(bindings[0].func, cst.Name):
            return bindings[0].func.value
        return None

    @cached_property
    def _module_method(self) -> StartMethod:
        settings = [setting for facts in self.facts for setting in facts.processes.start_method_settings]
        methods = {method for _, method in settings}
        if len(methods) == 1 and methods <= START_METHODS:
            return StartMethod(methods.pop(), node=settings[0][0])
        if methods:
            return StartMethod(None)  # chosen at run time, or differently on different paths
        entry = self._entry_method() if self._entry_method is not None else None
        if entry is not None:
            return StartMethod(entry)  # `set_start_method("spawn")` in the scripts that import the module
        version = self.target_version
        forkserver = version is not None and version >= process_table().forkserver_default_from
        return StartMethod("forkserver" if forkserver else "fork", default=True)
