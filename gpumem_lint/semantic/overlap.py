"""Writes whose source or index overlaps their destination in one storage.

`buf[:-n] = buf[n:]`, `x[1:].add_(x[:-1])`, `torch.mul(x[1:], 2, out=x[:-1])`: the op reads
elements it has already written, so the result depends on the kernel's order. PyTorch refuses
what its overlap check can see ("some elements of the input tensor and the written-to tensor
refer to a single memory location"); a strided case it cannot see runs in the CPU kernel's
order and is undefined on CUDA (docs/facts.md F24). `idx[idx] = v` indexes a tensor by itself.
Only shapes whose overlap the syntax proves are recorded: two slices of one dimension, one the
other moved by an offset smaller than their length (`[:-n]` and `[n:]`, `[0:9]` and `[1:10]`,
`[0:k - 1]` and `[1:k]`: bounds that are sums of names and integers), other dimensions indexed
alike. Mixed into
`ScopeAnalyzer`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

import libcst as cst

from gpumem_lint.semantic.indexing import dimensions
from gpumem_lint.semantic.values import Value


@dataclass(frozen=True, eq=False)
class Overlap:
    node: cst.CSTNode  # the write
    source: cst.CSTNode  # the expression that overlaps it
    how: str  # "shift": a shifted slice of the same memory; "transpose": its own elements reordered;
    # "index": indexed by itself


class OverlapSemantics:
    def _init_overlaps(self) -> None:
        self.overlaps: dict[int, Overlap] = {}

    def _check_overlap(
        self, node: cst.CSTNode, destination: Value, sources: list[tuple[cst.CSTNode, Value]], index: str | None = None
    ) -> None:
        """A write to `destination` (at `index`, for `x[...] = v`) reading `sources`. numpy's own writes
        are left alone: numpy copies an overlapping source first (F52)."""
        for source_node, source in sources:
            for written in destination.handles:
                if written.ndarray:
                    continue
                for read in source.handles:
                    if read.storage is written.storage and _shifted(
                        index or written.index, read.index, self._length(node)
                    ):
                        self.overlaps.setdefault(id(node), Overlap(node, source_node, "shift"))
                    elif read.storage is written.storage and self._transposes_destination(node, source_node):
                        self.overlaps.setdefault(id(node), Overlap(node, source_node, "transpose"))

    def _transposes_destination(self, node: cst.CSTNode, source: cst.CSTNode) -> bool:
        """`x[i] = x[i].transpose(-2, -1)`, `m.copy_(m.t())`, `m.add_(m.T)`: the source is the destination's
        own elements in another order, so the kernel reads elements it has written (measured: PyTorch 2.13
        refuses each)."""
        reordered = _reordered(source)
        destination = _destination(node)
        return reordered is not None and destination is not None and self._code(reordered) == self._code(destination)

    def _length(self, node: cst.CSTNode) -> str | None:
        """`len(x)` for a write into `x[...]`: how a bound may spell the end of its dimension."""
        container = _container(node)
        return f"len({self._code(container)})" if container is not None else None

    def _check_self_index(self, node: cst.Subscript, container: Value, index: list[tuple[cst.CSTNode, Value]]) -> None:
        """`idx[idx] = v`: the tensor indexes itself (the same name, bound to the same memory). A numpy
        array may: numpy computes the index before it writes (measured: `a[a] = b` runs as meant)."""
        container_text = self._code(node.value)
        for index_node, value in index:
            if self._code(index_node) != container_text or not value.tensor or value.ndarray:
                continue
            if any(h.storage is c.storage for h in value.handles for c in container.handles):
                self.overlaps.setdefault(id(node), Overlap(node, index_node, "index"))


def _container(node: cst.CSTNode) -> cst.BaseExpression | None:
    """The tensor a write indexes: `x` of `x[1:] = v`, `x[1:] /= v`, `x[1:].copy_(v)`."""
    if isinstance(node, cst.AugAssign):
        node = node.target
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        node = node.func.value
    return node.value if isinstance(node, cst.Subscript) else None


#: Views of the same elements in another order: a transpose, a permutation of the dimensions.
_REORDERING_METHODS = frozenset({"t", "transpose", "permute", "swapaxes", "swapdims", "movedim"})
_REORDERING_ATTRIBUTES = frozenset({"T", "mT", "H", "mH"})


def _reordered(source: cst.CSTNode) -> cst.BaseExpression | None:
    """The tensor whose elements `source` reorders: `x` of `x.t()`, `x.transpose(0, 1)`, `x.T`."""
    if isinstance(source, cst.Call) and isinstance(source.func, cst.Attribute):
        return source.func.value if source.func.attr.value in _REORDERING_METHODS else None
    if isinstance(source, cst.Attribute) and source.attr.value in _REORDERING_ATTRIBUTES:
        return source.value
    return None


def _destination(node: cst.CSTNode) -> cst.BaseExpression | None:
    """What a write writes: the target of `x[i] = v` and `x += v`, the receiver of `x.copy_(v)`."""
    if isinstance(node, cst.Subscript):
        return node
    if isinstance(node, cst.AugAssign):
        return node.target
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        return node.func.value
    return None


def _shifted(written: str | None, read: str | None, length: str | None = None) -> bool:
    """`x[:-n]` and `x[n:]` of one storage, other dimensions indexed alike: they overlap. `length`:
    the text of the tensor's length (`len(x)`), which a bound may use for the end (`x[:len(x) - 1]`)."""
    if written is None or read is None or written == read:
        return False
    mine, theirs = dimensions(written), dimensions(read)
    if mine is None or theirs is None or len(mine) != len(theirs):
        return False
    differing = [(a, b) for a, b in zip(mine, theirs) if a != b]
    if len(differing) != 1:
        return False
    ((a, b),) = differing
    return _shift_pair(a, b, length) or _shift_pair(b, a, length)


