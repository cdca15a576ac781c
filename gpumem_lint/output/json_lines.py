"""One JSON object per line, per finding: the `json` format's objects, streamable."""

from __future__ import annotations

import json
from collections.abc import Sequence

from rich.console import Console

from gpumem_lint.diagnostics import Diagnostic
from gpumem_lint.output.json_format import diagnostic_to_dict


def render(diagnostics: Sequence[Diagnostic], console: Console) -> None:
    for diagnostic in sorted(diagnostics, key=lambda diagnostic: diagnostic.sort_key):
        console.out(json.dumps(diagnostic_to_dict(diagnostic)), highlight=False)
