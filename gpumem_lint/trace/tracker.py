"""The storage tracker (torch): which live tensors share memory, which writes made them stale, which stale
alias was then read.

Identity is `torch._C._storage_id` (the StorageImpl pointer, shared by every view); ids are reused after a
free, so every record holds a weak reference and a dead one never matches. The dispatch hook does the least it
can: one cached schema lookup per op, a source-site walk only for view-making and writing ops, and read checks
only while some write is waiting for its confirming read. The views and detaches autograd makes itself while
backward runs (AccumulateGrad's `.grad`), which no user frame calls, are no aliases.

Hazard families and when they are confirmed:
- GML103 (GML102 for `state_dict()` tensors): a write into memory that a `.detach()`/`.data`/`state_dict()`
  alias made at another line shares, through a tensor that is not a view of that alias, and the alias is read
  afterwards. Plain views read after a write are kept as evidence only: they confirm a static GML103 finding but
  are never reported alone (a view that sees its base's updates is usually the point of the view).
- GML101: a write through `.data` (which autograd cannot see) that the next backward reads before any forward op
  has read the new values.
- GML109: an in-place write on a tensor a live graph saved for backward, at its saved version (saved.py).
- GML106: a tensor made by `torch.from_numpy` read after its array was rewritten, while a newer tensor made from
  the same array is alive (the code wrapped it again, so it meant each wrap as a separate copy).
- GML201: an in-place write to a storage after it was sent to another process (and not made shareable on
  purpose with `share_memory_()`); GML202: in a child, an in-place write to a storage its parent sent (not
  during an optimizer step: Hogwild training writes shared parameters by design).
- GML104: an in-place write into a tensor two of whose elements are one memory location (a stride of 0: an
  `expand`/`broadcast_to` result), or into a view of one (`b[0] = 0` on an expanded `b`); GML110: a write whose
  target overlaps the memory of another argument the op reads (`a[1:].copy_(a[:-1])`, `torch.mm(m, m, out=m)`),
  other than an elementwise op's input laid out exactly as its output (`x.add_(x)`). Both are judged from sizes,
  strides and storage offsets before the op runs, so a write the kernel accepts (`index_put_`, `mm(out=)`,
  `masked_scatter_`) is reported as well as one it refuses; torch's own writes (optimizer steps, backward,
  `load_state_dict`) are not looked at.
- GML406: `torch.cuda.empty_cache()` called in every optimizer step, at least 3 in a row (judged at the end).

Sampling (`--trace-steps N`): the dispatch hook traces the first N training steps in full, and the forward pass of
the next one (where a snapshot taken before an optimizer step is read). A step is an optimizer step once the program
has made an optimizer, else a backward call (a hand-written update). Tracing ends when the next backward starts;
`on_stop` then takes the dispatch mode off (outside any dispatch), and the program runs at full speed. Child
processes stop when they see that the parent's sample ended (`sample_over`), at their next queue put. What stays on
is what costs nothing per operator: the environment, fork and launch hooks (GML2xx, GML3xx), optimizer steps and
`empty_cache()` calls (GML406), and the exception the program dies of.
"""

from __future__ import annotations

import threading
import time
import weakref
from dataclasses import dataclass

import torch
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._python_dispatch import TorchDispatchMode

from gpumem_lint.trace.codes import CODES
from gpumem_lint.trace.findings import Finding, FindingLog
from gpumem_lint.trace.ops import _CACHE as _OP_INFO
from gpumem_lint.trace.ops import OTHER, VIEW, WRITE, op_info
from gpumem_lint.trace.saved import SavedTensors
from gpumem_lint.trace.sites import Site, SiteFinder

Tensor = torch.Tensor
_storage_id = getattr(torch._C, "_storage_id", None) or (lambda t: t.untyped_storage()._cdata)


class StorageRecords(dict):
    """storage id -> value, for records that hold no tensor: each keeps a weak reference to its storage, so a
    record never matches a new storage that reuses a freed one's id."""

    def remember(self, tensor, value) -> None:
        try:
            reference = StorageWeakRef(tensor.untyped_storage())
        except (RuntimeError, ValueError):  # no storage to refer to (meta, lazy-module placeholders)
            return
        self[_storage_id(tensor)] = (reference, value)

    def live(self, storage: int, default=None):
        entry = self.get(storage)
        if entry is None:
            return default
        if entry[0].expired():
            del self[storage]
            return default
        return entry[1]


