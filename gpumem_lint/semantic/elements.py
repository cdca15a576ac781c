"""Elements of one tensor named by constants: `x[0]` and `x[1]`, or `q, k, v = qkv.split(d)`.

A write through one such element (or into it: `x[1] = 0`) cannot reach another: their memory is
apart, unless the tensor was expanded (its rows then share memory). The handles are kept by
tensor, so that a write finds the elements it cannot reach without visiting every live handle
(one function making N views of a tensor and writing through each stays linear in N).
"""

from __future__ import annotations

from gpumem_lint.semantic.values import AliasKind, Handle, Write

Element = tuple[Handle, str]  # the whole tensor, and the element's number in its first dimension


class Elements:
    def __init__(self) -> None:
        self._of: dict[Handle, set[Handle]] = {}  # by tensor: every handle that is one of its elements
        self._at: dict[Element, set[Handle]] = {}

    def note(self, handle: Handle) -> None:
        """A handle just made."""
        element = _element_of(handle)
        if element is not None:
            self._of.setdefault(element[0], set()).add(handle)
            self._at.setdefault(element, set()).add(handle)

    def seen_by(self, write: Write, live: set[Handle]) -> set[Handle]:
        """The live handles whose memory the write may reach: all but the tensor's other elements."""
        written = _written_element(write)
        others = self._of.get(written[0]) if written is not None else None
        if not others:
            return live
        return (live - others) | (live & self._at.get(written, set()))


def _element_of(handle: Handle) -> Element | None:
    while handle.stored:  # what a container holds is the alias it was given
        handle = handle.base
    if handle.base is None or handle.index is None:
        return None
    return _element(handle.base, handle.index)


def _written_element(write: Write) -> Element | None:
    writer = write.writer
    while writer.stored:
        writer = writer.base
    if write.index is None:
        return None
    if write.index == writer.index:  # through the element itself (or into it at the same index: a part of it)
        return _element_of(writer)
    return _element(writer, write.index)  # `x[1] = 0`


def _element(tensor: Handle, index: str) -> Element | None:
    """`_[3]` (as `flow._index_extent` writes it) or `<3>` (the fourth target unpacking it) of a
    whole, unexpanded tensor or split: its element 3."""
    if tensor.partial or any(h.kind is AliasKind.EXPAND for h in tensor.chain()):
        return None
    number = index[2:-1] if index.startswith("_[") else index[1:-1] if index.startswith("<") else ""
    return (tensor, str(int(number))) if number.isdigit() else None
