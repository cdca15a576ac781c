from collections.abc import Iterator

from gpumem_lint.context import FileContext
from gpumem_lint.diagnostics import Applicability, Severity
from gpumem_lint.rules._env_lockin import ENV_TRIGGERS, ENV_WRITE, late_env_writes
from gpumem_lint.rules.base import Invalid, Report, Rule


class CompilerEnvSetAfterCompile(Rule):
    """
    ## What it does
    Flags a write to a variable that torch.compile's configuration reads once, when it is
    imported — `TORCH_COMPILE_DISABLE` and `TORCHINDUCTOR_*` options such as
    `TORCHINDUCTOR_MAX_AUTOTUNE`, `_FREEZING`, `_CUDAGRAPHS` (the lock-in table lists which) —
    after the first `torch.compile(...)` call, an `@torch.compile` decorator, or an import of
    `torch._dynamo` / `torch._inductor` (`from torch._inductor import config`), when no process is
    started after the write.

    ## Why is this bad?
    `import torch` does not import the compiler's configuration; the first `torch.compile(...)`
    does, and `torch._dynamo.config` / `torch._inductor.config` read these variables then. Measured
    on torch 2.13 by the tests (`tests/test_lockin_facts.py`): each variable set after `import torch`
    and before `torch.compile(...)` changed its option; set after it, the option kept its default,
    and with `TORCH_COMPILE_DISABLE=1` set late the function was still compiled. The write looks
    like it configures the compiler and silently does nothing.

    Variables the compiler reads again on each use are not in the table and are not flagged:
    `TORCHINDUCTOR_CACHE_DIR` set after `torch.compile(...)` is honoured (measured the same way).

    ## Known problems
    Only the `TORCHINDUCTOR_*` variables the tests measure are listed; others read by the config
    modules are not reported until measured. Reading `torch._inductor.config` as an attribute
    (`torch._inductor.config.max_autotune = True`) also imports it, but is not taken as the event.

    ## Example
    ```python
    import os
    import torch

    model = torch.compile(model)
    os.environ["TORCHINDUCTOR_MAX_AUTOTUNE"] = "1"
    ```

    ## Use instead
    ```python
    import torch

    model = torch.compile(model, mode="max-autotune")
    ```
    or set the variable before the first `torch.compile(...)`, or in the launcher.

    ## Fix safety
    The fix moves the write above the statement of the same block that first read the compiler's
    configuration (`torch.compile(...)`, an import of `torch._inductor`): a one-line write, or
    an `if` without `else` that holds only environment writes, when nothing in between binds a
    name it reads and `os` is imported above. It is unsafe: code in between then sees the new
    value too. The same holds for a call or import that compiles in another function of the
    module or another file. A write locked in another block (around it, or in its caller: a
    method called after `__init__` compiled) has no automatic fix. Setting the option in `torch.compile(...)`'s arguments or in
    `torch._inductor.config` instead is a choice the rule cannot make.

    ## References
    - [`torch.compile`](https://docs.pytorch.org/docs/stable/generated/torch.compile.html)
    - [`torch._inductor.config`](https://github.com/pytorch/pytorch/blob/main/torch/_inductor/config.py)
    - The lock-in table, [`gpumem_lint/knowledge/lockin.toml`](../gpumem_lint/knowledge/lockin.toml)
    """

    code = "GML305"
    name = "compiler-env-set-after-compile"
    severity = Severity.WARNING
    summary = "torch.compile variable set after its configuration was read"
    fix_title = "Set it before the first `torch.compile(...)` or in the launcher, or pass the option to `torch.compile`"
    fix_applicability = Applicability.UNSAFE
    triggers = ENV_TRIGGERS
    file_trigger = ENV_WRITE
    VALID = (
        """
import os
import torch

os.environ["TORCHINDUCTOR_MAX_AUTOTUNE"] = "1"  # after `import torch` is in time
model = torch.compile(model)
""",
        """
import os
import torch

model = torch.compile(model)
os.environ["TORCHINDUCTOR_CACHE_DIR"] = "/tmp/inductor"  # read again on each use
""",
        """
import os
import subprocess
import torch

model = torch.compile(model)
os.environ["TORCHINDUCTOR_FREEZING"] = "1"
subprocess.run(["python", "serve.py"], check=True)
""",
    )
    INVALID = (
        Invalid(
            """
import os
import torch

sine = torch.compile(torch.sin)
os.environ["TORCHINDUCTOR_MAX_AUTOTUNE"] = "1"
print(torch._inductor.config.max_autotune)
""",
            (6,),
            fixed="""
import os
import torch

os.environ["TORCHINDUCTOR_MAX_AUTOTUNE"] = "1"
sine = torch.compile(torch.sin)
print(torch._inductor.config.max_autotune)
""",
            prints="True",
        ),
        Invalid(
            """
import os
import torch

model = torch.compile(model)
os.environ["TORCHINDUCTOR_MAX_AUTOTUNE"] = "1"
""",
            (6,),
            fixed="""
import os
import torch

os.environ["TORCHINDUCTOR_MAX_AUTOTUNE"] = "1"
model = torch.compile(model)
""",
        ),
        Invalid(
            """
import os
from torch._inductor import config

def configure():
    os.environ["TORCHINDUCTOR_FREEZING"] = "1"
""",
            (6,),
        ),
        Invalid(
            """
import os
import torch

@torch.compile
def step(x):
    return x * 2

os.environ["TORCH_COMPILE_DISABLE"] = "1"
""",
            (9,),
        ),
    )

    def check(self, ctx: FileContext) -> Iterator[Report]:
        return late_env_writes(ctx, self.code)
