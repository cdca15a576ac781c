"""The runner's promises: one file's engine failure costs that file only, and the progress bar
appears only for long runs on a terminal."""

from __future__ import annotations

import pytest

from gpumem_lint import engine, progress
from gpumem_lint.cache import Cache, content_hash
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
        (tmp_path / name).write_text("import torch\ndef f(:\n")  # a trigger word: the engine's
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


def test_a_pool_hands_out_large_files_first_yet_each_result_stays_with_its_file(tmp_path):
    """The pool takes files largest first; every finding, and every cached entry, is still its file's."""
    hazard = "import torch\nx = torch.zeros(3)\nv = x[0]\nx.add_(1)\nprint(v)\n"
    names = []
    for index in range(40):
        name = f"m{index:02}.py"
        filler = "".join(f"def f{n}(a):\n    return a + {n}\n" for n in range(index * 3))
        (tmp_path / name).write_text(filler + (hazard if index % 3 == 0 else "") + ("def g(:\n" if index == 7 else ""))
        names.append(name)
    codes = tuple(rule.code for rule in ALL_RULES)
    jobs = [Job(tmp_path / name, name, codes) for name in names]

    def findings(result):
        return [(d.path, d.start.row, d.code) for d in result.diagnostics]

    alone = findings(lint_jobs(jobs, cores=1))
    cache = Cache(tmp_path / "cache", tmp_path)
    assert findings(lint_jobs(jobs, cache=cache, cores=2)) == alone
    assert {path for path, _, _ in alone} == {*(names[i] for i in range(0, 40, 3)), "m07.py"}
    cached = Cache(tmp_path / "cache", tmp_path)
    for job in jobs:
        digest = content_hash(job.path.read_bytes())
        assert [(d.path, d.start.row, d.code) for d in cached.lookup(job.path, job.display, digest, codes)] == [
            finding for finding in alone if finding[0] == job.display
        ]
