"""A JSON array of findings. `diagnostic_to_dict` is the one definition of a finding's
fields; other machine formats build on it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from rich.console import Console

from gpumem_lint.diagnostics import Diagnostic
from gpumem_lint.output.rule_links import rule_url


def diagnostic_to_dict(diagnostic: Diagnostic) -> dict[str, Any]:
    entry = {
        "code": diagnostic.code,
        "name": diagnostic.name,
        "message": diagnostic.message,
        "severity": diagnostic.severity.value,
        "filename": diagnostic.path,
        "cell": diagnostic.cell,
        "location": {"row": diagnostic.start.row, "column": diagnostic.start.column},
        "end_location": {"row": diagnostic.end.row, "column": diagnostic.end.column},
        "fix": fix_to_dict(diagnostic),
        "help": diagnostic.help,
        "url": rule_url(diagnostic.code),
    }
    if diagnostic.source is not None:  # `gpumem-lint trace` findings: how the run bore them out
        entry["source"] = diagnostic.source
        entry["status"] = diagnostic.status
        entry["related"] = [
            {"filename": r.path, "location": {"row": r.start.row, "column": r.start.column}, "message": r.message}
            for r in diagnostic.related
        ]
    return entry


def fix_to_dict(diagnostic: Diagnostic) -> dict[str, Any] | None:
    """As ruff writes it: the tier, what it does, and the edits (1-based, end exclusive)."""
    fix = diagnostic.fix
    if fix is None:
        return None
    return {
        "applicability": fix.applicability.value,
        "message": fix.title or diagnostic.help,
        "edits": [
            {
                "content": edit.content,
                "location": {"row": edit.start.row, "column": edit.start.column},
                "end_location": {"row": edit.end.row, "column": edit.end.column},
            }
            for edit in fix.edits
        ],
    }


def render(diagnostics: Sequence[Diagnostic], console: Console) -> None:
    ordered = sorted(diagnostics, key=lambda diagnostic: diagnostic.sort_key)
    console.out(json.dumps([diagnostic_to_dict(d) for d in ordered], indent=2), highlight=False)
