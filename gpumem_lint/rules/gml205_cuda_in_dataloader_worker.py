from collections.abc import Iterator

import libcst as cst

from gpumem_lint.context import FileContext
from gpumem_lint.diagnostics import Severity
from gpumem_lint.knowledge.devices import default_device
from gpumem_lint.rules._boundaries import module_cuda_names, module_datasets, process_model
from gpumem_lint.rules.base import Invalid, Report, Rule
from gpumem_lint.semantic.datasets import WORKER_LOADER, DatasetClass
from gpumem_lint.semantic.devices import CudaUses, cuda_call, default_cuda_setting, is_cuda_device
from gpumem_lint.semantic.literals import keyword
from gpumem_lint.semantic.program_order import CUDA_INIT_EVENTS
from gpumem_lint.semantic.walk import Walker
from gpumem_lint.semantic.worker_code import (
    ModuleCallables,
    cuda_attributes,
    held_tensors,
    stored_values,
    worker_code,
)


class CudaInDataloaderWorker(Rule):
    """
    ## What it does
    Flags CUDA use in code that `DataLoader` workers run, when a `DataLoader` in the same
    module has `num_workers` other than 0:
    - a Dataset's `__getitem__` / `__iter__` (its own, or inherited from a Dataset class of the module,
      or a method they call through `self.`, the subclass's where it defines one) that
      creates a CUDA tensor or moves data to CUDA — `.cuda()`, `.to("cuda")`, `device="cuda"`,
      `.pin_memory()` — or, when the workers start with spawn or forkserver, reads a CUDA
      tensor the dataset made in `__init__` (`self.X = X.cuda()`);
    - the loader's `collate_fn` or `worker_init_fn` (a function of the module, a lambda,
      `functools.partial(f, ...)`, an object of a module class with `__call__`, or a method of a
      module class: `collate_fn=self.pad`, whose `device=self.device` is a CUDA device when
      `__init__` stores one there, from a construction's argument);
    - a transform the Dataset calls through an attribute (`self.transform(x)`), stored by
      `__init__` directly or from a parameter its construction fills
      (`Features(rows, transform=Compose([Crop(), ToGpu()]))`);
    - a CUDA tensor held by the `TensorDataset` the loader loads (`TensorDataset(x.cuda(), y)`),
      when the workers start with spawn or forkserver;
    - a factory call without `device=` (`torch.tensor(row)`, `torch.zeros(n)`: `devices.toml`)
      in a module that makes CUDA the default device (`torch.set_default_device("cuda")`,
      `torch.set_default_tensor_type("torch.cuda.FloatTensor")`), when the workers fork: they
      inherit the default device (F40).

    `num_workers` counts also when it comes in a `**kwargs` dict literal of the module
    (`kwargs = {"num_workers": 1} if use_cuda else {}`); a name every binding of which in the module
    is the literal 0 (`num_workers = 0`, then `num_workers=num_workers`) starts none.

    Forked workers handed a dataset that holds CUDA tensors are GML203's.

    ## Why is this bad?
    With workers, `__getitem__` runs in worker processes. Under fork — the default on Linux
    up to Python 3.13 — a worker cannot use CUDA once the main process has (a model on the
    GPU, even `torch.cuda.is_available()`), and the first CUDA call raises
    `RuntimeError: Cannot re-initialize CUDA in forked subprocess` ([docs/facts.md](../docs/facts.md)
    F14). Under spawn each worker creates its own CUDA context (hundreds of MB of GPU memory
    per worker) and every batch crosses back as a CUDA IPC handle, which the worker must
    keep alive (F15). PyTorch's documentation advises against returning CUDA tensors from
    workers. The `multiprocessing_context` is read from the call, or from a dict its `**` spread gives
    (`**loader_kwargs`, written out before the call). A `DataLoader` without one starts its workers with the
    module's `set_start_method(...)`, else with the default of the targeted Python: fork on Linux
    up to 3.13, forkserver from 3.14 (set `target-version`).

    Measured on the GPU machine (`bench/gpu/accelerator_probe.json`, torch 2.11.0+cu130, H200),
    with two forked workers after the main process allocated on the GPU: a `collate_fn` calling
    `.cuda()` and a `worker_init_fn` allocating raise `Cannot re-initialize CUDA in forked
    subprocess`; a `collate_fn` calling `.pin_memory()` and a `TensorDataset` of CUDA tensors
    raise a CUDA error (`AcceleratorError`). The same `collate_fn` runs when the main process
    had not touched CUDA, and under spawn; `DataLoader(..., pin_memory=True)` (pinned by the main
    process) returns pinned batches ([docs/facts.md](../docs/facts.md) F29).

    ## Known problems
    Callables are followed only within the module: a `collate_fn` imported from another module,
    or passed in by a caller, is not read. A device held in an attribute (`.to(self.device)`)
    counts when `__init__` stores a CUDA device there, or the parameter it stores is filled
    with one by a construction of the class in the module (`MyDataset(64, device)` after
    `device = torch.device("cuda:0")`), when the module assigns the attribute a CUDA device by
    name, or names it like a device index (`rank`, `gpu`: `device_index_names` in
    [`heuristics.toml`](../gpumem_lint/knowledge/heuristics.toml)).

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
        # the subclass defines its own `__getitem__`: the base's, which moves to CUDA, never runs
        """