def _shift_pair(head: str, tail: str, length: str | None = None) -> bool:
    """Two slices of one dimension, one the other moved by a nonzero offset, that share elements:
    `:-n` and `n:`, `0:9` and `1:10`, `0:(k - 1)` and `1:k`, `:, :-d` and `:, d:` (with one step)."""
    first, second = _slice(head, length), _slice(tail, length)
    if first is None or second is None or first[2] != second[2]:
        return False
    (low, high, step), (other_low, other_high, _) = first, second
    offset = _minus(other_low, low)
    if not offset or _minus(other_high, high) != offset:
        return False
    constant = offset.keys() <= {""}
    if step and not (constant and step.isdigit() and offset[""] % int(step) == 0):
        return False
    length = _minus(high, low)
    if constant and length.keys() <= {""}:
        return abs(offset[""]) < length.get("", 0)  # `0:2` and `5:7` share nothing
    return True


#: A slice bound as a sum of names times integers, `""` the constant and `_END` the dimension's length.
Linear = dict[str, int]
_END = "_dimension_length_"  # a name no program uses, so that `len(x)` can be written as it


def _slice(part: str, length: str | None = None) -> tuple[Linear, Linear, str] | None:
    """`1:n - 1` -> its start and stop as linear forms, and its step's text (`""` for 1). An open start
    is 0, an open stop the length; a bound written with a leading minus counts from the end."""
    pieces = part.split(":")
    if len(pieces) not in (2, 3):
        return None
    step = pieces[2].strip() if len(pieces) == 3 else ""
    bounds = []
    for text, open_value in ((pieces[0].strip(), {}), (pieces[1].strip(), {_END: 1})):
        value = _linear(text.replace(length, _END) if length else text) if text else open_value
        if value is None:
            return None
        if text.startswith("-"):
            value = _plus(value, {_END: 1})
        bounds.append(value)
    return bounds[0], bounds[1], "" if step == "1" else step


def _linear(text: str) -> Linear | None:
    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError:
        return None
    return _form(tree)


def _form(node: ast.expr) -> Linear | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return {"": node.value} if node.value else {}
    if isinstance(node, ast.Name) and node.id == _END:
        return {_END: 1}
    if isinstance(node, (ast.Name, ast.Attribute)):
        return {ast.unparse(node): 1}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _form(node.operand)
        return None if inner is None else inner if isinstance(node.op, ast.UAdd) else _minus({}, inner)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        left, right = _form(node.left), _form(node.right)
        if left is None or right is None:
            return None
        return _plus(left, right) if isinstance(node.op, ast.Add) else _minus(left, right)
    return None


def _plus(left: Linear, right: Linear) -> Linear:
    total = dict(left)
    for key, value in right.items():
        total[key] = total.get(key, 0) + value
    return {key: value for key, value in total.items() if value}


def _minus(left: Linear, right: Linear) -> Linear:
    return _plus(left, {key: -value for key, value in right.items()})
