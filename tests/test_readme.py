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


def section(markdown: str, title: str) -> str:
    start = markdown.index(f"\n## {title}\n")
    end = markdown.find("\n## ", start + 1)
    return markdown[start : end if end != -1 else None]


def test_the_cache_numbers_are_those_of_the_benchmark_report():
    """Every timing the Cache section quotes is in bench/README.md, whose tables are measured."""
    cache = section((REPO / "README.md").read_text(encoding="utf-8"), "Cache")
    bench = (REPO / "bench" / "README.md").read_text(encoding="utf-8")
    quoted = re.findall(r"\d+(?:\.\d+)?(?:–\d+(?:\.\d+)?)? ?(?:s|%)(?!\w)", cache)
    assert quoted
    for number in quoted:
        for value in number.replace("–", " ").rstrip("s%").split():
            assert re.search(rf"(?<![\d.]){re.escape(value)} ?(s|%)", bench), f"{number} is not in bench/README.md"