_in_backward = torch._C._current_autograd_node
_grad_enabled = torch.is_grad_enabled


def _needs_grad(args) -> bool:
    """Whether an op on these arguments can record a graph node (and save tensors for its backward)."""
    for value in args:
        if isinstance(value, Tensor):
            if value.requires_grad:
                return True
        elif isinstance(value, (list, tuple)):
            for item in value:
                if isinstance(item, Tensor) and item.requires_grad:
                    return True
    return False


#: Aliases that exist to hold values (a snapshot, a gradient-free copy): reading new values through them is
#: the hazard. "view" is not among them.
SNAPSHOT_KINDS = frozenset({"detach", "data", "state_dict"})
_SWEEP_EVERY = 4096
#: `empty_cache()` in this many consecutive optimizer steps is reported as a per-step call.
_EVERY_STEP_MINIMUM = 3
#: A storage's alias list is pruned of dead tensors when it reaches this length (reads never prune it).
_PRUNE_AT = 16
_ANCESTRY_LIMIT = 64


class Alias:
    """A tensor that shares the storage of the tensor it was made from."""

    __slots__ = ("kind", "parent", "ref", "site")

    def __init__(self, ref, kind: str, site: Site | None, parent: int) -> None:
        self.ref = ref
        self.kind = kind
        self.site = site
        self.parent = parent  # id() of the tensor it was made from


@dataclass
class PendingRead:
    """A write made `alias` stale; the next read of it confirms the hazard."""

    alias: Alias
    op: str
    write_site: Site | None


@dataclass
class DataWrite:
    """A write through `.data`: confirmed when backward reads the storage before any forward op does."""

    op: str
    write_site: Site | None
    alias_site: Site | None


@dataclass
class NumpyWrap:
    tensor: weakref.ref
    array: weakref.ref
    site: Site | None
    fingerprint: int
    epoch: int


