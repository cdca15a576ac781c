from collections.abc import Iterator

import libcst as cst

from gpumem_lint.context import FileContext
from gpumem_lint.diagnostics import Severity
from gpumem_lint.fixes import Applicability
from gpumem_lint.knowledge.heuristics import heuristics
from gpumem_lint.rules._boundaries import crossing_text, cuda_evidence, pickling_method_text, process_model
from gpumem_lint.rules._clone_fix import unshared_write
from gpumem_lint.rules._reporting import write_text
from gpumem_lint.rules.base import Invalid, Report, Rule
from gpumem_lint.semantic.boundaries import Receiver
from gpumem_lint.semantic.devices import moved_to_cuda
from gpumem_lint.semantic.imports import dotted_name
from gpumem_lint.semantic.processes import PROCESS_CROSSING
from gpumem_lint.semantic.values import Write
from gpumem_lint.semantic.walk import Walker

#: Writes that train a received model (`optimizer.step()`, `train_one_epoch(model)`).
_TRAINING_OPS = frozenset({"step()", "training call"})


class ReceiverWritesSharedTensor(Rule):
    """
    ## What it does
    Flags an in-place write, in the function another process runs — the `target` of
    `Process`, the function of `torch.multiprocessing.spawn`, of `Pool.map` / `apply_async`
    / `starmap`, of `ProcessPoolExecutor.submit` / `map`, defined in the same module — to a
    tensor parameter it received from the parent, when it has not made its own copy first.
    Tensors inside a received list or dict count; `data = [t.clone() for t in data]`
    first is the safe form.

    ## Why is this bad?
    Under spawn and forkserver, and for every pool or executor task whatever the start
    method, the arguments are pickled, which moves each CPU tensor's memory into shared
    memory in place ([docs/facts.md](../docs/facts.md) F12): the child's `add_` changes the
    parent's tensor, and with several workers (`nprocs=4`, a pool) they all write the same
    memory at once. Under fork the child has a copy-on-write copy and the same write is
    silently lost (F13), so the program's result depends on the start method. Only the
    cases pickled on some platform the code may run on are reported: there the write reaches the parent.

    A received model trained in the child (`optimizer.step()`) is the same hazard: every
    worker updates the parent's weights at once — Hogwild without meaning to (F18). It is not
    reported when the parent shared the model on purpose (`model.share_memory()`, the
    Hogwild recipe) or the child moved it to its GPU first (`model.to(rank)`).

    Mutation is taken as the function's job, and not reported, when its name ends with `_`,
    when its docstring says "in place" or "shared memory", when the parent made the
    tensor shareable on purpose (`share_memory_()`, see GML208; also a method that hands over
    `self` or one of its attributes, `args=(self,)`, in a class whose methods put its tensors in
    shared memory), and when the parent hands over
    memory nothing has written yet (`torch.empty(n)`, F35): a result buffer for the child to fill,
    holding no values of the parent's to overwrite.

    The platform's default start method counts as pickling: fork on Linux up to Python 3.13, but
    spawn on macOS and Windows whatever the version, so there the child's write lands in the
    parent's tensor (`mp.get_context("fork")` says the code relies on fork).

    ## Known problems
    A receiver whose docstring says it writes shared memory on purpose ("in place",
    "shared memory", "Hogwild": `documented_sharing` in
    [`heuristics.toml`](../gpumem_lint/knowledge/heuristics.toml)) is not reported; one that
    does so without saying is.

    ## Example
    ```python
    def train_process(rank, data):
        for t in data:
            t.sub_(t.mean())
        ...

    mp.spawn(train_process, args=(shared_data,), nprocs=4)
    ```

    ## Use instead
    ```python
    def train_process(rank, data):
        local_data = [t.clone() for t in data]  # each process its own copy
        for t in local_data:
            t.sub_(t.mean())
    ```

    ## Fix safety
    The fix makes the child write its own tensor: out of place (`x = x - x.mean()`,
    `batch = batch.mul(2)`), or on a copy made just before the write (`x = x.clone()` above
    `x[i] = 0`). It is unsafe: it costs one copy of the data per process, and a parent meant
    to see the result no longer does; for that, call `share_memory_()` on it before starting
    the processes and synchronise the writers (a `Lock`, or disjoint slices per rank).

    ## References
    - [Multiprocessing best practices](https://docs.pytorch.org/docs/stable/notes/multiprocessing.html)
    - [multiprocessing: contexts and start methods](https://docs.python.org/3/library/multiprocessing.html#contexts-and-start-methods)
    """

    code = "GML202"
    name = "receiver-writes-shared-tensor"
    severity = Severity.ERROR
    summary = "A child process writes in place a tensor its parent handed over"
    fix_title = "Copy first in the child (`data = [t.clone() for t in data]`), or share on purpose with `share_memory_()` and a lock"
    fix_applicability = Applicability.UNSAFE
    triggers = ("multiprocessing", "ProcessPoolExecutor")
    file_trigger = PROCESS_CROSSING
    VALID = (
        """
import torch
from torch.multiprocessing import spawn

def train_process(rank, data):
    local_data = [tensor.clone() for tensor in data]
    for t in local_data:
        t.sub_(t.mean())

if __name__ == '__main__':
    shared_data = [torch.randn(100) for _ in range(10)]
    spawn(train_process, args=(shared_data,), nprocs=4)
""",
        """
import torch
import torch.multiprocessing as mp

def fill(rank, results, lock):
    with lock:
        results[rank] = rank

if __name__ == "__main__":
    results = torch.zeros(4)
    results.share_memory_()
    mp.spawn(fill, args=(results, mp.Lock()), nprocs=4)
""",
        """
import torch
import torch.multiprocessing as mp

def worker(rank, batch):
    batch = batch.cuda()
    batch.mul_(2)

if __name__ == "__main__":
    mp.spawn(worker, args=(torch.ones(3),), nprocs=2)
""",
        """
import torch
import torch.multiprocessing as mp

def fill(rank, result):
    if rank == 0:
        result[:] = torch.arange(4.0)

if __name__ == "__main__":
    result = torch.empty(4)  # a buffer for rank 0 to fill
    mp.spawn(fill, args=(result,), nprocs=2)
    print(result.tolist())
""",
        """
import torch
import multiprocessing as mp

def child(t):
    t.add_(100)

def main():
    t = torch.zeros(3)
    p = mp.get_context("fork").Process(target=child, args=(t,))
    p.start()
    p.join()
""",
        """
import torch
import torch.multiprocessing as mp

def update(model, grads):
    model.weight.data.add_(grads.get())

class Embeddings(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(8))

    def share_memory(self):
        self.weight.share_memory_()

    def start_updater(self, grads):
        self.updater = mp.Process(target=update, args=(self, grads))
        self.updater.start()
""",
    )
    INVALID = (
        Invalid(
            # `functools.partial` fills `factor`: the spawned `scale(2, rank, batch)` receives the batch third
            """
import functools

import torch
import torch.multiprocessing as mp

def scale(factor, rank, batch):
    batch.mul_(factor)
    print(batch.sum().item())

if __name__ == "__main__":
    batch = torch.ones(3)
    mp.spawn(functools.partial(scale, 2), args=(batch,), nprocs=1)
    print(batch.tolist())
""",
            (8,),
            fixed="""
import functools

import torch
import torch.multiprocessing as mp

def scale(factor, rank, batch):
    batch = batch.mul(factor)
    print(batch.sum().item())

if __name__ == "__main__":
    batch = torch.ones(3)
    mp.spawn(functools.partial(scale, 2), args=(batch,), nprocs=1)
    print(batch.tolist())
""",
            prints="6.0\n[1.0, 1.0, 1.0]",
        ),
        Invalid(
            """
import torch
import torch.multiprocessing as mp

def scale(rank, batch):
    batch.mul_(2)
    print(batch.sum().item())

if __name__ == "__main__":
    batch = torch.ones(3)
    mp.spawn(scale, args=(batch,), nprocs=1)
    print(batch.tolist())
""",
            (6,),
            fixed="""
import torch
import torch.multiprocessing as mp

def scale(rank, batch):
    batch = batch.mul(2)
    print(batch.sum().item())

if __name__ == "__main__":
    batch = torch.ones(3)
    mp.spawn(scale, args=(batch,), nprocs=1)
    print(batch.tolist())
""",
            prints="6.0\n[1.0, 1.0, 1.0]",
        ),
        Invalid(
            """
import torch
from torch.multiprocessing import spawn

def train_process(rank, data):
    for t in data:
        t.sub_(t.mean())

if __name__ == '__main__':
    shared_data = [torch.arange(100.0) for _ in range(10)]
    spawn(train_process, args=(shared_data,), nprocs=2)
    print(shared_data[0][:3].tolist())
""",
            (7,),
            fixed="""
import torch
from torch.multiprocessing import spawn

def train_process(rank, data):
    for t in data:
        t = t.sub(t.mean())

if __name__ == '__main__':
    shared_data = [torch.arange(100.0) for _ in range(10)]
    spawn(train_process, args=(shared_data,), nprocs=2)
    print(shared_data[0][:3].tolist())
""",
            prints="[0.0, 1.0, 2.0]",
        ),
        Invalid(
            """
import torch
from multiprocessing import Pool

def normalise(x):
    x -= x.mean()
    return x.norm()

def norms(tensors):
    with Pool(4) as pool:
        return pool.map(normalise, tensors)
""",
            (6,),
            fixed="""
import torch
from multiprocessing import Pool

def normalise(x):
    x = x - x.mean()
    return x.norm()

def norms(tensors):
    with Pool(4) as pool:
        return pool.map(normalise, tensors)
""",
        ),
        Invalid(
            """
import torch
import multiprocessing as mp

def child(t):
    t[:2] = 0

def main():
    t = torch.ones(3)
    p = mp.Process(target=child, args=(t,))  # the default start method: spawn on macOS and Windows
    p.start()
    p.join()
""",
            (6,),
            fixed="""
import torch
import multiprocessing as mp

def child(t):
    t = t.clone()
    t[:2] = 0

def main():
    t = torch.ones(3)
    p = mp.Process(target=child, args=(t,))  # the default start method: spawn on macOS and Windows
    p.start()
    p.join()
""",
        ),
    )

    def check(self, ctx: FileContext) -> Iterator[Report]:
        model = process_model(ctx)
        evidence = cuda_evidence(ctx)
        reported = set()
        for sender, crossing in model.crossings():
            if not model.pickled(crossing):
                continue
            receiver = model.receiver(sender, crossing)
            if receiver is None or _mutation_is_the_point(receiver):
                continue
            shared = sender.processes.shared_on_purpose
            own_class_shares = _class_shares_memory(ctx, sender)
            moved = moved_to_cuda(receiver.facts.scope.node, evidence.names, ctx.semantic.imports)
            writes: dict[str, list[Write]] = {}
            for write in receiver.facts.writes:
                names = _received_names(receiver, write)
                if not names or write.rebinds:
                    continue
                if write.module and (write.op not in _TRAINING_OPS or names[0] in moved):
                    continue  # loading a checkpoint; or the child moved the model to its GPU first
                values = [receiver.received[name] for name in names]
                if any(h.storage.related(s) for value in values for h in value.handles for s in shared):
                    continue
                if own_class_shares and any(_is_self(value) for value in values):
                    continue  # the object hands itself (or a part) over, its tensors shared on purpose (Hogwild)
                if all(h.storage in crossing.blank for value in values for h in value.handles):
                    continue  # a `torch.empty` buffer for the child to fill: it holds nothing of the parent's
                if not (
                    write.certain or any(value.tensor for value in values) or receiver.facts.scope.params.get(names[0])
                ):
                    continue  # `n += 1` on a received int
                writes.setdefault(names[0], []).append(write)
            for name, candidates in writes.items():
                # One finding per parameter: its first write (positions are resolved only to choose one).
                write = candidates[0]
                if len(candidates) > 1:
                    write = min(candidates, key=lambda w: (ctx.line(w.node), ctx.positions[w.node].start.column))
                if (id(receiver.facts.scope), name) in reported:
                    continue
                reported.add((id(receiver.facts.scope), name))
                others = " and every other worker's" if crossing.several else ""
                if write.module:
                    yield Report(
                        write.node,
                        f"{write_text(ctx, write)} trains `{name}`, a model {crossing_text(ctx, crossing)} handed "
                        f"over: this updates the parent's shared weights{others}, an unintended Hogwild",
                    )
                    continue
                yield Report(
                    write.node,
                    f"{write_text(ctx, write)} writes in place `{name}`, which {crossing_text(ctx, crossing)} handed "
                    f"over: {_where_shared(model, crossing)}this changes the parent's shared tensor{others}",
                    fix=unshared_write(ctx, write),
                )


