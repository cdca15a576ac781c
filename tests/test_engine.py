"""The engine's contract, as data: a source and the (line, column, code) findings it must give."""

from __future__ import annotations

import pytest

from gpumem_lint.engine import lint_bytes, lint_path
from gpumem_lint.rules import ALL_RULES
from gpumem_lint.rules.base import Rule

STALE = """import torch

def smoothed(updates, decay):
    hidden = torch.zeros_like(updates[0])
    prev = hidden.detach()
    for u in updates:
        hidden.mul_(decay).add_(u){comment}
    return hidden - prev
"""


def findings(source: str | bytes) -> list[tuple[int, int, str]]:
    data = source.encode() if isinstance(source, str) else source
    return [(d.start.row, d.start.column, d.code) for d in lint_bytes(data, "example.py", ALL_RULES)]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        pytest.param(STALE.format(comment=""), [(7, 9, "GML103")], id="reported once for a chained write"),
        pytest.param(STALE.format(comment="  # noqa"), [], id="bare noqa"),
        pytest.param(STALE.format(comment="  # noqa: GML103"), [], id="noqa with the code"),
        pytest.param(
            STALE.format(comment="  # NOQA:GML106, GML103"), [(7, 37, "GML002")], id="noqa with an unused code"
        ),
        pytest.param(
            STALE.format(comment="  # noqa: GML106"), [(7, 9, "GML103"), (7, 37, "GML002")], id="noqa for another code"
        ),
        pytest.param(STALE.format(comment="  # noqa: GML103, E501"), [], id="other tools' codes are theirs"),
        pytest.param("# gpumem-lint: noqa\n" + STALE.format(comment=""), [], id="file-level noqa"),
        pytest.param(
            "# gpumem-lint: noqa: GML103\n" + STALE.format(comment=""), [], id="file-level noqa with the code"
        ),
        pytest.param(
            "# gpumem-lint: noqa: GML101\n" + STALE.format(comment=""), [(8, 9, "GML103")], id="file-level other"
        ),
        pytest.param("import torch\ndef f(:\n    pass\n", [(2, 7, "GML001")], id="syntax error where CPython puts it"),
        pytest.param("def f(:\n", [(1, 7, "GML001")], id="syntax error in a file no rule looks at"),
        pytest.param("", [], id="empty file"),
        pytest.param("\ufeff" + STALE.format(comment=""), [(7, 9, "GML103")], id="byte order mark"),
        pytest.param(STALE.format(comment="").replace("\n", "\r\n"), [(7, 9, "GML103")], id="CRLF line ends"),
    ],
)
def test_findings(source, expected):
    assert findings(source) == expected


def test_coding_cookie_is_honoured():
    source = "# -*- coding: latin-1 -*-\nname = 'caf\xe9'\n".encode("latin-1")
    assert findings(source) == []


def test_undecodable_bytes_are_a_diagnostic():
    assert findings(b"import torch\nname = '\xff\xfe'\n") == [(1, 1, "GML003")]


def test_unreadable_file_is_a_diagnostic(tmp_path):
    missing = tmp_path / "gone.py"
    (diagnostic,) = lint_path(missing, "gone.py", ALL_RULES)
    assert diagnostic.code == "GML003" and "cannot read" in diagnostic.message


def test_a_crashing_rule_is_reported_and_other_files_still_linted():
    class Crashing(Rule):
        code, name, summary, fix_title, triggers = "GML199", "crashing", "boom", "none", ("torch",)

        def check(self, ctx):
            raise ValueError("boom")

    rules = [*ALL_RULES, Crashing]
    (crash,) = lint_bytes(b"import torch\n", "bad.py", rules)
    assert crash.code == "GML009" and "GML199" in crash.message
    clean = STALE.format(comment="").encode()
    assert [d.code for d in lint_bytes(clean, "ok.py", [r for r in rules if r is not Crashing])] == ["GML103"]


def test_deeply_nested_expression_does_not_crash():
    source = "import torch\nx = " + "(" * 400 + "1" + ")" * 400 + "\n"
    assert all(code in {"GML001"} for _, _, code in findings(source))