class Tracker:
    def __init__(self, sites: SiteFinder, log: FindingLog, evidence: FindingLog, warn_once) -> None:
        self.sites = sites
        self.log = log
        self.evidence = evidence
        self._warn_once = warn_once
        self.active = True
        self.ops = 0
        self.max_ops: int | None = None
        self.max_steps: int | None = None
        #: Called once tracing has stopped, at the first moment outside the dispatch hook (a backward's start,
        #: an optimizer step's end): takes the dispatch mode off.
        self.on_stop = None
        self.failed = False
        self.optimizer_made = False
        self.backward_calls = 0
        #: With --trace-steps: a file the first process creates when its sample ends (a Path), which child
        #: processes (DataLoader workers, that take no steps of their own) look for every 256 operators.
        self.sample_over = None
        self.deadline: float | None = None
        #: The operator count at which the limits above are next looked at (one comparison per operator).
        self._next_check = 0
        #: The option whose limit ended tracing early, for the report's statuses.
        self.stopped_by: str | None = None
        self.aliases: dict[int, list[Alias]] = {}
        self.by_id: dict[int, Alias] = {}
        self.pending: dict[int, PendingRead] = {}
        self.data_writes = StorageRecords()  # of DataWrite
        self.numpy_wraps: dict[int, list[NumpyWrap]] = {}
        self.watched: dict[int, NumpyWrap] = {}
        #: Torch-side writes per buffer address, so a numpy-side change is told apart from a torch write.
        self.write_epoch: dict[int, int] = {}
        self.crossed = StorageRecords()  # of the site where it was sent (None: not known)
        self.shared_on_purpose = StorageRecords()  # of True
        #: In a child process: storages received from another process, and where (GML202 on write).
        self.in_child = False
        self.received = StorageRecords()  # of the site where it was received (None: not known)
        self.next_detach_kind: str | None = None
        self.state_dict_depth = 0
        self.optimizer_depth = 0
        #: Per thread, how deep inside torch's own writes (unpickling's `set_`, `load_state_dict`'s copies) it is:
        #: they make no alias stale. Per thread, because a queue's feeder thread pickles while the program writes.
        self._machinery = threading.local()
        #: Optimizer steps taken, and the steps in which each `torch.cuda.empty_cache()` site ran (GML406).
        self.steps = 0
        self.empty_cache_steps: dict[Site | None, set[int]] = {}
        self._registrations = 0
        self.saved = SavedTensors()

    @property
    def machinery_depth(self) -> int:
        return getattr(self._machinery, "depth", 0)

    @machinery_depth.setter
    def machinery_depth(self, depth: int) -> None:
        self._machinery.depth = depth

    # -- the dispatch hook's two halves -------------------------------------------------------------------

    def before(self, func, args, kwargs):
        """What `after` needs to know of this op, or None when it needs nothing. The common case (an op that
        neither writes nor makes a view nor saves for backward) costs a few attribute and dictionary lookups."""
        self.ops += 1
        if self.ops >= self._next_check and self._limit_reached():
            return None
        saved = self.saved
        if saved.fresh:
            saved.read_fresh()
        backward = _in_backward() is not None
        if backward and saved.records:
            saved.backward_started()
        info = _OP_INFO.get(id(func)) or op_info(func)
        kind = info.kind
        targets = None
        if kind == WRITE:
            targets = _written(info, args, kwargs)
            if not (backward or self.optimizer_depth or self.machinery_depth) and targets:
                self._check_overlaps(info, targets, args, kwargs)
        elif kind == VIEW and backward and not self.sites.is_user_caller(2):
            # Autograd's own views and detaches (AccumulateGrad's `.grad`, a view per parameter and step): no alias
            # the program made. A user's backward hook calls its ops itself, so its views are recorded.
            kind = OTHER
        if self.pending or self.data_writes or self.watched:
            self._check_reads(info, args, kwargs)
        saving = info.name not in saved.saves_nothing and _grad_enabled() and _needs_grad(args)
        return None if kind == OTHER and not saving else (kind, info, saving, targets)

    def after(self, step, args, kwargs, out) -> None:
        kind, info, saving, targets = step
        if kind == VIEW:
            self._register_views(info, args, out)
        elif targets:
            self._write_targets(info, targets)
        if saving:
            self.saved.op_returned(out, info.name, self.sites.user_site())

    def _limit_reached(self) -> bool:
        """--max-ops exactly; --max-seconds and the end of the parent's sample (in a child) every 256 operators."""
        ops = self.ops
        self._next_check = ops + 256 if self.max_ops is None else min(ops + 256, self.max_ops + 1)
        if self.max_ops is not None and ops > self.max_ops:
            self.stop("--max-ops")
        elif self.deadline is not None and time.monotonic() > self.deadline:
            self.stop("--max-seconds")
        elif self.sample_over is not None and self.in_child and self.sample_over.exists():
            self.stop("--trace-steps")  # the parent's sample ended: a worker stops too (settled at its next put)
        return not self.active

    def stop(self, option: str) -> None:
        """Sampling limit reached: the program goes on untraced."""
        self.active = False
        self.stopped_by = option

    def on_backward(self) -> None:
        """A backward starts: the end of the sample when N steps are done (the module docstring)."""
        done = self.steps if self.optimizer_made else self.backward_calls
        self.backward_calls += 1
        if self.active and self.max_steps is not None and done >= self.max_steps:
            self.stop("--trace-steps")
        self.settle()

    def on_step(self) -> None:
        self.optimizer_depth = 0
        self.steps += 1
        self.settle()

    def settle(self) -> None:
        """Outside the dispatch hook: once tracing has stopped, release the dispatch mode and the records."""
        if not self.active and self.on_stop is not None:
            on_stop, self.on_stop = self.on_stop, None
            on_stop()
            self.aliases, self.by_id, self.pending = {}, {}, {}
            self.data_writes, self.watched, self.numpy_wraps = StorageRecords(), {}, {}
            self.saved = SavedTensors()

    def finish(self) -> None:
        """The run is over: judge what needs the whole run (once)."""
        empty_cache_steps, self.empty_cache_steps = self.empty_cache_steps, {}
        for site, steps in empty_cache_steps.items():
            first = min(steps)
            # Every step from the first call on (and at least 3): a per-step habit, not a phase boundary.
            if len(steps) >= _EVERY_STEP_MINIMUM and len(steps) >= self.steps - first:
                self.log.add(
                    Finding(
                        CODES["empty-cache"],
                        f"`torch.cuda.empty_cache()` ran in each of {len(steps)} optimizer steps: it frees no memory "
                        "that tensors hold, only the allocator's cache, so the next step allocates the same blocks "
                        "again with cudaMalloc (synchronising the GPU) and the peak does not change",
                        site,
                    )
                )

    def on_empty_cache(self) -> None:
        self.empty_cache_steps.setdefault(self.sites.user_site(), set()).add(self.steps)

    def fail(self, error: BaseException) -> None:
        """The tracer broke: stop tracing, say so once, and never disturb the program."""
        self.active = False
        self.failed = True
        self._warn_once(f"tracing stopped after an internal error ({error!r}); the program continues untraced")

    # -- views ---------------------------------------------------------------------------------------------

    def _register_views(self, info, args, out) -> None:
        source = args[0] if args else None
        if not isinstance(source, Tensor):
            return
        if info.name == "aten::detach":
            if self.next_detach_kind == "data":
                return  # `.data` makes its own tensor after this op returns: on_data_taken registers that one
            kind = "state_dict" if self.state_dict_depth else "detach"
        else:
            kind = "view"
        try:
            storage = _storage_id(source)
        except RuntimeError:  # sparse, meta or otherwise storage-less tensors
            return
        site = self.sites.user_site()
        aliases = self.aliases.get(storage)
        if aliases is None:
            aliases = self.aliases[storage] = []
        elif len(aliases) >= _PRUNE_AT:
            aliases[:] = [alias for alias in aliases if alias.ref() is not None]
        parent = id(source)
        for tensor in out if isinstance(out, (list, tuple)) else (out,):
            if isinstance(tensor, Tensor):
                alias = Alias(weakref.ref(tensor), kind, site, parent)
                aliases.append(alias)
                self.by_id[id(tensor)] = alias
        self._registrations += 1
        if self._registrations % _SWEEP_EVERY == 0:
            self._sweep()

    def _sweep(self) -> None:
        """Forget dead tensors, so memory stays bounded by the live ones."""
        live = {}
        for storage, aliases in self.aliases.items():
            kept = [alias for alias in aliases if alias.ref() is not None]
            if kept:
                live[storage] = kept
        self.aliases = live
        self.by_id = {key: alias for key, alias in self.by_id.items() if alias.ref() is not None}
        self.pending = {key: pending for key, pending in self.pending.items() if pending.alias.ref() is not None}
        self.watched = {key: wrap for key, wrap in self.watched.items() if wrap.tensor() is not None}

    # -- writes --------------------------------------------------------------------------------------------

    # -- overlapping memory (before the op) ----------------------------------------------------------------

    def _check_overlaps(self, info, targets: list, args, kwargs) -> None:
        by_id = self.by_id
        for target in targets:
            # A dense tensor made by no recorded view repeats no element, itself or through what it views.
            if id(target) in by_id or target.layout != _STRIDED or not target.is_contiguous():
                self._check_shared_elements(info, target)
        if not info.read_arguments:
            return  # `relu_`, `add_(1)`: nothing else to overlap
        storages: dict[int, list] = {}
        for target in targets:
            try:
                storages.setdefault(_storage_id(target), []).append(target)
            except RuntimeError:
                continue
        for name, value in _read_arguments(info, args, kwargs):
            try:
                written = storages.get(_storage_id(value))
            except RuntimeError:
                continue
            for target in written or ():
                if info.elementwise and _same_layout(target, value):
                    continue  # each element is read before it is written: `x.add_(x)`, `x.copy_(x)`
                if _shares_memory(target, value):
                    self.log.add(
                        Finding(
                            CODES["overlapping-write"],
                            f"`{_short(info.name)}` writes memory that its input `{name}` also occupies: the op "
                            "reads elements it has already overwritten, so the result depends on the order in which "
                            "the kernel visits them",
                            self.sites.user_site(),
                        )
                    )
                    return

    def _check_shared_elements(self, info, target) -> None:
        """The target, or a view it was made from, has elements that are one memory location."""
        expanded, made_at = None, None
        if _repeats_elements(target):
            expanded = target
            alias = self.by_id.get(id(target))
            made_at = alias.site if alias is not None and alias.ref() is target else None
        else:
            alias = self.by_id.get(id(target))
            if alias is None or alias.ref() is not target:
                return
            for _ in range(_ANCESTRY_LIMIT):
                parent = self.by_id.get(alias.parent)
                tensor = parent.ref() if parent is not None else None
                if tensor is None or id(tensor) != alias.parent:
                    return
                if _repeats_elements(tensor):
                    expanded, made_at = tensor, parent.site
                    break
                alias = parent
            else:
                return
        through = "a tensor" if expanded is target else "a view of a tensor"
        self.log.add(
            Finding(
                CODES["expanded-write"],
                f"in-place `{_short(info.name)}` writes {through} whose elements share memory (a stride of 0, as "
                "`expand` and `broadcast_to` make): each write lands in every element that shares its location, "
                "and in the tensor it was expanded from",
                self.sites.user_site(),
                [("expanded", made_at)] if made_at is not None else [],
            )
        )

    def _write_targets(self, info, targets: list) -> None:
        """Each written tensor that some record concerns (most of an optimizer's 161 parameters have none)."""
        records, aliases, by_id = self.saved.records, self.aliases, self.by_id
        programs = not self.machinery_depth  # torch's own writes are looked at for saved tensors only
        others = programs and bool(self.numpy_wraps or self.crossed or self.received)
        for target in targets:
            try:
                storage = _storage_id(target)
            except RuntimeError:
                continue
            if storage in records or (programs and (others or storage in aliases or id(target) in by_id)):
                self._write_target(info, target, storage)

    def _write_target(self, info, target, storage: int) -> None:
        site = None
        if storage in self.saved.records and not self._made_by_data(target):
            # Even torch's own writes (load_state_dict's) count here: autograd's version check will refuse them.
            site = self._saved_overwritten(info, self.saved.overwritten(storage, target._version))
        if self.machinery_depth:
            return
        if self.numpy_wraps:
            address = target.untyped_storage().data_ptr()
            self.write_epoch[address] = self.write_epoch.get(address, 0) + 1
        aliases = self.aliases.get(storage)
        if aliases:
            site = self._stale_aliases(info, target, storage, aliases)
        if self.crossed:
            crossed = self.crossed.live(storage, False)
            if crossed is not False and not self.shared_on_purpose.live(storage, False):
                site = site or self.sites.user_site()
                self.log.add(
                    Finding(
                        CODES["process-boundary"],
                        f"in-place `{_short(info.name)}` wrote a tensor after it was sent to another process: the "
                        "receiver shares this memory, so it sees the write (or races with it)",
                        site,
                        [("sent to another process", crossed)] if crossed else [],
                    )
                )
        if self.received and not self.optimizer_depth:
            received = self.received.live(storage, False)
            if received is not False:
                site = site or self.sites.user_site()
                self.log.add(
                    Finding(
                        CODES["receiver-write"],
                        f"in-place `{_short(info.name)}` in a child process wrote a tensor its parent sent: the "
                        "parent shares this memory and sees the write",
                        site,
                        [("received", received)] if received else [],
                    )
                )
        if not self.by_id:
            return
        own = self.by_id.get(id(target))
        if own is not None and own.kind == "data" and own.ref() is target:
            site = site or self.sites.user_site()
            self.data_writes.remember(target, DataWrite(_short(info.name), site, own.site))

    def _saved_overwritten(self, info, overwritten) -> Site | None:
        if not overwritten:
            return None
        site = self.sites.user_site()
        for saved in overwritten:
            saver = _short(saved.op)
            self.log.add(
                Finding(
                    CODES["saved-write"],
                    f"in-place `{_short(info.name)}` overwrote a tensor that `{saver}` saved for its backward, while "
                    'that graph is alive: backward will fail ("one of the variables needed for gradient computation '
                    'has been modified by an inplace operation")',
                    site,
                    [(f"saved by `{saver}` for its backward", saved.site)],
                )
            )
        return site

    def _made_by_data(self, tensor) -> bool:
        """A `.data` alias, or a view of one: its version counter is its own, so no saved tensor sees its writes."""
        alias = self.by_id.get(id(tensor))
        if alias is None or alias.ref() is not tensor:
            return False
        for _ in range(_ANCESTRY_LIMIT):
            if alias.kind == "data":
                return True
            alias = self.by_id.get(alias.parent)
            if alias is None or alias.ref() is None:
                return False
        return False

    def _stale_aliases(self, info, target, storage: int, aliases: list[Alias]) -> Site | None:
        site = None
        live = []
        for alias in aliases:
            other = alias.ref()
            if other is None:
                continue  # dead: dropped from the list here, so lists stay as short as the live aliases
            live.append(alias)
            if other is target:
                continue
            if self.optimizer_depth and alias.kind not in SNAPSHOT_KINDS:
                continue  # optimizer updates are meant to show through views of the parameters
            if self._descends(target, other) or not _overlap(target, other):
                continue  # writing through a view of the alias is how one updates it on purpose
            if site is None:
                site = self.sites.user_site()
            if alias.site == site:
                continue  # a temporary of the same statement: `x[0] = 5`, `deepcopy`'s `new_empty` + `copy_`
            self.pending[id(other)] = PendingRead(alias, _short(info.name), site)
        if live:
            self.aliases[storage] = live
        else:
            del self.aliases[storage]
        return site

    def _descends(self, tensor, ancestor) -> bool:
        target = id(ancestor)
        alias = self.by_id.get(id(tensor))
        for _ in range(_ANCESTRY_LIMIT):
            if alias is None or alias.ref() is None:
                return False
            if alias.parent == target:
                return True
            alias = self.by_id.get(alias.parent)
        return False

    # -- reads ---------------------------------------------------------------------------------------------

    def _check_reads(self, info, args, kwargs) -> None:
        for value in args:
            if isinstance(value, Tensor):
                self._read(info, value, args)
            elif isinstance(value, (list, tuple)):
                for item in value:
                    if isinstance(item, Tensor):
                        self._read(info, item, args)
        for value in kwargs.values():
            if isinstance(value, Tensor):
                self._read(info, value, args)

    def _read(self, info, tensor, args) -> None:
        key = id(tensor)
        pending = self.pending.get(key)
        if pending is not None:
            del self.pending[key]
            if pending.alias.ref() is tensor and not (info.overwrites and args[0] is tensor):
                self._confirm_stale_read(pending)
        if self.watched:
            wrap = self.watched.get(key)
            if wrap is not None and wrap.tensor() is tensor:
                self._check_numpy_read(key, tensor, wrap)
        if self.data_writes:
            try:
                storage = _storage_id(tensor)
            except RuntimeError:
                return
            write = self.data_writes.live(storage)
            self.data_writes.pop(storage, None)
            if write is not None and _in_backward() is not None:
                self.log.add(
                    Finding(
                        CODES["data-write"],
                        f"`{write.op}` through `.data` changed a tensor that autograd saved in the forward pass; "
                        "`.data` writes do not bump the version counter, so backward silently used the new "
                        "values and the gradients are wrong",
                        write.write_site,
                        [(".data taken", write.alias_site), ("read by backward", self.sites.user_site())],
                    )
                )

    def _confirm_stale_read(self, pending: PendingRead) -> None:
        alias = pending.alias
        read_site = self.sites.user_site()
        related = [(f"{_KIND_WORDS[alias.kind]} made", alias.site), ("read", read_site)]
        if alias.kind == "state_dict":
            finding = Finding(
                CODES["state-dict"],
                f"`{pending.op}` overwrote parameters that a `state_dict()` kept as a snapshot still shares; "
                "the snapshot was read afterwards and holds the new values, not the saved ones",
                pending.write_site,
                related,
            )
        else:
            finding = Finding(
                CODES["alias-write"],
                f"in-place `{pending.op}` wrote memory that a {_KIND_WORDS[alias.kind]} made elsewhere shares; "
                "that alias was read afterwards and saw the new values, not the ones it was taken from",
                pending.write_site,
                related,
            )
        (self.log if alias.kind in SNAPSHOT_KINDS else self.evidence).add(finding)

    # -- events the Python-level hooks report (patches.py) --------------------------------------------------

    def on_data_taken(self, source, result) -> None:
        storage = _storage_id(source)
        alias = Alias(weakref.ref(result), "data", self.sites.user_site(), id(source))
        self.aliases.setdefault(storage, []).append(alias)
        self.by_id[id(result)] = alias

    def on_data_assigned(self, tensor) -> None:
        """`x.data = y` swaps x's memory without a dispatch and without a version bump."""
        site = self.sites.user_site()
        self.data_writes.remember(tensor, DataWrite("x.data = ...", site, site))

    def on_serialized(self, tensors) -> None:
        for tensor in tensors:
            pending = self.pending.pop(id(tensor), None)
            if pending is not None and pending.alias.ref() is tensor:
                self._confirm_stale_read(pending)

    def on_received(self, tensor) -> None:
        if self.in_child and isinstance(tensor, Tensor) and self.received.live(_storage_id(tensor)) is None:
            self.received.remember(tensor, self.sites.user_site())

    def on_crossing(self, tensors, site: Site | None) -> None:
        for tensor in tensors:
            if self.crossed.live(_storage_id(tensor)) is None:  # keep the first known site
                self.crossed.remember(tensor, site)

    def on_shared_on_purpose(self, tensor) -> None:
        self.shared_on_purpose.remember(tensor, True)

    # -- numpy ---------------------------------------------------------------------------------------------

    def on_from_numpy(self, array, tensor) -> None:
        # Each from_numpy call makes a new StorageImpl around the same buffer: key by the buffer's address.
        storage = tensor.untyped_storage().data_ptr()
        wraps = [w for w in self.numpy_wraps.get(storage, ()) if w.tensor() is not None]
        wrap = NumpyWrap(
            weakref.ref(tensor),
            weakref.ref(array),
            self.sites.user_site(),
            _fingerprint(array),
            self.write_epoch.get(storage, 0),
        )
        for older in wraps:
            self.watched[id(older.tensor())] = older
        wraps.append(wrap)
        self.numpy_wraps[storage] = wraps

    def _check_numpy_read(self, key, tensor, wrap: NumpyWrap) -> None:
        array = wrap.array()
        storage = tensor.untyped_storage().data_ptr()
        if array is None or self.write_epoch.get(storage, 0) != wrap.epoch:
            self.watched.pop(key, None)  # torch wrote it itself: visible, not a numpy-side surprise
            return
        if _fingerprint(array) == wrap.fingerprint:
            return
        del self.watched[key]
        newest = self.numpy_wraps[storage][-1]
        self.log.add(
            Finding(
                CODES["numpy"],
                "a tensor made by `torch.from_numpy` was read after its numpy array was rewritten: it shares the "
                "array's memory, so it holds the new data, although the same array was wrapped again later as if "
                "each wrap were a separate copy",
                self.sites.user_site(),
                [("tensor made", wrap.site), ("same array wrapped again", newest.site)],
            )
        )


