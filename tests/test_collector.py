"""collector.py changes CPython's collector only while a run lints or a tree is built, and puts it back."""

from __future__ import annotations

import gc

import pytest

from gpumem_lint import collector
from gpumem_lint.runner import Job, lint_jobs


def test_linting_freezes_the_loaded_heap_and_scans_less_often_then_restores_both():
    before = gc.get_threshold()
    with collector.linting():
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == (50_000, *before[1:])
    assert (gc.get_threshold(), gc.get_freeze_count()) == (before, 0)


def test_linting_restores_the_collector_after_an_error():
    before = gc.get_threshold()
    with pytest.raises(KeyError), collector.linting():
        raise KeyError
    assert (gc.get_threshold(), gc.get_freeze_count()) == (before, 0)


@pytest.mark.parametrize("enabled", [True, False])
def test_paused_leaves_the_collector_as_it_found_it(enabled):
    (gc.enable if enabled else gc.disable)()
    try:
        with collector.paused():
            assert not gc.isenabled()
        assert gc.isenabled() is enabled
    finally:
        gc.enable()


def test_a_run_lints_under_the_linting_collector_and_restores_it(tmp_path, monkeypatch):
    source = tmp_path / "a.py"
    source.write_text("import torch\n\ndef clamp(p):\n    p.data.clamp_(-1, 1)\n")  # shows GML101's trigger
    thresholds = []
    monkeypatch.setattr("gpumem_lint.engine.lint_bytes", lambda *args: thresholds.append(gc.get_threshold()[0]) or [])
    before = gc.get_threshold()
    lint_jobs([Job(source, "a.py", ("GML101",))])
    assert thresholds == [50_000]
    assert (gc.get_threshold(), gc.get_freeze_count()) == (before, 0)
