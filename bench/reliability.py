"""Reliability at scale: real corpora and generated programs, zero internal errors.

    python bench/reliability.py corpora [NAME ...]     # lint each corpus, then fix a copy of every fixable file
    python bench/reliability.py generated [--examples N]

`corpora` lints every corpus of `bench/corpora.py` through the real command line, counts
findings per code and internal errors (GML009), then runs `--fix --unsafe-fixes` on every
file with a fixable finding (in memory) and checks that the result parses and that a
second fix changes nothing. `generated` does the same on hypothesmith programs. Results
are printed as Markdown rows for bench/reliability-results.md.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpora import default_corpora, python_files

from gpumem_lint.autofix import fix_source, parses
from gpumem_lint.rules import ALL_RULES
from gpumem_lint.source import decode_source


def lint_corpus(root: Path) -> dict:
    started = time.perf_counter()
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpumem_lint",
            "--no-cache",
            "--exit-zero",
            "--output-format",
            "json",
            str(root),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - started
    if completed.returncode != 0:
        return {"error": f"exit {completed.returncode}: {completed.stderr.strip()[-500:]}"}
    findings = json.loads(completed.stdout)
    return {
        "files": len(python_files(root)),
        "seconds": round(seconds, 1),
        "codes": Counter(finding["code"] for finding in findings),
        "fixable": sorted({finding["filename"] for finding in findings if finding.get("fix")}),
    }


def check_fixes(paths: list[str]) -> tuple[int, list[str]]:
    """Fix each file in memory; the problems found (none expected)."""
    problems = []
    for name in paths:
        text = decode_source(Path(name).read_bytes())
        once = fix_source(text, name, ALL_RULES, unsafe=True)
        if once.broken or not parses(once.text, name):
            problems.append(f"{name}: fix did not parse ({', '.join(once.broken)})")
        elif fix_source(once.text, name, ALL_RULES, unsafe=True).text != once.text:
            problems.append(f"{name}: a second fix changed the file")
    return len(paths), problems


def run_corpora(names: list[str]) -> int:
    corpora = default_corpora()
    selected = {name: corpora[name] for name in names} if names else corpora
    print("| corpus | files | seconds | findings | GML001 | GML003 | GML009 | files fixed | fix problems |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    failures = 0
    for name, root in selected.items():
        result = lint_corpus(root)
        if "error" in result:
            print(f"| {name} | error: {result['error']} |")
            failures += 1
            continue
        codes = result["codes"]
        fixed, problems = check_fixes(result["fixable"])
        failures += codes["GML009"] + len(problems)
        print(
            f"| {name} | {result['files']} | {result['seconds']} | {sum(codes.values())} | {codes['GML001']} "
            f"| {codes['GML003']} | {codes['GML009']} | {fixed} | {len(problems)} |"
        )
        for problem in problems:
            print(f"  - {problem}", file=sys.stderr)
    return 1 if failures else 0


def run_generated(examples: int) -> int:
    import hypothesmith
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from test_generated_programs import (
        FIXABLE,
        PREFIX,
        assert_fix_is_sound,
        assert_no_internal_error,
    )

    warnings.simplefilter("ignore", SyntaxWarning)  # hypothesmith compiles what it generates
    configured = settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    checks = {
        "lint from_grammar()": given(hypothesmith.from_grammar())(lambda s: assert_no_internal_error(PREFIX + s)),
        "lint from_node()": given(hypothesmith.from_node())(lambda s: assert_no_internal_error(PREFIX + s)),
        "fix from_node() + fixable example": given(hypothesmith.from_node(), st.sampled_from(FIXABLE))(
            lambda s, f: assert_fix_is_sound(PREFIX + s + "\n" + f)
        ),
    }
    print("| property | examples | seconds | result |")
    print("|---|---:|---:|---|")
    failed = 0
    for name, check in checks.items():
        started = time.perf_counter()
        try:
            configured(check)()
            outcome = "passed"
        except Exception as error:
            outcome = f"FAILED: {type(error).__name__}: {str(error)[:200]}"
            failed += 1
        print(f"| {name} | {examples} | {time.perf_counter() - started:.0f} | {outcome} |")
    return 1 if failed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    corpora = commands.add_parser("corpora")
    corpora.add_argument("names", nargs="*")
    generated = commands.add_parser("generated")
    generated.add_argument("--examples", type=int, default=1000)
    arguments = parser.parse_args()
    if arguments.command == "corpora":
        return run_corpora(arguments.names)
    return run_generated(arguments.examples)


if __name__ == "__main__":
    sys.exit(main())
