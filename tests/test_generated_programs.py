"""Any syntactically valid program lints without an internal error, and `--fix` on it
(unsafe fixes included) leaves a program that parses and that a second fix leaves alone."""

from __future__ import annotations

import hypothesmith
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpumem_lint.autofix import fix_source, parses
from gpumem_lint.engine import lint_source
from gpumem_lint.rules import ALL_RULES

# Generated programs rarely mention torch, so every rule's pre-filter is opened by this prefix.
PREFIX = "import torch\nimport numpy as np\n"
# Examples whose findings carry fixes: appended to generated code so that fixes really run.
FIXABLE = [example.code for rule in ALL_RULES for example in rule.INVALID if example.fixed is not None]
BOUNDED = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def assert_no_internal_error(source: str) -> None:
    diagnostics = lint_source(source, "generated.py", ALL_RULES)
    assert not [d for d in diagnostics if d.code == "GML009"], diagnostics


def assert_fix_is_sound(source: str) -> None:
    once = fix_source(source, "generated.py", ALL_RULES, unsafe=True)
    assert not once.broken, once.broken
    assert parses(once.text, "generated.py")
    twice = fix_source(once.text, "generated.py", ALL_RULES, unsafe=True)
    assert twice.text == once.text


@BOUNDED
@given(hypothesmith.from_grammar())
def test_any_program_lints_without_internal_error(source):
    assert_no_internal_error(PREFIX + source)


@BOUNDED
@given(hypothesmith.from_node())
def test_any_syntax_tree_lints_without_internal_error(source):
    assert_no_internal_error(PREFIX + source)


def test_some_examples_carry_fixes():
    assert FIXABLE


@BOUNDED
@given(hypothesmith.from_node(), st.sampled_from(FIXABLE))
def test_fixing_any_program_parses_and_is_idempotent(source, fixable):
    assert_fix_is_sound(PREFIX + source + "\n" + fixable)
