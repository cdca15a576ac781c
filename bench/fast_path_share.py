"""How much of each corpus libcst is given: the characters the fast path keeps (gpumem_lint/fast_path.py).

    python bench/fast_path_share.py [CORPUS ...]

Per corpus: its characters, those libcst parses (a reduced file's kept text, or a whole file), the files
parsed whole because an active rule declares no `scope_triggers`, and those rules with how many such
files each is active in. Files no rule's trigger word reaches count as given nothing. Only CPython's
parser runs, so it takes seconds where a lint takes minutes.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpora import default_corpora, python_files

from gpumem_lint import fast_path
from gpumem_lint.engine import active_rules
from gpumem_lint.rules import ALL_RULES
from gpumem_lint.source import decode_source


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpora", nargs="*", help="corpus names from bench/corpora.py (default: all)")
    args = parser.parse_args()
    available = default_corpora()
    for name in args.corpora or list(available):
        total = given = whole = whole_files = 0
        untriggered: Counter[str] = Counter()
        for path in python_files(available[name]):
            try:
                text = decode_source(path.read_bytes())
            except (OSError, SyntaxError, UnicodeDecodeError, LookupError):
                continue
            total += len(text)
            active = active_rules(text, ALL_RULES)
            if not active:
                continue
            reduction = fast_path.reduce_source(text, active)
            given += len(reduction.text) if reduction else len(text)
            if reduction is None and any(rule.scope_triggers is None for rule in active):
                whole += len(text)
                whole_files += 1
                untriggered.update(rule.code for rule in active if rule.scope_triggers is None)
        rules = ", ".join(f"{code} {count}" for code, count in sorted(untriggered.items()))
        print(
            f"{name}: {total / 1e6:.2f} M characters, libcst given {given / 1e6:.2f} M ({given / max(total, 1):.1%}); "
            f"{whole_files} files parsed whole for rules without scope triggers ({whole / 1e6:.2f} M): {rules or '-'}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
