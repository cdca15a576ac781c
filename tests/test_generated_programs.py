"""Linting any syntactically valid program never raises and never reports an internal error."""

from __future__ import annotations

import hypothesmith
from hypothesis import HealthCheck, given, settings

from gpumem_lint.engine import lint_source
from gpumem_lint.rules import ALL_RULES

# Generated programs rarely mention torch, so every rule's pre-filter is opened by this prefix.
PREFIX = "import torch\nimport numpy as np\n"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(hypothesmith.from_grammar())
def test_any_program_lints_without_internal_error(source):
    diagnostics = lint_source(PREFIX + source, "generated.py", ALL_RULES)
    assert not [d for d in diagnostics if d.code == "GML009"], diagnostics


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(hypothesmith.from_node())
def test_any_syntax_tree_lints_without_internal_error(source):
    diagnostics = lint_source(PREFIX + source, "generated.py", ALL_RULES)
    assert not [d for d in diagnostics if d.code == "GML009"], diagnostics
