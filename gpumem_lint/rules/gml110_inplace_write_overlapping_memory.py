from collections.abc import Iterator

from gpumem_lint.context import FileContext
from gpumem_lint.fixes import Applicability
from gpumem_lint.rules._clone_fix import clone_at
from gpumem_lint.rules.base import Invalid, Report, Rule
from gpumem_lint.semantic.write_triggers import WRITES


class InplaceWriteOverlappingMemory(Rule):
    """
    ## What it does
    Flags a write whose source overlaps its destination in one tensor: a slice copied onto
    the same slice shifted (`buf[:-n] = buf[n:]`, `x[1:].add_(x[:-1])`, `x[:-1].copy_(x[1:])`),
    an `out=` tensor that overlaps an input (`torch.mul(x[1:], 2, out=x[:-1])`), the destination's own
    elements reordered (`x[i] = x[i].transpose(-2, -1)`, `m.copy_(m.t())`, `m.add_(m.T)`: measured, PyTorch
    2.13 refuses each), or a tensor used as its own index (`idx[idx] = v`).

    ## Why is this bad?
    The op reads elements it has already written, so its result depends on the order in
    which the kernel visits them. PyTorch refuses what its overlap check can see:
    `RuntimeError: unsupported operation: some elements of the input tensor and the
    written-to tensor refer to a single memory location. Please clone() the tensor before
    performing the operation.` A strided case the check cannot see (`buf[:, :-n] =
    buf[:, n:]`) runs, in the CPU kernel's order, and is undefined on CUDA, where threads
    run in no order ([docs/facts.md](../docs/facts.md) F24).

    ## Known problems
    Only overlaps the syntax proves are reported: two slices of one dimension, one the other
    moved by less than their length (`[:-n]` and `[n:]`, `[0:9]` and `[1:10]`, `[0:k - 1]` and
    `[1:k]`: bounds that are sums of names and integers), every other dimension indexed alike. Overlaps through `narrow`, `view`
    or computed bounds are not followed. numpy's own writes are not reported: numpy copies an
    overlapping source first, and computes a self-index before it writes ([docs/facts.md](../docs/facts.md) F52).

    ## Example
    ```python
    history[:-1] = history[1:]
    history[-1] = latest
    ```

    ## Use instead
    ```python
    history[:-1] = history[1:].clone()
    history[-1] = latest
    # or: history = torch.roll(history, -1, dims=0)
    ```

    ## Fix safety
    The fix reads a copy: `.clone()` on the source (`history[:-1] = history[1:].clone()`),
    or on the index (`perm[perm.clone()] = ...`). It is unsafe only in that the copy costs memory.

    ## References
    - [Tensor views](https://docs.pytorch.org/docs/stable/tensor_view.html)
    - [`torch.roll`](https://docs.pytorch.org/docs/stable/generated/torch.roll.html)
    """

    code = "GML110"
    name = "inplace-write-overlapping-memory"
    summary = "In-place write whose source or index overlaps its destination in one tensor"
    fix_title = "Copy the source first (`buf[:-n] = buf[n:].clone()`), or use `torch.roll`"
    fix_applicability = Applicability.UNSAFE
    triggers = ("torch", "numpy")
    scope_triggers = WRITES
    VALID = (
        # `randint` is no `torch.Tensor` method: `random_state.randint(...)` (numpy's RandomState) gives no tensor
        """
def shift_in(num_items, length, random_state):
    state = random_state.randint(0, num_items, size=length)
    state[:-1] = state[1:]
    state[-1] = random_state.randint(num_items)
    return state
""",
        # another row, transposed: the source and the destination share no element
        """
import torch


def mirror_payoffs(output):
    output[1] = output[0].transpose(-2, -1)
    return output.mean(dim=0)
""",
        # numpy copies an overlapping source first (F52): the columns shift as written
        """
import numpy as np

grid = np.arange(9).reshape(3, 3)
grid[:, 1:] = grid[:, :-1]
""",
        # a numpy mask written through itself: numpy computes the index before it writes (F52)
        """
import numpy as np

keep = np.ones(6).astype(bool)
survivors = keep[keep]
survivors[[0, 2]] = False
keep[keep] = survivors
""",
        # two slices of one length apart by more than that length share nothing
        """
import torch

buf = torch.randn(10, 4)
buf[5:7] = buf[0:2]
""",
        """
import torch

def move(target, device):
    if isinstance(target, torch.Tensor):
        target = target.to(device)
    else:
        for i, entry in enumerate(target):
            for k in entry:
                target[i][k] = entry[k].to(device)
    return target
""",
        """
import torch

history = torch.zeros(8)
history[:-1] = history[1:].clone()
history[-1] = 1.0
""",
        """
import torch

x = torch.arange(10.0)
x[:5] = x[5:]
x[0] = x[1]
torch.add(x, 1, out=x)
""",
        """
import torch

idx = torch.tensor([0, 1, 2])
values = torch.zeros(3)
values[idx] = idx.float()
""",
    )
    INVALID = (
        # the row written is the source itself, transposed: the kernel reads elements it has already written
        Invalid(
            """
import torch


def symmetrise_payoffs(output):
    output[1] = output[1].transpose(-2, -1)
    return output.mean(dim=0)
""",
            (6,),
            fixed="""
import torch


def symmetrise_payoffs(output):
    output[1] = output[1].transpose(-2, -1).clone()
    return output.mean(dim=0)
""",
        ),
        # `len(prices) - 1` is the end less one: the divisor is the written slice moved by one
        Invalid(
            """
import torch


def step_ratios(series):
    prices = series.clone()
    prices[1:] /= prices[: len(prices) - 1]
    prices[0] = 1.0
    return prices
""",
            (7,),
            fixed="""
import torch


def step_ratios(series):
    prices = series.clone()
    prices[1:] /= prices[: len(prices) - 1].clone()
    prices[0] = 1.0
    return prices
""",
        ),
        # a tensor attribute, shifted by one step along dimension 1 with both bounds written out
        Invalid(
            """
import torch


class FrameStack:
    def __init__(self, envs, steps, width):
        self.steps = steps
        self.buffer = torch.zeros(envs, steps, width)

    def push(self, frame):
        n = self.steps
        self.buffer[:, 1:n] = self.buffer[:, 0:(n - 1)]
        self.buffer[:, 0] = frame
        return self.buffer
""",
            (12,),
            fixed="""
import torch


class FrameStack:
    def __init__(self, envs, steps, width):
        self.steps = steps
        self.buffer = torch.zeros(envs, steps, width)

    def push(self, frame):
        n = self.steps
        self.buffer[:, 1:n] = self.buffer[:, 0:(n - 1)].clone()
        self.buffer[:, 0] = frame
        return self.buffer
""",
        ),
        Invalid(
            """
import torch

history = torch.arange(4.0)
history[:-1] = history[1:]
history[-1] = 9.0
print(history.tolist())
""",
            (5,),
            fixed="""
import torch

history = torch.arange(4.0)
history[:-1] = history[1:].clone()
history[-1] = 9.0
print(history.tolist())
""",
            prints="[1.0, 2.0, 3.0, 9.0]",
        ),
        Invalid(
            """
import torch

def causal_shift(buf: torch.Tensor, n: int) -> torch.Tensor:
    buf[:, :-n] = buf[:, n:]
    return buf
""",
            (5,),
            fixed="""
import torch

def causal_shift(buf: torch.Tensor, n: int) -> torch.Tensor:
    buf[:, :-n] = buf[:, n:].clone()
    return buf
""",
        ),
        Invalid(
            """
import torch

x = torch.arange(10.0)
x[1:].add_(x[:-1])
""",
            (5,),
            fixed="""
import torch

x = torch.arange(10.0)
x[1:].add_(x[:-1].clone())
""",
        ),
        Invalid(
            """
import torch

perm = torch.tensor([2, 0, 1])
perm[perm] = torch.tensor([0, 1, 2])
""",
            (5,),
            fixed="""
import torch

perm = torch.tensor([2, 0, 1])
perm[perm.clone()] = torch.tensor([0, 1, 2])
""",
        ),
    )

    def check(self, ctx: FileContext) -> Iterator[Report]:
        for facts in ctx.semantic.facts:
            for overlap in facts.overlaps:
                source = ctx.code(overlap.source)
                if overlap.how == "index":
                    what = f"is indexed by `{source}`, the tensor it writes"
                elif overlap.how == "transpose":
                    what = f"reads `{source}`, its own elements reordered"
                else:
                    what = f"reads `{source}`, the same memory shifted"
                yield Report(
                    overlap.node,
                    f'`{ctx.code(overlap.node)}` {what}: PyTorch raises "...the written-to tensor refer to a '
                    "single memory location\", or the result depends on the kernel's order",
                    fix=clone_at(ctx, overlap.source),
                )
