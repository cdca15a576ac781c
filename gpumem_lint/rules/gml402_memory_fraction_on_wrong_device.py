from collections.abc import Iterator

from gpumem_lint.context import FileContext
from gpumem_lint.diagnostics import Severity
from gpumem_lint.knowledge.memory_api import memory_api
from gpumem_lint.rules._calls import argument, qualified_calls
from gpumem_lint.rules.base import Invalid, Report, Rule
from gpumem_lint.semantic.multi_gpu import multi_gpu_use
from gpumem_lint.semantic.program_order import short_code


class MemoryFractionOnWrongDevice(Rule):
    """
    ## What it does
    Flags `torch.cuda.set_per_process_memory_fraction(fraction)` without a `device` when the
    program switches devices afterwards (`torch.cuda.set_device(...)`, `with torch.cuda.device(...)`)
    on some path, or when the module uses several GPUs at once: `DataParallel(model)` (unless
    `device_ids` lists one device), `from_pretrained(..., device_map="auto")` (or `"balanced"`,
    `"sequential"`), or a loop that places work on `f"cuda:{i}"` / `torch.device("cuda", i)`.

    ## Why is this bad?
    Without `device` the cap applies to the *current* device, which before `set_device` is
    `cuda:0`. In a per-rank worker (`set_device(local_rank)` after the cap) every rank caps GPU 0
    and leaves its own GPU unlimited — the limit meant to share a card does nothing where it
    matters. The same holds in one process that uses several GPUs: only the current device is
    capped, and the replicas or layers on the other GPUs are not. The call also initialises
    torch.cuda (measured, `bench/gpu/lockin_probe.json`), so it is a lock-in event for the
    allocator variables (GML302).

    ## Example
    ```python
    def worker(local_rank):
        torch.cuda.set_per_process_memory_fraction(0.4)
        torch.cuda.set_device(local_rank)
    ```

    ## Use instead
    ```python
    def worker(local_rank):
        torch.cuda.set_device(local_rank)
        torch.cuda.set_per_process_memory_fraction(0.4, device=local_rank)
    ```

    ## Fix safety
    There is no automatic fix: which device was meant is not known.

    ## References
    - [`torch.cuda.set_per_process_memory_fraction`](https://docs.pytorch.org/docs/stable/generated/torch.cuda.memory.set_per_process_memory_fraction.html)
    """

    code = "GML402"
    name = "memory-fraction-on-wrong-device"
    severity = Severity.WARNING
    summary = "Memory fraction set without `device` before the program switches devices"
    fix_title = "Pass `device=` explicitly, or call it after `torch.cuda.set_device(...)`"
    triggers = ("set_per_process_memory_fraction",)
    VALID = (
        """
import torch

def worker(local_rank):
    torch.cuda.set_device(local_rank)
    torch.cuda.set_per_process_memory_fraction(0.4)
""",
        """
import torch

def worker(local_rank):
    torch.cuda.set_per_process_memory_fraction(0.4, local_rank)
    torch.cuda.set_device(local_rank)
""",
        """
import torch

torch.cuda.set_per_process_memory_fraction(0.5)
model = torch.nn.DataParallel(torch.nn.Linear(8, 8).cuda(), device_ids=[0])  # one GPU
""",
        """
import torch

for i in range(torch.cuda.device_count()):
    torch.cuda.set_per_process_memory_fraction(0.5, device=f"cuda:{i}")
    torch.zeros(1, device=f"cuda:{i}")
""",
    )
    INVALID = (
        Invalid(
            """
import torch

def worker(local_rank):
    torch.cuda.set_per_process_memory_fraction(0.4)
    torch.cuda.set_device(local_rank)
""",
            (5,),
        ),
        Invalid(
            """
import torch
from transformers import AutoModelForCausalLM

torch.cuda.set_per_process_memory_fraction(0.8)
model = AutoModelForCausalLM.from_pretrained("gpt2", device_map="auto")
""",
            (5,),
        ),
        Invalid(
            """
import torch

def replicate(model):
    torch.cuda.set_per_process_memory_fraction(0.5)
    return [model.to(torch.device("cuda", i)) for i in range(torch.cuda.device_count())]
""",
            (5,),
        ),
    )

    def check(self, ctx: FileContext) -> Iterator[Report]:
        api = memory_api()
        order = ctx.program_order
        for call, _ in qualified_calls(ctx, api.fraction_functions.__contains__):
            if argument(call, 1, "device") is not None:
                continue
            switch = order.first_call_after(call, api.device_switches)
            if switch is not None:
                yield Report(
                    call,
                    f"without `device`, the cap applies to the current device, and `{switch.call}` at "
                    f"{switch.where()} then switches to another one, which stays uncapped",
                )
                continue
            several = ctx.shared(_multi_gpu_use)
            if several is not None:
                yield Report(
                    call,
                    f"without `device`, the cap applies to the current device only, while the program uses several "
                    f"GPUs (`{short_code(ctx.code(several))}` at line {ctx.line(several)}): the others stay uncapped",
                )


def _multi_gpu_use(ctx: FileContext):
    return multi_gpu_use(ctx.module, ctx.program_order.imports)
