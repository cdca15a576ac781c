"""Where does a cold run's time go? One process, every file of a corpus, each stage timed.

    python bench/profile_cold.py [CORPUS ...] [--limit N] [--checkout]

Stages are timed by wrapping the functions that do them (no profiler overhead on the
Python-heavy stages), exclusive of each other: reading and decoding, deciding what to
parse (CPython's `ast` and the trigger scan, fast_path.py), libcst parsing, the semantic
model (scopes and flow analysis), positions, program order and the imported modules it
summarises, CPython's syntax check of files no rule can flag, each rule family's own work,
and the rest (suppressions, output types).
The floor, libcst parsing every file, is timed on the same texts for comparison.
`--checkout` lints each corpus as speed.py does, its files copied under a project root (so that
first-party imports are followed).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from functools import cached_property, wraps
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import libcst
from corpora import default_corpora, python_files

from gpumem_lint import collector, engine
from gpumem_lint.context import FileContext
from gpumem_lint.rules import ALL_RULES
from gpumem_lint.semantic import module_graph
from gpumem_lint.semantic.model import SemanticModel
from gpumem_lint.source import decode_source

_spent: dict[str, float] = {}
_stack: list[list] = []  # [stage, started, time spent in nested stages]


def _timed(stage: str, function):
    @wraps(function)
    def wrapper(*args, **kwargs):
        _stack.append([stage, time.process_time(), 0.0])
        try:
            return function(*args, **kwargs)
        finally:
            name, started, nested = _stack.pop()
            total = time.process_time() - started
            _spent[name] = _spent.get(name, 0.0) + total - nested
            if _stack:
                _stack[-1][2] += total

    return wrapper


def _listed(check):
    """A rule's check runs as its findings are consumed: time it to the end."""

    @wraps(check)
    def wrapper(*args, **kwargs):
        return list(check(*args, **kwargs))

    return wrapper


def _instrument() -> None:
    engine.reduce_source = _timed("fast path: ast + trigger scan", engine.reduce_source)
    libcst.parse_module = _timed("libcst parse", libcst.parse_module)
    engine._syntax_only = _timed("syntax check of files no rule can flag", engine._syntax_only)
    SemanticModel.build = classmethod(_timed("semantic model (scopes, flow)", SemanticModel.build.__func__))
    module_graph._summarise = _timed("imported modules summarised (GML2xx/GML3xx)", module_graph._summarise)
    for rule in ALL_RULES:
        rule.check = _timed(f"rules {rule.code[:4]}xx", _listed(rule.check))
    for name, stage in (("positions", "positions"), ("program_order", "program order (GML2xx/GML3xx)")):
        prop = cached_property(_timed(stage, getattr(FileContext, name).func))
        prop.__set_name__(FileContext, name)
        setattr(FileContext, name, prop)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpora", nargs="*", default=["timm"])
    parser.add_argument("--limit", type=int, default=0, help="only the first N files of each corpus")
    parser.add_argument("--checkout", action="store_true", help="each corpus as a checkout, as speed.py lints it")
    parser.add_argument("--select", default="", help="only the rules whose code starts with this (default: every rule)")
    args = parser.parse_args()
    available = default_corpora()
    texts: list[tuple[str, str]] = []
    scratch = tempfile.TemporaryDirectory()
    started = time.process_time()
    for name in args.corpora:
        root = available[name]
        if args.checkout:
            from speed import checkout

            root = checkout(name, root, Path(scratch.name))
        files = python_files(root)[: args.limit or None]
        for path in files:
            try:
                texts.append((str(path), decode_source(path.read_bytes())))
            except (OSError, SyntaxError, UnicodeDecodeError, LookupError):
                continue
    read = time.process_time() - started
    floor_started = time.process_time()
    for _, text in texts:
        try:
            libcst.parse_module(text)
        except Exception:
            continue
    floor = time.process_time() - floor_started
    _instrument()
    lint = _timed("rules and the rest", engine.lint_source)
    rules = [rule for rule in ALL_RULES if rule.code.startswith(args.select)]
    started = time.process_time()
    with collector.linting():  # as runner.py sets it
        for display, text in texts:
            lint(text, display, rules)
    total = time.process_time() - started
    lines = sum(text.count("\n") + 1 for _, text in texts)
    form = " (as checkouts)" if args.checkout else ""
    print(f"{', '.join(args.corpora)}{form}: {len(texts)} files, {lines:,} lines; CPU seconds, one process")
    print(f"  {'floor: libcst parses every file':44} {floor:7.2f}")
    print(f"  {'reading and decoding':44} {read:7.2f}")
    print(f"  {'lint (cold, no cache)':44} {total:7.2f}  = {total / floor:.2f} x floor")
    for stage, spent in sorted(_spent.items(), key=lambda item: -item[1]):
        print(f"    {stage:42} {spent:7.2f}  {spent / total:6.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
