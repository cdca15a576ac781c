import re
from collections.abc import Iterator

import libcst as cst

from gpumem_lint.context import FileContext
from gpumem_lint.diagnostics import Applicability, Severity
from gpumem_lint.fixes import Fix, replace
from gpumem_lint.knowledge.memory_api import memory_api
from gpumem_lint.rules._calls import qualified_calls
from gpumem_lint.rules._private_cuda import BINDING_MODULE, private_cuda_calls
from gpumem_lint.rules.base import Invalid, Report, Rule

#: The last part of each deprecated private function's name (`_set_allocator_settings`).
_DEPRECATED = tuple(sorted(name.rsplit(".", 1)[1] for name in memory_api().deprecated_private))


class PrivateCudaMemoryApi(Rule):
    """
    ## What it does
    Flags a call to a private `torch._C._cuda_*` binding that has a public equivalent in
    `torch.cuda`: `_cuda_emptyCache()`, `_cuda_memoryStats()`, `_cuda_getAllocator()`,
    `_cuda_setMemoryFraction()`, ... Bindings without a public counterpart
    (`_cuda_clearCublasWorkspaces`) are not reported.

    Also flags a private function of `torch.cuda` that torch has deprecated:
    `torch.cuda.memory._set_allocator_settings(...)` now warns `FutureWarning` and forwards to
    `torch._C._accelerator_setAllocatorSettings` (measured on torch 2.11.0+cu130 on an H200,
    `bench/gpu/accelerator_probe.json`, [docs/facts.md](../docs/facts.md) F28, and on the installed
    torch by `tests/test_memory_api.py`).
    The table of such functions is `[deprecated_private]` in
    [`memory_api.toml`](../gpumem_lint/knowledge/memory_api.toml).

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

    For allocator settings, set `PYTORCH_ALLOC_CONF` before torch.cuda initialises; torch has
    no public function that changes them at run time.

    ## Fix safety
    The fix calls the public function of the knowledge table instead, with the call's own
    arguments, for the bindings measured to take the same arguments and return the same value
    (`torch._C._cuda_getDevice()` -> `torch.cuda.current_device()`, `_cuda_setDevice(rank)` ->
    `torch.cuda.set_device(rank)`; `[same_call]` in
    [`memory_api.toml`](../gpumem_lint/knowledge/memory_api.toml),
    [docs/facts.md](../docs/facts.md) F41). It is unsafe: the public function does more
    (lazy initialisation, checks), which is the point. Other calls have no automatic fix: the
    arguments or results of the binding and of its public function differ
    (`_cuda_memoryStats(0)` returns nested dicts, `torch.cuda.memory_stats(0)` a flat one).

    ## References
    - [`torch.cuda` memory management](https://docs.pytorch.org/docs/stable/cuda.html#memory-management)
    """

    code = "GML405"
    name = "private-cuda-memory-api"
    severity = Severity.WARNING
    summary = "Private `torch._C._cuda_*` binding used where a public function exists"
    fix_title = "Call the public function in `torch.cuda`"
    fix_applicability = Applicability.UNSAFE
    triggers = ("_cuda_", *_DEPRECATED)
    file_trigger = re.compile("|".join((BINDING_MODULE.pattern, *_DEPRECATED)))
    #: A finding is a call that names the binding or the deprecated function (or a local name imported as it).
    scope_triggers = (re.compile("|".join(("_cuda_", *_DEPRECATED))),)
    VALID = (
        """
import torch

torch.cuda.empty_cache()
torch._C._cuda_clearCublasWorkspaces()  # no public equivalent
""",
        """
import os

os.environ["PYTORCH_ALLOC_CONF"] = "expandable_segments:True"
import torch

def _set_allocator_settings(settings):  # a function of this module, not torch's
    return settings

_set_allocator_settings("expandable_segments:False")
""",
    )
    INVALID = (
        Invalid(
            """
import torch

torch._C._cuda_init()
print(torch.cuda.is_initialized())
""",
            (4,),
            fixed="""
import torch

torch.cuda.init()
print(torch.cuda.is_initialized())
""",
            prints="True",
            cuda=1,
        ),
        Invalid(
            """
import torch

stats = torch._C._cuda_memoryStats(0)
torch._C._cuda_emptyCache()
""",
            (4, 5),
            fixed="""
import torch

stats = torch._C._cuda_memoryStats(0)
torch.cuda.empty_cache()
""",
        ),
        Invalid(
            """
import torch as th

def setup(rank):
    th._C._cuda_setDevice(rank)
    return th._C._cuda_getDevice()
""",
            (5, 6),
            fixed="""
import torch as th

def setup(rank):
    th.cuda.set_device(rank)
    return th.cuda.current_device()
""",
        ),
        Invalid(
            """
import torch

torch.cuda.memory._set_allocator_settings("expandable_segments:False")
""",
            (4,),
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
                    fix=_public_call(ctx, call, binding, public[binding]),
                )
        deprecated = memory_api().deprecated_private
        for call, name in qualified_calls(ctx, deprecated.__contains__):
            yield Report(
                call,
                f"`{name}` is a deprecated private function: it warns `FutureWarning` and forwards to "
                f"`{deprecated[name]}`",
                help=memory_api().deprecated_instead[name],
            )


def _public_call(ctx: FileContext, call: cst.Call, binding: str, public: str) -> Fix | None:
    """The table's public function in place of the binding, with the call's own arguments, for a
    binding measured to take the same ones and return the same value (`[same_call]`)."""
    torch = ctx.semantic.imports.local_name("torch")
    if torch is None or binding not in memory_api().same_call:
        return None
    function = torch + public.removeprefix("torch").removesuffix("()")
    return Fix((replace(call.func, function),), Applicability.UNSAFE, f"Call `{function}` instead")
