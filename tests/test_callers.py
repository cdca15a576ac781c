"""Callers of a module's function, constructions of its classes and importers of it in the other modules of
its project (semantic/callers.py), and what the GML3xx rules read from them: a re-read after the function
returns, and an event before a constructor that runs the write."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from gpumem_lint.engine import lint_path
from gpumem_lint.rules.gml203_cuda_tensor_to_forked_child import CudaTensorToForkedChild
from gpumem_lint.rules.gml301_cuda_env_set_after_cuda_init import CudaEnvSetAfterCudaInit
from gpumem_lint.rules.gml304_distributed_env_set_after_init import DistributedEnvSetAfterInit
from gpumem_lint.semantic.callers import callers_of, constructions_of, importers_of

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
        {
            "run.py": "import torch.distributed as dist\nfrom pkg.setup_dist import init\n\n"
            "def main():\n    init()\n    dist.new_group([0, 1])\n"
        },
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
            "wrapped.py": "from pkg import (\n    os_tools,\n    setup_dist,\n)\n",  # names on later lines
        },
    )
    found = [importer.path.name for importer in importers_of(source)]
    assert sorted(found) == ["engine.py", "script.py", "tool.py", "user.py", "wrapped.py"]
    assert all(isinstance(importer.statement, (cst.Import, cst.ImportFrom)) for importer in importers_of(source))


EXPERIMENT = """
import os
import torch

class Base:
    def __init__(self, gpu):
        self.device = self._pick(gpu)

    def _pick(self, gpu):
        os.environ["CUDA_VISIBLE_DEVICES"] = str(gpu)
        return torch.device("cuda")
"""


def _experiments(tmp_path: Path, files: dict[str, str]) -> Path:
    """A project whose `exp` directory is a namespace package (no `__init__.py`), as research code has."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "exp").mkdir()
    (tmp_path / "exp" / "base.py").write_text(EXPERIMENT, encoding="utf-8")
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return (tmp_path / "exp" / "base.py").resolve()


SUBCLASS = "from exp.base import Base\n\nclass Main(Base):\n    pass\n"


def test_constructions_through_subclasses_and_names_bound_to_them(tmp_path: Path):
    source = _experiments(
        tmp_path,
        {
            "exp/main.py": SUBCLASS,
            "exp/deep.py": "from exp.main import Main\n\nclass Deep(Main):\n    pass\n",
            "a.py": "from exp.base import Base\nBase(0)\n",
            "b.py": "from exp.main import Main\nExp = Main\nexp = Exp(0)\n",
            "c.py": "from exp.deep import Deep\nDeep(1)\n",
            "d.py": "from exp.main import Main\nMain.train\n",  # names it, constructs nothing
            "e.py": "from other.base import Base\nBase(0)\n",  # another module's class of that name
        },
    )
    callers = constructions_of(source, "Base")
    found = {(caller.path.name, tuple(path.name for path in caller.through)) for caller in callers}
    assert found == {("a.py", ()), ("b.py", ("main.py",)), ("c.py", ("main.py", "deep.py"))}


def _gml301(source: Path) -> list[str]:
    return [d.message for d in lint_path(source, str(source), [CudaEnvSetAfterCudaInit])]


def test_a_constructor_called_after_cuda_init_in_another_module_is_late(tmp_path: Path):
    run = "import torch\nfrom exp.main import Main\n\nok = torch.cuda.is_available()\nExp = Main\nexp = Exp(0)\n"
    source = _experiments(tmp_path, {"exp/main.py": SUBCLASS, "run.py": run})
    (message,) = _gml301(source)
    assert "`torch.cuda.is_available()` at ../run.py:4, before `Exp(0)` at ../run.py:6 runs this code" in message


def test_a_constructor_called_before_any_cuda_call_is_not_late(tmp_path: Path):
    run = "import torch\nfrom exp.main import Main\n\nexp = Main(0)\nok = torch.cuda.is_available()\n"
    assert _gml301(_experiments(tmp_path, {"exp/main.py": SUBCLASS, "run.py": run})) == []


