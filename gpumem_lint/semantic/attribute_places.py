"""The attribute places under a place (`self.fc` and `self.fc.weight` under `self`), among the keys the
analysis's tables of places have held, so that binding a place anew finds those to forget without
reading every key of the table (a function that binds N names stays linear in N)."""

from __future__ import annotations

from collections.abc import Mapping


class AttributePlaces:
    def __init__(self) -> None:
        self._seen: set[str] = set()
        self._under: dict[str, set[str]] = {}  # place -> every attribute place under it seen so far

    def under(self, place: str, table: Mapping[str, object]) -> list[str]:
        """The keys of `table` that are attribute places under `place`."""
        new = table.keys() - self._seen
        if new:
            self._seen |= new
            for key in new:
                head = key
                while "." in head:
                    head = head.rpartition(".")[0]
                    self._under.setdefault(head, set()).add(key)
        found = self._under.get(place)
        return [key for key in found if key in table] if found else []
