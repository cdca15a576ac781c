from collections.abc import Iterator

from gpumem_lint.context import FileContext
from gpumem_lint.diagnostics import Severity
from gpumem_lint.knowledge.lockin import lockin_table
from gpumem_lint.knowledge.memory_api import memory_api
from gpumem_lint.rules._calls import qualified_calls
from gpumem_lint.rules.base import Invalid, Report, Rule


class AllocatorSwappedAfterInit(Rule):
    """
    ## What it does
    Flags `torch.cuda.memory.change_current_allocator(...)` when torch.cuda was already
    initialised before it on some path: by an allocation, `.cuda()`, `set_device`,
    `get_device_properties`, `set_per_process_memory_fraction`, `torch.cuda.init()`, ... in the
    same program or at import of a first-party module.

    ## Why is this bad?
    The allocator can only be swapped before it is used. Measured on an H200
    (`bench/gpu/lockin_probe.json`): after `torch.cuda.init()` the swap raises
    `RuntimeError: Can't swap an already initialized allocator`; after `torch.cuda.is_available()`
    alone it still works. A custom `CUDAPluggableAllocator` installed from a training script
    after the model was moved to the GPU therefore never runs.

    ## Example
    ```python
    model = Net().cuda()
    allocator = CUDAPluggableAllocator("alloc.so", "my_malloc", "my_free")
    change_current_allocator(allocator)
    ```

    ## Use instead
    ```python
    allocator = CUDAPluggableAllocator("alloc.so", "my_malloc", "my_free")
    change_current_allocator(allocator)  # first thing, before any CUDA use
    model = Net().cuda()
    ```

    ## Fix safety
    There is no automatic fix.

    ## References
    - [Using custom memory allocators for CUDA](https://docs.pytorch.org/docs/stable/notes/cuda.html#using-custom-memory-allocators-for-cuda)
    - The lock-in table, [`gpumem_lint/knowledge/lockin.toml`](../gpumem_lint/knowledge/lockin.toml)
    """

    code = "GML403"
    name = "allocator-swapped-after-init"
    severity = Severity.ERROR
    summary = "CUDA allocator swapped after torch.cuda initialised it"
    fix_title = "Call `change_current_allocator` before any CUDA use"
    triggers = ("change_current_allocator",)
    VALID = (
        """
import torch
from torch.cuda.memory import CUDAPluggableAllocator, change_current_allocator

change_current_allocator(CUDAPluggableAllocator("alloc.so", "my_malloc", "my_free"))
if torch.cuda.is_available():
    model = Net().cuda()
""",
    )
    INVALID = (
        Invalid(
            """
import torch
from torch.cuda.memory import CUDAPluggableAllocator, change_current_allocator

model = Net().cuda()
change_current_allocator(CUDAPluggableAllocator("alloc.so", "my_malloc", "my_free"))
""",
            (6,),
        ),
    )

    def check(self, ctx: FileContext) -> Iterator[Report]:
        initialised = lockin_table().events_implying("torch_cuda_init")
        order = ctx.program_order
        for call, _ in qualified_calls(ctx, memory_api().allocator_swaps.__contains__):
            site = order.first_event_before(call, initialised)
            if site is not None:
                yield Report(
                    call,
                    f"torch.cuda was initialised by `{site.call}` at {site.where()}: the swap raises "
                    'RuntimeError ("Can\'t swap an already initialized allocator")',
                )