def test_a_caller_that_starts_processes_after_the_construction_is_a_launcher(tmp_path: Path):
    run = (
        "import subprocess\nimport torch\nfrom exp.main import Main\n\n"
        "ok = torch.cuda.is_available()\nexp = Main(0)\nsubprocess.run(['python', 'worker.py'])\n"
    )
    assert _gml301(_experiments(tmp_path, {"exp/main.py": SUBCLASS, "run.py": run})) == []


def test_a_method_no_constructor_reaches_is_not_followed_to_callers(tmp_path: Path):
    text = EXPERIMENT.replace("self.device = self._pick(gpu)", "self.gpu = gpu")
    run = "import torch\nfrom exp.base import Base\n\nok = torch.cuda.is_available()\nexp = Base(0)\n"
    source = _experiments(tmp_path, {"run.py": run})
    source.write_text(text, encoding="utf-8")
    assert _gml301(source) == []


PLACEMENT = """
import os

def place(model, gpus):
    if "CUDA_VISIBLE_DEVICES" not in os.environ:
        os.environ["CUDA_VISIBLE_DEVICES"] = gpus
    return model.cuda()
"""
TWO_PLACEMENTS = "from exp.place import place\n\ndef main(a, b):\n    a = place(a, '0')\n    b = place(b, '1')\n"


@pytest.mark.parametrize(
    ("guard", "late"),
    [
        ('if "CUDA_VISIBLE_DEVICES" not in os.environ:', False),
        ('if os.environ.get("CUDA_VISIBLE_DEVICES") is None:', False),
        ('if not os.getenv("CUDA_VISIBLE_DEVICES") and gpus:', False),
        ("if gpus:", True),  # the second call writes '1' after the first call's allocation
    ],
)
def test_a_write_made_only_while_unset_is_not_late_after_its_own_earlier_call(tmp_path: Path, guard: str, late: bool):
    placement = PLACEMENT.replace('if "CUDA_VISIBLE_DEVICES" not in os.environ:', guard)
    source = _experiments(tmp_path, {"exp/place.py": placement, "run.py": TWO_PLACEMENTS})
    messages = _gml301(source.with_name("place.py"))
    assert len(messages) == late
    if late:
        assert "`model.cuda()` at place.py:7 (run by `place(a, '0')` at line 4 in ../run.py)" in messages[0]


MAPPER = """
import torch
from torch.multiprocessing import Process

def optimise(poses):
    poses.add_(0.01)

class Mapper:
    def __init__(self):
        self.poses = torch.zeros(4, device="cuda")
        self.backend = Process(target=optimise, args=(self.poses,))
        self.backend.start()
"""
SCRIPT = "import sys\nimport torch.multiprocessing as mp\nsys.path.insert(0, 'slam')\nfrom mapper import Mapper\n\n"


@pytest.mark.parametrize(
    ("scripts", "reported"),
    [
        ({"demo.py": 'if __name__ == "__main__":\n    mp.set_start_method("spawn")\n    Mapper()\n'}, False),
        (
            {
                "demo.py": 'if __name__ == "__main__":\n    mp.set_start_method("spawn")\n    Mapper()\n',
                "bench.py": 'if __name__ == "__main__":\n    Mapper()\n',  # forks: the default
            },
            True,
        ),
        ({"demo.py": 'if __name__ == "__main__":\n    mp.set_start_method("fork")\n    Mapper()\n'}, True),
        ({}, True),  # no script imports it: the default
    ],
)
def test_the_start_method_every_importing_script_sets(tmp_path: Path, scripts: dict[str, str], reported: bool):
    (tmp_path / ".git").mkdir()
    (tmp_path / "slam").mkdir()
    source = tmp_path / "slam" / "mapper.py"
    source.write_text(MAPPER, encoding="utf-8")
    for name, text in scripts.items():
        (tmp_path / name).write_text(SCRIPT + text, encoding="utf-8")
    found = [d.code for d in lint_path(source, str(source), [CudaTensorToForkedChild])]
    assert found == (["GML203"] if reported else [])
