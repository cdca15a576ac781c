from collections.abc import Iterator

from gpumem_lint.context import FileContext
from gpumem_lint.diagnostics import Applicability, Severity
from gpumem_lint.rules._env_lockin import ENV_TRIGGERS, ENV_WRITE, late_env_writes
from gpumem_lint.rules.base import Invalid, Report, Rule


class AllocatorEnvSetAfterInit(Rule):
    """
    ## What it does
    Flags a write to the caching allocator's variables after the allocator has read them:
    `PYTORCH_CUDA_ALLOC_CONF` / `PYTORCH_ALLOC_CONF` (its new name) after torch.cuda initialised,
    `PYTORCH_NO_CUDA_MEMORY_CACHING` after the first CUDA allocation, and a
    `backend:cudaMallocAsync` setting written after `import torch` at all.

    ## Why is this bad?
    Each is read once ([lock-in table](../gpumem_lint/knowledge/lockin.toml), measured on an
    H200 with torch 2.11 in `bench/gpu/lockin_probe.json`):
    - the allocator configuration is parsed when torch.cuda initialises (`torch.cuda.init()`,
      `get_device_properties`, `set_device`, `set_per_process_memory_fraction`, the first
      allocation). `expandable_segments:True` set after that is silently ignored; set after
      `is_available()` it still works;
    - the `backend:` key is fixed when torch loads: `backend:cudaMallocAsync` set after
      `import torch` makes the first CUDA allocation fail an INTERNAL ASSERT ("Allocator backend
      parsed at runtime != allocator backend parsed at load time");
    - `PYTORCH_NO_CUDA_MEMORY_CACHING=1` set after the first allocation changes nothing: 64 MiB
      freed stayed reserved (69 206 016 B) instead of 0.

    Code that sets these "to save memory" or "to debug an OOM" after the model is on the GPU
    believes it runs with a configuration it does not have.

    ## Example
    ```python
    import os
    import torch

    model = build_model().cuda()
    os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
    train(model)
    ```

    ## Use instead
    ```python
    import os
    os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"  # before any CUDA call
    import torch

    model = build_model().cuda()
    ```
    torch has no public call that changes the settings at run time: its private
    `torch.cuda.memory._set_allocator_settings` is deprecated (it warns and forwards to another
    private binding, GML405).

    ## Fix safety
    The fix moves the write above the statement of the same block that locked it (`import torch`
    for the `backend:` setting, else the first CUDA allocation): a one-line write, or an `if`
    without `else` that holds only environment writes, when nothing in between binds a name it
    reads and `os` is imported above; above the call or import that locks it in another function
    of the module or another file. A write in a function locked at module level (`import torch`)
    moves to module level when it reads only names bound there (a literal write). It is unsafe:
    code in between then sees the new value too. A write locked in another block (around it, or
    in its caller) has no automatic fix.

    ## References
    - [CUDA memory management: environment variables](https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)
    - The lock-in table, [`gpumem_lint/knowledge/lockin.toml`](../gpumem_lint/knowledge/lockin.toml), and its measurement, [`bench/gpu/lockin_probe.json`](../bench/gpu/lockin_probe.json)
    """

    code = "GML302"
    name = "allocator-env-set-after-init"
    severity = Severity.ERROR
    summary = "Allocator variable set after the CUDA allocator read it"
    fix_title = "Set it before the first CUDA call, or in the launcher (`PYTORCH_CUDA_ALLOC_CONF=... python train.py`)"
    triggers = ENV_TRIGGERS
    file_trigger = ENV_WRITE
    fix_applicability = Applicability.UNSAFE
    VALID = (
        """
import os
import torch

os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"  # read at torch.cuda init
model = build_model().cuda()
""",
        """
import os
import torch

if torch.cuda.is_available():  # runs cuInit, but the allocator is not initialised yet
    os.environ["PYTORCH_NO_CUDA_MEMORY_CACHING"] = "1"
x = torch.zeros(10, device="cuda")
""",
        """
import os
os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"
import torch
""",
    )
    INVALID = (
        Invalid(
            """
import os
import torch

model = build_model().cuda()
os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
train(model)
""",
            (6,),
            fixed="""
import os
import torch

os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
model = build_model().cuda()
train(model)
""",
        ),
        Invalid(
            """
import os
import torch

os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"
x = torch.zeros(10, device="cuda")
print(torch.cuda.get_allocator_backend())
""",
            (5,),
            fixed="""
import os
os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"
import torch

x = torch.zeros(10, device="cuda")
print(torch.cuda.get_allocator_backend())
""",
            prints="cudaMallocAsync",
            cuda=1,
        ),
        Invalid(
            """
import os
import torch

x = torch.randn(1000, 1000).cuda()
os.environ["PYTORCH_NO_CUDA_MEMORY_CACHING"] = "1"
del x
print(torch.cuda.memory_reserved() == 0)
""",
            (6,),
            fixed="""
import os
import torch

os.environ["PYTORCH_NO_CUDA_MEMORY_CACHING"] = "1"
x = torch.randn(1000, 1000).cuda()
del x
print(torch.cuda.memory_reserved() == 0)
""",
           prints="True",
            cuda=1,
        ),
    )

    def check(self, ctx: FileContext) -> Iterator[Report]:
        return late_env_writes(ctx, self.code)