import torch
from torch.utils.data import DataLoader, Dataset


class BaseImages(Dataset):
    def __init__(self, paths):
        self.paths = paths

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, index):
        return torch.rand(3, 32, 32).cuda()


class Images(BaseImages):
    def __getitem__(self, index):
        return torch.rand(3, 32, 32)


def main(paths):
    torch.nn.Conv2d(3, 2, 3).cuda()
    loader = DataLoader(Images(paths), batch_size=4, num_workers=2)
    return [batch for batch in loader]
""",
        # every binding of `num_workers` is 0: the batches are built in the main process
        """
from functools import partial

import torch
from torch.utils.data import DataLoader


def collate(batch, device="cpu"):
    return torch.stack(batch).to(device)


def main(data, fast):
    device = torch.device("cuda")
    num_workers = 0
    loader = DataLoader(data, batch_size=4, collate_fn=partial(collate, device=device), num_workers=num_workers)
    return [batch.shape for batch in loader]
""",
        # a method as `collate_fn` whose `self.device` its construction fills with the CPU
        """
import torch
from torch.utils.data import DataLoader


class TextData:
    def __init__(self, device, num_workers=4):
        self.device = device
        self.num_workers = num_workers

    def _pad(self, batch):
        longest = max(len(x) for x in batch)
        tokens = torch.zeros((len(batch), longest), dtype=torch.long, device=self.device)
        for i, x in enumerate(batch):
            tokens[i, : len(x)] = x
        return tokens

    def loader(self, dataset):
        return DataLoader(dataset, batch_size=8, num_workers=self.num_workers, collate_fn=self._pad)


data = TextData(torch.device("cpu"))
""",
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
        """
import torch
from torch.utils.data import DataLoader, TensorDataset, default_collate

def collate(batch):
    return default_collate(batch).to(torch.float16)  # a dtype, not a device

x = torch.randn(100, 8)
loader = DataLoader(TensorDataset(x), batch_size=8, num_workers=2, collate_fn=collate, pin_memory=True)
""",
        """
import torch
from torch.utils.data import DataLoader, TensorDataset

def to_gpu(batch):
    return [t.cuda() for t in batch]

data = TensorDataset(torch.randn(100, 8).cuda())
loader = DataLoader(data, batch_size=8, num_workers=0, collate_fn=to_gpu)
""",
        """
import random
import torch
from torch.utils.data import DataLoader

def seed_worker(worker_id):
    random.seed(worker_id)
    torch.cuda.manual_seed_all(worker_id)  # queued until CUDA initialises: raises nothing in a forked worker

model = torch.nn.Linear(8, 8).cuda()
loader = DataLoader(dataset, batch_size=8, num_workers=2, worker_init_fn=seed_worker)
""",
        """
import torch
from torch.utils.data import DataLoader, Dataset

class Noise(Dataset):
    def __init__(self, length, device):
        self.length = length
        self.device = device

    def __getitem__(self, i):
        return torch.rand(10).to(self.device)

