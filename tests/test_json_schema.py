"""The JSON output is an interface: its keys, their order and their types are pinned here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpumem_lint.cli import main
from gpumem_lint.diagnostics import Diagnostic, Position, Severity
from gpumem_lint.output.json_format import diagnostic_to_dict

KEYS = ["code", "name", "message", "severity", "filename", "cell", "location", "end_location", "fix", "help", "url"]


@pytest.fixture(autouse=True)
def in_tmp(monkeypatch, tmp_path):
    monkeypatch.delenv("GPUMEM_LINT_OUTPUT_FORMAT", raising=False)
    monkeypatch.chdir(tmp_path)


def lint_json(capsys, *paths: str) -> tuple[str, list]:
    with pytest.raises(SystemExit):
        main(["--output-format", "json", *paths])
    out = capsys.readouterr().out
    return out, json.loads(out)


def test_finding_has_exactly_the_pinned_keys_and_types(capsys, tmp_path):
    Path("pkg").mkdir()
    Path("pkg/bad.py").write_text("def f(:\n    pass\n")
    _, findings = lint_json(capsys, ".")
    [finding] = findings
    assert list(finding) == KEYS
    assert finding["code"] == "GML001"
    assert finding["name"] == "invalid-syntax"
    assert isinstance(finding["message"], str) and finding["message"]
    assert finding["severity"] in {"error", "warning"}
    assert finding["filename"] == "pkg/bad.py"
    assert finding["cell"] is None  # the cell number, in a notebook
    assert finding["location"] == {"row": 1, "column": 7}
    assert list(finding["end_location"]) == ["row", "column"]
    assert all(isinstance(value, int) for value in finding["end_location"].values())
    assert finding["fix"] is None
    assert isinstance(finding["help"], str)
    assert finding["url"] == "https://github.com/gpumem-lint/gpumem-lint/blob/main/rules/GML001.md"


def test_findings_are_sorted_and_indented_by_two(capsys, tmp_path):
    for name in ("z.py", "a.py", "m.py"):
        Path(name).write_text("def f(:\n")
    out, findings = lint_json(capsys, "z.py", "m.py", "a.py")
    assert [finding["filename"] for finding in findings] == ["a.py", "m.py", "z.py"]
    assert out.startswith('[\n  {\n    "code": ')


def test_no_findings_is_an_empty_array(capsys, tmp_path):
    Path("ok.py").write_text("x = 1\n")
    out, findings = lint_json(capsys, "ok.py")
    assert findings == []
    assert out.strip() == "[]"


def test_diagnostic_to_dict_maps_every_field():
    diagnostic = Diagnostic(
        path="a/b.py",
        start=Position(3, 5),
        end=Position(4, 1),
        code="GML101",
        name="some-rule",
        message="the problem",
        help=None,
        severity=Severity.WARNING,
    )
    assert diagnostic_to_dict(diagnostic) == {
        "code": "GML101",
        "name": "some-rule",
        "message": "the problem",
        "severity": "warning",
        "filename": "a/b.py",
        "cell": None,
        "location": {"row": 3, "column": 5},
        "end_location": {"row": 4, "column": 1},
        "fix": None,
        "help": None,
        "url": "https://github.com/gpumem-lint/gpumem-lint/blob/main/rules/GML101.md",
    }
