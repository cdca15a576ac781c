"""Tensors autograd saved for backward, and the in-place writes that overwrite them (GML109) (torch).

Not `torch.autograd.graph.saved_tensors_hooks`: a saved tensor packed by a hook is never version-checked, so
under the tracer a program that fails with "one of the variables needed for gradient computation has been
modified by an inplace operation" would silently compute wrong gradients instead. The tracker reads what the
graph saved from each new node instead (`grad_fn._saved_*`), once the op that made it has returned, before the
next op runs, and keeps a detached alias of each: it shares the saved tensor's memory and version counter but no
graph, so the records never keep a node (and the activations behind it) alive.

A saved tensor stays recorded while its node lives (a token in `node.metadata` tells) and until a backward
starts (it consumes the graph). A write after which a recorded tensor's version is past the saved one is the
write that autograd's check will refuse: reported at the writing line, with the line of the op that saved it.
Autograd bumps the version only after the op has left the dispatch mode, so a write into saved memory is judged
before the next op (or at the end of the run).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import torch

from gpumem_lint.trace.sites import Site

_storage_id = getattr(torch._C, "_storage_id", None) or (lambda t: t.untyped_storage()._cdata)
_TOKEN_KEY = "gpumem_lint.trace"


class _NodeAlive:
    """Kept in a node's metadata: it lives exactly as long as the node."""

    __slots__ = ("__weakref__",)


@dataclass(eq=False)
class SavedTensor:
    tensor: torch.Tensor | None  # shares the saved tensor's version counter; None once its node is gone
    version: int
    op: str
    site: Site | None


@dataclass(frozen=True)
class Write:
    """A write into saved memory, judged once autograd has bumped the versions."""

    storage: int
    op: str
    site: Site | None
    #: The records of that memory alive at the write, each with its alias (kept even if the graph dies meanwhile).
    saved: tuple[tuple[SavedTensor, torch.Tensor], ...]


class SavedTensors:
    def __init__(self) -> None:
        #: storage id -> what was saved in it.
        self._by_storage: dict[int, list[SavedTensor]] = {}
        #: The weak references whose callbacks forget a node's records when the node is freed.
        self._nodes: dict[int, weakref.ref] = {}
        #: Outputs of ops that may have saved tensors, read once the op has returned (autograd sets grad_fn then).
        self.fresh: list[tuple[object, str, Site | None]] = []
        #: Writes into saved memory whose version bumps are still to be read.
        self.writes: list[Write] = []

    def __bool__(self) -> bool:
        return bool(self._by_storage)

    def op_returned(self, out, op: str, site: Site | None) -> None:
        self.fresh.append((out, op, site))

    def read_fresh(self) -> None:
        fresh, self.fresh = self.fresh, []
        with _views_share_versions():
            for out, op, site in fresh:
                for tensor in out if isinstance(out, (list, tuple)) else (out,):
                    if isinstance(tensor, torch.Tensor):
                        self._read_node(tensor.grad_fn, op, site)

    def _read_node(self, node, op: str, site: Site | None) -> None:
        if node is None or _TOKEN_KEY in node.metadata:
            return  # no graph, or a node already read through another of its outputs
        token = node.metadata[_TOKEN_KEY] = _NodeAlive()
        records = []
        for tensor in _saved_tensors(node):
            try:
                storage = _storage_id(tensor)
            except RuntimeError:  # no storage (meta, functional wrappers): nothing a write could reach
                continue
            record = SavedTensor(tensor.detach(), tensor._version, op, site)
            records.append(record)
            self._by_storage.setdefault(storage, []).append(record)
        if not records:
            return
        self._nodes[id(token)] = weakref.ref(token, lambda _, key=id(token): self._node_freed(key, records))

    def _node_freed(self, key: int, records: list[SavedTensor]) -> None:
        self._nodes.pop(key, None)
        for record in records:
            record.tensor = None  # the graph's memory is freed with the graph, never later

    def holds(self, storage: int) -> bool:
        return storage in self._by_storage

    def written(self, storage: int, op: str, site: Site | None) -> None:
        alive = tuple((r, r.tensor) for r in self._by_storage[storage] if r.tensor is not None)
        self.writes.append(Write(storage, op, site, alive))

    def overwrites(self) -> list[tuple[Write, SavedTensor]]:
        """Each write since the last call with each saved tensor it moved past its saved version (each once)."""
        writes, self.writes = self.writes, []
        found = []
        for write in writes:
            overwritten = [record for record, alias in write.saved if alias._version > record.version]
            found.extend((write, record) for record in overwritten)
            records = self._by_storage.pop(write.storage, ())
            kept = [r for r in records if r.tensor is not None and not any(r is o for o in overwritten)]
            if kept:
                self._by_storage[write.storage] = kept
        return found

    def backward_started(self) -> None:
        """A backward consumes the graph: what it saved is released, so later writes cannot break it (and the
        records must not keep that memory alive either)."""
        for records in self._by_storage.values():
            for record in records:
                record.tensor = None
        self._by_storage.clear()
        self._nodes.clear()


def _views_share_versions():
    """Inside the dispatch mode ADInplaceOrView is excluded, and `detach()` there makes a tensor with a version
    counter of its own: let the key run again, so the alias counts the saved tensor's writes."""
    excluded = torch._C._dispatch_tls_local_exclude_set().remove(torch._C.DispatchKey.ADInplaceOrView)
    return torch._C._ForceDispatchKeyGuard(torch._C._dispatch_tls_local_include_set(), excluded)


def _saved_tensors(node):
    """The tensors a node saved (each unpacked: a new tensor object on the same memory and version counter)."""
    for name in _saved_names(type(node)):
        try:
            value = getattr(node, name)
        except RuntimeError:  # already released, or modified by a write the tracer did not see
            continue
        for tensor in value if isinstance(value, (list, tuple)) else (value,):
            if isinstance(tensor, torch.Tensor) and tensor.layout == torch.strided:
                yield tensor


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