loader = DataLoader(Noise(64, torch.device("cpu")), batch_size=8, num_workers=2)
""",
        """
import torch
from torch.utils.data import DataLoader, Dataset

class Rows(Dataset):
    def __getitem__(self, i):
        return torch.zeros(3, device="cpu")

def main():
    torch.set_default_device("cuda")
    return DataLoader(Rows(), batch_size=4, num_workers=2)
""",
        """
import torch
from torch.utils.data import DataLoader, Dataset

class Rows(Dataset):
    def __getitem__(self, i):
        return torch.zeros(3)

def main():
    torch.set_default_device("cuda")  # not inherited by spawned workers
    return DataLoader(Rows(), batch_size=4, num_workers=2, multiprocessing_context="spawn")
""",
        """
import torch
from torch.utils.data import DataLoader, Dataset

class Rows(Dataset):
    def __getitem__(self, i):
        return torch.zeros(3)

def main():
    torch.set_default_device("cuda")
    kwargs = {"num_workers": 0, "pin_memory": True}
    return DataLoader(Rows(), batch_size=4, **kwargs)
""",
    )
    INVALID = (
        # `__getitem__` is inherited from the base class, whose `self.load(index)` runs the subclass's load
        Invalid(
            """
import torch
from torch.utils.data import DataLoader, Dataset


class BaseImages(Dataset):
    def __init__(self, paths):
        self.paths = paths

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, index):
        return self.load(index)


class NoisyImages(BaseImages):
    def load(self, index):
        return torch.rand(3, 32, 32).cuda()


def main(paths):
    model = torch.nn.Conv2d(3, 2, 3).cuda()
    loader = DataLoader(NoisyImages(paths), batch_size=4, num_workers=2)
    return [model(batch) for batch in loader]
""",
            (19,),
        ),
        # one binding of `num_workers` starts workers, which run the collate function
        Invalid(
            """
from functools import partial

import torch
from torch.utils.data import DataLoader


def collate(batch, device="cpu"):
    return torch.stack(batch).to(device)


def main(data, fast):
    device = torch.device("cuda")
    num_workers = 0
    if fast:
        num_workers = 4
    loader = DataLoader(data, batch_size=4, collate_fn=partial(collate, device=device), num_workers=num_workers)
    return [batch.shape for batch in loader]
""",
            (9,),
        ),
        # the same method, given a CUDA device
        Invalid(
            """
import torch
from torch.utils.data import DataLoader


class TextData:
    def __init__(self, device, num_workers=4):
        self.device = device
        self.num_workers = num_workers

    def _pad(self, batch):
        longest = max(len(x) for x in batch)
        tokens = torch.zeros((len(batch), longest), dtype=torch.long, device=self.device)
        for i, x in enumerate(batch):
            tokens[i, : len(x)] = x
        return tokens

    def loader(self, dataset):
        return DataLoader(dataset, batch_size=8, num_workers=self.num_workers, collate_fn=self._pad)


data = TextData(torch.device("cuda"))
""",
            (13,),
        ),
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
        Invalid(
            """
import torch
from torch.utils.data import DataLoader, Dataset

class Noise(Dataset):
    def __init__(self, length, device):
        self.length = length
        self.device = device

    def __getitem__(self, i):
        return torch.rand(10).to(self.device)

def main():
    device = torch.device("cuda:0")
    loader = DataLoader(Noise(64, device), batch_size=8, num_workers=2)
""",
            (11,),
        ),
        Invalid(
            """
import torch
from torch.utils.data import DataLoader, Dataset

class Rows(Dataset):
    def __getitem__(self, i):
        return torch.zeros(3)

def main():
    torch.set_default_tensor_type("torch.cuda.FloatTensor")
    kwargs = {"num_workers": 2, "pin_memory": True}
    return DataLoader(Rows(), batch_size=4, **kwargs)
""",
            (7,),
        ),
        Invalid(
            """
import torch
from torch.utils.data import DataLoader, default_collate

def collate(batch):
    return default_collate(batch).pin_memory()

model = torch.nn.Linear(8, 8).cuda()
loader = DataLoader(dataset, batch_size=8, num_workers=2, collate_fn=collate)
""",
            (6,),
        ),
        Invalid(
            """
