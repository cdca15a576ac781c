"""Fix coverage: how many findings carry a fix, per rule, per safety tier and in total.

Lints the fixtures and the recall cases (or the paths given) with `--no-cache --output-format json`,
every rule in the default selection, and counts the findings whose `fix` is not null (issue 20's
measure: at least half of them should carry one).

    python bench/fix_coverage.py                 # fixtures/hazards, fixtures/demo_project, bench/recall/cases
    python bench/fix_coverage.py PATH...         # other files or directories
    python bench/fix_coverage.py --markdown      # the table as bench/README.md shows it
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PATHS = ("fixtures/hazards", "fixtures/demo_project", "bench/recall/cases")


def findings(paths: list[str]) -> list[dict]:
    command = [sys.executable, "-m", "gpumem_lint", "--no-cache", "--output-format", "json", "-e", *paths]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def table(found: list[dict]) -> list[tuple[str, int, int, str]]:
    """(rule, findings, with a fix, tiers of those fixes) per rule, then the total."""
    total, fixed, tiers = Counter(), Counter(), {}
    for finding in found:
        code = finding["code"]
        total[code] += 1
        if finding["fix"] is not None:
            fixed[code] += 1
            tiers.setdefault(code, Counter())[finding["fix"]["applicability"]] += 1
    rows = [(code, total[code], fixed[code], _tiers(tiers.get(code, Counter()))) for code in sorted(total)]
    every = sum(tiers.values(), Counter())
    rows.append(("total", sum(total.values()), sum(fixed.values()), _tiers(every)))
    return rows


def _tiers(counts: Counter) -> str:
    return ", ".join(f"{tier} {n}" for tier, n in sorted(counts.items()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", default=list(DEFAULT_PATHS))
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    rows = table(findings(args.paths))
    if args.markdown:
        print("| rule | findings | with a fix | fraction | tiers |")
        print("|---|---:|---:|---:|---|")
    for code, n, with_fix, tiers in rows:
        share = f"{100 * with_fix / n:.0f} %"
        if args.markdown:
            print(f"| {code} | {n} | {with_fix} | {share} | {tiers} |")
        else:
            print(f"{code:8} {with_fix:4} / {n:<4} {share:>5}  {tiers}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
