from collections.abc import Iterator

from gpumem_lint.context import FileContext
from gpumem_lint.diagnostics import Severity
from gpumem_lint.rules.base import Invalid, Report, Rule
from gpumem_lint.semantic.datasets import datasets
from gpumem_lint.semantic.devices import CudaUses, cuda_names


class CudaInDataloaderWorker(Rule):
    """
    ## What it does
    Flags a Dataset's `__getitem__` / `__iter__` (or a method they call through `self.`)
    that creates a CUDA tensor or moves data to CUDA — `.cuda()`, `.to("cuda")`,
    `device="cuda"` — when a `DataLoader` in the same module loads that Dataset with
    `num_workers` other than 0.

    ## Why is this bad?
    With workers, `__getitem__` runs in worker processes. Under fork — the default on Linux
    up to Python 3.13 — a worker cannot use CUDA once the main process has (a model on the
    GPU, even `torch.cuda.is_available()`), and the first CUDA call raises
    `RuntimeError: Cannot re-initialize CUDA in forked subprocess` ([docs/facts.md](../docs/facts.md)
    F14). Under spawn each worker creates its own CUDA context (hundreds of MB of GPU memory
    per worker) and every batch crosses back as a CUDA IPC handle, which the worker must
    keep alive (F15). PyTorch's documentation advises against returning CUDA tensors from
    workers.

    ## Example
    ```python
    class Features(Dataset):
        def __getitem__(self, i):
            return torch.from_numpy(self.rows[i]).cuda()

    loader = DataLoader(Features(rows), batch_size=64, num_workers=4)
    ```

    ## Use instead
    ```python
    class Features(Dataset):
        def __getitem__(self, i):
            return torch.from_numpy(self.rows[i])

    loader = DataLoader(Features(rows), batch_size=64, num_workers=4, pin_memory=True)
    for batch in loader:
        batch = batch.cuda(non_blocking=True)  # in the main process
    ```

    ## Fix safety
    There is no automatic fix: the move belongs in the training loop (or in a
    `pin_memory=True` loader), which the rule cannot write for you.

    ## References
    - [torch.utils.data: multi-process data loading](https://docs.pytorch.org/docs/stable/data.html#multi-process-data-loading)
    - [CUDA in multiprocessing](https://docs.pytorch.org/docs/stable/notes/multiprocessing.html#cuda-in-multiprocessing)
    """

    code = "GML205"
    name = "cuda-in-dataloader-worker"
    severity = Severity.ERROR
    summary = "A Dataset loaded by DataLoader workers creates CUDA tensors"
    fix_title = "Return CPU tensors from the Dataset and move batches to the GPU in the main process (`pin_memory=True`)"
    triggers = ("DataLoader",)
    VALID = (
        """
import torch
from torch.utils.data import DataLoader, Dataset

class Features(Dataset):
    def __getitem__(self, i):
        return torch.from_numpy(self.rows[i])

loader = DataLoader(Features(), batch_size=64, num_workers=4, pin_memory=True)
""",
        """
import torch
from torch.utils.data import DataLoader, Dataset

class GpuResident(Dataset):
    def __getitem__(self, i):
        return self.data[i].cuda()

loader = DataLoader(GpuResident(), batch_size=64)
""",
    )
    INVALID = (
        Invalid(
            """
import torch
from torch.utils.data import DataLoader, Dataset

class Features(Dataset):
    def __getitem__(self, i):
        return torch.from_numpy(self.rows[i]).cuda()

loader = DataLoader(Features(), batch_size=64, num_workers=4)
""",
            (7,),
        ),
    )

    def check(self, ctx: FileContext) -> Iterator[Report]:
        found = datasets(ctx.module, ctx.semantic.imports)
        if not found.loaders:
            return
        names = cuda_names(ctx.module, ctx.semantic.imports)
        for cls in found.classes.values():
            loaders = found.loaders_of(cls)
            if not loaders:
                continue
            calls = CudaUses(names, ctx.semantic.imports)
            for method in cls.worker_methods().values():
                calls.walk(method.body)
            if not calls.found:
                continue
            call = min(calls.found, key=lambda node: (ctx.line(node), ctx.positions[node].start.column))
            loader = loaders[0]
            if all(loader.start_method in ("spawn", "forkserver") for loader in loaders):
                consequence = (
                    "each worker then creates its own CUDA context (hundreds of MB of GPU memory per worker) and "
                    "sends every batch back as a CUDA IPC handle it must keep alive"
                )
            else:
                consequence = (
                    "with forked workers (the default on Linux up to Python 3.13) the first CUDA call in a worker "
                    "raises `Cannot re-initialize CUDA in forked subprocess` once the main process has used CUDA"
                )
            yield Report(
                call,
                f"`{ctx.code(call)}` runs in DataLoader worker processes (`{cls.name}` is loaded with workers by "
                f"`DataLoader` at line {ctx.line(loader.node)}): {consequence}",
            )

