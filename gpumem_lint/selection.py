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
from typing import TYPE_CHECKING

from gpumem_lint.config import ConfigError, SelectorLayer, Settings, project_relative
from gpumem_lint.rules import ALL_CODES

if TYPE_CHECKING:  # imported for per-file-ignores only
    from pathspec import GitIgnoreSpec

ALL = "ALL"
_SELECTOR = re.compile(r"(?P<linter>[A-Z]+)[0-9]*")


@dataclass(frozen=True)
class RuleSelection:
    """The codes of the selected rules (rules are imported only where a file is linted)."""

    codes: tuple[str, ...]
    project_root: Path
    #: (pattern, codes it turns off), in the order the configuration lists them.
    per_file_ignores: tuple[tuple[GitIgnoreSpec, frozenset[str]], ...] = ()

    @classmethod
    def from_settings(cls, settings: Settings, codes: Sequence[str] = ALL_CODES) -> RuleSelection:
        if settings.per_file_ignores:
            from pathspec import GitIgnoreSpec
        per_file = tuple(
            (GitIgnoreSpec.from_lines([pattern]), _codes_for_all(selectors, codes, f"per-file-ignores '{pattern}'"))
            for pattern, selectors in settings.per_file_ignores
        )
        return cls(resolve_codes(settings.selector_layers, codes), settings.project_root, per_file)

    def codes_for(self, path: Path) -> tuple[str, ...]:
        """The selected codes minus those that per-file-ignores turns off for `path`."""
        if not self.per_file_ignores:
            return self.codes
        relative = project_relative(path, self.project_root)
        ignored: set[str] = set()
        for spec, codes in self.per_file_ignores:
            if spec.match_file(relative):
                ignored |= codes
        return tuple(code for code in self.codes if code not in ignored)


def resolve_codes(layers: Sequence[SelectorLayer], codes: Sequence[str] = ALL_CODES) -> tuple[str, ...]:
    """Apply each layer in turn to the default selection (every rule); keep registry order."""
    selected = set(codes)
    for layer in layers:
        steps = [(selector, True) for selector in (*(layer.select or ()), *layer.extend_select)]
        steps += [(selector, False) for selector in layer.ignore]
        # Less specific first, and at equal specificity an ignore after a select, so it wins.
        steps.sort(key=lambda step: (specificity(step[0]), not step[1]))
        enabled: dict[str, bool] = {}
        for selector, enable in steps:
            for code in codes_matching(selector, codes, layer.origin):
                enabled[code] = enable
        if layer.select is not None:
            selected = {code for code, on in enabled.items() if on}
        else:
            selected |= {code for code, on in enabled.items() if on}
            selected -= {code for code, on in enabled.items() if not on}
    return tuple(code for code in codes if code in selected)


def specificity(selector: str) -> int:
    """`ALL` < `GML` < `GML1` < `GML10` < `GML101`."""
    return 0 if selector == ALL else len(selector)


def codes_matching(selector: str, codes: Sequence[str], origin: str) -> frozenset[str]:
    """The codes `selector` names; a selector that names none is a typo and an error."""
    if selector == ALL:
        return frozenset(codes)
    match = _SELECTOR.fullmatch(selector)
    found = frozenset(
        code
        for code in codes
        if match and code.startswith(selector) and _SELECTOR.fullmatch(code)["linter"] == match["linter"]
    )
    if not found:
        raise ConfigError(f"{origin}: unknown rule selector '{selector}'")
    return found


def _codes_for_all(selectors: Sequence[str], codes: Sequence[str], origin: str) -> frozenset[str]:
    return frozenset().union(*(codes_matching(selector, codes, origin) for selector in selectors))
