"""Every rule's VALID and INVALID examples, run as tests (the Fixit model).

An INVALID example that the rule offers a fix for declares the fixed source; applying
every fix (unsafe ones too) must give exactly that, and the result must lint clean of
the rule's code and offer nothing more to fix.
"""

from __future__ import annotations

import pytest

from gpumem_lint.autofix import fix_source
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


@pytest.mark.parametrize(("rule", "example"), _cases("INVALID"))
def test_invalid_example_fix_gives_the_declared_source(rule, example):
    diagnostics = lint_source(example.code, "example.py", ALL_RULES)
    fixes = [d.fix for d in diagnostics if d.fix is not None]
    if example.fixed is None:
        assert fixes == [], "the rule offers a fix here: declare the fixed source with Invalid(..., fixed=...)"
        return
    assert fixes, "the example declares a fixed source but the rule offers no fix"
    assert {fix.applicability for fix in fixes} == {rule.fix_applicability}, "declare the tier as fix_applicability"
    outcome = fix_source(example.code, "example.py", ALL_RULES, unsafe=True)
    assert outcome.broken == ()
    assert outcome.text == example.fixed
    assert [d.code for d in outcome.remaining if d.fix is not None] == []


@pytest.mark.parametrize("rule", [pytest.param(rule, id=rule.code) for rule in ALL_RULES])
def test_a_declared_fix_is_shown_by_an_example(rule):
    declared = rule.fix_applicability is not None
    shown = any(example.fixed is not None for example in rule.INVALID)
    assert declared == shown, "fix_applicability and the INVALID examples' `fixed` sources must agree"


def test_every_rule_has_examples():
    for rule in ALL_RULES:
        assert rule.VALID or rule.code in {"GML003", "GML009"}, rule.code
        assert rule.INVALID or rule.code in {"GML003", "GML009"}, rule.code
