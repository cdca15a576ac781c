"""The exact output users see on the demo project, per format. Review a change, then refresh
the files with `GPUMEM_LINT_UPDATE_SNAPSHOTS=1 python -m pytest tests/test_snapshots.py`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpumem_lint.cli import main

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"


@pytest.mark.parametrize("output_format", ["full", "concise", "json"])
def test_demo_project_output(output_format, capsys, monkeypatch):
    for variable in ("FORCE_COLOR", "NO_COLOR", "GPUMEM_LINT_OUTPUT_FORMAT"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.chdir(ROOT)
    with pytest.raises(SystemExit) as exit_info:
        main(["fixtures/demo_project", "--output-format", output_format])
    assert exit_info.value.code == 1
    output = capsys.readouterr().out
    snapshot = SNAPSHOTS / f"demo_project.{output_format}.txt"
    if os.environ.get("GPUMEM_LINT_UPDATE_SNAPSHOTS"):
        snapshot.write_text(output, encoding="utf-8")
    assert output == snapshot.read_text(encoding="utf-8")
