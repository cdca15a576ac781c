"""The abstract values of the alias analysis: storages, handles, writes and reads.

A *storage* is one block of tensor memory. A *handle* is one Python-level way of
reaching it (the tensor itself, a view, a `.detach()` or `.data` alias, a numpy array,
a `state_dict()`), identified by the expression that made it. Places (names and
attribute paths such as `self.buf`) are bound to sets of handles; a *write* through one
handle is *seen* by every other handle of a related storage, and a later read of such
a handle is recorded as a `Read` for the rules to judge.

Storages, handles, writes and savings are compared by identity, but hashed by a serial number given
at creation, counted afresh for each file (`fresh_serials`): the analysis iterates sets of them, and
an identity hash (an address) would make that order, and with it a tie between two findings, differ
from run to run.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import Enum, IntEnum
from typing import NamedTuple

import libcst as cst

_serials = itertools.count()


def next_serial() -> int:
    return next(_serials)


@contextmanager
def fresh_serials() -> Iterator[None]:
    """Number the analysis objects made inside from 0, whatever was analysed before (another file)."""
    global _serials
    outer, _serials = _serials, itertools.count()
    try:
        yield
    finally:
        _serials = outer


class Serial:
    """Hashed by creation order, equal only to itself (see the module's docstring)."""

    __slots__ = ()

    def __hash__(self) -> int:
        return self.serial


class AliasKind(str, Enum):
    OWN = "own"  # the tensor itself: a parameter, an attribute, a fresh result
    VIEW = "view"  # slicing, view, transpose, narrow, select, ...
    DETACH = "detach"  # .detach(): shares memory and the version counter
    DATA = "data"  # .data: shares memory, not the version counter
    NUMPY = "numpy"  # the other side of a numpy bridge
    STATE_DICT = "state_dict"  # Module.state_dict() and its entries
    EXPAND = "expand"  # expand / broadcast_to: several elements share one location
    MULTI_VIEW = "multi_view"  # outputs of unbind / split / chunk
    PARAMETERS = "parameters"  # a module's own tensors, from .parameters()
    WRAPPER = "wrapper"  # nn.Parameter(x): a new tensor object on x's memory


#: Kinds a user commonly mistakes for a copy.
SNAPSHOT_KINDS = frozenset({AliasKind.VIEW, AliasKind.DETACH, AliasKind.DATA, AliasKind.WRAPPER})


class Grad(IntEnum):
    """Whether a tensor requires grad, ordered so that a join takes the larger."""

    NO = 0  # made under no-grad, detached, a buffer, or `requires_grad_(False)`
    UNKNOWN = 1
    MAY = 2  # a module's forward input, or computed by a function that calls backward()
    YES = 3  # a Parameter, `requires_grad=True`, or computed from one outside no-grad


class Passed(NamedTuple):
    """What callers pass for one parameter: the most grad any passes, whether one passes a grad
    leaf, whether a caller that trains (calls `backward()`) passes it, the class of the module
    every caller passes (`train(netD, Generator())`), if they agree, and the ops (saved.py `Saving`)
    that kept for backward the memory some caller passes (`loss_fn(torch.sigmoid(x))`)."""

    grad: Grad
    leaf: bool
    training: bool
    module: str | None = None
    saved: frozenset = frozenset()

    def join(self, other: Passed) -> Passed:
        module = self.module if self.module == other.module else None
        return Passed(
            max(self.grad, other.grad),
            self.leaf or other.leaf,
            self.training or other.training,
            module,
            self.saved | other.saved,
        )


class Role(str, Enum):
    """What a non-tensor object does to tensors when used."""

    OPTIMIZER = "optimizer"  # .step() writes the parameters it was given
    INPLACE_MODULE = "inplace_module"  # calling it writes its argument
    PROCESS_OBJECT = "process_object"  # a process, queue, pipe, pool or context (semantic/processes.py)


@dataclass(eq=False)
class Storage(Serial):
    label: str
    origin: str  # "param", "external", "fresh"; "none" for None, "value" for Python numbers (`x.tolist()`)
    parent: Storage | None = None
    blank: bool = False  # `torch.empty(n)`: allocated without values
    #: `x.cpu()`, `torch.load(f, map_location="cpu")`: memory the CUDA allocator never holds (True), moved
    #: off it (`model.to("cuda")`: False), or where the storage it is part of is (None).
    host: bool | None = None
    serial: int = field(default_factory=next_serial, init=False, repr=False)

    def on_host(self) -> bool:
        """Host memory: its own, or that of the object it is part of (`pipe.transformer` of a pipeline on the CPU)."""
        for storage in self.lineage():
            if storage.host is not None:
                return storage.host
        return False

    def lineage(self) -> Iterator[Storage]:
        storage: Storage | None = self
        while storage is not None:
            yield storage
            storage = storage.parent

    def related(self, other: Storage) -> bool:
        """One contains the other: `model` and `model.fc.weight` share memory. (Loops rather than
        `lineage()`: the alias analysis asks this for every live handle at every write.)"""
        storage: Storage | None = other
        while storage is not None:
            if storage is self:
                return True
            storage = storage.parent
        storage = self.parent
        while storage is not None:
            if storage is other:
                return True
            storage = storage.parent
        return False


@dataclass(eq=False)
class Handle(Serial):
    storage: Storage
    kind: AliasKind
    node: cst.CSTNode | None  # the expression that made it; None for a parameter
    partial: bool = False  # reaches only part of the storage (x[0], narrow, select)
    index: str | None = None  # the subscript, to tell `x[i]` from `x[j]`
    tensor: bool = False  # evidence that this is a tensor (or an ndarray)
    ndarray: bool = False
    role: Role | None = None
    targets: frozenset[Storage] = frozenset()  # for an optimizer: what step() writes
    base: Handle | None = None  # the handle this alias was made from
    element: bool = False  # one item of a container being iterated
    stored: bool = False  # put into a container (`outs.append(h)`): what the container holds
    grad: Grad = Grad.UNKNOWN
    leaf: bool = False  # a leaf of autograd's graph: a Parameter, a `requires_grad=True` factory
    module: str | None = None  # an nn.Module: its class ("torch.nn.Linear" or a class of this file)
    instance: str | None = (
        None  # an object of another class of this file (`Normalize(...)`): calling it runs `__call__`
    )
    ndim: int | None = None  # the number of dimensions, where the constructor says
    layers: tuple[str | None, ...] = ()  # `nn.Sequential(nn.Linear(...), ...)`: each layer's module class
    elements: str | None = None  # a module list whose every layer is of this class
    blank: bool = False  # an alias made while its memory held no values yet: it has no old ones to keep
    #: The ops (saved.py `Saving`) it was computed through that kept tensors: a backward of it runs them.
    graph: frozenset = frozenset()
    #: An object that keeps what these methods of it are given (`trainer.fit(model)`): memory_api.toml [keepers].
    keeps: frozenset[str] = frozenset()
    serial: int = field(default_factory=next_serial, init=False, repr=False)

    def grad_leaf(self) -> Handle | None:
        """The leaf requiring grad that this handle is, or is a view of (not through
        `.detach()`/`.data`, which autograd does not track)."""
        for handle in self.chain():
            if handle.kind in (AliasKind.DETACH, AliasKind.DATA, AliasKind.NUMPY, AliasKind.STATE_DICT):
                return None
            if handle.stored:  # `d[k]` holds what was stored last, which may be another tensor by now
                return None
            if handle.leaf and handle.grad is Grad.YES:
                return handle
        return None

    def own_array(self) -> bool:
        """A numpy array numpy made (`np.array(x)`, `a.astype(t)`), not the other side of a tensor's bridge."""
        return self.ndarray and not self.tensor and all(h.kind is not AliasKind.NUMPY for h in self.chain())

    def chain(self) -> Iterator[Handle]:
        """This handle and those it was derived from: `x.view(-1)` -> `x`."""
        handle: Handle | None = self
        while handle is not None:
            yield handle
            handle = handle.base


REBINDING_OPS = frozenset({".data =", "set_"})


@dataclass(eq=False)
class Write(Serial):
    node: cst.CSTNode
    writer: Handle
    op: str  # "add_", "+=", "[] =", "out=", "inplace=True", ".data =", "step()"
    partial: bool = False
    index: str | None = None
    no_grad: bool = False
    init: bool = False  # nn.init.*: initialisation, written on purpose
    callee: str | None = None  # made by calling a same-module function that mutates this argument
    parameter: str | None = None  # the callee's parameter the argument is bound to
    certain: bool = True  # the op exists only on tensors (not `+=`/`[] =`, which lists and ints have too)
    module: bool = False  # updates a module's parameters as a whole: optimizer step, training call, load
    read_before: bool = False  # the caller read the argument's values before the call (`keep = x.clone()`)
    advanced: bool = False  # `x[mask] = v`, `x[idx] = v`: indexed by a tensor, an array or a list (index_put_)
    serial: int = field(default_factory=next_serial, init=False, repr=False)

    @property
    def storage(self) -> Storage:
        return self.writer.storage

    @property
    def hidden(self) -> bool:
        """Autograd cannot see it: through `.data`, or rebinding `.data`."""
        return self.writer.kind is AliasKind.DATA or self.rebinds

    @property
    def rebinds(self) -> bool:
        """`x.data = y` and `x.set_(y)` swap x's memory: aliases made before keep the old one."""
        return self.op in REBINDING_OPS


@dataclass(frozen=True, eq=False)
class Read:
    write: Write
    reader: Handle
    node: cst.CSTNode
    place: str


class Value(NamedTuple):
    """What an expression evaluates to (a named tuple: the analysis makes one per expression, and
    a frozen dataclass takes twice as long to build)."""

    handles: frozenset[Handle] = frozenset()
    tensor: bool = False
    ndarray: bool = False
    container: bool = False  # a list/dict/tuple holding these handles, not one of them

    def with_handles(self, handles) -> Value:
        return Value(frozenset(handles), self.tensor, self.ndarray, self.container)

    def elements(self) -> Value:
        """What indexing or iterating a container yields."""
        if not self.container:
            return self
        return Value(self.handles, any(h.tensor for h in self.handles), any(h.ndarray for h in self.handles))

    @property
    def kinds(self) -> frozenset[AliasKind]:
        return frozenset(handle.kind for handle in self.handles)

    @property
    def module(self) -> str | None:
        """The module class every handle agrees on (`self.fc` -> "torch.nn.Linear"), else None."""
        modules = {handle.module for handle in self.handles}
        return modules.pop() if len(modules) == 1 else None


EMPTY = Value()


@dataclass
class State:
    """What is known at one program point; joined at merges, iterated around loops."""

    env: dict[str, frozenset[Handle]] = field(default_factory=dict)
    held: dict[str, frozenset[Handle]] = field(default_factory=dict)  # what containers hold
    stale: dict[Handle, frozenset[Write]] = field(default_factory=dict)
    hidden: dict[Handle, frozenset[Write]] = field(default_factory=dict)
    retired: frozenset[Handle] = frozenset()  # aliases of memory since re-allocated by a loop
    reachable: bool = True
    saved: dict[Storage, frozenset] = field(default_factory=dict)  # kept for backward, by whom (saved.py)
    moved: frozenset[Handle] = frozenset()  # `x[i]` aliases made before a loop bound `i` anew
    #: Writes through `x[i]` (`i` a whole dimension's index) made before a loop bound `i` anew, and not
    #: made again since: a read of `x[i]` now reads another element. Kept only where every path agrees.
    passed: frozenset[Write] = frozenset()
    #: (container, literal key) whose item this path replaced (`d["k"] = t`): `d["k"]` is what was stored,
    #: and `d` no longer holds the item it had under "k". Kept only where every path agrees.
    replaced: frozenset[tuple[str, str]] = frozenset()

    def copy(self) -> State:
        return State(
            dict(self.env),
            dict(self.held),
            dict(self.stale),
            dict(self.hidden),
            self.retired,
            self.reachable,
            dict(self.saved),
            self.moved,
            self.passed,
            self.replaced,
        )

    def join(self, other: State) -> State:
        if not other.reachable:
            return self.copy()
        if not self.reachable:
            return other.copy()
        return State(
            _union(self.env, other.env),
            _union(self.held, other.held),
            _union(self.stale, other.stale),
            _union(self.hidden, other.hidden),
            self.retired | other.retired,
            saved=_union(self.saved, other.saved),
            moved=self.moved | other.moved,
            passed=self.passed & other.passed,
            replaced=self.replaced & other.replaced,
        )

    def absorb(self, other: State) -> None:
        """Join `other` into this state in place: where paths that ran inside one expression meet
        (the arms of `a if c else b`), the enclosing statement goes on with this same state."""
        self.__dict__.update(self.join(other).__dict__)

    def same_as(self, other: State) -> bool:
        return (
            self.reachable,
            self.env,
            self.held,
            self.stale,
            self.hidden,
            self.retired,
            self.saved,
            self.moved,
            self.passed,
            self.replaced,
        ) == (
            other.reachable,
            other.env,
            other.held,
            other.stale,
            other.hidden,
            other.retired,
            other.saved,
            other.moved,
            other.passed,
            other.replaced,
        )

    def handles_of(self, place: str) -> frozenset[Handle]:
        return self.env.get(place, frozenset()) | self.held.get(place, frozenset())

    def live_handles(self) -> set[Handle]:
        return set().union(*self.env.values(), *self.held.values())


UNREACHABLE = State(reachable=False)


def _union(left: dict, right: dict) -> dict:
    merged = dict(left)
    for key, values in right.items():
        mine = merged.get(key)
        if mine is None:
            merged[key] = values
        elif mine is not values:  # both paths mostly share their sets: no new one for those
            merged[key] = mine | values
    return merged
