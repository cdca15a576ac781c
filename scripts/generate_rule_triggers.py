"""Write gpumem_lint/rule_triggers.json: each rule's trigger words, name, severity and help line.

    python scripts/generate_rule_triggers.py

Read from the rules themselves (`Rule.triggers`, `name`, `severity`, `fix_title`). A run whose
files show none of the selected rules' trigger words is answered from this table and CPython's
own parser (gpumem_lint/untriggered.py), without importing the rules or libcst;
tests/test_untriggered.py checks the table against the rules.
"""

from __future__ import annotations

import json
from pathlib import Path

from gpumem_lint.rules import ALL_RULES

OUTPUT = Path(__file__).resolve().parent.parent / "gpumem_lint" / "rule_triggers.json"


def table() -> dict[str, dict[str, object]]:
    return {
        rule.code: {
            "name": rule.name,
            "severity": rule.severity.value,
            "fix_title": rule.fix_title,
            "triggers": list(rule.triggers),
        }
        for rule in ALL_RULES
    }


def main() -> None:
    OUTPUT.write_text(json.dumps(table(), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUTPUT}")


if __name__ == "__main__":
    main()
