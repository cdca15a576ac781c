"""The README's instructions work from a clone: nothing is installed from the package index, where
gpumem-lint is not published, and pre-commit is pointed at a revision that exists."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOCUMENTS = [REPO / "README.md", REPO / ".pre-commit-hooks.yaml"]


def commands(pattern: str) -> list[str]:
    return [match for path in DOCUMENTS for match in re.findall(pattern, path.read_text(encoding="utf-8"))]


def test_gpumem_lint_is_installed_from_a_clone_or_from_git():
    installs = commands(r"pip install ([^\n&`]*gpumem-lint[^\n&`]*)")
    assert installs
    for install in installs:
        assert "git+https://github.com/gpumem-lint/gpumem-lint" in install, install


def test_every_pre_commit_rev_exists():
    revisions = {rev.strip("\"'") for rev in commands(r"\brev: (\S+)")}
    assert revisions
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    for revision in revisions:
        found = subprocess.run(["git", "rev-parse", "--verify", "--quiet", revision], cwd=REPO, capture_output=True)
        assert found.returncode == 0, f"rev: {revision} is not a revision of this repository"