import torch
from torch.utils.data import DataLoader, Dataset

class ToGpu:
    def __call__(self, x):
        return x.cuda()

class Images(Dataset):
    def __init__(self, paths, transform=None):
        self.paths = paths
        self.transform = transform

    def __getitem__(self, i):
        return self.transform(torch.load(self.paths[i]))

loader = DataLoader(Images(paths, transform=ToGpu()), batch_size=8, num_workers=4)
""",
            (7,),
        ),
        Invalid(
            """
import torch
from torch.utils.data import DataLoader, TensorDataset

def seed_worker(worker_id):
    torch.cuda.set_device(0)

features = torch.randn(100, 8).cuda()
data = TensorDataset(features, torch.zeros(100))
loader = DataLoader(data, batch_size=8, num_workers=2, worker_init_fn=seed_worker, multiprocessing_context="spawn")
""",
            (6, 8),
        ),
    )

    def check(self, ctx: FileContext) -> Iterator[Report]:
        found = module_datasets(ctx)
        if not found.worker_loaders:
            return
        setting = default_cuda_setting(ctx.module, module_cuda_names(ctx), ctx.semantic.imports)
        yield from self._other_worker_code(ctx, found, setting)
        names = module_cuda_names(ctx)
        for cls in found.classes.values():
            loaders = found.loaders_of(cls)
            if not loaders:
                continue
            spawned = all(_spawns(ctx, each.start_method) for each in loaders)
            calls = _WorkerCudaUses(
                names | _device_attributes(cls, found, names, ctx), ctx.semantic.imports, None if spawned else setting
            )
            made = cuda_attributes(cls, found, names, ctx.semantic.imports)
            reads = _AttributeReads(made)
            for method in cls.worker_methods().values():
                calls.walk(method.body)
                reads.walk(method.body)
            if not (calls.found or reads.found):
                continue
            loader = loaders[0]
            where = f"`DataLoader` at line {ctx.line(loader.node)}"
            if calls.found:
                call = _first(ctx, calls.found)
                consequence = _call_consequence(ctx, call, loader.node, spawned)
                yield Report(
                    call,
                    f"`{ctx.code(call)}` runs in DataLoader worker processes ({where}): "
                    f"{calls.by_default_text(ctx, call)}{consequence}",
                )
            elif reads.found and spawned:  # forked workers handed a CUDA tensor are GML203's
                read = _first(ctx, reads.found)
                yield Report(
                    read,
                    f"`{ctx.code(read)}` is a CUDA tensor (made at line {ctx.line(made[read.attr.value])}) read in "
                    f"DataLoader worker processes ({where}): {_consequence(spawned)}",
                )

    def _other_worker_code(self, ctx: FileContext, found, setting: cst.Call | None) -> Iterator[Report]:
        """collate_fn, worker_init_fn and transforms, and the CUDA tensors a TensorDataset holds."""
        names, imports = module_cuda_names(ctx), ctx.semantic.imports
        reported: set[int] = set()
        for code in worker_code(found, ModuleCallables(ctx.module, imports, found.values)):
            spawned = _spawns(ctx, code.loader.start_method)
            devices = set()
            if code.owner is not None:  # a method: `device=self.device`, stored by its class's `__init__`
                devices = _device_attributes(DatasetClass.of(code.owner), found, names, ctx)
            uses = _WorkerCudaUses(names | devices, imports, None if spawned else setting)
            uses.walk(code.body)
            if not uses.found or id(call := _first(ctx, uses.found)) in reported:
                continue
            reported.add(id(call))
            where = f"{code.role} `DataLoader` at line {ctx.line(code.loader.node)}"
            consequence = _call_consequence(ctx, call, code.loader.node, spawned)
            yield Report(
                call,
                f"`{ctx.code(call)}` runs in DataLoader worker processes ({where}): "
                f"{uses.by_default_text(ctx, call)}{consequence}",
            )
        for loader in found.worker_loaders:
            if not _spawns(ctx, loader.start_method):
                continue  # forked workers handed a CUDA tensor are GML203's
            for tensor in held_tensors(loader, found, imports):
                if isinstance(tensor, cst.Call) and cuda_call(tensor, names, imports) and id(tensor) not in reported:
                    reported.add(id(tensor))
                    yield Report(
                        tensor,
                        f"`{ctx.code(tensor)}`, a CUDA tensor of the dataset workers index (`DataLoader` at line "
                        f"{ctx.line(loader.node)}), maps into each worker's own CUDA context: hundreds of MB each",
                    )


def _device_attributes(cls, found, names: set[str], ctx: FileContext) -> set[str]:
    """`self.device`, where `__init__` stores a CUDA device, or a parameter a construction fills with one
    (`MyDataset(64, device)` after `device = torch.device("cuda:0")`)."""
    return {
        f"self.{attribute}"
        for attribute, values in stored_values(cls, found).items()
        if any(is_cuda_device(value, names, ctx.semantic.imports) for value in values)
    }


def _spawns(ctx: FileContext, method: str | None) -> bool:
    """Whether the workers start in a fresh interpreter: `multiprocessing_context="spawn"`, or, without one,
    the module's `set_start_method(...)` or the default for the target version (forkserver from 3.14)."""
    if method is None:
        method = process_model(ctx).default_start_method().name
    return method in ("spawn", "forkserver")


