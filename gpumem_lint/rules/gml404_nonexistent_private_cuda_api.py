from collections.abc import Iterator

from gpumem_lint.context import FileContext
from gpumem_lint.diagnostics import Severity
from gpumem_lint.knowledge.memory_api import memory_api
from gpumem_lint.rules._private_cuda import private_cuda_calls
from gpumem_lint.rules.base import Invalid, Report, Rule


class NonexistentPrivateCudaApi(Rule):
    """
    ## What it does
    Flags a call to a `torch._C._cuda_*` binding (also reached as `torch.cuda.memory._C`) that
    torch does not declare — the kind of allocator call articles invent, such as
    `memory._C._cuda_allocate(size)` or `_cuda_setAllocator(...)`.

    ## Why is this bad?
    The name does not exist: the line raises `AttributeError` when it runs (checked on the GPU
    machine for `torch.cuda.memory._C._cuda_allocate`, `bench/gpu/lockin_probe.json`). The list of
    existing bindings is generated from the installed torch's stub
    (`gpumem_lint/knowledge/cuda_private_api.json`, `scripts/generate_cuda_private_api.py`).

    ## Known problems
    A binding added by a newer torch than the table was generated from is reported until the
    table is regenerated.

    ## Example
    ```python
    from torch.cuda import memory

    block = memory._C._cuda_allocate(1 << 20)
    ```

    ## Use instead
    ```python
    import torch

    pointer = torch.cuda.caching_allocator_alloc(1 << 20)
    torch.cuda.caching_allocator_delete(pointer)
    ```

    ## Fix safety
    There is no automatic fix.

    ## References
    - [CUDA memory management](https://docs.pytorch.org/docs/stable/notes/cuda.html#memory-management)
    - [`torch.cuda.caching_allocator_alloc`](https://docs.pytorch.org/docs/stable/generated/torch.cuda.caching_allocator_alloc.html)
    """

    code = "GML404"
    name = "nonexistent-private-cuda-api"
    severity = Severity.ERROR
    summary = "Call to a `torch._C._cuda_*` binding that does not exist"
    fix_title = "Use the public API in `torch.cuda` / `torch.cuda.memory`"
    triggers = ("_cuda_",)
    VALID = (
        """
import torch

torch._C._cuda_clearCublasWorkspaces()
""",
    )
    INVALID = (
        Invalid(
            """
from torch.cuda import memory

class NoShareAllocator:
    def allocate(self, size):
        return memory._C._cuda_allocate(size)
""",
            (6,),
        ),
    )

    def check(self, ctx: FileContext) -> Iterator[Report]:
        api = memory_api()
        for call, name, binding in private_cuda_calls(ctx):
            if binding not in api.private_names:
                yield Report(
                    call,
                    f"`{name}` does not exist (torch {api.private_names_version} declares no `{binding}`): this "
                    f"line raises AttributeError; use {api.missing_hint}",
                )
