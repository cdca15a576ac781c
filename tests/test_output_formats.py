"""The machine formats as their consumers read them: SARIF against the official schema, GitHub
workflow commands with the toolkit's escaping, JUnit XML, JSON lines."""

from __future__ import annotations

import io
import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
from rich.console import Console

from gpumem_lint.cli import main
from gpumem_lint.diagnostics import Diagnostic, Position, Severity
from gpumem_lint.output import OutputFormat, write_report
from gpumem_lint.output.github import annotation, escape_data, escape_property
from gpumem_lint.output.rule_links import rule_url
from gpumem_lint.output.sarif import DESCRIPTION_LIMIT
from gpumem_lint.rules import ALL_RULES
from gpumem_lint.runner import Job, lint_jobs

REPO = Path(__file__).resolve().parent.parent
SARIF_SCHEMA = REPO / "tests" / "data" / "sarif-schema-2.1.0.json"  # see tests/data/README.md


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """The fixtures, copied: paths in the output are relative to the working directory."""
    root = tmp_path_factory.mktemp("formats")
    shutil.copytree(REPO / "fixtures" / "hazards", root / "hazards")
    shutil.copytree(REPO / "fixtures" / "safe", root / "safe")
    return root


@pytest.fixture(autouse=True)
def in_workdir(monkeypatch, workdir):
    monkeypatch.delenv("GPUMEM_LINT_OUTPUT_FORMAT", raising=False)
    monkeypatch.chdir(workdir)


@pytest.fixture(scope="module")
def hazards(workdir) -> list[Diagnostic]:
    """The hazard fixtures' findings, linted once for every format test."""
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(workdir)
        files = sorted((workdir / "hazards").glob("*.py"))
        jobs = [Job(path, f"hazards/{path.name}", tuple(rule.code for rule in ALL_RULES)) for path in files]
        return lint_jobs(jobs).diagnostics


def render(diagnostics: list[Diagnostic], output_format: str) -> str:
    stream = io.StringIO()
    write_report(diagnostics, Console(file=stream, soft_wrap=True, markup=False), OutputFormat(output_format))
    return stream.getvalue()


def lint(capsys, output_format: str, *paths: str) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(["--no-cache", "--select", "ALL", "--output-format", output_format, *(paths or (".",))])
    return exit_info.value.code, capsys.readouterr().out


def finding(**overrides) -> Diagnostic:
    fields = {
        "path": "src/train.py",
        "start": Position(3, 9),
        "end": Position(3, 21),
        "code": "GML101",
        "name": "data-write",
        "message": "writes `p.data`",
        "help": "Write under no_grad",
        "severity": Severity.ERROR,
    }
    return Diagnostic(**{**fields, **overrides})


