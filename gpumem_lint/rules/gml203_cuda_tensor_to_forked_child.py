from collections.abc import Iterator

from gpumem_lint.context import FileContext
from gpumem_lint.diagnostics import Severity
from gpumem_lint.rules._boundaries import (
    crossing_text,
    cuda_evidence,
    process_model,
    start_method_text,
)
from gpumem_lint.rules.base import Invalid, Report, Rule
from gpumem_lint.semantic.processes import PROCESS_CROSSING

#: Crossings that start processes, and so may fork (`start_processes(..., start_method="fork")` too).
_FORKING = ("process", "spawn", "pool", "executor")


class CudaTensorToForkedChild(Rule):
    """
    ## What it does
    Flags a CUDA tensor — or a module moved to CUDA (`model.cuda()`) — handed to a child
    started with the **fork** start method: `Process(args=...)`, a `Pool` or
    `ProcessPoolExecutor` task, with fork chosen explicitly or by default (fork is the stdlib
    default on Linux up to Python 3.13; set `target-version` to say which Python you target).

    ## Why is this bad?
    A forked child cannot use CUDA once the parent has, and holding a CUDA tensor means the
    parent has: the child's first CUDA call — touching the tensor it was given, or
    unpickling it from a pool's task queue — raises `RuntimeError: Cannot re-initialize CUDA
    in forked subprocess. To use CUDA with multiprocessing, you must use the 'spawn' start
    method` ([docs/facts.md](../docs/facts.md) F14, measured on an H200). Under spawn the
    same tensor crosses as a CUDA IPC handle and both sides see each other's writes (F15).

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
    There is no automatic fix. Spawn children re-import the main module, so the launching
    code must sit under `if __name__ == "__main__":`; alternatively send CPU tensors and move
    them to the GPU in the child.

    ## References
    - [torch.multiprocessing: sharing CUDA tensors](https://docs.pytorch.org/docs/stable/multiprocessing.html#sharing-cuda-tensors)
    - [Multiprocessing best practices: CUDA in multiprocessing](https://docs.pytorch.org/docs/stable/notes/multiprocessing.html#cuda-in-multiprocessing)
    """

    code = "GML203"
    name = "cuda-tensor-to-forked-child"
    severity = Severity.ERROR
    summary = "CUDA tensor handed to a child started with fork"
    fix_title = 'Start the child with spawn (`mp.get_context("spawn")`), or send CPU tensors and move them in the child'
    triggers = ("multiprocessing", "ProcessPoolExecutor")
    file_trigger = PROCESS_CROSSING
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
    )
    INVALID = (
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
        on_cuda = cuda_evidence(ctx).sends_cuda
        for facts, crossing in model.crossings():
            if crossing.kind in _FORKING and model.start_method(crossing).forks and on_cuda(facts, crossing):
                method = start_method_text(model.start_method(crossing))
                yield Report(
                    crossing.node,
                    f"{crossing_text(ctx, crossing)} hands a CUDA tensor to a child started with {method}: the "
                    "child raises `Cannot re-initialize CUDA in forked subprocess`",
                )
