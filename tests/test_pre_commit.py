"""The hooks of .pre-commit-hooks.yaml, run by the real `pre-commit` in a temporary git repository.

The hook definitions are read from the manifest and used as a `repo: local` hook that installs
this checkout (`additional_dependencies`), so the test needs no published tag and sees the
working tree. pre-commit builds one environment for all the cases (about 10-30 s, the pip
install); the tests are marked `slow`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")  # pre-commit's own dependency

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent
HAZARD = """import torch

def augment(path):
    t = torch.load(path)
    original = t.numpy()
    t.mul_(2)
    return original.mean(), t.mean()
"""
STALE_NOQA = "import torch\n\nvalue = torch.zeros(3)  # noqa: GML107\n"


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    root = tmp_path_factory.mktemp("pre-commit")
    project = root / "project"
    project.mkdir()
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    for hook in hooks:
        hook["additional_dependencies"] = [str(REPO)]
    config = {"repos": [{"repo": "local", "hooks": hooks}]}
    (project / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config))
    git(project, "init", "-q")
    git(project, "add", ".pre-commit-config.yaml")
    return project


def git(project: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=project, check=True, capture_output=True)


def pre_commit(project: Path, hook: str, *files: str) -> subprocess.CompletedProcess:
    environment = {key: value for key, value in os.environ.items() if key not in ("CI", "FORCE_COLOR")}
    environment["PRE_COMMIT_HOME"] = str(project.parent / "home")
    arguments = ["--files", *files] if files else ["--all-files"]
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", hook, "--color", "never", *arguments],
        cwd=project,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,  # the exit code is what the tests check
    )


def add(project: Path, name: str, content: str) -> str:
    (project / name).write_text(content)
    git(project, "add", name)
    return name


def test_hook_fails_on_a_hazard(project):
    result = pre_commit(project, "gpumem-lint", add(project, "hazard.py", HAZARD))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "hazard.py:6:5: GML106 " in result.stdout


def test_hook_passes_on_clean_code(project):
    result = pre_commit(project, "gpumem-lint", add(project, "clean.py", "import torch\n\nx = torch.zeros(3) + 1\n"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Passed" in result.stdout


def test_hook_is_skipped_without_python_files(project):
    result = pre_commit(project, "gpumem-lint", add(project, "notes.md", "# not Python\n"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Skipped" in result.stdout


def test_hook_honours_excludes_for_the_paths_pre_commit_passes(project):
    (project / "pyproject.toml").write_text('[tool.gpumem-lint]\nextend-exclude = ["vendored/"]\n')
    (project / "vendored").mkdir()
    result = pre_commit(project, "gpumem-lint", add(project, "vendored/hazard.py", HAZARD))
    (project / "pyproject.toml").unlink()
    assert result.returncode == 0, result.stdout + result.stderr


def test_fix_hook_rewrites_the_file_and_fails_the_commit(project):
    name = add(project, "stale.py", STALE_NOQA)
    result = pre_commit(project, "gpumem-lint-fix", name)
    assert result.returncode == 1
    assert "files were modified by this hook" in result.stdout
    assert (project / name).read_text() == STALE_NOQA.replace("  # noqa: GML107", "")


def test_installing_the_hook_pulls_no_torch(project):
    pre_commit(project, "gpumem-lint", add(project, "clean.py", "x = 1\n"))
    installed = list((project.parent / "home").rglob("site-packages/*"))
    assert any(path.name == "gpumem_lint" for path in installed)
    assert not [path for path in installed if path.name.startswith("torch")]
