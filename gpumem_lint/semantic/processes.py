"""Process boundaries inside one scope: which calls hand tensors to another process,
what each parameter of the function run there receives, and which of the sender's later
in-place writes reach a tensor the other side may still read.

Mixed into `ScopeAnalyzer` (like `CallSemantics`), whose helpers (`_eval`, `_element`,
`_handle`) it uses. A tensor handed over is held by a *sent* handle under a place no
code can name; a write that reaches it while the crossing is still open is recorded.
A crossing closes at a wait (`p.join()`, `res.get()`, `q.join()`, leaving a `with
Pool()` block) or at once for synchronous calls (`pool.map`, `spawn(join=True)`).
The table of calls is data: `gpumem_lint/knowledge/processes.toml`.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from functools import cache, cached_property

import libcst as cst

from gpumem_lint.knowledge import data_text
from gpumem_lint.semantic.imports import dotted_name
from gpumem_lint.semantic.literals import keyword
from gpumem_lint.semantic.values import (
    EMPTY,
    AliasKind,
    Handle,
    Role,
    State,
    Storage,
    Value,
    Write,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

START_METHODS = frozenset({"fork", "spawn", "forkserver"})
#: The start methods whose children start a fresh interpreter and unpickle what they are handed.
FRESH_METHODS = frozenset({"spawn", "forkserver"})
#: Names the alias analysis reads as places, but that hold no tensor: `q.put(("done", None))`.
_CONSTANTS = frozenset({"None", "True", "False"})
#: A start method chosen by an expression we cannot evaluate.
UNKNOWN_METHOD = "?"


@dataclass(frozen=True)
class ProcessTable:
    forkserver_default_from: tuple[int, int]
    other_platforms_default: str  # macOS and Windows
    setters: frozenset[str]
    contexts: frozenset[str]
    context_methods: frozenset[str]
    manager_queue_methods: frozenset[str]  # `manager.Queue()`: a proxy queue in the manager's process
    constructors: dict[str, str]
    spawners: frozenset[str]
    pool_methods: dict[str, tuple[str, bool]]
    executor_methods: dict[str, tuple[str, bool]]
    send_methods: dict[str, frozenset[str]]
    receive_methods: frozenset[str]
    wait_methods: frozenset[str]
    wait_functions: frozenset[str]
    queue_parameter: re.Pattern
    dataset_kept_keywords: frozenset[str]  # kept by the datasets of other modules (torchvision's)

    @cached_property
    def process_classes(self) -> frozenset[str]:
        """The classes a `Process` subclass derives from: `multiprocessing.Process`, `torch.multiprocessing.Process`."""
        return frozenset(name for name, kind in self.constructors.items() if kind == "process")


@cache
def process_table() -> ProcessTable:
    data = tomllib.loads(data_text("processes.toml"))
    start = data["start_method"]

    def calls(section: dict) -> dict[str, tuple[str, bool]]:
        return {name: (spec["receives"], spec["sync"]) for name, spec in section.items()}

    return ProcessTable(
        forkserver_default_from=tuple(start["forkserver_default_from"]),
        other_platforms_default=start["other_platforms_default"],
        setters=frozenset(start["setters"]),
        contexts=frozenset(start["contexts"]),
        context_methods=frozenset(start["context_methods"]),
        manager_queue_methods=frozenset(start["manager_queue_methods"]),
        constructors=dict(data["constructors"]),
        spawners=frozenset(data["spawners"]["functions"]),
        pool_methods=calls(data["pool_methods"]),
        executor_methods=calls(data["executor_methods"]),
        send_methods={kind: frozenset(names) for kind, names in data["send_methods"].items()},
        receive_methods=frozenset(data["receive_methods"]["methods"]),
        wait_methods=frozenset(data["waits"]["methods"]),
        wait_functions=frozenset(data["waits"]["functions"]),
        queue_parameter=re.compile(data["queue_parameters"]["pattern"]),
        dataset_kept_keywords=frozenset(data["dataset_arguments"]["kept_keywords"]),
    )


def crossing_words(table: ProcessTable) -> re.Pattern[str]:
    """What the source of a file that hands anything to another process shows: the last part of a
    constructor, context method or spawner name (an alias is imported under it), or a send method
    (`q.put(x)` on a parameter named like a queue). A file without one has no crossing."""
    words = {name.rsplit(".", 1)[-1] for name in (*table.constructors, *table.spawners)}
    words |= table.context_methods | {method for methods in table.send_methods.values() for method in methods}
    return re.compile(r"\b(?:" + "|".join(sorted(words)) + r")\b")


#: A file pre-filter for the rules that need a crossing (`Rule.file_trigger`).
PROCESS_CROSSING = crossing_words(process_table())


@dataclass(eq=False)
class Crossing:
    """One call that hands objects to another process."""

    node: cst.Call
    kind: str  # "process", "spawn", "pool", "executor", "queue", "pipe"
    #: "fork", "spawn", "forkserver"; None: the default in force; UNKNOWN_METHOD: not a literal.
    start_method: str | None
    sent: Value  # everything handed over
    #: The function run on the other side, and what each of its parameters receives
    #: (position or keyword name -> value); empty when the call's shape is not literal.
    target: cst.BaseExpression | None = None
    arguments: tuple[tuple[int | str, Value], ...] = ()
    sync: bool = False  # the other side is done when the call returns
    #: `spawn(fn, nprocs=4)`, a pool, or a process started in a loop: several receivers.
    several: bool = False
    #: Where the receiving processes are started: the `Pool(...)` / executor for their tasks.
    launcher: cst.CSTNode | None = None
    #: Memory handed over before anything wrote it (`torch.empty(n)`, F35): a buffer for the
    #: receiver to fill, with no values of the sender's to overwrite.
    blank: frozenset[Storage] = frozenset()
    #: A queue or pipe send: the call that made the queue or pipe in this scope (`ctx.Queue()`), or
    #: the name of the parameter holding it (`outbox` in `def relay(inbox, outbox)`); None if unknown.
    channel: cst.CSTNode | str | None = None


@dataclass(eq=False)
class ProcessObject:
    kind: str  # "context", "process", "processes", "queue", "pipe", "pool", "executor", "manager"
    start_method: str | None = None
    crossing: Crossing | None = None
    node: cst.CSTNode | None = None  # the call that made it
    proxy: bool = False  # a manager's queue: what is put on it goes through the manager's process (F55)


@dataclass
class ProcessFacts:
    """What one scope hands to other processes."""

    crossings: list[Crossing] = field(default_factory=list)
    #: In-place writes by this scope that reach a tensor handed over and not yet waited for.
    crossed_writes: list[tuple[Write, Crossing]] = field(default_factory=list)
    #: Crossings this scope waited for (joined, got the result of) before it ended.
    finished: set[Crossing] = field(default_factory=set)
    #: Storages made shareable on purpose: `t.share_memory_()`, `model.share_memory()`.
    shared_on_purpose: set[Storage] = field(default_factory=set)
    #: `set_start_method(...)` calls: (node, method or UNKNOWN_METHOD).
    start_method_settings: list[tuple[cst.Call, str]] = field(default_factory=list)
    #: Places bound to a process object, for rules that follow `p.start()` or `pool.map(...)`.
    process_objects: dict[Handle, ProcessObject] = field(default_factory=dict)
    #: Calls that take what another process sent (`inbox.get()`, `conn.recv()`) -> the channel, named
    #: as in `Crossing.channel`. What they return is the handle made at the call (its `node`).
    receives: dict[cst.Call, cst.CSTNode | str] = field(default_factory=dict)
    #: Uses (reads, writes) of a numpy array made from a tensor (`t.numpy()`) before a crossing sent the
    #: tensor or `t.share_memory_()`: either moved the tensor into shared memory and left the array on the
    #: freed memory (F33, F48).
    left_behind_uses: list[LeftBehindUse] = field(default_factory=list)

    def left_behind(self, handle: Handle, crossing: Crossing) -> bool:
        """Whether `crossing` left behind the array `handle` is a name of."""
        return any(use.array is handle and use.crossing is crossing for use in self.left_behind_uses)


@dataclass(frozen=True, eq=False)
class LeftBehindUse:
    node: cst.CSTNode  # where the array is named
    array: Handle  # made by the bridge (`node` of the handle: `t.numpy()`)
    mover: cst.Call  # the send or `share_memory_()` that moved the tensor
    crossing: Crossing | None  # the send (None: `share_memory_()`)


class ProcessSemantics:
    def _init_processes(self) -> None:
        self.process_facts = ProcessFacts()
        self._crossed: dict[tuple[int, int], tuple[Write, Crossing]] = {}
        self._sent_by: dict[Handle, Crossing] = {}
        self._open: list[Crossing] = []
        self._by_node: dict[int, Crossing] = {}  # loops evaluate a call more than once
        self._attribute_objects: dict[int, ProcessObject] = {}  # by id of the call another method made them with
        #: Arrays made from a tensor before it moved -> the call that moved it and its crossing, until bound again.
        self._left_behind: dict[Handle, tuple[cst.Call, Crossing | None]] = {}
        self._moved: set[Storage] = set()  # in shared memory already: moving again moves nothing (F48)
        self._left_behind_uses: dict[tuple[int, int], LeftBehindUse] = {}
        #: Parameters known to receive a queue or pipe end (set by the module-level model).
        self.channel_parameters: frozenset[str] = frozenset()

    # ------------------------------------------------------------- entry points

    def _process_call(self, node: cst.Call, qualified: str | None, receiver: Value | None, args, state: State):
        """The value of a boundary call, or None when `node` is not one."""
        table = process_table()
        if qualified in table.setters:
            self.process_facts.start_method_settings.append((node, method_argument(node) or UNKNOWN_METHOD))
            return EMPTY
        if qualified in table.contexts:
            return self._object(node, ProcessObject("context", method_argument(node)))
        if qualified in table.constructors:
            return self._construct(node, table.constructors[qualified], None, args, state)
        if qualified in table.spawners:
            return self._spawn(node, qualified, args, state)
        if qualified in table.wait_functions:
            self._finish_open(state)
            return None
        func = node.func
        if receiver is None or not isinstance(func, cst.Attribute):
            return None
        method = func.attr.value
        if method in ("share_memory_", "share_memory"):
            self.process_facts.shared_on_purpose.update(h.storage for h in receiver.handles)
            self._leave_arrays_behind(node, None, receiver.handles, state)
            return receiver  # returns self: `t = torch.zeros(1).share_memory_()`
        found = [
            self.process_facts.process_objects[h] for h in receiver.handles if h in self.process_facts.process_objects
        ] or self._attribute_workers(func.value)
        if found:
            value = self._object_method(node, method, found[0], args, state)
            if value is not None:
                return value
        elif method in table.send_methods["queue"] | table.send_methods["pipe"] and self._queue_parameter(func.value):
            kind = "queue" if method in table.send_methods["queue"] else "pipe"
            return self._send(node, kind, args, state, dotted_name(func.value))
        elif method in table.receive_methods and self._queue_parameter(func.value):
            self.process_facts.receives[node] = dotted_name(func.value)
        if method in table.wait_methods and not any(arg.keyword is None for arg in node.args):
            self._finish_open(state)
        return None

    def _attribute_workers(self, receiver: cst.BaseExpression) -> list[ProcessObject]:
        """`self.pool.map(f, xs)` in a method, where another method of the class made `self.pool =
        Pool(...)` (the class facts): that pool. An executor's `mp_context` is an expression of the
        other method, so its start method is unknown here."""
        scope = self.scope
        place = dotted_name(receiver)
        if scope.classes is None or not scope.is_method or place is None or place.count(".") != 1:
            return []
        head, _, attribute = place.partition(".")
        call = scope.classes.workers(scope.class_name, attribute) if head == "self" else None
        if call is None:
            return []
        if id(call) not in self._attribute_objects:
            kind = process_table().constructors[self.imports.qualify(call.func)]
            method = UNKNOWN_METHOD if keyword(call, "mp_context") is not None else None
            self._attribute_objects[id(call)] = ProcessObject(kind, method, node=call)
        return [self._attribute_objects[id(call)]]

    def _leave_process_block(self, values: list[Value], state: State) -> None:
        """Leaving `with Pool() as pool:` / `with ProcessPoolExecutor() as ex:` waits for (or
        terminates) the workers."""
        objects = self.process_facts.process_objects
        if any(objects[h].kind in ("pool", "executor") for v in values for h in v.handles if h in objects):
            self._finish_open(state)

    def _note_crossed_write(self, write: Write, handle: Handle) -> None:
        crossing = self._sent_by.get(handle)
        if crossing is None or crossing in self.process_facts.finished or write.rebinds:
            return
        if handle.partial and write.partial and handle.index and write.index and handle.index != write.index:
            return  # `q.put(x[0])` then `x[1].add_(1)`: another row
        if handle.ndarray and crossing.kind in ("process", "spawn"):
            return  # an ndarray argument is pickled by value when the process starts
        self._crossed.setdefault((id(write), id(crossing)), (write, crossing))

    def _note_left_behind_use(self, place: str, node: cst.CSTNode, state: State) -> None:
        for handle in state.env.get(place, ()):
            moved = self._left_behind.get(handle)
            if moved is not None:
                self._left_behind_uses.setdefault((id(node), id(handle)), LeftBehindUse(node, handle, *moved))

    def _bound_again(self, handle: Handle) -> None:
        """A bridge run again (a loop's next pass) makes an array of the tensor's memory as it is now."""
        self._left_behind.pop(handle, None)

    def _processes_result(self) -> ProcessFacts:
        facts = self.process_facts
        facts.crossed_writes = list(self._crossed.values())
        facts.left_behind_uses = list(self._left_behind_uses.values())
        return facts

    # ---------------------------------------------------------------- objects

    def _object(self, node: cst.CSTNode, info: ProcessObject) -> Value:
        handle = self._handle(("process object", id(node)), Storage(info.kind, "fresh"), AliasKind.OWN, node)
        handle.role = Role.PROCESS_OBJECT
        info.node = node
        self.process_facts.process_objects[handle] = info
        return Value(frozenset({handle}))

    def _object_method(self, node: cst.Call, method: str, owner: ProcessObject, args, state: State):
        table = process_table()
        if owner.kind == "context" and method in table.context_methods:
            kind = table.constructors.get(f"multiprocessing.{method}")
            return self._construct(node, kind, owner.start_method, args, state)
        if owner.kind == "manager" and method in table.manager_queue_methods:
            return self._object(node, ProcessObject("queue", owner.start_method, proxy=True))
        if owner.kind == "process" and method == "start" and owner.crossing is not None:
            self._open_crossing(owner.crossing, state)
            return EMPTY
        if owner.kind == "pool" and method in table.pool_methods:
            return self._task(node, "pool", owner, *table.pool_methods[method], args, state)
        if owner.kind == "executor" and method in table.executor_methods:
            return self._task(node, "executor", owner, *table.executor_methods[method], args, state)
        if owner.kind in table.send_methods and method in table.send_methods[owner.kind]:
            return self._send(node, owner.kind, args, state, owner.node)
        if owner.kind in table.send_methods and method in table.receive_methods and owner.node is not None:
            self.process_facts.receives[node] = owner.node
        return None

    def _construct(self, node: cst.Call, kind: str, start_method: str | None, args, state: State) -> Value:
        if kind == "executor":
            context = keyword(node, "mp_context")
            if context is not None:
                start_method = self._context_method(context, state)
        if kind == "pipe":  # `a, b = mp.Pipe()`: both ends unpack to the connection object
            return Value(self._object(node, ProcessObject(kind, start_method)).handles, container=True)
        if kind != "process":
            return self._object(node, ProcessObject(kind, start_method))
        # Process(group=None, target=None, name=None, args=(), kwargs={}, *, daemon=None)
        target = _argument(node, 1, "target")
        arguments = self._positional(_argument(node, 3, "args"), 0, state) + self._named(
            _argument(node, 4, "kwargs"), state
        )
        crossing = self._record(
            Crossing(node, "process", start_method, _union(args), target, arguments, several=bool(self._loops))
        )
        return self._object(node, ProcessObject("process", start_method, crossing))

    def _process_subclass(self, node: cst.Call) -> bool:
        """`Worker(net)` of `class Worker(mp.Process)` of this module."""
        classes = self.scope.classes
        if classes is None or not isinstance(node.func, cst.Name):
            return False
        return classes.derives_from(node.func.value, process_table().process_classes)

    def _construct_subclass(self, node: cst.Call, args) -> Value:
        """A `Process` subclass's object: `start()` runs its class's `run` in the child, on an object holding what
        the construction was given (the target: `run` of the object made, boundaries.py `_target`)."""
        target = cst.Attribute(value=node, attr=cst.Name("run"))
        crossing = self._record(Crossing(node, "process", None, _union(args), target, several=bool(self._loops)))
        return self._object(node, ProcessObject("process", None, crossing))

    def _spawn(self, node: cst.Call, qualified: str, args, state: State) -> Value:
        # spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn")
        method = keyword(node, "start_method") or (
            _positional_argument(node, 5) if qualified.endswith("start_processes") else None
        )
        start_method = "spawn" if method is None else _literal_method(method)
        join = _argument(node, 3, "join")
        nprocs = _argument(node, 2, "nprocs")
        sync = not (isinstance(join, cst.Name) and join.value == "False")
        crossing = self._record(
            Crossing(
                node,
                "spawn",
                start_method,
                _union(args),
                _argument(node, 0, "fn"),
                self._positional(_argument(node, 1, "args"), 1, state),
                sync=sync,
                several=not (isinstance(nprocs, cst.Integer) and nprocs.value == "1") and nprocs is not None,
            )
        )
        if sync:
            self._leave_arrays_behind(crossing.node, crossing, crossing.sent.handles, state)
            return EMPTY
        self._open_crossing(crossing, state)
        return self._object(node, ProcessObject("processes", start_method))

    def _task(self, node: cst.Call, kind: str, owner: ProcessObject, receives: str, sync: bool, args, state: State):
        positional = [arg.value for arg in node.args if arg.keyword is None]
        target = positional[0] if positional else keyword(node, "func") or keyword(node, "fn")
        arguments: tuple[tuple[int | str, Value], ...] = ()
        if receives == "args" and kind == "pool":
            arguments = self._positional(_argument(node, 1, "args"), 0, state) + self._named(
                keyword(node, "kwds"), state
            )
        elif receives == "args":  # executor.submit(fn, *args, **kwargs)
            arguments = tuple(
                (
                    arg.keyword.value if arg.keyword is not None else position - 1,
                    self._eval(arg.value, state, record=False),
                )
                for position, arg in enumerate(node.args)
                if position > 0 and not arg.star
            )
        elif receives in ("each", "zip"):
            iterables = positional[1:] if receives == "zip" else positional[1:2]
            arguments = tuple(
                (position, self._element(self._eval(iterable, state, record=False), iterable))
                for position, iterable in enumerate(iterables)
            )
        sent = Value(
            frozenset().union(*(value.handles for arg, value in zip(node.args, args) if arg.value is not target))
        )
        crossing = self._record(
            Crossing(
                node, kind, owner.start_method, sent, target, arguments, sync=sync, several=True, launcher=owner.node
            )
        )
        if sync:
            self._leave_arrays_behind(crossing.node, crossing, crossing.sent.handles, state)
        else:
            self._open_crossing(crossing, state)
        return Value(frozenset({self._fresh(node, "", EMPTY)}))

    def _send(self, node: cst.Call, kind: str, args, state: State, channel: cst.CSTNode | str | None) -> Value:
        crossing = self._record(Crossing(node, kind, None, _union(args[:1]), channel=channel))
        self._open_crossing(crossing, state)
        return EMPTY

    # ------------------------------------------------------------- open crossings

    def _record(self, crossing: Crossing) -> Crossing:
        """The crossing of this call: the first one made, so that a loop's later passes
        see the same object (and whether it was waited for)."""
        crossing.blank = frozenset(
            h.storage for h in crossing.sent.handles if h.storage.blank and h.storage not in self._filled
        )
        known = self._by_node.get(id(crossing.node))
        if known is not None:
            known.several |= crossing.several
            known.blank &= crossing.blank  # a loop's later pass may find it filled
            return known
        self._by_node[id(crossing.node)] = crossing
        self.process_facts.crossings.append(crossing)
        return crossing

    def _open_crossing(self, crossing: Crossing, state: State) -> None:
        if self._loops:
            crossing.several = True
        handles = frozenset(
            self._sent(handle, crossing)
            for handle in crossing.sent.handles
            if handle.role is None and handle.storage.label not in _CONSTANTS
        )
        if handles:
            state.held[_place(crossing)] = handles
            self._open.append(crossing)
        self._leave_arrays_behind(crossing.node, crossing, crossing.sent.handles, state)

    def _leave_arrays_behind(self, mover: cst.Call, crossing: Crossing | None, tensors, state: State) -> None:
        """The arrays made by `t.numpy()` / `np.asarray(t)` from the tensors a send (or `share_memory_()`)
        moves into shared memory, if not moved before (F33, F48). An array sent itself is pickled by value and
        moves nothing; `torch.from_numpy(a)` moved leaves `a` on its own memory, which stays valid."""
        moved = {h.storage for h in tensors if h.role is None and not _array_only(h) and h.storage not in self._moved}
        if not moved:
            return
        self._moved |= moved
        for handle in state.live_handles():
            if handle.kind is AliasKind.NUMPY and _array_only(handle) and any(handle.storage.related(s) for s in moved):
                self._left_behind.setdefault(handle, (mover, crossing))

    def _sent(self, handle: Handle, crossing: Crossing) -> Handle:
        sent = self._held_copy(("sent", id(crossing.node), id(handle)), handle, crossing.node)
        self._sent_by[sent] = crossing
        self._aliased.add(handle.storage)
        return sent

    def _keep_open_crossings(self, inner: State, outer: State) -> None:
        """A comprehension's own state is dropped afterwards; what it handed over stays handed over."""
        for crossing in self._open:
            place = _place(crossing)
            if place in inner.held:
                outer.held[place] = inner.held[place]

    def _finish_open(self, state: State) -> None:
        for crossing in self._open:
            self.process_facts.finished.add(crossing)
            state.held.pop(_place(crossing), None)
        self._open.clear()

    # ----------------------------------------------------------------- helpers

    def _queue_parameter(self, receiver: cst.BaseExpression) -> bool:
        """`q.put(x)` on a parameter named like a queue, in a module that uses multiprocessing
        and no thread queues."""
        place = dotted_name(receiver)
        if place in self.channel_parameters:
            return True
        if place is None or not process_table().queue_parameter.search(place.rsplit(".", 1)[-1]):
            return False
        imports = self.imports
        uses_processes = imports.imports("multiprocessing") or imports.imports("torch.multiprocessing")
        return uses_processes and not (imports.imports("queue") or imports.imports("threading"))

    def _context_method(self, node: cst.BaseExpression, state: State) -> str | None:
        value = self._eval(node, state, record=False)
        objects = self.process_facts.process_objects
        found = [objects[h] for h in value.handles if h in objects and objects[h].kind == "context"]
        return found[0].start_method if found else UNKNOWN_METHOD

    def _positional(
        self, node: cst.BaseExpression | None, first: int, state: State
    ) -> tuple[tuple[int | str, Value], ...]:
        """`args=(a, b)`: parameter `first` receives a, the next one b. Only literal tuples."""
        if not isinstance(node, (cst.Tuple, cst.List)) or any(isinstance(e, cst.StarredElement) for e in node.elements):
            return ()
        return tuple(
            (first + position, self._eval(element.value, state, record=False))
            for position, element in enumerate(node.elements)
        )

    def _named(self, node: cst.BaseExpression | None, state: State) -> tuple[tuple[int | str, Value], ...]:
        """`kwargs={"x": t}` or `kwargs=dict(x=t)`: parameter x receives t."""
        if isinstance(node, cst.Dict):
            return tuple(
                (element.key.evaluated_value, self._eval(element.value, state, record=False))
                for element in node.elements
                if isinstance(element, cst.DictElement) and isinstance(element.key, cst.SimpleString)
            )
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "dict":
            return tuple(
                (arg.keyword.value, self._eval(arg.value, state, record=False))
                for arg in node.args
                if arg.keyword is not None
            )
        return ()


def _array_only(handle: Handle) -> bool:
    """A numpy array, not a tensor made from one (`torch.from_numpy(a)` is both)."""
    return handle.ndarray and not handle.tensor


def _place(crossing: Crossing) -> str:
    return f"<sent at {id(crossing.node)}>"  # no code can name it


def _union(values) -> Value:
    return Value(frozenset().union(*(value.handles for value in values)) if values else frozenset())


def _positional_argument(node: cst.Call, position: int) -> cst.BaseExpression | None:
    positional = [arg for arg in node.args if arg.keyword is None and not arg.star]
    return positional[position].value if position < len(positional) else None


def _argument(node: cst.Call, position: int, name: str) -> cst.BaseExpression | None:
    return keyword(node, name) or _positional_argument(node, position)


def _literal_method(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.SimpleString) and node.evaluated_value in START_METHODS:
        return node.evaluated_value
    return UNKNOWN_METHOD


def method_argument(node: cst.Call) -> str | None:
    """`get_context("spawn")` -> "spawn"; `get_context()` -> None (the default)."""
    method = _argument(node, 0, "method")
    return None if method is None else _literal_method(method)
