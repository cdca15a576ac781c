"""Safety: `check` runs nothing it reads and writes nothing but its cache; `--fix` writes
each file atomically, so an interrupted run leaves every file either old or new."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_bad_input import HAZARD, run

from gpumem_lint.cli import main


def test_configuration_is_data_and_never_executed(capsys, tree):
    marker = tree / "executed"
    (tree / "pyproject.toml").write_text(
        f"[tool.gpumem-lint]\nselect = [\"__import__('pathlib').Path({str(marker)!r}).touch()\"]\n"
    )
    (tree / "model.py").write_text(HAZARD)
    code, _, err = run(capsys, ".")
    assert code == 2 and "select" in err
    assert not marker.exists()


def test_check_writes_nothing_outside_its_cache(capsys, tree):
    (tree / "pkg").mkdir()
    (tree / "pkg" / "model.py").write_text(HAZARD)
    (tree / "pkg" / "broken.py").write_text("def f(:\n")
    before = snapshot(tree)
    with pytest.raises(SystemExit):
        main(["--output-format", "concise", "."])
    capsys.readouterr()
    written = {path for path in set(snapshot(tree).items()) ^ set(before.items())}
    assert all(Path(path).parts[0].startswith(".gpumem_lint_cache") for path, _ in written), written


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(path.relative_to(root)): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}


def test_an_interrupted_fix_leaves_the_old_file_and_no_temporary(capsys, tree, monkeypatch):
    model = tree / "model.py"
    model.write_text(
        "import torch\n\ndef augment(path):\n    t = torch.load(path)\n    original = t.numpy()\n    t.mul_(2)\n    return original.mean(), t.mean()\n"
    )
    before = model.read_bytes()

    def interrupted(source, destination):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(SystemExit) as exit_info:
        main(["--fix", "--unsafe-fixes", "--no-cache", "."])
    capsys.readouterr()
    assert exit_info.value.code == 130  # as an interrupted shell command
    assert model.read_bytes() == before
    assert sorted(path.name for path in tree.iterdir()) == ["model.py"]
