"""Proof by running: every fix whose INVALID example is a whole program is run before and after
the fix, each in its own Python process under torch.

Before the fix the program raises (or hangs), or prints something other than the example's
`prints`; after it, the program exits cleanly and prints exactly `prints` when declared. A
program marked `cuda=True` shows its hazard only on a GPU and is skipped without one.
"""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest

from gpumem_lint.rules import ALL_RULES

torch = pytest.importorskip("torch")

#: Seconds one run of an example may take (importing torch is most of it).
TIMEOUT = 120


def _whole_program(code: str) -> bool:
    definitions = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)
    return any(not isinstance(statement, definitions) for statement in ast.parse(code).body)


#: The rules whose fixes change what a program does (GML0xx fix the lint's own comments).
FIXING_RULES = [rule for rule in ALL_RULES if rule.fix_applicability is not None and not rule.code.startswith("GML0")]


def _proofs() -> list:
    return [
        pytest.param(example, id=f"{rule.code}-INVALID-{index}")
        for rule in FIXING_RULES
        for index, example in enumerate(rule.INVALID)
        if example.fixed is not None and _whole_program(example.code)
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
    if example.cuda and not torch.cuda.is_available():
        pytest.skip("the hazard shows only on a GPU")
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
    examples = [e for e in rule.INVALID if e.fixed is not None and _whole_program(e.code)]
    assert examples, "give an INVALID example that is a whole program, with its fixed source"
