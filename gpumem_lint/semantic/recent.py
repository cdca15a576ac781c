"""A least-recently-used cache bounded by the size of what it holds, not by a count: one module
of a project can be a thousand times another."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

Value = TypeVar("Value")


class Recent(Generic[Value]):
    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._entries: OrderedDict[Hashable, tuple[Value, int]] = OrderedDict()
        self._held = 0

    def get(self, key: Hashable) -> Value | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        self._entries.move_to_end(key)
        return entry[0]

    def put(self, key: Hashable, value: Value, size: int) -> None:
        """Keep `value` (of `size`), dropping the least recently used to stay within the budget;
        a value larger than the whole budget is not kept."""
        if size > self.budget or key in self._entries:
            return
        self._entries[key] = (value, size)
        self._held += size
        while self._held > self.budget:
            _, (_, dropped) = self._entries.popitem(last=False)
            self._held -= dropped
