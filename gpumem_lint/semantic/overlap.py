"""Writes whose source or index overlaps their destination in one storage.

`buf[:-n] = buf[n:]`, `x[1:].add_(x[:-1])`, `torch.mul(x[1:], 2, out=x[:-1])`: the op reads
elements it has already written, so the result depends on the kernel's order. PyTorch refuses
what its overlap check can see ("some elements of the input tensor and the written-to tensor
refer to a single memory location"); a strided case it cannot see runs in the CPU kernel's
order and is undefined on CUDA (docs/facts.md F24). `idx[idx] = v` indexes a tensor by itself.
Only shapes whose overlap the syntax proves are recorded: two slices of one dimension shifted
by the same amount (`[:-n]` and `[n:]`), other dimensions indexed alike. Mixed into
`ScopeAnalyzer`.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from gpumem_lint.semantic.indexing import dimensions
from gpumem_lint.semantic.values import Value


@dataclass(frozen=True, eq=False)
class Overlap:
    node: cst.CSTNode  # the write
    source: cst.CSTNode  # the expression that overlaps it
    how: str  # "shift": a shifted slice of the same memory; "index": indexed by itself


class OverlapSemantics:
    def _init_overlaps(self) -> None:
        self.overlaps: dict[int, Overlap] = {}

    def _check_overlap(
        self, node: cst.CSTNode, destination: Value, sources: list[tuple[cst.CSTNode, Value]], index: str | None = None
    ) -> None:
        """A write to `destination` (at `index`, for `x[...] = v`) reading `sources`."""
        for source_node, source in sources:
            for written in destination.handles:
                for read in source.handles:
                    if read.storage is written.storage and _shifted(index or written.index, read.index):
                        self.overlaps.setdefault(id(node), Overlap(node, source_node, "shift"))

    def _check_self_index(self, node: cst.Subscript, container: Value, index: list[tuple[cst.CSTNode, Value]]) -> None:
        """`idx[idx] = v`: the tensor indexes itself (the same name, bound to the same memory)."""
        container_text = self._code(node.value)
        for index_node, value in index:
            if self._code(index_node) != container_text or not (value.tensor or value.ndarray):
                continue
            if any(h.storage is c.storage for h in value.handles for c in container.handles):
                self.overlaps.setdefault(id(node), Overlap(node, index_node, "index"))


def _shifted(written: str | None, read: str | None) -> bool:
    """`x[:-n]` and `x[n:]` of one storage, other dimensions indexed alike: they overlap."""
    if written is None or read is None or written == read:
        return False
    mine, theirs = dimensions(written), dimensions(read)
    if mine is None or theirs is None or len(mine) != len(theirs):
        return False
    differing = [(a, b) for a, b in zip(mine, theirs) if a != b]
    if len(differing) != 1:
        return False
    ((a, b),) = differing
    return _shift_pair(a, b) or _shift_pair(b, a)


def _shift_pair(head: str, tail: str) -> bool:
    """`:-n` with `n:` (or `:-1` with `1:`): the same slice of one dimension, moved by n."""
    if not (head.startswith(":-") and tail.endswith(":")) or head.count(":") != 1 or tail.count(":") != 1:
        return False
    return head[2:].strip() == tail[:-1].strip() != ""
