"""Prove that hollowing imported modules loses nothing: summarise every module of a corpus
twice, from its whole text and from the part a summary can run
(gpumem_lint/semantic/import_time_source.py), and compare.

    python bench/summary_equality.py [CORPUS_DIR ...]

Each module is summarised as an import (what `import m` causes) and as a call of each of
its top-level functions and classes (what `m.f()` causes), with its own events only (the
modules it imports are summarised on their own), or with `--follow` also with the events of
the first-party modules it imports (as a linted file's imports are). Without directories it checks the corpora
bench/corpora.py knows. Prints, per corpus, the summaries compared, the share of lines
libcst was given, and every difference; exits 1 on any difference.
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import libcst
from corpora import default_corpora, python_files

from gpumem_lint.semantic import module_graph
from gpumem_lint.semantic.import_time_source import ImportStatements, import_time_source
from gpumem_lint.source import decode_source


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpora", nargs="*", type=Path)
    parser.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--follow", action="store_true", help="add the events of the modules each imports")
    args = parser.parse_args()
    corpora = {path.name: path for path in args.corpora} or default_corpora()
    failed = False
    with ProcessPoolExecutor(args.jobs) as pool:
        for name, root in corpora.items():
            files = python_files(root)
            results = list(pool.map(_compare, files, [args.follow] * len(files), chunksize=8))
            summaries = sum(result[1] for result in results)
            events = sum(result[2] for result in results)
            lines = sum(result[3] for result in results)
            given = sum(result[4] for result in results)
            differences = [difference for result in results for difference in result[0]]
            print(
                f"{name}: {len(results)} modules, {summaries} summaries with {events} events; "
                f"libcst given {given / max(lines, 1):.0%} of the lines; differences: {len(differences)}",
                flush=True,
            )
            for difference in differences:
                print("   ", difference)
            failed |= bool(differences)
    return 1 if failed else 0


def _compare(path: Path, follow: bool) -> tuple[list[str], int, int, int, int]:
    """(differences, summaries, events, lines of every summary, lines libcst was given)."""
    try:
        text = decode_source(path.read_bytes())
        tree = ast.parse(text)
        whole_module = libcst.parse_module(text)
    except (OSError, SyntaxError, ValueError, LookupError, RecursionError, MemoryError, libcst.ParserSyntaxError):
        return [], 0, 0, 0, 0  # (UnicodeDecodeError is a ValueError)
    names = [node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    mtime = path.stat().st_mtime_ns
    lines = text.count("\n") + 1
    differences: list[str] = []
    events = given = 0
    # Unless followed, imports are not: each module is compared on its own events.
    depth = 1 if follow else module_graph.MAX_IMPORT_DEPTH
    for function in [None, *names]:
        whole = module_graph.summary_of(whole_module, text, None, path, depth, function)
        hollowed = module_graph._summarise(path, mtime, depth, function)
        acts = module_graph._calls_that_act(tree, path) if function is None else None
        reduction = import_time_source(text, tree, function, acts)
        if reduction is None:
            given += lines
        elif not isinstance(reduction, ImportStatements):  # import statements alone are not given to libcst
            given += len(reduction.origin)
        events += len(whole.sites)
        if whole != hollowed:
            differences.append(f"{path} ({function or 'import'}): whole {_show(whole)}; hollowed {_show(hollowed)}")
    return differences, len(names) + 1, events, lines * (len(names) + 1), given


def _show(summary) -> str:
    if summary is None:
        return "not summarised"
    return ", ".join(f"{site.event} {site.call!r} line {site.line}" for site in summary.sites) or "-"


if __name__ == "__main__":
    raise SystemExit(main())
