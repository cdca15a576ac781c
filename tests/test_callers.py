"""Callers of a module's function in the other modules of its project (semantic/callers.py), and the
GML3xx re-read that follows the function's return into them."""

from __future__ import annotations

from pathlib import Path

import libcst as cst

from gpumem_lint.engine import lint_path
from gpumem_lint.rules.gml304_distributed_env_set_after_init import DistributedEnvSetAfterInit
from gpumem_lint.semantic.callers import callers_of, importers_of

SETUP = """
import os
import torch.distributed as dist

def init():
    dist.init_process_group("nccl")
    os.environ["TORCH_NCCL_AVOID_RECORD_STREAMS"] = "1"
"""


def _project(tmp_path: Path, files: dict[str, str]) -> Path:
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "pkg" / "setup_dist.py").write_text(SETUP, encoding="utf-8")
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return (tmp_path / "pkg" / "setup_dist.py").resolve()


def test_every_import_form_of_the_function_is_a_caller(tmp_path: Path):
    source = _project(
        tmp_path,
        {
            "a.py": "from pkg.setup_dist import init\ninit()\n",
            "b.py": "from pkg import setup_dist\nsetup_dist.init()\n",
            "c.py": "import pkg.setup_dist as sd\nsd.init()\n",
            "d.py": "def init():\n    pass\n# setup_dist\ninit()\n",  # its own function of that name
            "e.py": "from other.setup_dist import init\ninit()\n",  # another module
            "f.py": "from pkg import init\ninit()\n",  # re-exported by pkg/__init__.py
        },
    )
    (tmp_path / "pkg" / "__init__.py").write_text("from pkg.setup_dist import init\n", encoding="utf-8")
    assert sorted(caller.path.name for caller in callers_of(source, "init")) == ["a.py", "b.py", "c.py", "f.py"]


def _gml304(source: Path) -> list[int]:
    return [d.start.row for d in lint_path(source, str(source), [DistributedEnvSetAfterInit])]


def test_a_new_group_in_a_caller_reads_the_variable_again(tmp_path: Path):
    source = _project(
        tmp_path,
        {"run.py": "import torch.distributed as dist\nfrom pkg.setup_dist import init\n\n"
         "def main():\n    init()\n    dist.new_group([0, 1])\n"},
    )
    assert _gml304(source) == []


def test_a_caller_that_builds_no_group_leaves_the_write_reported(tmp_path: Path):
    # the group built inside `init` is before the write: it does not count as a reader after the return
    source = _project(tmp_path, {"run.py": "from pkg.setup_dist import init\n\ndef main():\n    init()\n"})
    assert _gml304(source) == [7]


def test_importers_up_to_the_script_that_imports_the_package(tmp_path: Path):
    source = _project(
        tmp_path,
        {
            "engine.py": "from pkg import setup_dist\n",  # imports the module
            "tool.py": "import engine\n",  # imports an importer
            "script.py": "import tool\n",  # three imports up
            "pkg/user.py": "from .setup_dist import init\n",  # relative, in the package
            "mention.py": "# setup_dist\nimport os\n",  # names it, imports something else
            "other.py": "from other.setup_dist import init\n",  # another module of that name
        },
    )
    found = [importer.path.name for importer in importers_of(source)]
    assert sorted(found) == ["engine.py", "script.py", "tool.py", "user.py"]
    assert all(isinstance(importer.statement, (cst.Import, cst.ImportFrom)) for importer in importers_of(source))
