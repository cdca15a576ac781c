"""Every rule's VALID and INVALID examples, run as tests (the Fixit model)."""

from __future__ import annotations

import pytest

from gpumem_lint.engine import lint_source
from gpumem_lint.rules import ALL_RULES


def _cases(kind: str) -> list:
    return [
        pytest.param(rule, example, id=f"{rule.code}-{kind}-{index}")
        for rule in ALL_RULES
        for index, example in enumerate(getattr(rule, kind))
    ]


@pytest.mark.parametrize(("rule", "code"), _cases("VALID"))
def test_valid_example_is_not_flagged(rule, code):
    assert lint_source(code, "example.py", ALL_RULES) == []


@pytest.mark.parametrize(("rule", "example"), _cases("INVALID"))
def test_invalid_example_is_flagged_on_its_lines(rule, example):
    diagnostics = lint_source(example.code, "example.py", ALL_RULES)
    flagged = tuple(d.start.row for d in diagnostics if d.code == rule.code)
    assert flagged == example.lines, [f"{d.start.row}: {d.code} {d.message}" for d in diagnostics]
    others = [d for d in diagnostics if d.code != rule.code]
    assert others == [], "an INVALID example must show only its own rule"


def test_every_rule_has_examples():
    for rule in ALL_RULES:
        assert rule.VALID or rule.code in {"GML003", "GML009"}, rule.code
        assert rule.INVALID or rule.code in {"GML003", "GML009"}, rule.code
