import io
import re
import tokenize
from collections.abc import Collection, Sequence

from gpumem_lint.diagnostics import Applicability, Diagnostic, Edit, Fix, Position, Severity
from gpumem_lint.noqa import line_directive, parse_suppressions
from gpumem_lint.rules.base import Invalid, Rule

#: Findings that mean the rules did not run on the whole file: nothing can be judged unused then.
_NOT_ANALYSED = frozenset({"GML001", "GML003", "GML009"})
# str.splitlines (which numbers suppression rows) breaks at these as well; Python's rows do not.
_EXTRA_LINE_BREAKS = re.compile(r"[\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


class UnusedSuppression(Rule):
    """
    ## What it does
    Flags a gpumem-lint code in a `# noqa: ...` comment when that rule is enabled for the
    file and reports nothing on the line, as ruff's RUF100 does for its own codes.

    Only enabled gpumem-lint codes are judged: codes of other tools (`E501`, `BLE001`) and a
    bare `# noqa` belong to those tools, and a code disabled by the configuration may be
    meant for a run that enables it. File-level `# gpumem-lint: noqa` directives are not
    judged either.

    ## Why is this bad?
    A stale suppression is a blind spot: the hazard it once hid was fixed or moved, and
    the next real finding on that line will be hidden as well, without anyone deciding so.

    ## Example
    ```python
    def forward(self, x):
        y = x + self.bias  # noqa: GML107
        return y
    ```

    ## Use instead
    ```python
    def forward(self, x):
        y = x + self.bias
        return y
    ```

    ## Fix safety
    The fix is safe: it removes the unused codes, and the whole directive when no code is
    left. A directive followed by more comment text (`# noqa: GML107 -- reason`) is not
    fixed, since removing its codes would turn it into a bare `# noqa`.

    ## References
    - [ruff: unused-noqa (RUF100)](https://docs.astral.sh/ruff/rules/unused-noqa/)
    """

    code = "GML002"
    name = "unused-suppression"
    severity = Severity.WARNING
    summary = "A `# noqa` names a gpumem-lint code that reports nothing on its line"
    fix_title = "Remove the unused code from the `# noqa` comment"
    fix_applicability = Applicability.SAFE
    VALID = (
        """
import torch.nn as nn

class PositionalEncoding(nn.Module):
    def forward(self, x):
        x += self.pe[: x.size(0)]  # noqa: GML107
        return self.dropout(x)
""",
        "import torch\n\nvalue = torch.zeros(3)  # noqa: E501\nother = value + 1  # noqa\n",
        'import torch\n\nHELP = "write # noqa: GML107 on the line"\n',
    )
    INVALID = (
        Invalid(
            "import torch\n\ndef shift(x):\n    y = x + 1  # noqa: GML107\n    return y\n",
            (4,),
            fixed="import torch\n\ndef shift(x):\n    y = x + 1\n    return y\n",
        ),
        Invalid(
            "import torch\n\nvalue = torch.zeros(3)  # noqa: GML107, E501\n",
            (3,),
            fixed="import torch\n\nvalue = torch.zeros(3)  # noqa: E501\n",
        ),
    )


def unused_suppressions(
    text: str,
    display: str,
    rules: Sequence[type[Rule]],
    diagnostics: Sequence[Diagnostic],
    used: Collection[tuple[int, str]],
) -> list[Diagnostic]:
    """GML002 findings for a file whose other findings are `diagnostics`; `used` holds the
    (row, code) of each directive that suppressed something."""
    if "noqa" not in text.lower() or any(d.code in _NOT_ANALYSED for d in diagnostics):
        return []
    if _EXTRA_LINE_BREAKS.search(text):
        return []
    suppressions = parse_suppressions(text)
    enabled = {rule.code for rule in rules} - {UnusedSuppression.code}
    candidates = {
        row: sorted(code for code in codes if code in enabled and (row, code) not in used)
        for row, codes in suppressions.line_codes.items()
        if "*" not in codes
    }
    candidates = {row: codes for row, codes in candidates.items() if codes}
    if not candidates:
        return []
    comments = _comment_starts(text)
    lines = _LINE_BREAK.split(text)
    findings = []
    for row, unused in sorted(candidates.items()):
        line = lines[row - 1]
        match = line_directive(line)
        if match is None or not any(start <= match.start() for start in comments.get(row, ())):
            continue  # the text looks like a directive but sits in a string
        if suppressions.suppresses(UnusedSuppression.code, (row,)):
            continue
        listed = ", ".join(unused)
        message = (
            f"unused `noqa` directive for {listed}: {'that rule reports' if len(unused) == 1 else 'those rules report'}"
            " nothing on this line, so the comment would only hide the next real finding here"
        )
        start, end = Position(row, match.start() + 1), Position(row, match.end() + 1)
        findings.append(
            Diagnostic(
                display,
                start,
                end,
                UnusedSuppression.code,
                UnusedSuppression.name,
                message,
                UnusedSuppression.fix_title,
                UnusedSuppression.severity,
                _removal(row, line, match, set(unused)),
            )
        )
    return findings


def _removal(row: int, line: str, match: re.Match[str], unused: set[str]) -> Fix | None:
    written = [code for code in re.split(r"[\s,]+", match.group("codes").strip()) if code]
    kept = [code for code in written if code.upper() not in unused]
    if kept:
        edit = Edit(Position(row, match.start("codes") + 1), Position(row, match.end("codes") + 1), ", ".join(kept))
    elif line[match.end() :].strip():
        return None
    else:
        # The directive and the blanks before it go; the rest of the line stays.
        start = len(line[: match.start()].rstrip())
        edit = Edit(Position(row, start + 1), Position(row, len(line) + 1), "")
    return Fix((edit,), Applicability.SAFE)


def _comment_starts(text: str) -> dict[int, list[int]]:
    """Row -> 0-based columns where comments begin (tokenized, so strings are not comments)."""
    starts: dict[int, list[int]] = {}
    try:
        for token in tokenize.generate_tokens(io.StringIO(text, newline=None).readline):
            if token.type == tokenize.COMMENT:
                starts.setdefault(token.start[0], []).append(token.start[1])
    except (tokenize.TokenError, SyntaxError):
        return {}
    return starts
