"""The registry: every rule, in code order.

Each `gmlNNN_<name>.py` module in this package defines exactly one rule class;
adding a rule is adding its module.
"""

import importlib
import pkgutil
import re

from gpumem_lint.rules.base import Rule
from gpumem_lint.rules.gml001_invalid_syntax import InvalidSyntax
from gpumem_lint.rules.gml003_unreadable_file import UnreadableFile
from gpumem_lint.rules.gml009_internal_error import InternalError

_RULE_MODULE = re.compile(r"gml(\d{3})_\w+")


def _discover() -> tuple[type[Rule], ...]:
    rules = []
    for info in pkgutil.iter_modules(__path__):
        if not _RULE_MODULE.fullmatch(info.name):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        defined = [
            value
            for value in vars(module).values()
            if isinstance(value, type) and issubclass(value, Rule) and value.__module__ == module.__name__
        ]
        if len(defined) != 1 or defined[0].code != f"GML{_RULE_MODULE.fullmatch(info.name).group(1)}":
            raise ImportError(f"{module.__name__} must define exactly one rule, coded as its file name")
        rules.extend(defined)
    return tuple(sorted(rules, key=lambda rule: rule.code))


ALL_RULES: tuple[type[Rule], ...] = _discover()

RULES_BY_CODE: dict[str, type[Rule]] = {rule.code: rule for rule in ALL_RULES}

__all__ = ["ALL_RULES", "RULES_BY_CODE", "InternalError", "InvalidSyntax", "UnreadableFile"]
