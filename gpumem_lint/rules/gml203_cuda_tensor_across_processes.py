from collections.abc import Iterator

from gpumem_lint.context import FileContext
from gpumem_lint.diagnostics import Severity
from gpumem_lint.rules._boundaries import (
    CudaEvidence,
    crossing_text,
    process_model,
    start_method_text,
)
from gpumem_lint.rules.base import Invalid, Report, Rule


class CudaTensorAcrossProcesses(Rule):
    """
    ## What it does
    Flags two ways a CUDA tensor handed to another process breaks:

    - it is handed to a child started with the **fork** start method — `Process(args=...)`,
      a `Pool` or `ProcessPoolExecutor` task — chosen explicitly or by default (fork is the
      stdlib default on Linux up to Python 3.13);
    - a function that runs as a child process (the target of `Process` / `spawn` in the same
      module) puts a CUDA tensor on a queue or pipe and then returns without waiting for
      the consumer (no `join()`, `wait()`, `get()`, `recv()` or barrier after it), so the
      producer process exits while the consumer may still hold the tensor.

    ## Why is this bad?
    A CUDA tensor crosses as an IPC handle to the producer's memory. A forked child cannot
    use CUDA once the parent has (and holding a CUDA tensor means the parent has): its
    first CUDA call raises `RuntimeError: Cannot re-initialize CUDA in forked subprocess. To
    use CUDA with multiprocessing, you must use the 'spawn' start method`
    ([docs/facts.md](../docs/facts.md) F14, measured on an H200). And the producer must keep
    the tensor alive as long as a consumer uses it: on an H200 (F15,
    `bench/gpu/process_probe.json`), a consumer that read after its producer had exited got
    `CUDA error: invalid resource handle`, and the producer printed `Producer process has been
    terminated before all shared CUDA tensors released`. A producer that merely drops its
    reference (`del x`) while staying alive is fine — torch keeps the memory until the
    consumer releases it — and is not reported.

    ## Example
    ```python
    def producer(queue):
        batch = torch.randn(64, 128, device="cuda")
        queue.put(batch)

    mp.spawn(producer, args=(queue,))
    ```

    ## Use instead
    ```python
    def producer(queue, done):
        batch = torch.randn(64, 128, device="cuda")
        queue.put(batch)
        done.wait()  # the consumer sets it once it no longer needs the tensor
    ```

    ## Fix safety
    There is no automatic fix. For the fork case, choose spawn (`mp.get_context("spawn")`,
    `mp.set_start_method("spawn")`) or send CPU tensors and move them to the GPU in the child.

    ## References
    - [torch.multiprocessing: sharing CUDA tensors](https://docs.pytorch.org/docs/stable/multiprocessing.html#sharing-cuda-tensors)
    - [Multiprocessing best practices: CUDA in multiprocessing](https://docs.pytorch.org/docs/stable/notes/multiprocessing.html#cuda-in-multiprocessing)
    """

    code = "GML203"
    name = "cuda-tensor-across-processes"
    severity = Severity.ERROR
    summary = "CUDA tensor handed to a forked child, or to a consumer that may outlive its producer"
    fix_title = "Use the spawn start method for CUDA, and keep the producer alive until consumers are done"
    triggers = ("multiprocessing", "ProcessPoolExecutor")
    VALID = (
        """
import torch
import torch.multiprocessing as mp

def producer(queue, done):
    batch = torch.randn(64, 128, device="cuda")
    queue.put(batch)
    done.wait()

def main(queue, done):
    mp.spawn(producer, args=(queue, done), nprocs=1)
""",
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
    )
    INVALID = (
        Invalid(
            """
import torch
import torch.multiprocessing as mp

def producer(rank, queue):
    batch = torch.randn(64, 128, device="cuda")
    queue.put(batch)

def main(queue):
    mp.spawn(producer, args=(queue,), nprocs=1)
""",
            (7,),
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
    )

    def check(self, ctx: FileContext) -> Iterator[Report]:
        model = process_model(ctx)
        on_cuda = CudaEvidence(ctx).sends_cuda

        targets = model.targets()
        for facts, crossing in model.crossings():
            if crossing.kind in ("process", "pool", "executor") and model.start_method(crossing).forks and on_cuda(facts, crossing):
                method = start_method_text(model.start_method(crossing))
                yield Report(
                    crossing.node,
                    f"{crossing_text(ctx, crossing)} hands a CUDA tensor to a child started with {method}: a forked "
                    "child cannot use CUDA once the parent has, and raises `Cannot re-initialize CUDA in forked "
                    "subprocess` at its first CUDA call",
                )
            elif (
                crossing.kind in ("queue", "pipe")
                and id(facts.scope) in targets
                and crossing not in facts.processes.finished
                and on_cuda(facts, crossing)
            ):
                yield Report(
                    crossing.node,
                    f"{crossing_text(ctx, crossing)} hands a CUDA tensor to another process, and `{facts.scope.name}` "
                    "runs as a child process that returns without waiting for the consumer: a producer must keep its "
                    "shared CUDA tensors alive while consumers use them: a consumer that reads after the producer "
                    "exited fails with `CUDA error: invalid resource handle`",
                )

