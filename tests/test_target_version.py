"""The targeted Python version (target.py) and what it changes: the stdlib default start
method is fork up to 3.13 and forkserver from 3.14 (docs/facts.md F11)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpumem_lint.config import CliOverrides, load_settings
from gpumem_lint.engine import lint_path
from gpumem_lint.rules import ALL_RULES
from gpumem_lint.target import find_target, parse_target_version

# A child that writes its argument: reported only where the default start method pickles it.
CHILD_WRITES = """\
import torch
import multiprocessing as mp

def child(t):
    t.add_(100)

def main():
    t = torch.zeros(3)
    p = mp.Process(target=child, args=(t,))
    p.start()
    p.join()
"""


def project(tmp_path: Path, pyproject: str | None) -> Path:
    if pyproject is not None:
        (tmp_path / "pyproject.toml").write_text(pyproject)
    source = tmp_path / "pkg" / "train.py"
    source.parent.mkdir()
    source.write_text(CHILD_WRITES)
    return source


@pytest.mark.parametrize(
    ("pyproject", "expected"),
    [
        ('[tool.gpumem-lint]\ntarget-version = "py314"\n', (3, 14)),
        ('[project]\nrequires-python = ">=3.10"\n[tool.gpumem-lint]\ntarget-version = "py312"\n', (3, 12)),
        ('[project]\nrequires-python = ">=3.14"\n', (3, 14)),
        ('[project]\nname = "x"\n', None),
        (None, None),
    ],
)
def test_target_comes_from_target_version_then_requires_python(tmp_path, pyproject, expected):
    source = project(tmp_path, pyproject)
    assert find_target(source).version == expected


@pytest.mark.parametrize(
    ("pyproject", "flagged"),
    [
        ('[project]\nrequires-python = ">=3.10"\n', False),  # fork by default: the child's write is lost, not shared
        ('[tool.gpumem-lint]\ntarget-version = "py314"\n', True),  # forkserver: pickled into shared memory
    ],
)
def test_default_start_method_follows_the_target(tmp_path, pyproject, flagged):
    source = project(tmp_path, pyproject)
    codes = [d.code for d in lint_path(source, str(source), ALL_RULES)]
    assert ("GML202" in codes) == flagged, codes


def test_target_version_is_a_known_configuration_key(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.gpumem-lint]\ntarget-version = "py313"\n')
    load_settings(["."], CliOverrides(), cwd=tmp_path)  # no ConfigError


def test_parse_target_version():
    assert parse_target_version("py39") == (3, 9)
    assert parse_target_version("py313") == (3, 13)
    assert parse_target_version("3.13") is None
