"""SARIF 2.1.0, as GitHub code scanning ingests it.

- Every rule is described in `tool.driver.rules` (stable `ruleId` = code, `ruleIndex` =
  registry order): `shortDescription` is the summary, `fullDescription` the "What it does"
  section cut at a sentence to GitHub's 1,024 characters, `help` the whole rule page, `helpUri`
  where it is published.
- Locations are relative to the working directory (`uriBaseId: %SRCROOT%`, which
  `originalUriBaseIds` resolves), regions 1-based, columns counted in code points.
- `partialFingerprints.primaryLocationLineHash` hashes the rule and the flagged line with
  its blanks removed, plus the occurrence number: alerts follow code that moves.
- Fixes go in `fixes[]` (GitHub ignores them; other SARIF viewers apply them).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from rich.console import Console

from gpumem_lint import __version__
from gpumem_lint.diagnostics import Diagnostic, Position, Severity
from gpumem_lint.notebook import json_region
from gpumem_lint.rules import ALL_CODES
from gpumem_lint.output.rule_links import rule_url
from gpumem_lint.output.source_lines import SourceLines

if TYPE_CHECKING:
    from gpumem_lint.rules.base import Rule

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
#: GitHub's limit on `fullDescription.text`.
DESCRIPTION_LIMIT = 1024
_SECTION = re.compile(r"^## What it does\n(?P<body>.*?)(?=^## |\Z)", re.MULTILINE | re.DOTALL)
_RULE_INDEX = {code: index for index, code in enumerate(ALL_CODES)}


def render(diagnostics: Sequence[Diagnostic], console: Console, sources: SourceLines | None = None) -> None:
    console.out(json.dumps(sarif_log(diagnostics, sources=sources), indent=2, ensure_ascii=False), highlight=False)


def sarif_log(
    diagnostics: Sequence[Diagnostic], cwd: Path | None = None, sources: SourceLines | None = None
) -> dict[str, Any]:
    from gpumem_lint.rules import ALL_RULES

    root = Path(os.path.abspath(cwd or Path.cwd()))
    sources = sources or SourceLines(base=root)
    ordered = sorted(diagnostics, key=lambda diagnostic: diagnostic.sort_key)
    occurrences: Counter[tuple[str, str, str]] = Counter()
    results = []
    for diagnostic in ordered:
        line_hash = _line_hash(diagnostic, sources.of(diagnostic.path, diagnostic.cell))
        occurrences[(diagnostic.path, diagnostic.code, line_hash)] += 1
        fingerprint = f"{line_hash}:{occurrences[(diagnostic.path, diagnostic.code, line_hash)]}"
        results.append(_result(diagnostic, fingerprint, _notebook_region(diagnostic, sources)))
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "gpumem-lint",
                        "semanticVersion": __version__,
                        "rules": [rule_descriptor(rule) for rule in ALL_RULES],
                    }
                },
                "invocations": [{"executionSuccessful": True, "workingDirectory": {"uri": root.as_uri() + "/"}}],
                "originalUriBaseIds": {"%SRCROOT%": {"uri": root.as_uri() + "/"}},
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }


def rule_descriptor(rule: type[Rule]) -> dict[str, Any]:
    from gpumem_lint.docs import render_rule_page

    page = render_rule_page(rule)
    level = _level(rule.severity)
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": full_description(rule)},
        "helpUri": rule_url(rule.code),
        "help": {"text": page, "markdown": page},
        "defaultConfiguration": {"level": level},
        "properties": {"tags": ["correctness", "pytorch"], "precision": "high", "problem.severity": level},
    }


def full_description(rule: type[Rule]) -> str:
    """The "What it does" section as one paragraph, cut after a sentence to fit the limit."""
    match = _SECTION.search(rule.documentation())
    text = " ".join((match.group("body") if match else rule.summary).split())
    if len(text) <= DESCRIPTION_LIMIT:
        return text
    cut = text[:DESCRIPTION_LIMIT]
    sentence_end = cut.rfind(". ")
    return cut[: sentence_end + 1] if sentence_end > 0 else cut[: DESCRIPTION_LIMIT - 1] + "…"


def _notebook_region(diagnostic: Diagnostic, sources: SourceLines) -> tuple[Position, Position] | None:
    """A notebook finding's place in the notebook's JSON, which is what code scanning shows."""
    if diagnostic.cell is None:
        return None
    data = sources.contents(diagnostic.path)
    return None if data is None else json_region(data, diagnostic.cell, diagnostic.start, diagnostic.end)


def _result(
    diagnostic: Diagnostic, fingerprint: str, region: tuple[Position, Position] | None = None
) -> dict[str, Any]:
    """`region`: in a notebook, the finding's place in its JSON text (else the cell's rows are given)."""
    artifact = _artifact(diagnostic.path)
    start, end = region or (diagnostic.start, diagnostic.end)
    result: dict[str, Any] = {
        "ruleId": diagnostic.code,
        "level": _level(diagnostic.severity),
        "message": {"text": diagnostic.message + (f". Help: {diagnostic.help}" if diagnostic.help else "")},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": artifact,
                    "region": {
                        "startLine": start.row,
                        "startColumn": start.column,
                        "endLine": end.row,
                        "endColumn": end.column,
                    },
                }
            }
        ],
        "partialFingerprints": {"primaryLocationLineHash": fingerprint},
    }
    if diagnostic.code in _RULE_INDEX:
        result["ruleIndex"] = _RULE_INDEX[diagnostic.code]
    if diagnostic.cell is not None:  # a notebook: the cell, and where in it (the region is in the JSON)
        result["properties"] = {
            "cell": diagnostic.cell,
            "cellRegion": {"startLine": diagnostic.start.row, "startColumn": diagnostic.start.column},
        }
    if diagnostic.source is not None:  # `gpumem-lint trace`: the run's other locations and its verdict
        result["relatedLocations"] = [
            {
                "id": index,
                "physicalLocation": {
                    "artifactLocation": _artifact(related.path),
                    "region": {"startLine": related.start.row, "startColumn": related.start.column},
                },
                "message": {"text": related.message},
            }
            for index, related in enumerate(diagnostic.related)
        ]
        properties = result.setdefault("properties", {})
        properties.update(source=diagnostic.source, status=diagnostic.status)
    if diagnostic.fix is not None and diagnostic.cell is None:  # a notebook's edits count rows in a cell
        result["fixes"] = [
            {
                "description": {
                    "text": f"{diagnostic.fix.title or diagnostic.help} ({diagnostic.fix.applicability.value} fix)"
                },
                "artifactChanges": [
                    {
                        "artifactLocation": artifact,
                        "replacements": [
                            {
                                "deletedRegion": {
                                    "startLine": edit.start.row,
                                    "startColumn": edit.start.column,
                                    "endLine": edit.end.row,
                                    "endColumn": edit.end.column,
                                },
                                "insertedContent": {"text": edit.content},
                            }
                            for edit in diagnostic.fix.edits
                        ],
                    }
                ],
            }
        ]
    return result


def _artifact(path: str) -> dict[str, str]:
    """Display paths are relative to the working directory when under it, absolute otherwise."""
    if Path(path).is_absolute():
        return {"uri": Path(path).as_uri()}
    return {
        "uri": "/".join(quote(part.encode("utf-8", "surrogateescape"), safe="") for part in path.split("/")),
        "uriBaseId": "%SRCROOT%",
    }


def _line_hash(diagnostic: Diagnostic, lines: list[str] | None) -> str:
    row = diagnostic.start.row
    line = lines[row - 1] if lines and 1 <= row <= len(lines) else ""
    digest = hashlib.sha256(f"{diagnostic.code}\0{''.join(line.split())}".encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:16]


def _level(severity: Severity) -> str:
    return "error" if severity is Severity.ERROR else "warning"
