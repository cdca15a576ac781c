from collections.abc import Iterator

import libcst as cst

from gpumem_lint.context import FileContext
from gpumem_lint.diagnostics import Severity
from gpumem_lint.rules._boundaries import crossing_text, process_model
from gpumem_lint.rules._reporting import write_text
from gpumem_lint.rules.base import Invalid, Report, Rule
from gpumem_lint.semantic.boundaries import Receiver
from gpumem_lint.semantic.values import AliasKind
from gpumem_lint.semantic.walk import Walker


class UnsynchronisedSharedUpdate(Rule):
    """
    ## What it does
    Flags a read-modify-write — `total += x`, `stats.add_(x)`, `counts[label] += 1` — in a
    function that several processes run (`spawn(..., nprocs=4)`, processes started in a
    loop, a pool), on a tensor the parent made shareable on purpose with `share_memory_()`
    and handed to all of them, when no lock is held around the write (`with lock:`,
    `lock.acquire()`).

    Optimizer steps and training calls on a shared model are **not** flagged: that is
    Hogwild, a legitimate lock-free idiom whose lost updates SGD tolerates. Writes to a
    slot chosen by the worker's own rank (`results[rank] = ...`) are disjoint and not
    flagged either. The rule is a warning because lock-free sharing is sometimes intended;
    turn it off with `ignore = ["GML208"]` if your code relies on it.

    ## Why is this bad?
    Every process maps the same shared memory ([docs/facts.md](../docs/facts.md) F12), and
    an in-place update reads, computes and writes back without any atomicity: two workers
    that add at the same time lose one of the additions. Counters, histograms and metric
    accumulators come out too small, by an amount that changes from run to run.

    ## Example
    ```python
    def worker(rank, loader, seen):
        for batch in loader:
            seen += len(batch)

    seen = torch.zeros(1).share_memory_()
    mp.spawn(worker, args=(loader, seen), nprocs=4)
    ```

    ## Use instead
    ```python
    def worker(rank, loader, seen, lock):
        for batch in loader:
            with lock:
                seen += len(batch)

    mp.spawn(worker, args=(loader, seen, mp.Lock()), nprocs=4)
    ```

    ## Fix safety
    There is no automatic fix. A lock serialises the updates; per-rank slots
    (`seen[rank] += n`, summed by the parent after `join`) avoid contention.

    ## References
    - [Multiprocessing best practices: Hogwild](https://docs.pytorch.org/docs/stable/notes/multiprocessing.html#asynchronous-multiprocess-training-e-g-hogwild)
    """

    code = "GML208"
    name = "unsynchronised-shared-update"
    severity = Severity.WARNING
    summary = "Several processes update a shared-memory tensor in place without a lock"
    fix_title = "Hold a `multiprocessing.Lock` around the update, or give each process its own slot"
    triggers = ("share_memory",)
    VALID = (
        """
import torch
import torch.multiprocessing as mp

def worker(rank, loader, seen, lock):
    for batch in loader:
        with lock:
            seen += len(batch)

if __name__ == "__main__":
    seen = torch.zeros(1).share_memory_()
    mp.spawn(worker, args=(None, seen, mp.Lock()), nprocs=4)
""",
        """
import torch
import torch.multiprocessing as mp

def worker(rank, results):
    results[rank] = rank * 2

if __name__ == "__main__":
    results = torch.zeros(4)
    results.share_memory_()
    mp.spawn(worker, args=(results,), nprocs=4)
""",
    )
    INVALID = (
        Invalid(
            """
import torch
import torch.multiprocessing as mp

def worker(rank, loader, seen):
    for batch in loader:
        seen += len(batch)

if __name__ == "__main__":
    seen = torch.zeros(1)
    seen.share_memory_()
    mp.spawn(worker, args=(None, seen), nprocs=4)
""",
            (7,),
        ),
    )

    def check(self, ctx: FileContext) -> Iterator[Report]:
        model = process_model(ctx)
        reported = set()
        for sender, crossing in model.crossings():
            shared = sender.processes.shared_on_purpose
            receiver = model.receiver(sender, crossing)
            if not crossing.several or not shared or receiver is None:
                continue
            locked = _locked_nodes(receiver)
            if locked is None:
                continue  # the function takes a lock somewhere: synchronisation in sight
            names = receiver.parameters_receiving(shared)
            private = [name for name in receiver.facts.scope.params if name not in receiver.received or name == "rank"]
            for write in receiver.facts.writes:
                hit = [s.label for s in write.storage.lineage() if s.origin == "param" and s.label in names]
                if not hit or write.module or write.rebinds or id(write.node) in locked or id(write.node) in reported:
                    continue
                if any(h.kind is AliasKind.PARAMETERS for h in write.writer.chain()):
                    continue  # `for p in model.parameters(): p.data.add_(...)`: a hand-written Hogwild step
                if write.index and any(name in write.index for name in private):
                    continue  # `results[rank] = ...`: each process its own slot
                reported.add(id(write.node))
                yield Report(
                    write.node,
                    f"{write_text(ctx, write)} updates `{hit[0]}`, which {crossing_text(ctx, crossing)} shares with "
                    "several processes, without a lock: concurrent updates are lost",
                )


def _locked_nodes(receiver: Receiver) -> set[int] | None:
    """Ids of the nodes under `with <lock>:`; None when the function calls `.acquire()`."""
    collector = _Locks()
    collector.walk(receiver.facts.scope.node)
    return None if collector.acquires else collector.locked


class _Locks(Walker):
    def __init__(self) -> None:
        self.locked: set[int] = set()
        self.acquires = False
        self._depth = 0

    def visit_With(self, node: cst.With) -> None:
        if any("lock" in cst.Module([]).code_for_node(item.item).lower() for item in node.items):
            self._depth += 1

    def leave_With(self, node: cst.With) -> None:
        if any("lock" in cst.Module([]).code_for_node(item.item).lower() for item in node.items):
            self._depth -= 1

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "acquire":
            self.acquires = True

    def walk(self, node: cst.CSTNode) -> None:
        if self._depth:
            self.locked.add(id(node))
        super().walk(node)