_KIND_WORDS = {
    "detach": "`.detach()` alias",
    "data": "`.data` alias",
    "state_dict": "`state_dict()` tensor",
    "view": "view",
}


def _short(name: str) -> str:
    return name.split("::", 1)[-1]


def _written(info, args, kwargs) -> list:
    """The tensors an op writes (list arguments flattened)."""
    if info.only_when is not None:
        index, name = info.only_when
        if not (args[index] if index < len(args) else kwargs.get(name)):
            return []
    found = []
    for index in info.written_positions:
        if index < len(args):
            _add_tensors(found, args[index])
    if kwargs:
        for name in info.written_names:
            _add_tensors(found, kwargs.get(name))
    return found


def _read_arguments(info, args, kwargs) -> list:
    """(name, tensor) for the tensor arguments an op reads and does not write."""
    found = []
    for index, name in info.read_arguments:
        value = args[index] if index < len(args) else kwargs.get(name)
        if isinstance(value, Tensor):
            found.append((name, value))
        elif isinstance(value, (list, tuple)):
            found.extend((name, item) for item in value if isinstance(item, Tensor))
    return found


def _add_tensors(found: list, value) -> None:
    if isinstance(value, Tensor):
        found.append(value)
    elif isinstance(value, (list, tuple)):
        found.extend([item for item in value if isinstance(item, Tensor)])


