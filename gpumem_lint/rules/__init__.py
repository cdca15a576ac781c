"""The registry: one table of every rule, in code order."""

from gpumem_lint.rules.base import Rule
from gpumem_lint.rules.gml001_invalid_syntax import InvalidSyntax
from gpumem_lint.rules.gml003_unreadable_file import UnreadableFile
from gpumem_lint.rules.gml009_internal_error import InternalError

ALL_RULES: tuple[type[Rule], ...] = (
    InvalidSyntax,
    UnreadableFile,
    InternalError,
)

RULES_BY_CODE: dict[str, type[Rule]] = {rule.code: rule for rule in ALL_RULES}

__all__ = ["ALL_RULES", "RULES_BY_CODE", "InternalError", "InvalidSyntax", "UnreadableFile"]
