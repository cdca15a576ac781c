from collections.abc import Iterator

import libcst as cst

from gpumem_lint.context import FileContext
from gpumem_lint.diagnostics import Applicability, Severity
from gpumem_lint.fixes import Fix, replace
from gpumem_lint.knowledge.memory_api import memory_api
from gpumem_lint.rules._bindings import bound_names
from gpumem_lint.rules._calls import argument, qualified_calls
from gpumem_lint.rules.base import Invalid, Report, Rule
from gpumem_lint.semantic.multi_gpu import multi_gpu_use
from gpumem_lint.semantic.program_order import short_code
from gpumem_lint.semantic.walk import Walker


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
    When the device switched to is a literal index, or a parameter of the function that the
    function never rebinds (`set_device(local_rank)`), the fix passes it as `device=`: the cap
    then applies to the device the process goes on to use. It is unsafe: the device that was
    current when the cap was set is no longer capped. Otherwise there is no automatic fix:
    which device was meant is not known.

    ## References
    - [`torch.cuda.set_per_process_memory_fraction`](https://docs.pytorch.org/docs/stable/generated/torch.cuda.memory.set_per_process_memory_fraction.html)
    """

    code = "GML402"
    name = "memory-fraction-on-wrong-device"
    severity = Severity.WARNING
    summary = "Memory fraction set without `device` before the program switches devices"
    fix_title = "Pass `device=` explicitly, or call it after `torch.cuda.set_device(...)`"
    fix_applicability = Applicability.UNSAFE
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
    print(torch.cuda.get_per_process_memory_fraction(local_rank))

worker(1)
""",
            (5,),
            fixed="""
import torch

def worker(local_rank):
    torch.cuda.set_per_process_memory_fraction(0.4, device=local_rank)
    torch.cuda.set_device(local_rank)
    print(torch.cuda.get_per_process_memory_fraction(local_rank))

worker(1)
""",
            prints="0.4",
            cuda=2,
        ),
        Invalid(
            """
import torch

def worker(local_rank):
    torch.cuda.set_per_process_memory_fraction(0.4)
    torch.cuda.set_device(local_rank)
""",
            (5,),
            fixed="""
import torch

def worker(local_rank):
    torch.cuda.set_per_process_memory_fraction(0.4, device=local_rank)
    torch.cuda.set_device(local_rank)
""",
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
                    fix=_device_of(ctx, call, switch.call) if switch.via is None else None,
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


def _device_of(ctx: FileContext, call: cst.Call, switch: str) -> Fix | None:
    """`device=<the index set_device switches to>`, when that is a literal or an unchanged parameter."""
    try:
        switched = cst.parse_expression(switch)
    except cst.ParserSyntaxError:
        return None
    if not isinstance(switched, cst.Call) or len(switched.args) != 1 or switched.args[0].keyword is not None:
        return None
    device = switched.args[0].value
    if not (isinstance(device, cst.Integer) or isinstance(device, cst.Name) and _steady_parameter(ctx, call, device)):
        return None
    args = [*call.args[:-1], call.args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))]
    keyword = cst.Arg(
        value=device,
        keyword=cst.Name("device"),
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )
    code = f"device={cst.Module(body=[]).code_for_node(device)}"
    return Fix((replace(call, call.with_changes(args=[*args, keyword])),), Applicability.UNSAFE, f"Pass `{code}`")


def _steady_parameter(ctx: FileContext, call: cst.Call, name: cst.Name) -> bool:
    """`name` is a parameter of the function holding `call`, and nothing in it assigns `name`."""
    row = ctx.positions[call].start.line
    holders = [
        f
        for f in _functions(ctx.module)
        if ctx.positions[f].start.line < row <= ctx.positions[f].end.line
    ]
    if not holders:
        return False
    function = holders[-1]  # the innermost
    if name.value not in {p.name.value for p in function.params.params}:
        return False
    return name.value not in bound_names(function.body)


def _functions(module: cst.Module) -> list[cst.FunctionDef]:
    found = _Functions()
    found.walk(module)
    return found.functions


class _Functions(Walker):
    def __init__(self) -> None:
        self.functions: list[cst.FunctionDef] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.functions.append(node)