#: Exact element checks enumerate the offsets of tensors up to this size; larger ones are judged by the bounds
#: alone where those decide, and otherwise not reported.
_EXACT_LIMIT = 1 << 20
_CHANNELS_LAST = torch.channels_last
_STRIDED = torch.strided


def _repeats_elements(tensor) -> bool:
    """Whether two elements of `tensor` are one memory location."""
    if tensor.layout != torch.strided or tensor.is_contiguous() or tensor.is_contiguous(memory_format=_CHANNELS_LAST):
        return False
    reach = 0  # the largest offset the smaller strides reach
    for stride, size in sorted((abs(st), n) for n, st in zip(tensor.shape, tensor.stride()) if n > 1):
        if stride == 0:
            return True
        if stride <= reach:
            return tensor.numel() <= _EXACT_LIMIT and _offsets(tensor).unique().numel() < tensor.numel()
        reach += (size - 1) * stride
    return False


def _same_layout(a, b) -> bool:
    return (
        a.dtype == b.dtype
        and a.storage_offset() == b.storage_offset()
        and a.shape == b.shape
        and a.stride() == b.stride()
    )


def _shares_memory(a, b) -> bool:
    """Whether some element of `a` and some element of `b` (same storage) are one memory location."""
    if a.layout != torch.strided or b.layout != torch.strided or not _overlap(a, b):
        return False
    if a.is_contiguous() and b.is_contiguous():
        return True  # dense ranges that intersect
    if a.element_size() != b.element_size() or max(a.numel(), b.numel()) > _EXACT_LIMIT:
        return False  # not decided by the bounds alone: not reported
    return bool(torch.isin(_offsets(a), _offsets(b)).any())


