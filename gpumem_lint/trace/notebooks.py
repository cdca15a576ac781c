"""A traced notebook (`gpumem-lint trace notebook.ipynb`): where its rows are, and the report in its cells.

The launcher runs the code cells as one program whose rows are those of `Notebook.text` (the joined, masked cells),
so run-time sites, the static pass and the cross-reference all count rows of that text; only the report maps them to
`cell N:row` (notebook.to_cells), along with the sites named in messages and related locations.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import replace
from functools import cache
from pathlib import Path

from gpumem_lint import notebook as nb
from gpumem_lint.diagnostics import Diagnostic, Position, RelatedLocation
from gpumem_lint.trace.sites import display_path


def is_notebook(path: str | os.PathLike) -> bool:
    return str(path).endswith(nb.SUFFIX)


@cache
def read(path: str) -> nb.Notebook | None:
    """The notebook at `path` (a real path), None when it cannot be read."""
    try:
        return nb.read_notebook(Path(path).read_bytes())
    except (OSError, nb.NotebookError):
        return None


def to_cells(diagnostics: Sequence[Diagnostic], files: Sequence[str]) -> list[Diagnostic]:
    """The report with every row of the notebooks among `files` given as a cell and a row in it."""
    notebooks = {
        os.path.realpath(file): notebook
        for file in files
        if is_notebook(file) and (notebook := read(os.path.realpath(file))) is not None
    }
    if not notebooks:
        return list(diagnostics)
    reference = re.compile(
        "|".join(rf"(?P<n{i}>{re.escape(display_path(path))}):(?P<r{i}>\d+)\b" for i, path in enumerate(notebooks))
    )
    by_index = list(notebooks.values())

    def cited(match: re.Match) -> str:
        index = next(i for i in range(len(by_index)) if match.group(f"n{i}") is not None)
        cell, row = by_index[index].cell_at(int(match.group(f"r{index}")))
        return f"{match.group(f'n{index}')}:cell {cell.number}:{row}"

    def related(location: RelatedLocation) -> RelatedLocation:
        notebook = notebooks.get(os.path.realpath(location.path))
        if notebook is None:
            return location
        cell, row = notebook.cell_at(location.start.row)
        start = Position(row, location.start.column)
        return replace(location, start=start, message=f"{location.message} (cell {cell.number})")

    mapped = []
    for diagnostic in diagnostics:
        diagnostic = replace(
            diagnostic,
            message=reference.sub(cited, diagnostic.message),
            related=tuple(related(location) for location in diagnostic.related),
        )
        notebook = notebooks.get(os.path.realpath(diagnostic.path))
        mapped.append(nb.to_cells(notebook, [diagnostic])[0] if notebook is not None else diagnostic)
    return mapped
