"""Heuristics that decide from how code is spelled (`heuristics.toml`), loaded once per process."""

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


@dataclass(frozen=True)
class Heuristics:
    training_call: re.Pattern[str]
    not_training: frozenset[str]
    optimizer_name: re.Pattern[str]
    mutating_function_words: frozenset[str]
    output_parameter: re.Pattern[str]
    documented_mutation: re.Pattern[str]
    documented_sharing: re.Pattern[str]
    device_index_name: re.Pattern[str]

    def is_training_call(self, name: str) -> bool:
        return name not in self.not_training and bool(self.training_call.search(name))


def table() -> dict:
    return tomllib.loads(data_text("heuristics.toml"))


def pattern(section: dict) -> re.Pattern[str]:
    return re.compile(section["pattern"], re.IGNORECASE if section.get("ignore_case") else 0)


@cache
def heuristics() -> Heuristics:
    sections = table()
    return Heuristics(
        training_call=pattern(sections["training_calls"]),
        not_training=frozenset(sections["training_calls"]["not_matching"]),
        optimizer_name=pattern(sections["optimizer_names"]),
        mutating_function_words=frozenset(sections["mutating_function_words"]["words"]),
        output_parameter=pattern(sections["output_parameters"]),
        documented_mutation=pattern(sections["documented_mutation"]),
        documented_sharing=pattern(sections["documented_sharing"]),
        device_index_name=pattern(sections["device_index_names"]),
    )
