"""The targeted Python version (target.py) and what it changes: the stdlib default start
method is fork on Linux up to 3.13 and forkserver from 3.14 (docs/facts.md F11); macOS and
Windows start with spawn on every version."""

from __future__ import annotations

import inspect
import multiprocessing.context
import re
from pathlib import Path

import pytest

from gpumem_lint.config import CliOverrides, load_settings
from gpumem_lint.engine import lint_path
from gpumem_lint.rules import ALL_RULES
from gpumem_lint.semantic.processes import process_table
from gpumem_lint.target import find_target, parse_target_version

# A child that writes its argument: reported where the default start method pickles it (macOS and
# Windows on every version, Linux from 3.14), in words that follow the target.
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
    ("pyproject", "said"),
    [
        # fork on Linux (the child's write is lost there), spawn on macOS and Windows (it reaches the parent)
        ('[project]\nrequires-python = ">=3.10"\n', "macOS and Windows (spawn; fork on Linux here)"),
        ('[tool.gpumem-lint]\ntarget-version = "py314"\n', None),  # forkserver: pickled on every platform
    ],
)
def test_default_start_method_follows_the_target(tmp_path, pyproject, said):
    source = project(tmp_path, pyproject)
    messages = [d.message for d in lint_path(source, str(source), ALL_RULES) if d.code == "GML202"]
    assert len(messages) == 1, messages
    assert said is None or said in messages[0]


def test_macos_and_windows_default_to_spawn_as_the_table_says():
    # multiprocessing/context.py of the running Python: Windows has spawn alone, and macOS defaults to it.
    source = inspect.getsource(multiprocessing.context)
    darwin = re.search(r"if sys\.platform == 'darwin':(.*?)\n    else:", source, re.S).group(1)
    assert f"_concrete_contexts['{process_table().other_platforms_default}']" in darwin
    win32 = source[source.index("\nelse:", source.index("if sys.platform != 'win32'")) :]
    assert "_default_context = DefaultContext(_concrete_contexts['spawn'])" in win32
    assert "class ForkContext" not in win32


def test_target_version_is_a_known_configuration_key(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.gpumem-lint]\ntarget-version = "py313"\n')
    load_settings(["."], CliOverrides(), cwd=tmp_path)  # no ConfigError


def test_parse_target_version():
    assert parse_target_version("py39") == (3, 9)
    assert parse_target_version("py313") == (3, 13)
    assert parse_target_version("3.13") is None


# Every GML2xx rule whose verdict depends on the start method, with a program that launches with the
# default one: (code, program, message text under fork, message text under forkserver; None: no finding).
_DEFAULT_LAUNCHES = {
    "GML203": (
        "import torch\nimport multiprocessing as mp\n\ndef child(t):\n    print(t.sum())\n\n"
        "if __name__ == '__main__':\n    t = torch.ones(3).cuda()\n    mp.Process(target=child, args=(t,)).start()\n",
        "fork",
        None,
    ),
    "GML204": (
        "import torch\nimport multiprocessing as mp\n\ndef child():\n    torch.ones(1).cuda()\n\n"
        "if __name__ == '__main__':\n    torch.cuda.is_available()\n    mp.Process(target=child).start()\n",
        "fork here",
        None,
    ),
    "GML205": (
        "import torch\nfrom torch.utils.data import DataLoader, Dataset\n\nclass D(Dataset):\n"
        "    def __getitem__(self, i):\n        return torch.ones(1).cuda()\n\n"
        "loader = DataLoader(D(), num_workers=2)\n",
        "forked worker",
        "its own CUDA context",
    ),
    "GML212": (
        "from torch.utils.data import DataLoader\n\ndef main(data):\n"
        "    return list(DataLoader(data, num_workers=2, collate_fn=lambda batch: batch))\n",
        "macOS and Windows (spawn; fork on Linux here)",
        "forkserver here",
    ),
    "GML211": (
        "import torch\nimport multiprocessing as mp\n\ndef child():\n    pass\n\n"
        "mp.Process(target=child).start()\n",
        "macOS and Windows (spawn; fork on Linux here)",
        "forkserver here",
    ),
    # A CUDA tensor handed as an argument arrives as an IPC handle under forkserver; a forked child cannot use it
    # (GML203's), so it sends nothing on.
    "GML213": (
        (
            "import torch\nimport multiprocessing as mp\n\ndef child(t, q, done):\n    q.put(t)\n    done.wait()\n\n"
            "if __name__ == '__main__':\n    q, done = mp.Queue(), mp.Event()\n"
            "    mp.Process(target=child, args=(torch.ones(3).cuda(), q, done)).start()\n"
        ),
        None,
        "an argument of `child`",
    ),
    # A numpy array of a child's argument: left on freed memory where the default start method pickles it.
    "GML214": (
        (
            "import torch\nimport multiprocessing as mp\n\ndef child(t):\n    print(t.sum())\n\n"
            "if __name__ == '__main__':\n    t = torch.zeros(3)\n    a = t.numpy()\n"
            "    mp.Process(target=child, args=(t,)).start()\n    print(a)\n"
        ),
        "macOS and Windows (spawn; fork on Linux here)",
        "forkserver here",
    ),
}


@pytest.mark.parametrize("code", sorted(_DEFAULT_LAUNCHES))
@pytest.mark.parametrize("target", ["py313", "py314"])
def test_every_start_method_rule_follows_the_target(tmp_path, code, target):
    program, under_fork, under_forkserver = _DEFAULT_LAUNCHES[code]
    (tmp_path / "pyproject.toml").write_text(f'[tool.gpumem-lint]\ntarget-version = "{target}"\n')
    source = tmp_path / "train.py"
    source.write_text(program)
    messages = [d.message for d in lint_path(source, str(source), ALL_RULES) if d.code == code]
    expected = under_forkserver if target == "py314" else under_fork
    if expected is None:
        assert not messages, messages
    else:
        assert len(messages) == 1 and expected in messages[0], messages