def _offsets(tensor):
    """The storage offset (in elements) of each element of a strided tensor, computed on the CPU."""
    offsets = torch.tensor([tensor.storage_offset()], dtype=torch.long)
    for size, stride in zip(tensor.shape, tensor.stride()):
        offsets = (offsets.unsqueeze(-1) + torch.arange(size, dtype=torch.long) * stride).flatten()
    return offsets


def _overlap(a, b) -> bool:
    """Whether the element ranges two tensors span in their common storage intersect (a superset test)."""
    return _span(a) & _span(b)


class _Span:
    __slots__ = ("high", "low")

    def __init__(self, low: int, high: int) -> None:
        self.low, self.high = low, high

    def __and__(self, other: _Span) -> bool:
        return self.low < other.high and other.low < self.high


def _span(tensor) -> _Span:
    try:
        return _exact_span(tensor)
    except (RuntimeError, ValueError):  # a tensor subclass that refuses metadata queries: assume it all
        return _Span(0, 1 << 62)


def _exact_span(tensor) -> _Span:
    size = tensor.element_size()
    low = tensor.storage_offset()
    if tensor.numel() == 0:
        return _Span(low * size, low * size)
    high = low + sum((n - 1) * stride for n, stride in zip(tensor.shape, tensor.stride()))
    return _Span(low * size, (high + 1) * size)


def _fingerprint(array) -> int:
    return hash(array.tobytes())


class StorageMode(TorchDispatchMode):
    """The dispatch hook. Inner work is guarded: a tracer failure stops tracing; the program never sees it."""

    def __init__(self, tracker: Tracker) -> None:
        super().__init__()
        self.tracker = tracker

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # The default wraps the hook in `torch._disable_dynamo`, which imports torch._dynamo on the first op:
        # a 1-3 s stall that changed the outcome of a multiprocessing race (torch-runtime-facts.md §0.6).
        return False

    @classmethod
    def ignore_compile_internals(cls) -> bool:
        # Compiled regions run as compiled, not eagerly under the mode: the numbers stay those of the program.
        return True

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        tracker = self.tracker
        if types or not tracker.active:
            return func(*args, **kwargs)
        try:
            step = tracker.before(func, args, kwargs)
        except Exception as error:
            tracker.fail(error)
            step = None
        out = func(*args, **kwargs)
        if step is not None:
            try:
                tracker.after(step, args, kwargs, out)
            except Exception as error:
                tracker.fail(error)
        return out
