"""Every module under `fixtures/` is linted; findings must equal its `# expect:` comments.

A line that must be flagged ends with `# expect: GML102` (or several codes,
`# expect: GML103, GML107`). Everything else, including every file under
`fixtures/safe/`, must produce nothing.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpumem_lint.engine import lint_path
from gpumem_lint.rules import ALL_RULES

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
EXPECT = re.compile(r"#\s*expect:\s*(GML\d{3}(?:\s*,\s*GML\d{3})*)")
CODE = re.compile(r"GML\d{3}")
FILES = sorted(FIXTURES.rglob("*.py"))


def _rel(path: Path) -> str:
    return path.relative_to(FIXTURES).as_posix()


def expected_findings(path: Path) -> set[tuple[int, str]]:
    expected = set()
    for row, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        for match in EXPECT.finditer(line):
            expected.update((row, code) for code in CODE.findall(match.group(1)))
    return expected


def test_fixtures_exist():
    assert len(FILES) >= 10, FILES
    assert any(p.parts[-2] == "safe" for p in FILES)
    assert any(p.parts[-2] == "hazards" for p in FILES)
    assert (FIXTURES / "demo_project").is_dir()


@pytest.mark.parametrize("path", FILES, ids=[_rel(p) for p in FILES])
def test_fixture_findings_match_expect_comments(path: Path):
    diagnostics = lint_path(path, str(path), ALL_RULES)
    found = {(d.start.row, d.code): d for d in diagnostics}
    expected = expected_findings(path)
    missing = sorted(expected - found.keys())
    extra = sorted(found.keys() - expected)
    if missing or extra:
        lines = path.read_text(encoding="utf-8").splitlines()
        report = [f"{_rel(path)}: findings differ from `# expect:` comments"]
        for row, code in missing:
            report.append(f"  missing {code} at line {row}: {lines[row - 1].strip()}")
        for row, code in extra:
            report.append(f"  extra   {code} at line {row}: {lines[row - 1].strip()}")
            report.append(f"          message: {found[row, code].message}")
        pytest.fail("\n".join(report), pytrace=False)


def test_every_gml1xx_and_gml2xx_rule_is_covered_by_an_expect():
    expected_codes = {code for path in FILES for _, code in expected_findings(path)}
    all_codes = {rule.code for rule in ALL_RULES}
    rule_codes = {code for code in all_codes if code.startswith(("GML1", "GML2"))}
    assert rule_codes - expected_codes == set(), "rules with no `# expect:` in fixtures/"
    assert expected_codes - all_codes == set(), "`# expect:` names an unknown rule code"


def test_safe_fixtures_have_no_expects():
    offenders = [
        f"{_rel(path)}:{row}"
        for path in FILES
        if "safe" in path.relative_to(FIXTURES).parts[:1]
        for row, _ in expected_findings(path)
    ]
    assert offenders == []


def test_demo_project_plants_the_headline_hazards():
    codes = {code for path in (FIXTURES / "demo_project").rglob("*.py") for _, code in expected_findings(path)}
    assert {"GML102", "GML107"} <= codes
    assert codes & {"GML103", "GML106"}
