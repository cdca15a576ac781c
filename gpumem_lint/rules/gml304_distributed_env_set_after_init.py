from collections.abc import Iterator

from gpumem_lint.context import FileContext
from gpumem_lint.diagnostics import Applicability, Severity
from gpumem_lint.rules._env_lockin import ENV_TRIGGERS, ENV_WRITE, late_env_writes
from gpumem_lint.rules.base import Invalid, Report, Rule


class DistributedEnvSetAfterInit(Rule):
    """
    ## What it does
    Flags a write to a variable the distributed runtime has already read: `NCCL_*` after the
    first collective or `init_process_group(device_id=...)` (the NCCL communicator exists), and
    `TORCH_NCCL_*` and the env:// rendezvous variables (`MASTER_ADDR`, `MASTER_PORT`, `RANK`,
    `WORLD_SIZE`) after `init_process_group` — unless a new group or collective follows, which
    may read them again: in the rest of the program the write's code reaches, or, for a write in
    a module-level function, in a caller in another first-party module after the function returns
    (`init_distributed()`, then `init_device_mesh(...)`; `fixtures/safe/dist_project`).

    ## Why is this bad?
    NCCL reads its environment once per process, when it creates the first communicator.
    Measured on the GPU machine (`bench/gpu/lockin_probe.json`): `NCCL_DEBUG=INFO` set after
    `init_process_group` and before the first `all_reduce` printed 177 INFO lines; set after the
    first `all_reduce`, none — not even for a new `new_group` communicator. The rendezvous
    variables are read inside `init_process_group`; the group is formed by then.

    ## Example
    ```python
    dist.init_process_group("nccl")
    dist.barrier()
    os.environ["NCCL_DEBUG"] = "INFO"
    ```

    ## Use instead
    ```python
    os.environ["NCCL_DEBUG"] = "INFO"
    dist.init_process_group("nccl")
    dist.barrier()
    ```
    or set it in the launcher (`NCCL_DEBUG=INFO torchrun ...`).

    ## Fix safety
    The fix moves the write above the statement of the same block that created the process group
    or its first communicator: a one-line write, or an `if` without `else` that holds only
    environment writes, when nothing in between binds a name it reads and `os` is imported
    above; above the call or import that creates it in another function of the module or another
    file. It is unsafe: code in between then sees the new value too. A write locked in another
    block (around it, or in its caller) has no automatic fix.

    ## References
    - [NCCL environment variables](https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html)
    - [`init_process_group`](https://docs.pytorch.org/docs/stable/distributed.html#torch.distributed.init_process_group)
    - The lock-in table, [`gpumem_lint/knowledge/lockin.toml`](../gpumem_lint/knowledge/lockin.toml)
    """

    code = "GML304"
    name = "distributed-env-set-after-init"
    severity = Severity.WARNING
    summary = "NCCL or rendezvous variable set after the distributed runtime read it"
    fix_title = "Set it before `init_process_group` (or in the launcher)"
    fix_applicability = Applicability.UNSAFE
    triggers = ENV_TRIGGERS
    file_trigger = ENV_WRITE
    VALID = (
        """
import os
import torch.distributed as dist

os.environ["MASTER_ADDR"] = "localhost"
os.environ["MASTER_PORT"] = "29500"
dist.init_process_group("nccl", rank=0, world_size=1)
os.environ["NCCL_DEBUG"] = "INFO"  # the communicator is created at the first collective
dist.barrier()
""",
    )
    INVALID = (
        Invalid(
            """
import os
import torch.distributed as dist

os.environ["MASTER_ADDR"] = "127.0.0.1"
dist.init_process_group("gloo", rank=0, world_size=1)
os.environ["MASTER_PORT"] = "29517"
print(dist.get_world_size())
dist.destroy_process_group()
""",
            (7,),
            fixed="""
import os
import torch.distributed as dist

os.environ["MASTER_ADDR"] = "127.0.0.1"
os.environ["MASTER_PORT"] = "29517"
dist.init_process_group("gloo", rank=0, world_size=1)
print(dist.get_world_size())
dist.destroy_process_group()
""",
            prints="1",
        ),
        Invalid(
            """
import os
import torch.distributed as dist

dist.init_process_group("nccl")
dist.barrier()
os.environ["NCCL_DEBUG"] = "INFO"
""",
            (7,),
            standalone=False,
            fixed="""
import os
import torch.distributed as dist

dist.init_process_group("nccl")
os.environ["NCCL_DEBUG"] = "INFO"
dist.barrier()
""",
        ),
        Invalid(
            """
import os
import torch
import torch.distributed as dist

dist.init_process_group("nccl", device_id=torch.device("cuda", 0))
os.environ["NCCL_DEBUG"] = "INFO"
""",
            (7,),
            standalone=False,
            fixed="""
import os
import torch
import torch.distributed as dist

os.environ["NCCL_DEBUG"] = "INFO"
dist.init_process_group("nccl", device_id=torch.device("cuda", 0))
""",
        ),
        Invalid(
            """
import os
import torch.distributed as dist

def setup(rank, world_size):
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
    os.environ["MASTER_PORT"] = "29501"
""",
            (7,),
            fixed="""
import os
import torch.distributed as dist

def setup(rank, world_size):
    os.environ["MASTER_PORT"] = "29501"
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
""",
        ),
    )

    def check(self, ctx: FileContext) -> Iterator[Report]:
        return late_env_writes(ctx, self.code)
