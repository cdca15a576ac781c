"""File pre-filters (`Rule.file_trigger`): every form a rule can report passes its filter, and the
look-alikes that make the cheap substring trigger fire in many files do not."""

from __future__ import annotations

import pytest

from gpumem_lint.rules._env_lockin import ENV_WRITE
from gpumem_lint.rules._private_cuda import BINDING_MODULE
from gpumem_lint.semantic.datasets import WORKER_LOADER
from gpumem_lint.semantic.processes import PROCESS_CROSSING


@pytest.mark.parametrize(
    "source",
    [
        'os.environ["CUDA_VISIBLE_DEVICES"] = "0"',
        "os.environ[ 'OMP_NUM_THREADS' ]='4'",
        'environ["PATH"] += ":/opt/bin"',
        "os.environ[KEY] = value",
        'os.environ[\n    "PYTORCH_CUDA_ALLOC_CONF"\n] = "expandable_segments:True"',
        'os.environ.setdefault("NCCL_DEBUG", "INFO")',
        'os.environ.update({"MASTER_ADDR": "localhost"})',
        "os.environ . update(MASTER_PORT='29500')",
        'os.environ.__setitem__("A", "1")',
        'os.putenv("CUDA_VISIBLE_DEVICES", "1")',
        'from os import environ as env\nenv["A"] = "1"',
        'from os import (\n    path,\n    environ as env,\n)\nenv["A"] = "1"',
    ],
)
def test_every_reported_write_form_passes(source):
    assert ENV_WRITE.search(source)


@pytest.mark.parametrize(
    "source",
    [
        'rank = int(os.environ["LOCAL_RANK"])',
        'if os.environ["A"] == "1": pass',
        'debug = os.environ.get("DEBUG", "0")',
        '"CUDA_VISIBLE_DEVICES" in os.environ',
        "env = dict(os.environ)",
        "from os import environ",
    ],
)
def test_reads_do_not(source):
    assert not ENV_WRITE.search(source)


@pytest.mark.parametrize(
    "source",
    [
        "torch._C._cuda_getAllocator()",
        "memory._C._cuda_allocate(1 << 20)",
        "from torch._C import _cuda_setAllocator",
        "from torch import _C\n_C._cuda_emptyCache()",
        "import torch._C as backend\nbackend._cuda_emptyCache()",
    ],
)
def test_every_binding_spelling_passes(source):
    assert BINDING_MODULE.search(source)


@pytest.mark.parametrize(
    "source",
    ["def _cuda_available():\n    return torch.cuda.is_available()", "self._cuda_graph = None", "_C_ORDER = 1"],
)
def test_names_that_only_contain_cuda_do_not(source):
    assert not BINDING_MODULE.search(source)


@pytest.mark.parametrize(
    "source",
    [
        "DataLoader(train_set, batch_size=64, num_workers=4)",
        "DataLoader(ds, num_workers=args.workers)",
        "DataLoader(ds, 32, True, None, None, 4)",
        "DataLoader(make(ds, split(0)), len(x), True, None, None, cpu_count())",
        "torch.utils.data.DataLoader(\n    ds,\n    32,\n    False,\n    None,\n    None,\n    2,\n)",
    ],
)
def test_every_loader_that_starts_workers_passes(source):
    assert WORKER_LOADER.search(source)


@pytest.mark.parametrize(
    "source",
    [
        "DataLoader(ds, batch_size=64, shuffle=True)",
        "loader = DataLoader(val_set, 256)",
        "from torch.utils.data import DataLoader",
    ],
)
def test_loaders_without_workers_do_not(source):
    assert not WORKER_LOADER.search(source)


@pytest.mark.parametrize(
    "source",
    [
        "p = mp.Process(target=work, args=(t,))",
        "from multiprocessing import Process as Worker",
        "q = torch.multiprocessing.SimpleQueue()",
        "parent, child = Pipe()",
        "with mp.get_context('spawn').Pool(4) as pool:",
        "with ProcessPoolExecutor() as executor:",
        "from torch.multiprocessing import spawn as launch",
        "torch.multiprocessing.start_processes(run, nprocs=2, start_method='fork')",
        "def worker(q):\n    q.put(result)",
        "def worker(conn):\n    conn.send(t)",
    ],
)
def test_every_crossing_passes(source):
    assert PROCESS_CROSSING.search(source)


@pytest.mark.parametrize(
    "source",
    [
        "import torch.multiprocessing as mp",
        "torch.multiprocessing.set_sharing_strategy('file_system')",
        "workers = mp.cpu_count()",
        "group: ProcessGroup = dist.new_group()",
        "queue_size = 4  # sent later",
    ],
)
def test_files_that_only_mention_multiprocessing_do_not(source):
    assert not PROCESS_CROSSING.search(source)
