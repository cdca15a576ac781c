"""`--statistics`: how many findings each rule produced, most frequent first."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence

from rich.console import Console
from rich.text import Text

from gpumem_lint.diagnostics import Diagnostic


def render(diagnostics: Sequence[Diagnostic], console: Console, *, as_json: bool = False) -> None:
    counts = Counter((diagnostic.code, diagnostic.name) for diagnostic in diagnostics)
    rows = sorted(counts.items(), key=lambda item: (-item[1], item[0][0]))
    if as_json:
        table = [{"code": code, "name": name, "count": count} for (code, name), count in rows]
        console.out(json.dumps(table, indent=2), highlight=False)
        return
    count_width = max((len(str(count)) for _, count in rows), default=0)
    code_width = max((len(code) for (code, _), _ in rows), default=0)
    for (code, name), count in rows:
        console.print(Text.assemble(f"{count:>{count_width}}  ", (f"{code:<{code_width}}", "bold red"), f"  {name}"))
