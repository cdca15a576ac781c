"""Where each rule's page is published: `rules/<CODE>.md` in the repository, on its main branch
(the same page `gpumem-lint rule CODE` prints, generated from the rule)."""

from __future__ import annotations

REPOSITORY = "https://github.com/gpumem-lint/gpumem-lint"


def rule_url(code: str) -> str:
    return f"{REPOSITORY}/blob/main/rules/{code}.md"
