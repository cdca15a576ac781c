"""The runner's promises: one file's engine failure costs that file only, and the progress bar
appears only for long runs on a terminal."""

from __future__ import annotations

import pytest

from gpumem_lint import engine, progress
from gpumem_lint.rules import ALL_RULES
from gpumem_lint.runner import Job, lint_jobs


def test_an_engine_crash_becomes_an_internal_error_for_that_file_only(tmp_path, monkeypatch):
    real = engine.lint_bytes

    def crash_on_b(data, display, rules, dependencies=None):
        if display == "b.py":
            raise AttributeError("planted")
        return real(data, display, rules, dependencies)

    monkeypatch.setattr(engine, "lint_bytes", crash_on_b)  # the runner looks it up per file
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text("def f(:\n")
    codes = tuple(rule.code for rule in ALL_RULES)
    result = lint_jobs([Job(tmp_path / name, name, codes) for name in ("a.py", "b.py")])
    assert [(d.path, d.code) for d in result.diagnostics] == [("a.py", "GML001"), ("b.py", "GML009")]
    assert "AttributeError" in result.diagnostics[1].message


@pytest.mark.parametrize(
    ("files", "quiet", "environment", "terminal", "shown"),
    [
        (progress.LONG_RUN_FILES, False, {}, True, True),
        (progress.LONG_RUN_FILES - 1, False, {}, True, False),
        (progress.LONG_RUN_FILES, True, {}, True, False),
        (progress.LONG_RUN_FILES, False, {"CI": "true"}, True, False),
        (progress.LONG_RUN_FILES, False, {"PRE_COMMIT": "1"}, True, False),
        (progress.LONG_RUN_FILES, False, {}, False, False),
    ],
)
def test_progress_bar_only_for_long_runs_on_a_terminal(monkeypatch, files, quiet, environment, terminal, shown):
    for variable in ("CI", "PRE_COMMIT"):
        monkeypatch.delenv(variable, raising=False)
    for variable, value in environment.items():
        monkeypatch.setenv(variable, value)
    monkeypatch.setattr(progress.sys.stderr, "isatty", lambda: terminal, raising=False)
    assert progress.wanted(files, quiet) is shown
