"""Which rules run on which file: rule selectors resolved as ruff resolves them.

A selector is `ALL`, a full code (`GML101`) or a code prefix (`GML1`, `GML`). Each
settings layer (the file, then the command line) applies its selectors from the
least specific to the most specific, ignores after selects of the same
specificity, so `select = ["GML"]` with `ignore = ["GML101"]` drops GML101 while
`select = ["GML101"]` with `ignore = ["GML"]` keeps it. A layer's `select`
replaces the set built so far; `extend-select` and `ignore` edit it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pathspec import GitIgnoreSpec

from gpumem_lint.config import ConfigError, SelectorLayer, Settings, project_relative
from gpumem_lint.rules import ALL_RULES
from gpumem_lint.rules.base import Rule

ALL = "ALL"
_SELECTOR = re.compile(r"(?P<linter>[A-Z]+)[0-9]*")


@dataclass(frozen=True)
class RuleSelection:
    rules: tuple[type[Rule], ...]
    project_root: Path
    #: (pattern, codes it turns off), in the order the configuration lists them.
    per_file_ignores: tuple[tuple[GitIgnoreSpec, frozenset[str]], ...] = ()

    @classmethod
    def from_settings(cls, settings: Settings, rules: Sequence[type[Rule]] = ALL_RULES) -> RuleSelection:
        per_file = tuple(
            (GitIgnoreSpec.from_lines([pattern]), _codes_for_all(selectors, rules, f"per-file-ignores '{pattern}'"))
            for pattern, selectors in settings.per_file_ignores
        )
        return cls(resolve_rules(settings.selector_layers, rules), settings.project_root, per_file)

    def rules_for(self, path: Path) -> tuple[type[Rule], ...]:
        """The selected rules minus those that per-file-ignores turns off for `path`."""
        if not self.per_file_ignores:
            return self.rules
        relative = project_relative(path, self.project_root)
        ignored: set[str] = set()
        for spec, codes in self.per_file_ignores:
            if spec.match_file(relative):
                ignored |= codes
        return tuple(rule for rule in self.rules if rule.code not in ignored)


def resolve_rules(layers: Sequence[SelectorLayer], rules: Sequence[type[Rule]] = ALL_RULES) -> tuple[type[Rule], ...]:
    """Apply each layer in turn to the default selection (every rule); keep registry order."""
    selected = {rule.code for rule in rules}
    for layer in layers:
        steps = [(selector, True) for selector in (*(layer.select or ()), *layer.extend_select)]
        steps += [(selector, False) for selector in layer.ignore]
        # Less specific first, and at equal specificity an ignore after a select, so it wins.
        steps.sort(key=lambda step: (specificity(step[0]), not step[1]))
        enabled: dict[str, bool] = {}
        for selector, enable in steps:
            for code in codes_matching(selector, rules, layer.origin):
                enabled[code] = enable
        if layer.select is not None:
            selected = {code for code, on in enabled.items() if on}
        else:
            selected |= {code for code, on in enabled.items() if on}
            selected -= {code for code, on in enabled.items() if not on}
    return tuple(rule for rule in rules if rule.code in selected)


def specificity(selector: str) -> int:
    """`ALL` < `GML` < `GML1` < `GML10` < `GML101`."""
    return 0 if selector == ALL else len(selector)


def codes_matching(selector: str, rules: Sequence[type[Rule]], origin: str) -> frozenset[str]:
    """The codes `selector` names; a selector that names none is a typo and an error."""
    if selector == ALL:
        return frozenset(rule.code for rule in rules)
    match = _SELECTOR.fullmatch(selector)
    codes = frozenset(
        rule.code
        for rule in rules
        if match and rule.code.startswith(selector) and _SELECTOR.fullmatch(rule.code)["linter"] == match["linter"]
    )
    if not codes:
        raise ConfigError(f"{origin}: unknown rule selector '{selector}'")
    return codes


def _codes_for_all(selectors: Sequence[str], rules: Sequence[type[Rule]], origin: str) -> frozenset[str]:
    return frozenset().union(*(codes_matching(selector, rules, origin) for selector in selectors))
