"""GML002 as data: a source, the rules enabled for it, and the rows GML002 must flag."""

from __future__ import annotations

import pytest

from gpumem_lint.engine import lint_source
from gpumem_lint.rules import ALL_RULES, RULES_BY_CODE

BRIDGE = """import torch

def augment(path):
    t = torch.load(path)
    original = t.numpy()
    t.mul_(2){comment}
    return original.mean(), t.mean()
"""
ALL = tuple(ALL_RULES)
WITHOUT_GML107 = tuple(rule for rule in ALL_RULES if rule.code != "GML107")


@pytest.mark.parametrize(
    ("source", "rules", "rows"),
    [
        pytest.param(BRIDGE.format(comment="  # noqa: GML106"), ALL, [], id="used"),
        pytest.param(BRIDGE.format(comment="  # noqa: GML106, GML107"), ALL, [6], id="one code unused"),
        pytest.param(BRIDGE.format(comment="  # noqa: GML106, GML107"), WITHOUT_GML107, [], id="disabled code"),
        pytest.param(BRIDGE.format(comment="  # noqa: GML106, E501, BLE001"), ALL, [], id="other tools' codes"),
        pytest.param(BRIDGE.format(comment="  # noqa"), ALL, [], id="bare noqa"),
        pytest.param("import torch\nx = 1  # noqa: GML101\n", ALL, [2], id="rule not triggered"),
        pytest.param("x = 1  # noqa: GML101\n", ALL, [1], id="file without torch"),
        pytest.param("x = 1  # noqa: GML101, GML002\n", ALL, [], id="GML002 suppressed on the line"),
        pytest.param("# gpumem-lint: noqa: GML002\nx = 1  # noqa: GML101\n", ALL, [], id="GML002 off in the file"),
        pytest.param("x = 1  # noqa: GML101\ndef f(:\n", ALL, [], id="syntax error: nothing judged"),
        pytest.param('s = """\n# noqa: GML101\n"""\n', ALL, [], id="in a string"),
        pytest.param("x = 1  # noqa: GML101\n", (RULES_BY_CODE["GML101"],), [], id="GML002 not selected"),
    ],
)
def test_unused_suppressions(source, rules, rows):
    diagnostics = lint_source(source, "example.py", rules)
    assert [d.start.row for d in diagnostics if d.code == "GML002"] == rows
