import re
from collections.abc import Iterator

import libcst as cst

from gpumem_lint.context import FileContext
from gpumem_lint.diagnostics import Fix, Severity
from gpumem_lint.fixes import Applicability, insert_after
from gpumem_lint.rules._boundaries import (
    crossing_text,
    cuda_evidence,
    is_main_guard,
    loader_start_method,
    module_cuda_names,
    module_datasets,
    process_model,
    start_method_text,
)
from gpumem_lint.rules.base import Invalid, Report, Rule
from gpumem_lint.semantic.datasets import WORKER_LOADER, Datasets, WorkerLoader
from gpumem_lint.semantic.devices import cuda_call
from gpumem_lint.semantic.literals import keyword
from gpumem_lint.semantic.processes import PROCESS_CROSSING
from gpumem_lint.semantic.worker_code import cuda_attributes, held_tensors

#: Crossings that start processes, and so may fork (`start_processes(..., start_method="fork")` too).
_FORKING = ("process", "spawn", "pool", "executor")


class CudaTensorToForkedChild(Rule):
    """
    ## What it does
    Flags a CUDA tensor — or a module moved to CUDA (`model.cuda()`) — handed to a child
    started with the **fork** start method: `Process(args=...)`, a `Pool` or
    `ProcessPoolExecutor` task, with fork chosen explicitly or by default (fork is the stdlib
    default on Linux up to Python 3.13; set `target-version` to say which Python you target).
    A module that sets no start method takes the one every first-party script importing it
    sets (`torch.multiprocessing.set_start_method("spawn")` in each `__main__` block, as SLAM
    and RL code does before building the object that starts its children).
    A `DataLoader` with workers hands them its dataset: one that holds CUDA tensors made in
    the main process — a `TensorDataset(x.cuda(), y)`, or a Dataset class that stores one on
    `self` (`self.class_weights = w.cuda()`), or stores a tensor its construction is handed
    after the caller moved it (`x = x.cuda()`, then `Nodes(x)`), read by the workers or not —
    is reported at the `DataLoader`.

    ## Why is this bad?
    A forked child cannot use CUDA once the parent has, and holding a CUDA tensor means the
    parent has: the child's first CUDA call — touching the tensor it was given, or
    unpickling it from a pool's task queue — raises `RuntimeError: Cannot re-initialize CUDA
    in forked subprocess. To use CUDA with multiprocessing, you must use the 'spawn' start
    method` ([docs/facts.md](../docs/facts.md) F14, measured on an H200). Under spawn the
    same tensor crosses as a CUDA IPC handle and both sides see each other's writes (F15).
    Forked DataLoader workers indexing a `TensorDataset` of CUDA tensors raise a CUDA error
    (`AcceleratorError`, F29, measured on an H200).

    Producers that exit before their consumer has received a tensor are GML209's.

    ## Known problems
    A tensor counts as a CUDA tensor when the syntax that made it says so: `.cuda()`,
    `device="cuda"`, a name bound to a CUDA device, or a name that holds a device index by
    convention (`rank`, `local_rank`, `gpu`: `device_index_names` in
    [`heuristics.toml`](../gpumem_lint/knowledge/heuristics.toml)). A device reached
    otherwise is not seen.

    ## Example
    ```python
    model = Net().cuda()
    server = mp.Process(target=serve, args=(model, requests))
    server.start()
    ```

    ## Use instead
    ```python
    ctx = mp.get_context("spawn")
    server = ctx.Process(target=serve, args=(model, requests))
    server.start()
    ```

    ## Fix safety
    For a `DataLoader` built inside a function or under `if __name__ == "__main__":`, the fix
    starts its workers with spawn (`multiprocessing_context="spawn"`), where a worker can use
    the CUDA tensors it receives (as IPC handles, F15). It is unsafe: each worker then creates its
    own CUDA context (hundreds of MB of GPU memory each, GML205), the dataset and its callables
    must be picklable, and workers start slower. A loader built by unguarded top-level code has
    no fix: spawn children re-import the main module and would build it again. Run on an H200
    (torch 2.11.0+cu130, 2026-12-01), the last INVALID example's workers raise `CUDA error:
    initialization error` and its fixed program prints `28.0` (tests/test_fix_proofs.py runs both
    where a GPU is present). For processes
    there is no automatic fix; send CPU tensors and move them to the GPU in the child, or start
    the child with spawn.

    ## References
    - [torch.multiprocessing: sharing CUDA tensors](https://docs.pytorch.org/docs/stable/multiprocessing.html#sharing-cuda-tensors)
    - [Multiprocessing best practices: CUDA in multiprocessing](https://docs.pytorch.org/docs/stable/notes/multiprocessing.html#cuda-in-multiprocessing)
    """

    code = "GML203"
    name = "cuda-tensor-to-forked-child"
    severity = Severity.ERROR
    summary = "CUDA tensor handed to a child started with fork"
    fix_title = 'Start the child with spawn (`mp.get_context("spawn")`), or send CPU tensors and move them in the child'
    triggers = ("multiprocessing", "ProcessPoolExecutor", "DataLoader")
    file_trigger = re.compile(f"{PROCESS_CROSSING.pattern}|{WORKER_LOADER.pattern}")
    fix_applicability = Applicability.UNSAFE
    VALID = (
        """
import torch
import torch.multiprocessing as mp

def worker(batch):
    return batch.sum()

def main():
    ctx = mp.get_context("spawn")
    batch = torch.ones(8).cuda()
    p = ctx.Process(target=worker, args=(batch,))
    p.start()
    p.join()
""",
        """
import torch
from torch.utils.data import DataLoader, TensorDataset

features = torch.randn(12, 4).cuda()
loader = DataLoader(TensorDataset(features), batch_size=4)  # no workers: the main process indexes it
""",
        """
import torch
from torch.utils.data import DataLoader, Dataset

class Weighted(Dataset):
    def __init__(self):
        self.class_weights = torch.tensor([0.8, 1.2])  # on the CPU

    def __getitem__(self, index):
        return index

loader = DataLoader(Weighted(), batch_size=2, num_workers=1)
""",
        # the constructor is handed a CPU copy of the tensor the model uses
        """
import torch
from torch.utils.data import DataLoader, Dataset

class Nodes(Dataset):
    def __init__(self, features):
        self.features = features

    def __len__(self):
        return len(self.features)

    def __getitem__(self, index):
        return self.features[index]

def main():
    features = torch.randn(10, 4).cuda()
    loader = DataLoader(Nodes(features.cpu()), batch_size=2, num_workers=2)
    return [batch.to(features.device) for batch in loader]
""",
    )
    INVALID = (
        Invalid(
            # `__init__` stores what the construction hands it: a tensor the caller moved to the GPU
            """
import torch
from torch.utils.data import DataLoader, Dataset

class Nodes(Dataset):
    def __init__(self, features):
        self.features = features

    def __len__(self):
        return len(self.features)

    def __getitem__(self, index):
        return self.features[index]

def main():
    features = torch.randn(10, 4).to(torch.device("cuda"))
    loader = DataLoader(Nodes(features), batch_size=2, num_workers=2)
    return [batch for batch in loader]
""",
            (17,),
            fixed="""
import torch
from torch.utils.data import DataLoader, Dataset

class Nodes(Dataset):
    def __init__(self, features):
        self.features = features

    def __len__(self):
        return len(self.features)

    def __getitem__(self, index):
        return self.features[index]

def main():
    features = torch.randn(10, 4).to(torch.device("cuda"))
    loader = DataLoader(Nodes(features), batch_size=2, num_workers=2, multiprocessing_context="spawn")
    return [batch for batch in loader]
""",
        ),
        Invalid(
            """
import torch
import multiprocessing as mp

def worker(batch):
    return batch.sum()

def main():
    batch = torch.ones(8).cuda()
    p = mp.Process(target=worker, args=(batch,))
    p.start()
    p.join()
""",
            (10,),
        ),
        Invalid(
            """
import torch
from torch.utils.data import DataLoader, TensorDataset

features = torch.randn(12, 4).cuda()
loader = DataLoader(TensorDataset(features), num_workers=2)
""",
            (6,),
        ),
        Invalid(
            """
import torch
from torch.utils.data import DataLoader, Dataset

class Weighted(Dataset):
    def __init__(self):
        self.class_weights = torch.tensor([0.8, 1.2]).cuda()

    def __getitem__(self, index):
        return index

loader = DataLoader(Weighted(), batch_size=2, num_workers=1)
""",
            (12,),
        ),
        Invalid(
            """
import torch
from torch.utils.data import DataLoader, TensorDataset

def main():
    features = torch.arange(8.0).view(4, 2).cuda()
    loader = DataLoader(TensorDataset(features), batch_size=2, num_workers=2)
    print(sum(batch.sum().item() for (batch,) in loader))

if __name__ == "__main__":
    main()
""",
            (7,),
            fixed="""
import torch
from torch.utils.data import DataLoader, TensorDataset

def main():
    features = torch.arange(8.0).view(4, 2).cuda()
    loader = DataLoader(TensorDataset(features), batch_size=2, num_workers=2, multiprocessing_context="spawn")
    print(sum(batch.sum().item() for (batch,) in loader))

if __name__ == "__main__":
    main()
""",
            prints="28.0",
            cuda=1,
        ),
    )

    def check(self, ctx: FileContext) -> Iterator[Report]:
        yield from self._loaders(ctx)
        if not PROCESS_CROSSING.search(ctx.text):
            return
        model = process_model(ctx)
        on_cuda = cuda_evidence(ctx).sends_cuda
        for facts, crossing in model.crossings():
            if crossing.kind in _FORKING and model.start_method(crossing).forks and on_cuda(facts, crossing):
                method = start_method_text(model.start_method(crossing))
                yield Report(
                    crossing.node,
                    f"{crossing_text(ctx, crossing)} hands a CUDA tensor to a child started with {method}: the "
                    "child raises `Cannot re-initialize CUDA in forked subprocess`",
                )

    def _loaders(self, ctx: FileContext) -> Iterator[Report]:
        if not WORKER_LOADER.search(ctx.text):
            return
        found = module_datasets(ctx)
        for loader in found.worker_loaders:
            method = loader_start_method(ctx, loader)
            held = _held_cuda_tensor(loader, found, ctx) if method.forks else None
            if held is None:
                continue
            yield Report(
                loader.node,
                f"`DataLoader` (line {ctx.line(loader.node)}) starts its workers with {start_method_text(method)} "
                f"over a dataset holding the CUDA tensor `{_short(ctx, held)}` (line {ctx.line(held)}): they cannot "
                "touch it (CUDA error)",
                fix=_spawn_workers(ctx, loader),
            )


