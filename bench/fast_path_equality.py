"""Prove the fast path loses nothing: lint every file twice, once parsing it in full and
once through the fast path (gpumem_lint/fast_path.py), and compare the diagnostics.

    python bench/fast_path_equality.py [--select GML1] [CORPUS_DIR ...]

Without directories it checks the corpora bench/corpora.py knows (the installed torch
package, and those of /work/corpora present here). Prints, per corpus, the files, the
files the fast path reduced, the share of lines libcst was given, and every difference;
exits 1 on any difference.
"""

from __future__ import annotations

import argparse
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpora import default_corpora, python_files

from gpumem_lint import fast_path
from gpumem_lint.engine import active_rules, lint_source
from gpumem_lint.rules import ALL_RULES
from gpumem_lint.source import decode_source


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpora", nargs="*", type=Path)
    parser.add_argument("--select", default="", help="rule code prefix (default: every rule)")
    parser.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)))
    args = parser.parse_args()
    corpora = {path.name: path for path in args.corpora} or default_corpora()
    codes = tuple(rule.code for rule in ALL_RULES if rule.code.startswith(args.select))
    failed = False
    with ProcessPoolExecutor(args.jobs) as pool:
        for name, root in corpora.items():
            files = python_files(root)
            results = list(pool.map(_compare, [(path, codes) for path in files], chunksize=8))
            lines = sum(result[1] for result in results)
            given = sum(result[2] for result in results)
            reduced = sum(result[3] for result in results)
            findings = sum(result[4] for result in results)
            differences = [difference for result in results for difference in result[0]]
            print(
                f"{name}: {len(files)} files, {lines} lines, {findings} findings; fast path reduced {reduced} "
                f"files, libcst given {given / max(lines, 1):.0%} of the lines; differences: {len(differences)}",
                flush=True,
            )
            for difference in differences:
                print("   ", difference)
            failed |= bool(differences)
    return 1 if failed else 0


def _compare(job: tuple[Path, tuple[str, ...]]) -> tuple[list[str], int, int, int, int]:
    """(differences, lines, lines libcst parses on the fast path, reduced?, findings)."""
    from gpumem_lint.rules import RULES_BY_CODE

    path, codes = job
    rules = [RULES_BY_CODE[code] for code in codes]
    try:
        text = decode_source(path.read_bytes())
    except (OSError, SyntaxError, UnicodeDecodeError, LookupError):
        return [], 0, 0, 0, 0
    lines = text.count("\n") + 1
    fast_path.enabled = False
    full = lint_source(text, str(path), rules)
    fast_path.enabled = True
    fast = lint_source(text, str(path), rules)
    active = active_rules(text, rules)
    reduction = fast_path.reduce_source(text, active) if active else None
    given = 0 if not active else (len(reduction.origin) if reduction else lines)
    differences = []
    if full != fast:
        only_full = [d for d in full if d not in fast]
        only_fast = [d for d in fast if d not in full]
        differences.append(f"{path}: full parse only {_show(only_full)}; fast path only {_show(only_fast)}")
    return differences, lines, given, int(reduction is not None), len(full)


def _show(diagnostics) -> str:
    return ", ".join(f"{d.start.row}:{d.start.column} {d.code} {d.message[:80]}" for d in diagnostics) or "-"


if __name__ == "__main__":
    raise SystemExit(main())
