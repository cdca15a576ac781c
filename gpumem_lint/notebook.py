"""Jupyter notebooks: their code cells are one program, run in cell order.

The code cells are joined into one Python text (`Notebook.text`) that the engine lints like a
file, so the program order, `# noqa` comments and fixes work across cells as in a module.
IPython syntax that is not Python (`%magic`, `!shell`, `x = !cmd`, `obj?`, a `%%bash` cell, a
one-line cell `ls /data` that automagic runs as `%ls`) is masked first, keeping every line in
place, and a cell indented as a whole is dedented as IPython does; findings are mapped back to `cell N:row:col`,
N counting every cell of the notebook from 1. A notebook is read with the json module (it is
plain JSON, nbformat 4); writing back changes only the `source` of the cells a fix changed,
so outputs, execution counts, metadata and cell ids are kept.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

from gpumem_lint.diagnostics import Diagnostic, Edit, Position

SUFFIX = ".ipynb"

#: Cell magics whose body is Python; any other (`%%bash`, `%%html`, ...) masks the whole cell.
_PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug", "memit", "profile"})
_LINE_MAGIC = re.compile(r"^(?P<indent>[ \t]*)(?:[%!]|\?)")
_ASSIGNED_MAGIC = re.compile(r"^(?P<target>[ \t]*[\w.]+(?:[ \t]*,[ \t]*[\w.]+)*[ \t]*=[ \t]*)[%!]")
_HELP = re.compile(r"^(?P<indent>[ \t]*)[\w.]+\?{1,2}[ \t]*$")
#: `ls /data`: the name a one-line cell begins with, and what follows it.
_FIRST_WORD = re.compile(r"^[ \t]*(?P<name>[A-Za-z_]\w*)")
#: IPython's line magics (scripts/generate_ipython_magics.py).
_MAGICS_PATH = Path(__file__).resolve().parent / "knowledge" / "ipython.json"
#: How messages name a row of the same file (`ctx.line`).
_LINE_REFERENCE = re.compile(r"\bline (\d+)\b")


class NotebookError(ValueError):
    """Not a notebook this tool can read: bad JSON, or not nbformat 4."""


@dataclass(frozen=True)
class Cell:
    #: 1-based, among all the notebook's cells (markdown ones too), as the user counts them.
    number: int
    #: Where the cell sits in the document's `cells`.
    position: int
    #: The cell's source as written, with a final line break added when it lacked one.
    source: str
    #: `source` with IPython syntax masked: the text the engine lints.
    masked: str
    had_final_newline: bool
    #: The indentation IPython removes from the lines that start with it (the first line's).
    indent: str = ""

    @property
    def rows(self) -> int:
        return self.masked.count("\n")

    def shift(self, row: int) -> int:
        """How many columns of `row` (1-based) the dedent removed."""
        lines = self.source.splitlines()
        dedented = bool(self.indent) and 0 < row <= len(lines) and lines[row - 1].startswith(self.indent)
        return len(self.indent) if dedented else 0


@dataclass(frozen=True)
class Notebook:
    document: dict
    cells: tuple[Cell, ...]

    @property
    def text(self) -> str:
        return "".join(cell.masked for cell in self.cells)

    def cell_at(self, row: int) -> tuple[Cell, int]:
        """The cell holding row `row` of `text`, and the row within it (both 1-based)."""
        first = 1
        for cell in self.cells:
            if row < first + cell.rows:
                return cell, row - first + 1
            first += cell.rows
        last = self.cells[-1]  # the end of the text: the end of the last cell
        return last, row - first + last.rows + 1

    def first_row(self, number: int) -> int:
        """The row of `text` where cell `number` starts."""
        row = 1
        for cell in self.cells:
            if cell.number == number:
                return row
            row += cell.rows
        raise KeyError(number)


def read_notebook(data: bytes) -> Notebook:
    try:
        document = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError) as error:
        raise NotebookError(f"not a notebook: invalid JSON ({error})") from None
    if not isinstance(document, dict) or not isinstance(document.get("cells"), list):
        raise NotebookError("not a notebook: no list of cells (nbformat 4)")
    language = document.get("metadata", {}).get("language_info", {}).get("name", "python")
    cells = []
    if language == "python":
        for position, cell in enumerate(document["cells"]):
            if isinstance(cell, dict) and cell.get("cell_type") == "code":
                source = _joined(cell.get("source", ""))
                ended = source.endswith("\n") or not source
                source = source if ended else source + "\n"
                cells.append(Cell(position + 1, position, source, mask(source), ended, leading_indent(source)))
    return Notebook(document, tuple(cells))


def leading_indent(source: str) -> str:
    """The indentation of the cell's first line that holds anything: IPython removes it from every
    line that starts with it before it runs the cell (`    import os` runs as `import os`)."""
    first = next((line for line in source.splitlines() if line.strip()), "")
    return first[: len(first) - len(first.lstrip(" \t"))]


def mask(source: str) -> str:
    """The cell with each IPython-only line replaced by Python of the same rows: `pass` at its
    indentation (so blocks still parse), `x = ...` for `x = !ls`, nothing for a foreign cell magic;
    dedented as IPython dedents it."""
    indent = leading_indent(source)
    lines = [line.removeprefix(indent) for line in source.splitlines(keepends=True)]
    if _automagic(lines):
        return "pass\n" + "\n" * (len(lines) - 1)
    # Colab runs a cell magic after its form's comment lines (`#@title ...`), so look past them.
    first = next((row for row, line in enumerate(lines) if line.strip() and not line.lstrip().startswith("#")), None)
    if first is not None and lines[first].startswith("%%"):
        magic = lines[first][2:].split(maxsplit=1)[0] if lines[first][2:].strip() else ""
        if magic not in _PYTHON_CELL_MAGICS:
            return "\n" * len(lines)
        lines[first] = "\n"
    masked = []
    continued = False
    for line in lines:
        body = line.rstrip("\r\n")
        if continued:
            masked.append("\n")
        elif assigned := _ASSIGNED_MAGIC.match(body):
            masked.append(f"{assigned.group('target')}...\n")
        elif (magic := _LINE_MAGIC.match(body) or _HELP.match(body)) is not None:
            masked.append(f"{magic.group('indent')}pass\n")
        else:
            masked.append(line)
            continue
        continued = body.endswith("\\")
    return "".join(masked)


def _automagic(lines: list[str]) -> bool:
    """A cell of one line (blank lines above it aside, none below) that begins with a line magic's name and is
    not Python: IPython's automagic runs `ls /data` as `%ls /data` (only in a one-line cell). A line
    that is Python (`run(model)`, `ls = []`) is kept: which of the two IPython runs depends on the
    names the session has bound."""
    rest = lines[next((row for row, line in enumerate(lines) if line.strip()), len(lines)) :]
    if len("".join(rest).splitlines()) != 1:
        return False
    words = _FIRST_WORD.match(rest[0])
    if words is None or words.group("name") not in _line_magics():
        return False
    try:
        compile(rest[0], "<cell>", "exec")
    except SyntaxError:
        return True
    return False


@cache
def _line_magics() -> frozenset[str]:
    return frozenset(json.loads(_MAGICS_PATH.read_text(encoding="utf-8"))["line_magics"])


def to_cells(notebook: Notebook, diagnostics: Sequence[Diagnostic]) -> list[Diagnostic]:
    """Findings in `notebook.text` as findings in its cells."""
    return [_to_cell(notebook, diagnostic) for diagnostic in diagnostics]


def _to_cell(notebook: Notebook, diagnostic: Diagnostic) -> Diagnostic:
    cell, row = notebook.cell_at(diagnostic.start.row)

    def moved(position: Position) -> Position:
        row_in_cell = position.row - (diagnostic.start.row - row)
        return Position(row_in_cell, position.column + cell.shift(row_in_cell))

    fix = diagnostic.fix
    if fix is not None:
        if all(notebook.cell_at(row)[0] is cell for edit in fix.edits for row in (edit.start.row, edit.end.row)):
            fix = replace(fix, edits=tuple(Edit(moved(e.start), moved(e.end), e.content) for e in fix.edits))
        else:
            fix = None  # a fix across cells: --fix applies it on the whole text, the report shows none
    message = _LINE_REFERENCE.sub(lambda match: _line_in_cell(notebook, int(match.group(1)), cell), diagnostic.message)
    return replace(
        diagnostic, message=message, start=moved(diagnostic.start), end=moved(diagnostic.end), fix=fix, cell=cell.number
    )


def _line_in_cell(notebook: Notebook, row: int, current: Cell) -> str:
    """A message's "line 13" of the joined text, as the notebook numbers it: "cell 2, line 4"."""
    cell, row_in_cell = notebook.cell_at(row)
    return f"line {row_in_cell}" if cell is current else f"cell {cell.number}, line {row_in_cell}"


