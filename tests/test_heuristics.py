"""The spelling heuristics (gpumem_lint/knowledge/heuristics.toml): each matches what it says it
matches, and every rule it changes names it in its *Known problems*."""

from __future__ import annotations

import pytest

from gpumem_lint.knowledge.heuristics import heuristics, pattern, table
from gpumem_lint.rules import RULES_BY_CODE

SECTIONS = table()
PATTERNS = {name: section for name, section in SECTIONS.items() if "pattern" in section}


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_each_pattern_matches_its_examples_and_not_its_counter_examples(name):
    section = PATTERNS[name]
    compiled = pattern(section)
    misses = [example for example in section["examples"] if not compiled.search(example)]
    assert not misses
    excluded = set(section.get("not_matching", ()))
    hits = [text for text in section["counter_examples"] if compiled.search(text) and text not in excluded]
    assert not hits


def test_training_calls_leave_out_mode_switches():
    assert heuristics().is_training_call("train_one_epoch")
    assert not any(heuristics().is_training_call(name) for name in SECTIONS["training_calls"]["not_matching"])


@pytest.mark.parametrize(("name", "code"), [(n, c) for n, s in sorted(SECTIONS.items()) for c in s["used_by"]])
def test_every_rule_a_heuristic_changes_names_it_in_known_problems(name, code):
    doc = RULES_BY_CODE[code].__doc__ or ""
    known = doc.split("## Known problems", 1)[1].split("##", 1)[0] if "## Known problems" in doc else ""
    assert "heuristics.toml" in known and name in known, f"{code}'s Known problems must name `{name}`"
