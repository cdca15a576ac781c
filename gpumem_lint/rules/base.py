"""What a rule is: one self-describing unit (code, name, docs, examples, check).

A rule's docstring is its user documentation, in Markdown, with the sections
`## What it does`, `## Why is this bad?`, `## Example`, `## Use instead`,
`## Fix safety` and `## References`. `VALID` and `INVALID` are executable
examples: the test suite lints each one, and `rules/<CODE>.md` is rendered
from the class, so behaviour, docs and tests cannot drift apart.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import libcst as cst

from gpumem_lint.diagnostics import Applicability, Fix, Severity

if TYPE_CHECKING:
    from gpumem_lint.context import FileContext

DOC_SECTIONS = (
    "What it does",
    "Why is this bad?",
    "Example",
    "Use instead",
    "Fix safety",
    "References",
)


@dataclass(frozen=True)
class Invalid:
    """A snippet the rule must flag, on exactly the given 1-based lines.

    `fixed` is the source after applying every fix the findings offer (unsafe ones too);
    it is required when the rule offers a fix for the snippet, and must be None otherwise.
    `prints` is what the fixed program writes to stdout (stripped) when it is a whole program
    that runs: the original raises or prints something else (tests/test_fix_proofs.py runs both).
    `cuda` is how many GPUs the program needs to show its hazard (run only where they are present);
    `standalone=False` one that runs only under a launcher (torchrun's process-group environment).
    """

    code: str
    lines: tuple[int, ...]
    fixed: str | None = None
    prints: str | None = None
    cuda: int = 0
    standalone: bool = True


@dataclass(frozen=True)
class Report:
    """What a rule hands to the engine: the node to underline, what to say, and
    optionally a fix (see `gpumem_lint.fixes`) and a remedy for this finding in place of
    the rule's `fix_title` (the message states the problem, the help line the remedy)."""

    node: cst.CSTNode
    message: str
    fix: Fix | None = None
    help: str | None = None


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]
    severity: ClassVar[Severity] = Severity.ERROR
    #: One line: the hazard, for listings and SARIF short descriptions.
    summary: ClassVar[str]
    #: The remedy, shown as the `help:` line under each finding.
    fix_title: ClassVar[str]
    #: A file that contains none of these substrings cannot hold the hazard.
    triggers: ClassVar[tuple[str, ...]] = ()
    #: A finer, slower check run only on files a trigger matched: no match, no hazard.
    file_trigger: ClassVar[re.Pattern[str] | None] = None
    #: Where in a file the findings can lie. None (the default): anywhere, and the rule sees the
    #: whole module, as a rule that follows module-level program order must. Patterns: each
    #: finding lies in a scope (the module's statements, a top-level function, a method) whose
    #: own source matches one of them, so libcst may skip the scopes that do not (fast_path.py).
    scope_triggers: ClassVar[tuple[re.Pattern[str], ...] | None] = None
    #: The tier of the fixes the rule offers (shown on its page), or None when it offers none.
    fix_applicability: ClassVar[Applicability | None] = None
    VALID: ClassVar[tuple[str, ...]] = ()
    INVALID: ClassVar[tuple[Invalid, ...]] = ()

    def check(self, ctx: FileContext) -> Iterator[Report]:
        """Yield the findings in one file. Tool-level rules are emitted by the engine."""
        return iter(())

    @classmethod
    def documentation(cls) -> str:
        return inspect.cleandoc(cls.__doc__ or "")
