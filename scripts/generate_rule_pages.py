"""Write `rules/<CODE>.md` and `rules/README.md` from the rule classes.

python scripts/generate_rule_pages.py          # write the pages, remove pages of deleted rules
python scripts/generate_rule_pages.py --check  # exit 1 if any page is missing, stale or extra
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gpumem_lint.docs import rule_pages
from gpumem_lint.rules import ALL_RULES

RULES_DIR = Path(__file__).resolve().parent.parent / "rules"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="report differences instead of writing")
    check = parser.parse_args().check

    expected = rule_pages(ALL_RULES)
    existing = {path.name for path in RULES_DIR.glob("*.md")} if RULES_DIR.is_dir() else set()
    stale = sorted(name for name, text in expected.items() if _read(RULES_DIR / name) != text)
    extra = sorted(existing - expected.keys())
    if check:
        for name in stale:
            print(f"rules/{name} is missing or out of date", file=sys.stderr)
        for name in extra:
            print(f"rules/{name} belongs to no rule", file=sys.stderr)
        if stale or extra:
            print("run: python scripts/generate_rule_pages.py", file=sys.stderr)
            return 1
        return 0
    RULES_DIR.mkdir(exist_ok=True)
    for name in stale:
        (RULES_DIR / name).write_text(expected[name], encoding="utf-8")
    for name in extra:
        (RULES_DIR / name).unlink()
    print(f"{len(stale)} page(s) written, {len(extra)} removed, in {RULES_DIR}")
    return 0


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return None


if __name__ == "__main__":
    sys.exit(main())
