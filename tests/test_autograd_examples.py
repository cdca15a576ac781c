"""The in-place rules' examples, run under torch: each INVALID example that is a whole program
raises the error its rule documents, and each VALID one that is a whole program runs cleanly.

A whole program is one whose module-level code does more than define classes and functions;
an example that only defines them is checked by the linter alone.
"""

from __future__ import annotations

import ast

import pytest

from gpumem_lint.rules import RULES_BY_CODE

torch = pytest.importorskip("torch")

#: What PyTorch raises for each rule's hazard (docs/facts.md F5, F6, F21, F24, A1-A4).
ERRORS = {
    "GML104": r"more than one element of the written-to tensor refers to a single memory location",
    "GML105": r"is a view and is being modified inplace",
    "GML108": r"leaf Variable that requires grad is being used in an in-place operation",
    "GML109": r"modified by an inplace operation",
    "GML110": r"some elements of the input tensor and the written-to tensor refer to a single memory location",
}


def _runs_something(code: str) -> bool:
    definitions = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)
    return any(not isinstance(statement, definitions) for statement in ast.parse(code).body)


def _examples(kind: str):
    for code in ERRORS:
        rule = RULES_BY_CODE[code]
        for index, example in enumerate(getattr(rule, kind)):
            source = example if isinstance(example, str) else example.code
            fixed = None if isinstance(example, str) else example.fixed
            if _runs_something(source):
                yield pytest.param(code, source, fixed, id=f"{code}-{kind}-{index}")


@pytest.mark.parametrize(("code", "source", "fixed"), list(_examples("INVALID")))
def test_invalid_program_raises_the_documented_error(code, source, fixed):
    with pytest.raises(RuntimeError, match=ERRORS[code]):
        exec(compile(source, f"<{code}>", "exec"), {})  # noqa: S102 - running the example is the test
    if fixed is not None:  # the fix removes the hazard: the fixed program runs
        exec(compile(fixed, f"<{code} fixed>", "exec"), {})  # noqa: S102


@pytest.mark.parametrize(("code", "source", "fixed"), list(_examples("VALID")))
def test_valid_program_runs_cleanly(code, source, fixed):
    exec(compile(source, f"<{code}>", "exec"), {})  # noqa: S102 - running the example is the test


def test_every_autograd_rule_has_a_program_of_each_kind():
    for code in ERRORS:
        assert any(p.values[0] == code for p in _examples("INVALID")), code
        assert any(p.values[0] == code for p in _examples("VALID")), code