def _call_consequence(ctx: FileContext, call: cst.Call, loader: cst.Call, spawned: bool) -> str:
    """What the CUDA call does in a worker: under fork, after the main process's first CUDA call, it raises."""
    if spawned:
        return _consequence(spawned)
    pins = _pins(call)
    site = ctx.program_order.first_event_before(loader, CUDA_INIT_EVENTS)
    if site is None:
        return _PIN_FAILS if pins else _consequence(spawned)
    error = "a CUDA error" if pins else "`Cannot re-initialize CUDA in forked subprocess`"
    return f"after `{site.call}` ({site.where()}) a forked worker raises {error} here"


_PIN_FAILS = "once the main process used CUDA, pinning raises a CUDA error in a forked worker"


def _pins(call: cst.Call) -> bool:
    return isinstance(call.func, cst.Attribute) and call.func.attr.value == "pin_memory"


class _WorkerCudaUses(CudaUses):
    """CUDA uses, and `.pin_memory()`: pinning needs a CUDA context, which a forked worker cannot create.
    With `default_cuda` (the module's `torch.set_default_device("cuda")`, inherited by forked workers,
    F40), a factory call without `device=` (`torch.tensor(row)`) allocates on CUDA too."""

    def __init__(self, names: set[str], imports, default_cuda: cst.Call | None = None) -> None:
        super().__init__(names, imports)
        self.default_cuda = default_cuda
        self.by_default: set[int] = set()

    def visit_Call(self, node: cst.Call) -> None:
        super().visit_Call(node)
        if any(found is node for found in self.found):
            return
        if _pins(node):
            self.found.append(node)
        elif (
            self.default_cuda is not None
            and self.imports.qualify(node.func) in default_device().factories
            and keyword(node, "device") is None
        ):
            self.found.append(node)
            self.by_default.add(id(node))

    def by_default_text(self, ctx: FileContext, call: cst.Call) -> str:
        if id(call) not in self.by_default:
            return ""
        return f"`{ctx.code(self.default_cuda.func)}(...)` (line {ctx.line(self.default_cuda)}) makes it allocate on CUDA; "


def _consequence(spawned: bool) -> str:
    if spawned:
        return "each worker creates its own CUDA context, hundreds of MB of GPU memory each"
    return "once the main process used CUDA, a forked worker raises `Cannot re-initialize CUDA in forked subprocess`"


def _first(ctx: FileContext, nodes: list) -> cst.CSTNode:
    return min(nodes, key=lambda node: (ctx.line(node), ctx.positions[node].start.column))


class _AttributeReads(Walker):
    def __init__(self, attributes: dict[str, cst.Call]) -> None:
        self.attributes = attributes
        self.found: list[cst.Attribute] = []

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        if isinstance(node.value, cst.Name) and node.value.value == "self" and node.attr.value in self.attributes:
            self.found.append(node)
            return False
        return True
