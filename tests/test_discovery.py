"""File discovery: recursion, excludes, .gitignore files, explicit paths, symlinks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpumem_lint.config import CliOverrides, load_settings
from gpumem_lint.discovery import discover_files, missing_paths


def touch(root: Path, *names: str) -> None:
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n")


def discovered(root: Path, *arguments: str, force_exclude: bool = False, cwd: Path | None = None) -> list[str]:
    cwd = cwd or root
    settings = load_settings(arguments, CliOverrides(force_exclude=force_exclude), cwd=cwd)
    return [file.display for file in discover_files(arguments, settings, cwd=cwd)]


def test_recurses_into_directories_for_py_and_pyi_in_sorted_order(tmp_path):
    touch(tmp_path, "b/mod.py", "a.py", "b/stub.pyi", "notes.txt", "b/c/deep.py", "setup.cfg")
    assert discovered(tmp_path, ".") == ["a.py", "b/c/deep.py", "b/mod.py", "b/stub.pyi"]


def test_each_file_is_listed_once(tmp_path):
    touch(tmp_path, "a.py")
    assert discovered(tmp_path, ".", "a.py", "./a.py") == ["a.py"]


def test_default_excludes(tmp_path):
    touch(
        tmp_path,
        "keep.py",
        ".venv/lib/x.py",
        "venv/x.py",
        "build/x.py",
        "dist/x.py",
        "pkg/__pycache__/x.py",
        "pkg/node_modules/x.py",
        ".git/hooks/x.py",
        ".tox/x.py",
        ".gpumem_lint_cache/x.py",
    )
    assert discovered(tmp_path, ".") == ["keep.py"]


def test_exclude_replaces_defaults_and_extend_exclude_adds(tmp_path):
    touch(tmp_path, "keep.py", "legacy/old.py", "build/gen.py")
    (tmp_path / "pyproject.toml").write_text('[tool.gpumem-lint]\nextend-exclude = ["legacy/"]\n')
    assert discovered(tmp_path, ".") == ["keep.py"]
    (tmp_path / "pyproject.toml").write_text('[tool.gpumem-lint]\nexclude = ["legacy/"]\n')
    assert discovered(tmp_path, ".") == ["build/gen.py", "keep.py"]


def test_exclude_patterns_are_anchored_at_the_project_root(tmp_path):
    touch(tmp_path, "gen/a.py", "src/gen/b.py", "src/c_pb2.py")
    (tmp_path / "pyproject.toml").write_text('[tool.gpumem-lint]\nextend-exclude = ["/gen", "*_pb2.py"]\n')
    assert discovered(tmp_path / "src", ".", cwd=tmp_path / "src") == ["gen/b.py"]


def test_root_and_nested_gitignore(tmp_path):
    touch(tmp_path, "keep.py", "generated/a.py", "pkg/x_pb2.py", "pkg/local.py", "pkg/keep_pb2.py", "other/local.py")
    (tmp_path / ".gitignore").write_text("generated/\n*_pb2.py\n")
    (tmp_path / "pkg/.gitignore").write_text("local.py\n!keep_pb2.py\n")
    assert discovered(tmp_path, ".") == ["keep.py", "other/local.py", "pkg/keep_pb2.py"]


def test_gitignore_above_the_walked_directory_applies(tmp_path):
    touch(tmp_path, "src/a.py", "src/gen.py")
    (tmp_path / ".gitignore").write_text("src/gen.py\n")
    assert discovered(tmp_path, "src") == ["src/a.py"]


def test_explicit_files_are_linted_despite_excludes(tmp_path):
    touch(tmp_path, "build/gen.py", "ignored.py", "script")
    (tmp_path / ".gitignore").write_text("ignored.py\n")
    assert discovered(tmp_path, "build/gen.py", "ignored.py", "script") == ["build/gen.py", "ignored.py", "script"]


def test_force_exclude_applies_excludes_to_explicit_paths(tmp_path):
    touch(tmp_path, "build/gen.py", "pkg/migrations/0001.py", "keep.py")
    (tmp_path / "pyproject.toml").write_text('[tool.gpumem-lint]\nextend-exclude = ["migrations"]\n')
    arguments = ("build/gen.py", "pkg/migrations/0001.py", "keep.py", "build")
    assert discovered(tmp_path, *arguments, force_exclude=True) == ["keep.py"]


def test_missing_paths_are_named_and_skipped(tmp_path):
    touch(tmp_path, "ok.py")
    assert missing_paths(["ok.py", "nope.py", "gone/"], cwd=tmp_path) == ["nope.py", "gone/"]
    assert discovered(tmp_path, "ok.py", "nope.py") == ["ok.py"]


def test_display_paths_are_relative_to_cwd_else_absolute(tmp_path):
    touch(tmp_path, "proj/a.py", "elsewhere/b.py")
    cwd = tmp_path / "proj"
    outside = (tmp_path / "elsewhere/b.py").as_posix()
    assert discovered(cwd, "a.py", outside, cwd=cwd) == sorted(["a.py", outside])


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_symlinks_dangling_loops_and_directories(tmp_path):
    touch(tmp_path, "real/mod.py")
    (tmp_path / "dangling.py").symlink_to(tmp_path / "missing.py")
    (tmp_path / "loop.py").symlink_to(tmp_path / "loop.py")
    (tmp_path / "linked.py").symlink_to(tmp_path / "real/mod.py")
    (tmp_path / "real/up").symlink_to(tmp_path, target_is_directory=True)
    # Linked files are linted; linked directories are not entered, so the loop through "up" ends.
    assert discovered(tmp_path, ".") == ["linked.py", "real/mod.py"]


def test_directory_named_like_a_python_file_is_a_directory(tmp_path):
    touch(tmp_path, "x.py/inner.py", "x.py/data.txt")
    assert discovered(tmp_path, ".") == ["x.py/inner.py"]
    assert discovered(tmp_path, "x.py") == ["x.py/inner.py"]


def test_directory_named_inside_an_excluded_tree_is_linted(tmp_path):
    touch(tmp_path, ".venv/lib/torch/ops.py", ".venv/lib/torch/__pycache__/cached.py")
    assert discovered(tmp_path, ".venv/lib/torch") == [".venv/lib/torch/ops.py"]
