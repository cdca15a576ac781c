from collections.abc import Iterator

import libcst as cst

from gpumem_lint.context import FileContext
from gpumem_lint.diagnostics import Applicability, Severity
from gpumem_lint.fixes import Fix, replace
from gpumem_lint.knowledge.memory_api import memory_api
from gpumem_lint.rules._calls import argument, qualified_calls
from gpumem_lint.rules.base import Invalid, Report, Rule


class MemoryFractionOutOfRange(Rule):
    """
    ## What it does
    Flags `torch.cuda.set_per_process_memory_fraction(fraction, ...)` called with a literal
    fraction it rejects: a float outside [0, 1], or an integer (even `1`).

    ## Why is this bad?
    The fraction caps the caching allocator at `fraction × total memory` of one device. Measured
    on an H200 (`bench/gpu/lockin_probe.json`): `1.5` and `-0.1` raise
    `ValueError: Invalid fraction value: 1.5. Allowed range: 0~1`, and an integer raises
    `TypeError: Invalid type for fraction argument, must be `float`` — `1` included
    (`bench/gpu/cuda_bindings_probe.json`). Both checks run after the call has initialised
    torch.cuda. A
    "limit" meant to protect a shared GPU instead stops the program at start-up, on the machine
    that has a GPU — usually not the one where it was written.

    ## Example
    ```python
    torch.cuda.set_per_process_memory_fraction(1, device=0)
    ```

    ## Use instead
    ```python
    torch.cuda.set_per_process_memory_fraction(1.0, device=0)  # or 0.5 for half the card
    ```

    ## Fix safety
    For the int `0` or `1` the fix writes the float (`1.0`): the intent is plain. It is
    unsafe only in that the call no longer raises. An out-of-range value has no automatic fix:
    the intended fraction (`1.5`, `50`: a ratio or a percentage?) is not known.

    ## References
    - [`torch.cuda.set_per_process_memory_fraction`](https://docs.pytorch.org/docs/stable/generated/torch.cuda.memory.set_per_process_memory_fraction.html)
    """

    code = "GML401"
    name = "memory-fraction-out-of-range"
    severity = Severity.ERROR
    summary = "`set_per_process_memory_fraction` called with a fraction it rejects"
    fix_title = "Pass a float between 0.0 and 1.0"
    fix_applicability = Applicability.UNSAFE
    triggers = ("set_per_process_memory_fraction",)
    VALID = (
        """
import torch

torch.cuda.set_per_process_memory_fraction(0.5, 0)
""",
        """
import torch

def limit(fraction: float):
    torch.cuda.set_per_process_memory_fraction(fraction)
""",
    )
    INVALID = (
        Invalid(
            """
import torch

torch.cuda.set_per_process_memory_fraction(1.5, 0)
""",
            (4,),
        ),
        Invalid(
            """
import torch

torch.cuda.set_per_process_memory_fraction(1, device=0)
print(torch.cuda.get_per_process_memory_fraction(0))
""",
            (4,),
            fixed="""
import torch

torch.cuda.set_per_process_memory_fraction(1.0, device=0)
print(torch.cuda.get_per_process_memory_fraction(0))
""",
            prints="1.0",
            cuda=1,
        ),
    )

    def check(self, ctx: FileContext) -> Iterator[Report]:
        functions = memory_api().fraction_functions
        for call, _ in qualified_calls(ctx, functions.__contains__):
            fraction = argument(call, 0, "fraction")
            value = _number(fraction)
            if isinstance(value, int):
                yield Report(
                    fraction,
                    f"`{ctx.code(fraction)}` is an int: set_per_process_memory_fraction raises TypeError "
                    '("must be `float`") after initialising torch.cuda',
                    fix=_as_float(fraction, value),
                )
            elif isinstance(value, float) and not 0.0 <= value <= 1.0:
                yield Report(
                    fraction,
                    f"fraction {ctx.code(fraction)} is outside [0, 1]: set_per_process_memory_fraction raises "
                    f'ValueError ("Invalid fraction value: {ctx.code(fraction)}. Allowed range: 0~1")',
                )


def _as_float(fraction: cst.BaseExpression, value: int) -> Fix | None:
    """`1` -> `1.0`, `0` -> `0.0`; other ints are out of range, and what they meant is not known."""
    if value not in (0, 1):
        return None
    return Fix((replace(fraction, f"{value}.0"),), Applicability.UNSAFE, f"Write `{value}.0`")


def _number(node: cst.BaseExpression | None) -> int | float | None:
    if isinstance(node, cst.Integer):
        return int(node.evaluated_value)
    if isinstance(node, cst.Float):
        return float(node.evaluated_value)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        value = _number(node.expression)
        return -value if value is not None else None
    return None
