"""The lock-in table (`lockin.toml`): events, the calls that cause them, and the variables they lock.

Loaded once per process. `Event.closure` is the event with everything it implies: a first
allocation initialises torch.cuda, creates a context and initialises the driver, so it locks
what each of those locks.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from functools import cache

from gpumem_lint.knowledge import data_text

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

#: Events after which CUDA cannot be used in a forked child (cuInit has run in the parent).
CUDA_INIT = "cuda_driver_init"


@dataclass(frozen=True)
class Event:
    id: str
    title: str
    phrase: str  # "the CUDA driver was initialised"
    implies: tuple[str, ...]
    calls: frozenset[str]
    cuda_argument_calls: frozenset[str]  # count only when the first argument / device_type names CUDA
    calls_with_keyword: dict[str, str]  # count only when called with this keyword argument
    disabled_by: dict[str, str]  # count unless this keyword argument is the literal False
    methods: frozenset[str]
    device_methods: frozenset[str]
    device_keyword: str | None
    literal_device_keywords: frozenset[str]  # on any call, when the value is a literal GPU placement
    modules: frozenset[str]
    unless_env: str | None
    closure: frozenset[str]  # this event and every event it implies, transitively


@dataclass(frozen=True)
class Variable:
    """One row: the variables it covers, what locks them, and what a late write does."""

    names: frozenset[str]
    prefixes: tuple[str, ...]
    event: str
    rule: str | None
    consequence: str  # "fatal", "inconsistent" or "ignored"
    effect: str
    remedy: str
    value: re.Pattern[str] | None
    reread_by: tuple[str, ...]  # later events that read the variable again (a new process group)
    api: frozenset[str]  # calls that set the same thing at run time: a file using them knows
    same_mask: frozenset[str]  # variables the same runtime reads as one setting with these (HIP's two masks)
    versions: tuple[str, ...]
    citation: str

    def covers(self, name: str) -> bool:
        return name in self.names or name.startswith(self.prefixes)


@dataclass(frozen=True)
class LockinTable:
    events: dict[str, Event]
    variables: tuple[Variable, ...]
    non_triggers: frozenset[str]
    launch_calls: frozenset[str]
    launch_methods: frozenset[str]

    def rows_for(self, name: str, rule: str) -> list[Variable]:
        return [row for row in self.variables if row.rule == rule and row.covers(name)]

    def events_implying(self, event: str) -> frozenset[str]:
        """Every event whose occurrence means `event` has happened (itself included)."""
        return frozenset(e.id for e in self.events.values() if event in e.closure)


@cache
def lockin_table() -> LockinTable:
    data = tomllib.loads(data_text("lockin.toml"))
    raw_events = data["events"]

    def closure(event_id: str) -> frozenset[str]:
        found = {event_id}
        for implied in raw_events[event_id].get("implies", ()):
            found |= closure(implied)
        return frozenset(found)

    events = {
        event_id: Event(
            id=event_id,
            title=raw["title"],
            phrase=raw["phrase"],
            implies=tuple(raw.get("implies", ())),
            calls=frozenset(raw.get("calls", ())),
            cuda_argument_calls=frozenset(raw.get("cuda_argument_calls", ())),
            calls_with_keyword=dict(raw.get("calls_with_keyword", {})),
            disabled_by=dict(raw.get("disabled_by", {})),
            methods=frozenset(raw.get("methods", ())),
            device_methods=frozenset(raw.get("device_methods", ())),
            device_keyword=raw.get("device_keyword"),
            literal_device_keywords=frozenset(raw.get("literal_device_keywords", ())),
            modules=frozenset(raw.get("modules", ())),
            unless_env=raw.get("unless_env"),
            closure=closure(event_id),
        )
        for event_id, raw in raw_events.items()
    }
    variables = tuple(
        Variable(
            names=frozenset(row.get("names", ())),
            prefixes=tuple(row.get("prefixes", ())),
            event=row["event"],
            rule=row.get("rule"),
            consequence=row["consequence"],
            effect=row["effect"],
            remedy=row["remedy"],
            value=re.compile(row["value"]) if "value" in row else None,
            reread_by=tuple(row.get("reread_by", ())),
            api=frozenset(row.get("api", ())),
            same_mask=frozenset(row.get("same_mask", ())),
            versions=tuple(row["versions"]),
            citation=row["citation"],
        )
        for row in data["variables"]
    )
    return LockinTable(
        events=events,
        variables=variables,
        non_triggers=frozenset(data["non_triggers"]["calls"]),
        launch_calls=frozenset(data["launches"]["calls"]),
        launch_methods=frozenset(data["launches"]["methods"]),
    )