def _held_cuda_tensor(loader: WorkerLoader, found: Datasets, ctx: FileContext) -> cst.Call | None:
    """The first CUDA tensor the loader's dataset holds: an argument of its `TensorDataset(...)`, or what
    its Dataset class stores on `self`."""
    names, imports = module_cuda_names(ctx), ctx.semantic.imports
    for tensor in held_tensors(loader, found, imports):
        if isinstance(tensor, cst.Call) and cuda_call(tensor, names, imports):
            return tensor
    for each in found.loaders:
        if each.node is loader.node:
            made = cuda_attributes(found.classes[each.dataset], found, names, imports)
            if made:
                return min(made.values(), key=lambda call: ctx.line(call))
    return None


def _spawn_workers(ctx: FileContext, loader: WorkerLoader) -> Fix | None:
    """`multiprocessing_context="spawn"` added to the loader, unless unguarded top-level code builds it
    (every spawned worker would build it again on importing the main module)."""
    call = loader.node
    if not call.args or keyword(call, "multiprocessing_context") is not None or _in_unguarded_top_level(ctx, call):
        return None
    return Fix(
        (insert_after(call.args[-1].value, ', multiprocessing_context="spawn"'),),
        Applicability.UNSAFE,
        'Start the workers with spawn: `multiprocessing_context="spawn"`',
    )


def _in_unguarded_top_level(ctx: FileContext, node: cst.CSTNode) -> bool:
    row = ctx.positions[node].start.line
    for statement in ctx.module.body:
        where = ctx.positions[statement]
        if where.start.line <= row <= where.end.line:
            guarded = isinstance(statement, cst.If) and is_main_guard(statement.test)
            return not (guarded or isinstance(statement, (cst.FunctionDef, cst.ClassDef)))
    return True


def _short(ctx: FileContext, node: cst.CSTNode) -> str:
    code = " ".join(ctx.code(node).split())
    return code if len(code) <= 40 else code[:39] + "…"