def to_text(notebook: Notebook, diagnostic: Diagnostic) -> Diagnostic:
    """The inverse of `to_cells` for the positions (for `--add-noqa`)."""
    offset = notebook.first_row(diagnostic.cell) - 1
    cell = next(cell for cell in notebook.cells if cell.number == diagnostic.cell)

    def placed(position: Position) -> Position:
        return Position(position.row + offset, position.column - cell.shift(position.row))

    return replace(diagnostic, start=placed(diagnostic.start), end=placed(diagnostic.end), cell=None)


def with_text(notebook: Notebook, fixed: str) -> dict[int, str] | None:
    """The new source of each cell that `fixed` (a changed `notebook.text`) changes, by cell
    number; the masked lines get their IPython back. None when a change spans two cells."""
    before = notebook.text.splitlines(keepends=True)
    after = fixed.splitlines(keepends=True)
    owners = [cell for cell in notebook.cells for _ in range(cell.rows)]
    originals = [line for cell in notebook.cells for line in cell.source.splitlines(keepends=True)]
    lines: dict[int, list[str]] = {cell.number: [] for cell in notebook.cells}
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        if tag == "equal":
            for i in range(i1, i2):
                lines[owners[i].number].append(originals[i])
            continue
        if len({owners[i].number for i in range(i1, i2)}) > 1:
            return None
        # A deletion or replacement stays in its cell; an insertion joins the line above it.
        owner = owners[i1] if i1 < i2 else owners[max(i1 - 1, 0)]
        lines[owner.number].extend(owner.indent + line if line.strip() else line for line in after[j1:j2])
    changed = {}
    for cell in notebook.cells:
        source = "".join(lines[cell.number])
        if source != cell.source:
            changed[cell.number] = source if cell.had_final_newline else source.removesuffix("\n")
    return changed