def test_sarif_of_the_fixtures_is_valid_against_the_official_schema(capsys):
    code, out = lint(capsys, "sarif")
    assert code == 1
    log = json.loads(out)
    jsonschema.validate(log, json.loads(SARIF_SCHEMA.read_text()))
    [run] = log["runs"]
    assert run["results"], "the hazard fixtures must give results"
    rules = run["tool"]["driver"]["rules"]
    assert [rule["id"] for rule in rules] == [rule.code for rule in ALL_RULES]
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        location = result["locations"][0]["physicalLocation"]
        assert location["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
        assert location["artifactLocation"]["uri"].startswith(("hazards/", "safe/"))
        assert location["region"]["startLine"] >= 1 and location["region"]["startColumn"] >= 1
        assert result["partialFingerprints"]["primaryLocationLineHash"].rsplit(":", 1)[1].isdigit()


def test_every_rule_links_to_its_page_in_the_repository(capsys):
    _, out = lint(capsys, "sarif", "safe")
    descriptors = json.loads(out)["runs"][0]["tool"]["driver"]["rules"]
    assert [descriptor["id"] for descriptor in descriptors] == [rule.code for rule in ALL_RULES]
    prefix = "https://github.com/gpumem-lint/gpumem-lint/blob/main/"
    for descriptor in descriptors:
        assert descriptor["helpUri"] == rule_url(descriptor["id"])
        assert descriptor["helpUri"].startswith(prefix)
        assert (REPO / descriptor["helpUri"].removeprefix(prefix)).is_file()


def test_json_findings_carry_their_rule_page(hazards):
    findings = json.loads(render(hazards, "json"))
    assert findings and all(finding["url"] == rule_url(finding["code"]) for finding in findings)


def test_sarif_rule_metadata_fits_github_limits(capsys):
    _, out = lint(capsys, "sarif", "safe")
    for rule in json.loads(out)["runs"][0]["tool"]["driver"]["rules"]:
        assert 0 < len(rule["fullDescription"]["text"]) <= DESCRIPTION_LIMIT
        assert rule["shortDescription"]["text"]
        assert rule["help"]["markdown"].startswith(f"# {rule['name']} ({rule['id']})")


def test_sarif_fingerprints_survive_code_moving_down(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "hazards").mkdir()
    path = tmp_path / "hazards" / "numerics.py"
    shutil.copy(REPO / "fixtures" / "hazards" / "numerics.py", path)

    def fingerprints_and_rows() -> list[tuple[str, int]]:
        _, out = lint(capsys, "sarif", "hazards/numerics.py")
        return [
            (
                result["partialFingerprints"]["primaryLocationLineHash"],
                result["locations"][0]["physicalLocation"]["region"]["startLine"],
            )
            for result in json.loads(out)["runs"][0]["results"]
        ]

    before = fingerprints_and_rows()
    path.write_text("\n\n" + path.read_text())
    after = fingerprints_and_rows()
    assert before
    assert [(fingerprint, row + 2) for fingerprint, row in before] == after


@pytest.mark.parametrize(
    ("text", "data", "property_value"),
    [
        ("plain", "plain", "plain"),
        ("100% sure", "100%25 sure", "100%25 sure"),
        ("line\nnext", "line%0Anext", "line%0Anext"),
        ("cr\rlf", "cr%0Dlf", "cr%0Dlf"),
        ("a:b,c", "a:b,c", "a%3Ab%2Cc"),
        ("%0A literal", "%250A literal", "%250A literal"),
    ],
)
def test_github_escaping_follows_the_actions_toolkit(text, data, property_value):
    assert escape_data(text) == data
    assert escape_property(text) == property_value


def test_github_annotation_carries_level_position_and_escaped_file():
    line = annotation(finding(path="dir,odd:name.py", severity=Severity.WARNING, message="50% slower"))
    assert line.startswith("::warning title=gpumem-lint (GML101),file=dir%2Codd%3Aname.py,line=3,col=9,")
    assert "endLine=3,endColumn=21::" in line
    assert line.endswith("::50%25 slower%0A  help: Write under no_grad")


def test_github_format_ends_with_a_summary_notice(hazards):
    lines = render(hazards, "github").splitlines()
    assert all(line.startswith(("::error ", "::warning ")) for line in lines[:-1])
    assert lines[-1].startswith("::notice title=gpumem-lint summary::gpumem-lint found ")
    assert f"found {len(lines) - 1} problems" in lines[-1]
    assert "GitHub shows only 10 annotations" in lines[-1]  # the hazard fixtures have more than ten


def test_github_format_prints_nothing_for_clean_code(capsys):
    code, out = lint(capsys, "github", "safe")
    assert (code, out) == (0, "")


def test_junit_has_a_failing_case_per_finding(hazards):
    suites = ET.fromstring(render(hazards, "junit"))
    expected = json.loads(render(hazards, "json"))
    assert int(suites.get("failures")) == len(expected)
    cases = suites.findall("testsuite/testcase")
    assert [(case.get("classname"), int(case.get("line")), case.get("name")) for case in cases] == [
        (item["filename"], item["location"]["row"], f"gpumem-lint.{item['code']}") for item in expected
    ]
    assert all(case.find("failure") is not None for case in cases)


def test_junit_for_clean_code_is_one_passing_case(capsys):
    code, out = lint(capsys, "junit", "safe")
    suites = ET.fromstring(out)
    assert code == 0
    assert suites.get("failures") == "0"
    assert [case.find("failure") for case in suites.iter("testcase")] == [None]


def test_json_lines_holds_the_json_objects_one_per_line(hazards):
    lines = render(hazards, "json-lines").splitlines()
    assert [json.loads(line) for line in lines] == json.loads(render(hazards, "json"))
