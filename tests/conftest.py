"""Fixtures shared by the end-to-end tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """An empty working directory, with no colour or format settings inherited from the caller."""
    monkeypatch.chdir(tmp_path)
    for variable in ("FORCE_COLOR", "NO_COLOR", "GPUMEM_LINT_OUTPUT_FORMAT"):
        monkeypatch.delenv(variable, raising=False)
    return tmp_path
