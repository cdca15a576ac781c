"""The project follows its own advice: `gpumem-lint` in the repository's root finds nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpumem_lint.cli import main

REPO = Path(__file__).resolve().parent.parent


def test_the_repository_lints_clean(capsys, monkeypatch):
    monkeypatch.delenv("GPUMEM_LINT_OUTPUT_FORMAT", raising=False)
    monkeypatch.chdir(REPO)
    with pytest.raises(SystemExit) as exit_info:
        main(["--no-cache", "--output-format", "concise"])
    out = capsys.readouterr().out
    assert (exit_info.value.code, out) == (0, "All checks passed!\n")
