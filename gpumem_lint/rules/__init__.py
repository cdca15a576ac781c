"""The registry: every rule, in code order.

Each `gmlNNN_<name>.py` module in this package defines exactly one rule class;
adding a rule is adding its module. `ALL_CODES` is read from the module names, without
importing them: choosing rules and answering from the cache need codes only, and a run that
lints nothing (every file cached) never loads the rules, nor libcst. `ALL_RULES`,
`RULES_BY_CODE` and the tool rules are imported on first use.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpumem_lint.rules.base import Rule

_RULE_MODULE = re.compile(r"gml(\d{3})_\w+")
_MODULES = sorted(info.name for info in pkgutil.iter_modules(__path__) if _RULE_MODULE.fullmatch(info.name))

#: Every rule's code, in code order.
ALL_CODES: tuple[str, ...] = tuple(f"GML{_RULE_MODULE.fullmatch(name).group(1)}" for name in _MODULES)

#: Rules the engine reports itself, by the class name they are imported as.
_TOOL_RULES = {
    "InvalidSyntax": "gml001_invalid_syntax",
    "UnreadableFile": "gml003_unreadable_file",
    "InternalError": "gml009_internal_error",
}


def _discover() -> tuple[type[Rule], ...]:
    from gpumem_lint.rules.base import Rule

    rules = []
    for name in _MODULES:
        module = importlib.import_module(f"{__name__}.{name}")
        defined = [
            value
            for value in vars(module).values()
            if isinstance(value, type) and issubclass(value, Rule) and value.__module__ == module.__name__
        ]
        if len(defined) != 1 or defined[0].code != f"GML{_RULE_MODULE.fullmatch(name).group(1)}":
            raise ImportError(f"{module.__name__} must define exactly one rule, coded as its file name")
        rules.extend(defined)
    return tuple(sorted(rules, key=lambda rule: rule.code))


def __getattr__(name: str):
    if name == "ALL_RULES":
        value = _discover()
    elif name == "RULES_BY_CODE":
        value = {rule.code: rule for rule in __getattr__("ALL_RULES")}
    elif name in _TOOL_RULES:
        value = getattr(importlib.import_module(f"{__name__}.{_TOOL_RULES[name]}"), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # computed once
    return value


__all__ = ["ALL_CODES", "ALL_RULES", "RULES_BY_CODE", "InternalError", "InvalidSyntax", "UnreadableFile"]