def _is_self(value) -> bool:
    return any(s.label == "self" for h in value.handles for s in h.storage.lineage())


def _class_shares_memory(ctx: FileContext, sender) -> bool:
    """Whether the sender is a method of a class that puts its own tensors in shared memory in one of
    its methods (`self.weight.share_memory_()`, `self.share_memory()`)."""
    name = sender.scope.class_name
    for statement in ctx.module.body if name is not None else ():
        if isinstance(statement, cst.ClassDef) and statement.name.value == name:
            calls = _SelfSharing()
            calls.walk(statement.body)
            return calls.found
    return False


class _SelfSharing(Walker):
    def __init__(self) -> None:
        self.found = False

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("share_memory_", "share_memory"):
            owner = dotted_name(func.value)
            self.found |= owner is not None and (owner == "self" or owner.startswith("self."))


def _where_shared(model, crossing) -> str:
    """Where a child started with a default that forks on Linux shares the tensor: macOS and Windows."""
    method = model.start_method(crossing)
    if crossing.kind == "process" and method.default and method.forks:
        return f"under {pickling_method_text(method)} "
    return ""


def _received_names(receiver: Receiver, write: Write) -> list[str]:
    return [s.label for s in write.storage.lineage() if s.origin == "param" and s.label in receiver.received]


def _mutation_is_the_point(receiver: Receiver) -> bool:
    scope = receiver.facts.scope
    return scope.name.endswith("_") or bool(scope.docstring and heuristics().documented_sharing.search(scope.docstring))
