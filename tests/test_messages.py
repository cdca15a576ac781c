"""What a finding says, as ruff words it: the message states the problem in about 30 words at
most, and the remedy is in the help line only."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from gpumem_lint.engine import lint_source
from gpumem_lint.rules import ALL_RULES

REPO = Path(__file__).resolve().parent.parent
MAX_WORDS = 30
# A code span (`torch.cuda.set_device(i)`) reads as one word, however many spaces it holds.
_CODE_SPAN = re.compile(r"`[^`]*`")
# How a remedy starts when a message carries one ("...; use `x`", "... Instead, set it ...").
_REMEDY = re.compile(r"\binstead\b|[;,.] (use|call|set it|set them)\b", re.IGNORECASE)


def words(message: str) -> int:
    return len(_CODE_SPAN.sub("code", message).split())


def findings():
    """Every finding of every rule's INVALID examples and of the fixtures."""
    for rule in ALL_RULES:
        for example in rule.INVALID:
            yield from lint_source(textwrap.dedent(example.code), "example.py", [rule])
    for path in sorted((REPO / "fixtures").rglob("*.py")):
        yield from lint_source(path.read_text(encoding="utf-8"), path.name, ALL_RULES)


FINDINGS = {}
for diagnostic in findings():
    FINDINGS.setdefault(diagnostic.code, []).append(diagnostic)


def test_words_counts_a_code_span_as_one():
    assert words("`x.add_(1, alpha=2)` writes `x` in place") == 5


@pytest.mark.parametrize("code", sorted(FINDINGS))
def test_messages_are_short_and_leave_the_remedy_to_the_help_line(code):
    for diagnostic in FINDINGS[code]:
        assert words(diagnostic.message) <= MAX_WORDS, diagnostic.message
        assert not _REMEDY.search(diagnostic.message), diagnostic.message
        assert diagnostic.help and diagnostic.help not in diagnostic.message
