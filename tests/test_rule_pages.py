"""The committed rule pages match the rule classes, and every rule documents itself fully."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

from gpumem_lint.diagnostics import Applicability
from gpumem_lint.docs import INDEX_NAME, render_index, render_rule_page
from gpumem_lint.rules import ALL_CODES, ALL_RULES
from gpumem_lint.rules.base import DOC_SECTIONS

REPO = Path(__file__).resolve().parent.parent
RULES_DIR = REPO / "rules"
REGENERATE = "run: python scripts/generate_rule_pages.py"


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda rule: rule.code)
def test_rule_page_is_current(rule):
    page = RULES_DIR / f"{rule.code}.md"
    assert page.is_file(), f"rules/{rule.code}.md is missing; {REGENERATE}"
    assert page.read_text(encoding="utf-8") == render_rule_page(rule), f"rules/{rule.code}.md is stale; {REGENERATE}"


def test_index_is_current():
    index = RULES_DIR / INDEX_NAME
    assert index.read_text(encoding="utf-8") == render_index(ALL_RULES), f"rules/{INDEX_NAME} is stale; {REGENERATE}"


def test_the_codes_read_from_module_names_are_the_rules_codes():
    assert ALL_CODES == tuple(rule.code for rule in ALL_RULES)


def test_no_page_without_a_rule():
    expected = {f"{rule.code}.md" for rule in ALL_RULES} | {INDEX_NAME}
    assert {page.name for page in RULES_DIR.glob("*.md")} == expected


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda rule: rule.code)
def test_documentation_has_every_section_in_order(rule):
    headings = re.findall(r"^## (.+)$", rule.documentation(), flags=re.MULTILINE)
    required = [heading for heading in headings if heading in DOC_SECTIONS]
    assert required == list(DOC_SECTIONS), f"{rule.code} sections: {headings}"


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda rule: rule.code)
def test_page_starts_with_title_and_metadata(rule):
    lines = render_rule_page(rule).splitlines()
    assert lines[0] == f"# {rule.name} ({rule.code})"
    availability = {
        None: "No automatic fix.",
        Applicability.SAFE: "Safe fix available (`--fix`).",
        Applicability.UNSAFE: "Unsafe fix available (`--fix --unsafe-fixes`).",
    }[rule.fix_applicability]
    assert lines[2] == f"Severity: {rule.severity.value}. {availability}"


def load_generator(monkeypatch, rules_dir: Path):
    spec = importlib.util.spec_from_file_location("generate_rule_pages", REPO / "scripts/generate_rule_pages.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "RULES_DIR", rules_dir)
    return module


def run_generator(module, monkeypatch, *args: str) -> int:
    monkeypatch.setattr(sys, "argv", ["generate_rule_pages.py", *args])
    return module.main()


def test_generator_writes_then_check_detects_stale_missing_and_extra_pages(monkeypatch, tmp_path, capsys):
    rules_dir = tmp_path / "rules"
    generator = load_generator(monkeypatch, rules_dir)
    assert run_generator(generator, monkeypatch, "--check") == 1  # nothing written yet
    assert run_generator(generator, monkeypatch) == 0
    assert run_generator(generator, monkeypatch, "--check") == 0

    first = rules_dir / f"{ALL_RULES[0].code}.md"
    first.write_text("edited by hand\n")
    assert run_generator(generator, monkeypatch, "--check") == 1
    run_generator(generator, monkeypatch)

    (rules_dir / "GML999.md").write_text("a deleted rule\n")
    assert run_generator(generator, monkeypatch, "--check") == 1
    run_generator(generator, monkeypatch)
    assert not (rules_dir / "GML999.md").exists()
    assert "GML999.md belongs to no rule" in capsys.readouterr().err
