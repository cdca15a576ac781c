from collections.abc import Iterator

from gpumem_lint.context import FileContext
from gpumem_lint.diagnostics import Applicability, Severity
from gpumem_lint.rules._env_lockin import ENV_TRIGGERS, ENV_WRITE, late_env_writes
from gpumem_lint.rules.base import Invalid, Report, Rule


class ThreadEnvSetAfterTorchImport(Rule):
    """
    ## What it does
    Flags a write to `OMP_NUM_THREADS` or `MKL_NUM_THREADS` after `import torch` (or of a
    library that imports it: torchvision, lightning, timm, accelerate, ... or a first-party
    module that does), when no process is started after the write.

    ## Why is this bad?
    torch sizes its intra-op thread pool from these variables when it is imported
    ([docs/facts.md](../docs/facts.md) F20, re-checked by the tests). Measured
    on the GPU machine (`bench/gpu/lockin_probe.json`): `OMP_NUM_THREADS=1` set before
    `import torch` gives 1 thread; set after it, `torch.get_num_threads()` stays 16. Data-loader
    workers or co-located jobs then oversubscribe the cores the write was meant to protect.

    A launcher that writes the variable and then starts processes is not flagged: the children
    read it at their own `import torch`. So is a program that then builds a vLLM engine
    (`vllm.LLM(...)`, vLLM's command line), which runs in spawned processes of its own. A write
    at the top level of a module runs when the module is imported, before any of its functions
    runs: when one of them starts processes, or a first-party module that imports it (or imports
    an importer, up to four imports up) does after the import, as a training script that imports
    the datasets package and then spawns one worker per GPU does, the write is for those workers
    and is not flagged either (`fixtures/safe/spawned_workers_project`).

    ## Example
    ```python
    import os
    import torch

    os.environ["OMP_NUM_THREADS"] = "1"
    ```

    ## Use instead
    ```python
    import torch

    torch.set_num_threads(1)
    ```
    or set the variable before `import torch`, or in the launcher.

    ## Fix safety
    The fix moves the write above the statement of the same block that imports torch: a one-line
    write, or an `if` without `else` that holds only environment writes, when nothing in between
    binds a name it reads and `os` is imported above. It is unsafe: code in between then sees
    the new value too, including what the imports run. A write in a function moves to module
    level, above `import torch`, when it reads only names bound there (a literal write) and the
    function holds other statements; a write that reads a local, or a function defined under an
    `if`, has no automatic fix. `torch.set_num_threads` is not
    offered as a fix: it does not change what other libraries (numpy's BLAS) read from the
    variable.

    ## References
    - [`torch.set_num_threads`](https://docs.pytorch.org/docs/stable/generated/torch.set_num_threads.html)
    - [CPU threading and TorchScript inference](https://docs.pytorch.org/docs/stable/notes/cpu_threading_torchscript_inference.html)
    - The lock-in table, [`gpumem_lint/knowledge/lockin.toml`](../gpumem_lint/knowledge/lockin.toml)
    """

    code = "GML303"
    name = "thread-env-set-after-torch-import"
    severity = Severity.WARNING
    summary = "Thread-count variable set after torch sized its thread pool"
    fix_title = "Call `torch.set_num_threads(n)`, or set the variable before `import torch` or in the launcher"
    triggers = ENV_TRIGGERS
    file_trigger = ENV_WRITE
    fix_applicability = Applicability.UNSAFE
    VALID = (
        """
import os
os.environ["OMP_NUM_THREADS"] = "1"
import torch
""",
        """
import os
import subprocess
import torch

os.environ["OMP_NUM_THREADS"] = "4"
subprocess.run(["torchrun", "--nproc-per-node=2", "train.py"], check=True)
""",
        """
import os
import numpy as np

os.environ["OMP_NUM_THREADS"] = "1"
""",
        # vLLM's engine runs in a process of its own, spawned: it reads the variable at its own `import torch`
        """
import os

import torch
from vllm import LLM


def load_engine(model_path):
    os.environ["OMP_NUM_THREADS"] = "1"
    return LLM(model=model_path, gpu_memory_utilization=0.8)
""",
        # set when the module is imported, before any of its functions runs: the spawned pool reads it
        """
import multiprocessing
import os

import torch

os.environ["OMP_NUM_THREADS"] = "1"


def encode(chunk):
    return torch.tensor(chunk).sum().item()


def encode_all(chunks):
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        return pool.map(encode, chunks)
""",
    )
    INVALID = (
        # threads share this process's torch, which sized its pool at the import
        Invalid(
            """
import os
from concurrent.futures import ThreadPoolExecutor

import torch

os.environ["OMP_NUM_THREADS"] = "1"


def encode(chunk):
    return torch.tensor(chunk).sum().item()


def encode_all(chunks):
    with ThreadPoolExecutor(4) as pool:
        return list(pool.map(encode, chunks))


print(torch.get_num_threads())
""",
            (7,),
            fixed="""
import os
from concurrent.futures import ThreadPoolExecutor

os.environ["OMP_NUM_THREADS"] = "1"
import torch



def encode(chunk):
    return torch.tensor(chunk).sum().item()


def encode_all(chunks):
    with ThreadPoolExecutor(4) as pool:
        return list(pool.map(encode, chunks))


print(torch.get_num_threads())
""",
            prints="1",
        ),
        Invalid(
            """
import os
import torch

os.environ["OMP_NUM_THREADS"] = "1"
print(torch.get_num_threads())
""",
            (5,),
            fixed="""
import os
os.environ["OMP_NUM_THREADS"] = "1"
import torch

print(torch.get_num_threads())
""",
            prints="1",
        ),
        Invalid(
            """
import os
import torchvision

def configure(threads):
    os.environ.update({"MKL_NUM_THREADS": str(threads)})
""",
            (6,),
        ),
        Invalid(
            """
import os

import torch


def main():
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    print(torch.get_num_threads())


main()
""",
            (8,),
            fixed="""
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
import torch


def main():
    print(torch.get_num_threads())


main()
""",
            prints="1",
        ),
        Invalid(
            """
import os
import torch

def configure(threads):
    os.environ["OMP_NUM_THREADS"] = str(threads)
    return threads
""",
            (6,),
        ),
        Invalid(
            """
import os
import sys
import torch

if sys.platform == "linux":
    def configure():
        os.environ["OMP_NUM_THREADS"] = "1"
        return 1
""",
            (8,),
        ),
    )

    def check(self, ctx: FileContext) -> Iterator[Report]:
        return late_env_writes(ctx, self.code)
