from collections.abc import Iterator

import libcst as cst

from gpumem_lint.context import FileContext
from gpumem_lint.diagnostics import Severity
from gpumem_lint.rules._boundaries import module_cuda_names, module_datasets
from gpumem_lint.rules.base import Invalid, Report, Rule
from gpumem_lint.semantic.datasets import WORKER_LOADER, self_attribute
from gpumem_lint.semantic.devices import CudaUses, cuda_call
from gpumem_lint.semantic.program_order import CUDA_INIT_EVENTS
from gpumem_lint.semantic.walk import Walker


class CudaInDataloaderWorker(Rule):
    """
    ## What it does
    Flags a Dataset's `__getitem__` / `__iter__` (or a method they call through `self.`)
    that creates a CUDA tensor or moves data to CUDA — `.cuda()`, `.to("cuda")`,
    `device="cuda"` — or reads a CUDA tensor the dataset made in `__init__`
    (`self.X = X.cuda()`), when a `DataLoader` in the same module loads that Dataset with
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
    fix_title = (
        "Return CPU tensors from the Dataset and move batches to the GPU in the main process (`pin_memory=True`)"
    )
    triggers = ("DataLoader",)
    file_trigger = WORKER_LOADER
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
        found = module_datasets(ctx)
        if not found.loaders:
            return
        names = module_cuda_names(ctx)
        for cls in found.classes.values():
            loaders = found.loaders_of(cls)
            if not loaders:
                continue
            calls = CudaUses(names, ctx.semantic.imports)
            held = _CudaAttributes(names, ctx.semantic.imports)
            for method in cls.methods.values():
                held.walk(method.body)
            reads = _AttributeReads(held.made)
            for method in cls.worker_methods().values():
                calls.walk(method.body)
                reads.walk(method.body)
            loader = loaders[0]
            spawned = all(loader.start_method in ("spawn", "forkserver") for loader in loaders)
            if not (calls.found or reads.found):
                continue
            where = f"`DataLoader` at line {ctx.line(loader.node)}"
            if calls.found:
                call = _first(ctx, calls.found)
                consequence = _consequence(spawned)
                site = None if spawned else ctx.program_order.first_event_before(loader.node, CUDA_INIT_EVENTS)
                if site is not None:
                    consequence = (
                        f"after `{site.call}` ({site.where()}) a forked worker raises `Cannot re-initialize CUDA in "
                        "forked subprocess` here"
                    )
                yield Report(call, f"`{ctx.code(call)}` runs in DataLoader worker processes ({where}): {consequence}")
            elif reads.found:
                read = _first(ctx, reads.found)
                made = held.made[read.attr.value]
                yield Report(
                    read,
                    f"`{ctx.code(read)}` is a CUDA tensor (made at line {ctx.line(made)}) read in DataLoader worker "
                    f"processes ({where}): {_consequence(spawned, made_in_parent=True)}",
                )


def _consequence(spawned: bool, made_in_parent: bool = False) -> str:
    if spawned:
        return "each worker creates its own CUDA context, hundreds of MB of GPU memory each"
    if made_in_parent:
        return "making it initialised CUDA, so a forked worker raises `Cannot re-initialize CUDA in forked subprocess`"
    return "once the main process used CUDA, a forked worker raises `Cannot re-initialize CUDA in forked subprocess`"


def _first(ctx: FileContext, nodes: list) -> cst.CSTNode:
    return min(nodes, key=lambda node: (ctx.line(node), ctx.positions[node].start.column))


class _CudaAttributes(Walker):
    """`self.X = x.cuda()` (and `self.X, self.y = X.cuda(), y.cuda()`): attributes holding CUDA tensors."""

    def __init__(self, names: set[str], imports) -> None:
        self.names = names
        self.imports = imports
        self.made: dict[str, cst.Call] = {}

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            pairs = [(target.target, node.value)]
            if (
                isinstance(target.target, cst.Tuple)
                and isinstance(node.value, cst.Tuple)
                and len(target.target.elements) == len(node.value.elements)
            ):
                pairs = [(t.value, v.value) for t, v in zip(target.target.elements, node.value.elements)]
            for place, value in pairs:
                attribute = self_attribute(place)
                if attribute and isinstance(value, cst.Call) and cuda_call(value, self.names, self.imports):
                    self.made.setdefault(attribute, value)


class _AttributeReads(Walker):
    def __init__(self, attributes: dict[str, cst.Call]) -> None:
        self.attributes = attributes
        self.found: list[cst.Attribute] = []

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        if isinstance(node.value, cst.Name) and node.value.value == "self" and node.attr.value in self.attributes:
            self.found.append(node)
            return False
        return True