def write_sources(notebook: Notebook, sources: dict[int, str], original: bytes) -> bytes:
    """The notebook's JSON with those cells' sources replaced, laid out as nbformat writes it."""
    document = json.loads(original.decode("utf-8-sig"))
    for cell in notebook.cells:
        if cell.number in sources:
            entry = document["cells"][cell.position]
            source = sources[cell.number]
            entry["source"] = source.splitlines(keepends=True) if isinstance(entry.get("source"), list) else source
    text = original.decode("utf-8-sig")
    indent = re.match(r"\{\r?\n( +)", text)
    dumped = json.dumps(document, indent=len(indent.group(1)) if indent else 1, ensure_ascii=False)
    return (dumped + "\n" if text.endswith("\n") else dumped).encode("utf-8")


def cell_source(data: bytes, number: int) -> str | None:
    """Cell `number`'s source as written, for code frames."""
    try:
        notebook = read_notebook(data)
    except NotebookError:
        return None
    return next((cell.source for cell in notebook.cells if cell.number == number), None)


def _joined(source: object) -> str:
    return "".join(source) if isinstance(source, list) else str(source)


def json_region(data: bytes, number: int, start: Position, end: Position) -> tuple[Position, Position] | None:
    """Where cell `number`'s rows `start`..`end` lie in the notebook's JSON text, when it is laid
    out as Jupyter writes it (each source line a string on a line of its own); else None."""
    text = data.decode("utf-8-sig", errors="replace")
    lines = text.splitlines()
    indent = re.match(r"\{\r?\n( +)", text)
    if indent is None:
        return None
    key = " " * (3 * len(indent.group(1))) + '"source": ['  # a key of a cell, not of an output
    sources = [row for row, line in enumerate(lines, start=1) if line == key]
    try:
        document = read_notebook(data)
    except NotebookError:
        return None
    cell = next((cell for cell in document.cells if cell.number == number), None)
    if cell is None or cell.position >= len(sources):
        return None
    first = sources[cell.position]  # the `"source": [` line; the cell's row 1 is on the next
    source_lines = cell.source.splitlines(keepends=True)

    def placed(position: Position) -> Position | None:
        row = min(position.row, len(source_lines))
        json_line = lines[first + row - 1] if first + row - 1 < len(lines) else ""
        quoted = json.dumps(source_lines[row - 1][: position.column - 1], ensure_ascii=False)[:-1]
        opening = len(json_line) - len(json_line.lstrip())
        if not json_line.lstrip().startswith(quoted):
            return None
        return Position(first + row, opening + len(quoted) + 1)

    start_at, end_at = placed(start), placed(end)
    return (start_at, end_at) if start_at and end_at else None
