"""Tensors autograd saved for backward, and the in-place writes that overwrite them (GML109) (torch).

Not `torch.autograd.graph.saved_tensors_hooks`: a saved tensor packed by a hook is never version-checked, so
under the tracer a program that fails with "one of the variables needed for gradient computation has been
modified by an inplace operation" would silently compute wrong gradients instead. The tracker reads what the
graph saved from each new node instead (`grad_fn._saved_*`), once the op that made it has returned, before the
next op runs: the memory and the version of each saved tensor. No tensor is kept, so no record keeps memory alive.

A record lives while its node lives (a token in `node.metadata` tells) and until a backward starts (it consumes
the graph). The dispatch mode sees a write before autograd bumps the target's version counter: a write whose
target, on the same memory, is still at a saved tensor's version is the one autograd's check will refuse (the
caller rules out tensors with a counter of their own on that memory, `.data` aliases). It is reported at the
writing line, with the line of the op that saved it.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import torch

from gpumem_lint.trace.sites import Site

Tensor = torch.Tensor
_STRIDED = torch.strided
_storage_id = getattr(torch._C, "_storage_id", None) or (lambda t: t.untyped_storage()._cdata)
_TOKEN_KEY = "gpumem_lint.trace"
#: Records of freed nodes are dropped after this many new ones.
_SWEEP_EVERY = 4096


class _NodeAlive:
    """Kept in a node's metadata: it lives exactly as long as the node."""

    __slots__ = ("__weakref__",)


@dataclass(eq=False, slots=True)
class SavedTensor:
    version: int
    op: str  # "aten::relu"
    site: Site | None
    node: weakref.ref  # to the node's token: dead once the node is freed


class SavedTensors:
    def __init__(self) -> None:
        #: storage id -> what was saved in it (a write looks its target's storage up here first).
        self.records: dict[int, list[SavedTensor]] = {}
        #: Outputs of ops that may have saved tensors, read once the op has returned (autograd sets grad_fn then).
        self.fresh: list[tuple[object, str, Site | None]] = []
        #: Ops whose nodes save no tensors (add, sum, views): their outputs need not be read.
        self.saves_nothing: set[str] = set()
        self._recorded = 0

    def op_returned(self, out, op: str, site: Site | None) -> None:
        self.fresh.append((out, op, site))

    def read_fresh(self) -> None:
        fresh, self.fresh = self.fresh, []
        for out, op, site in fresh:
            if isinstance(out, Tensor):
                node = out.grad_fn
                if node is not None:
                    self._read_node(node, op, site)
                continue
            if not isinstance(out, (list, tuple)):
                continue  # a number (`item()`)
            previous = None  # an op's outputs share one node: read it once
            for tensor in out:
                if isinstance(tensor, Tensor):
                    node = tensor.grad_fn
                    if node is not None and node is not previous:
                        self._read_node(node, op, site)
                        previous = node

    def _read_node(self, node, op: str, site: Site | None) -> None:
        names = _NAMES.get(type(node))
        if names is None:
            names = _saved_names(type(node))
        if not names:
            self.saves_nothing.add(op)
            return
        metadata = node.metadata
        if _TOKEN_KEY in metadata:
            return  # a node already read through another of its outputs
        token = metadata[_TOKEN_KEY] = _NodeAlive()
        alive = weakref.ref(token)
        by_storage = self.records
        for tensor in _saved_tensors(node, names):
            try:
                storage = _storage_id(tensor)
            except RuntimeError:  # no storage (meta, functional wrappers): nothing a write could reach
                continue
            record = SavedTensor(tensor._version, op, site, alive)
            records = by_storage.get(storage)
            if records is None:
                by_storage[storage] = [record]
            else:
                records.append(record)
            self._recorded += 1
        if self._recorded >= _SWEEP_EVERY:
            self._sweep()

    def _sweep(self) -> None:
        self._recorded = 0
        live = {}
        for storage, records in self.records.items():
            kept = [record for record in records if record.node() is not None]
            if kept:
                live[storage] = kept
        self.records = live

    def overwritten(self, storage: int, version: int) -> list[SavedTensor]:
        """A write into `storage` through a tensor at `version` is about to bump that version counter: the saved
        tensors it overwrites (each reported once)."""
        records = self.records.get(storage)
        if not records:
            return []
        found, kept = [], []
        for record in records:
            if record.node() is None:
                continue
            (found if record.version == version else kept).append(record)
        if kept:
            self.records[storage] = kept
        else:
            del self.records[storage]
        return found

    def backward_started(self) -> None:
        """A backward consumes the graph: what it saved is released, so later writes cannot break it."""
        self.records.clear()


def _saved_tensors(node, names: tuple[str, ...]) -> list:
    """The tensors a node saved (each unpacked: a new tensor object on the same memory and version counter)."""
    found = []
    for name in names:
        try:
            value = getattr(node, name)
        except RuntimeError:  # already released, or modified by a write the tracer did not see
            continue
        if isinstance(value, Tensor):
            if value.layout == _STRIDED:
                found.append(value)
        elif isinstance(value, (list, tuple)):
            found.extend(tensor for tensor in value if isinstance(tensor, Tensor) and tensor.layout == _STRIDED)
    return found


_NAMES: dict[type, tuple[str, ...]] = {}


def _saved_names(node_type: type) -> tuple[str, ...]:
    """`_saved_self`, `_saved_result`, ...: the attributes with a `_raw_saved_*` twin hold tensors."""
    names = _NAMES.get(node_type)
    if names is None:
        attributes = set(dir(node_type))
        names = _NAMES[node_type] = tuple(
            name for name in sorted(attributes) if name.startswith("_saved_") and "_raw" + name in attributes
        )
    return names
