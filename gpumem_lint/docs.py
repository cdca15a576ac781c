"""Rule documentation pages, rendered from the rule classes: `rules/<CODE>.md` and the index.

`gpumem-lint rule CODE` prints the same page, and a test checks that the committed
pages match, so the docs cannot drift from the code.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpumem_lint.diagnostics import Applicability
from gpumem_lint.rules.base import Rule

INDEX_NAME = "README.md"


def render_rule_page(rule: type[Rule]) -> str:
    summary = rule.summary if rule.summary.endswith((".", "!", "?")) else rule.summary + "."
    return (
        f"# {rule.name} ({rule.code})\n\n"
        f"Severity: {rule.severity.value}. {fix_availability(rule)}\n\n"
        f"{summary}\n\n"
        f"{rule.documentation()}\n"
    )


def fix_availability(rule: type[Rule]) -> str:
    if rule.fix_applicability is None:
        return "No automatic fix."
    if rule.fix_applicability is Applicability.SAFE:
        return "Safe fix available (`--fix`)."
    return "Unsafe fix available (`--fix --unsafe-fixes`)."


def render_index(rules: Sequence[type[Rule]]) -> str:
    lines = [
        "# Rules",
        "",
        "Generated from the rule classes by `scripts/generate_rule_pages.py`; do not edit by hand.",
        "",
        "| Code | Name | Severity | Summary |",
        "| --- | --- | --- | --- |",
    ]
    for rule in rules:
        summary = rule.summary.replace("|", "\\|")
        lines.append(f"| [{rule.code}]({rule.code}.md) | {rule.name} | {rule.severity.value} | {summary} |")
    return "\n".join(lines) + "\n"


def rule_pages(rules: Sequence[type[Rule]]) -> dict[str, str]:
    """Every file the `rules/` directory should hold: file name -> content."""
    pages = {f"{rule.code}.md": render_rule_page(rule) for rule in rules}
    pages[INDEX_NAME] = render_index(rules)
    return pages
