from collections.abc import Iterator

from gpumem_lint.context import FileContext
from gpumem_lint.diagnostics import Severity
from gpumem_lint.knowledge.memory_api import memory_api
from gpumem_lint.rules._private_cuda import BINDING_MODULE, private_cuda_calls
from gpumem_lint.rules.base import Invalid, Report, Rule


class PrivateCudaMemoryApi(Rule):
    """
    ## What it does
    Flags a call to a private `torch._C._cuda_*` binding that has a public equivalent in
    `torch.cuda`: `_cuda_emptyCache()`, `_cuda_memoryStats()`, `_cuda_getAllocator()`,
    `_cuda_setMemoryFraction()`, ... Bindings without a public counterpart
    (`_cuda_clearCublasWorkspaces`) are not reported.

    ## Why is this bad?
    The bindings skip what the public functions do around them: `torch.cuda.empty_cache()` does
    nothing before torch.cuda is initialised (it checks `is_initialized()`, and measured on the
    GPU machine it starts nothing), while `torch._C._cuda_emptyCache()` reaches the allocator
    directly; the public `set_per_process_memory_fraction` validates its argument and resolves the
    device, the binding does not. Bindings are also renamed or removed between releases without
    notice.

    ## Example
    ```python
    import torch

    stats = torch._C._cuda_memoryStats(0)
    torch._C._cuda_emptyCache()
    ```

    ## Use instead
    ```python
    import torch

    stats = torch.cuda.memory_stats(0)
    torch.cuda.empty_cache()
    ```

    ## Fix safety
    There is no automatic fix: the arguments of a binding and of its public function differ.

    ## References
    - [`torch.cuda` memory management](https://docs.pytorch.org/docs/stable/cuda.html#memory-management)
    """

    code = "GML405"
    name = "private-cuda-memory-api"
    severity = Severity.WARNING
    summary = "Private `torch._C._cuda_*` binding used where a public function exists"
    fix_title = "Call the public function in `torch.cuda`"
    triggers = ("_cuda_",)
    file_trigger = BINDING_MODULE
    VALID = (
        """
import torch

torch.cuda.empty_cache()
torch._C._cuda_clearCublasWorkspaces()  # no public equivalent
""",
    )
    INVALID = (
        Invalid(
            """
import torch

stats = torch._C._cuda_memoryStats(0)
torch._C._cuda_emptyCache()
""",
            (4, 5),
        ),
    )

    def check(self, ctx: FileContext) -> Iterator[Report]:
        public = memory_api().private_to_public
        for call, name, binding in private_cuda_calls(ctx):
            if binding in public:
                yield Report(
                    call,
                    f"`{name}` is a private binding that bypasses the checks of its public counterpart",
                    help=f"Use `{public[binding]}`",
                )
