"""Proof by running: every fix whose INVALID example is a whole program is run before and after
the fix, each in its own Python process under torch.

Before the fix the program raises (or hangs), or prints something other than the example's
`prints`; after it, the program exits cleanly and prints exactly `prints` when declared. A
program marked `cuda=N` shows its hazard only on N GPUs and is skipped where fewer are present.
"""

from __future__ import annotations

import ast
import builtins
import subprocess
import symtable
import sys

import pytest

from gpumem_lint.engine import lint_source
from gpumem_lint.rules import ALL_RULES

torch = pytest.importorskip("torch")

#: Seconds one run of an example may take (importing torch is most of it).
TIMEOUT = 120


def _whole_program(code: str) -> bool:
    """Module-level code that does more than define things, and defines every global name it uses
    (an example calling an undefined `build_model()` shows the shape of a hazard, not a program)."""
    definitions = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)
    body = ast.parse(code).body
    if all(isinstance(statement, definitions) for statement in body):
        return False
    module = symtable.symtable(code, "<example>", "exec")
    bound = {symbol.get_name() for symbol in module.get_symbols() if symbol.is_assigned() or symbol.is_imported()}
    if not _free_globals(module) <= bound | set(dir(builtins)):
        return False
    defined = set(dir(builtins))  # module-level code reads only names bound above it
    for statement in body:
        # an assignment's value is read before its target is bound; a loop or `with` binds its own names
        own = set() if isinstance(statement, (ast.Assign, ast.AugAssign, ast.AnnAssign)) else _bound_by(statement)
        if not _module_level_loads(statement) <= defined | own:
            return False
        defined |= _bound_by(statement)
    return True


def _module_level_loads(statement: ast.stmt) -> set[str]:
    if isinstance(statement, (ast.FunctionDef, ast.ClassDef)):
        return set()
    if isinstance(statement, ast.AugAssign):
        return _loads(statement.value) | _loads(statement.target) | {getattr(statement.target, "id", "")} - {""}
    return _loads(statement)


def _loads(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _bound_by(statement: ast.stmt) -> set[str]:
    names = {n.id for n in ast.walk(statement) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        names |= {(alias.asname or alias.name).split(".")[0] for alias in statement.names}
    if isinstance(statement, (ast.FunctionDef, ast.ClassDef)):
        names.add(statement.name)
    return names


def _free_globals(table: symtable.SymbolTable) -> set[str]:
    names = {
        symbol.get_name()
        for symbol in table.get_symbols()
        if symbol.is_referenced() and (symbol.is_global() or table.get_type() == "module")
    }
    return names.union(*(_free_globals(child) for child in table.get_children()))


#: The rules whose fixes change what a program does (GML0xx fix the lint's own comments).
FIXING_RULES = [rule for rule in ALL_RULES if rule.fix_applicability is not None and not rule.code.startswith("GML0")]


def _proven_by_running(rule, example) -> bool:
    """A whole program that runs standalone, whose fixed source no longer shows the rule's hazard
    (an example that also shows a hazard without a fix still fails after the fix)."""
    if example.fixed is None or not example.standalone or not _whole_program(example.code):
        return False
    return all(d.code != rule.code for d in lint_source(example.fixed, "example.py", ALL_RULES))


def _proofs() -> list:
    return [
        pytest.param(example, id=f"{rule.code}-INVALID-{index}")
        for rule in FIXING_RULES
        for index, example in enumerate(rule.INVALID)
        if _proven_by_running(rule, example)
    ]


def _run(source: str, tmp_path, name: str) -> tuple[int | None, str, str]:
    """(exit status or None when it ran past TIMEOUT, stdout stripped, stderr)."""
    script = tmp_path / f"{name}.py"  # a file, so that a spawned child can import it again
    script.write_text(source, encoding="utf-8")
    try:
        done = subprocess.run(
            [sys.executable, script.name], cwd=tmp_path, capture_output=True, text=True, timeout=TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired:
        return None, "", "timed out"
    return done.returncode, done.stdout.strip(), done.stderr


@pytest.mark.parametrize("example", _proofs())
def test_fixed_program_runs_and_the_original_does_not(example, tmp_path):
    if torch.cuda.device_count() < example.cuda:
        pytest.skip(f"the hazard shows only on {example.cuda} GPU(s)")
    status, out, err = _run(example.fixed, tmp_path, "fixed")
    assert status == 0, f"the fixed program fails:\n{err[-3000:]}"
    if example.prints is not None:
        assert out == example.prints, "the fixed program prints something else"
    status, out, err = _run(example.code, tmp_path, "original")
    if status == 0:
        assert example.prints is not None, "the original runs cleanly: declare what the fixed one prints (`prints=`)"
        assert out != example.prints, "the original already prints the right value: the example shows no hazard"


@pytest.mark.parametrize("rule", [pytest.param(rule, id=rule.code) for rule in FIXING_RULES])
def test_every_fix_is_proven_by_a_program(rule):
    assert any(_proven_by_running(rule, e) for e in rule.INVALID), (
        "give an INVALID example that is a whole program, with its fixed source"
    )
