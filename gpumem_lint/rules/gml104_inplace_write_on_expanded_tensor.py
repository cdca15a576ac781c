from collections.abc import Iterator

import libcst as cst

from gpumem_lint.context import FileContext
from gpumem_lint.fixes import Applicability
from gpumem_lint.knowledge import knowledge
from gpumem_lint.rules._clone_fix import unshared_write
from gpumem_lint.rules._reporting import write_text
from gpumem_lint.rules.base import Invalid, Report, Rule
from gpumem_lint.semantic.indexing import advanced_by_syntax, expanded_dims, expanded_ndim, keeps_dims
from gpumem_lint.semantic.values import AliasKind, Grad, Write
from gpumem_lint.semantic.write_triggers import WRITES


class InplaceWriteOnExpandedTensor(Rule):
    """
    ## What it does
    Flags an in-place write (`add_`, `+=`, `out=`, an indexed assignment whose part still
    repeats an element: `J[:, i] = …` where `J` repeats along dimension 0) to the result of
    `expand`, `expand_as` or `broadcast_to`, also when the
    expanded view is kept in an attribute or a buffer (`register_buffer("m", t.expand(n, -1))`
    in `__init__`) and written in another method. The writes that run on an expanded tensor
    (`zero_()`, a scalar `fill_`, `masked_fill_`, `index_put_`, `index_fill_`, an assignment
    through a mask `e[e < eps] = eps`) are flagged where the tensor requires grad.

    ## Why is this bad?
    An expanded tensor repeats its source with a stride of 0: many of its elements are
    one memory location. Writing it in place is refused at run time with
    `RuntimeError: unsupported operation: more than one element of the written-to tensor
    refers to a single memory location. Please clone() the tensor before performing the
    operation.` ([docs/facts.md](../docs/facts.md) F5). A few writes run instead (they
    only warn that this is deprecated), but where the tensor requires grad, autograd replays
    the write in `backward()`, which then raises the same error, far from the line that wrote
    (F36). Where the expansion happens to be a no-op the write goes through to the source
    tensor instead, which is rarely meant.

    ## Known problems
    An indexed assignment (`J[:, i] = v`) is reported only where the syntax shows which
    dimension `expand` stretches (`x.unsqueeze(0)`, `x.view(k, 1)`, `x[None]`,
    `torch.rand(3, 1)` before it) and the index keeps it. One through a mask or an index
    tensor only warns (deprecated, F5) and is reported where the tensor requires grad and the
    syntax shows the mask (`e[e < 0]`, `e[~m]`, `e[[0, 2]]`); through a name (`e[m]`) it is
    not, since a name may hold an integer.
    The outputs of `torch.broadcast_tensors` are taken for views of their inputs: only those
    of a smaller shape are expanded (F31), and which ones the file rarely shows.

    ## Example
    ```python
    bias = self.bias.expand(batch, -1)
    bias += noise
    ```

    ## Use instead
    ```python
    bias = self.bias.expand(batch, -1) + noise
    # or, when a writable tensor is needed: self.bias.expand(batch, -1).clone()
    ```

    ## Fix safety
    The fix writes out of place (`b = b + noise`, `b = b.clamp(min=0)`), or, for a write
    that cannot be (`b[i] = 0`, `b.zero_()`), writes a copy made just before it
    (`b = b.clone()`). It is unsafe: the new tensor is materialised in full, which costs
    memory, and where the expansion was a no-op the source tensor no longer sees the write.

    ## References
    - [`torch.Tensor.expand`](https://docs.pytorch.org/docs/stable/generated/torch.Tensor.expand.html)
    """

    code = "GML104"
    name = "inplace-write-on-expanded-tensor"
    summary = "In-place write to an expanded (stride-0) tensor"
    fix_title = "Write out of place, or `.clone()` the expanded tensor before writing it"
    fix_applicability = Applicability.UNSAFE
    triggers = ("expand", "broadcast_")
    scope_triggers = WRITES
    VALID = (
        """
import torch

def dueling_head(advantages, values, n_actions):
    mean = advantages.sum(dim=1, keepdim=True) / n_actions
    advantages, mean = torch.broadcast_tensors(advantages, mean)
    advantages -= mean
    return values + advantages
""",
        """
import torch

def marginals(joint, eps=1e-8):
    k = joint.size(0)
    p_i = joint.sum(dim=1).view(k, 1).expand(k, k)
    p_i[:, 0] = eps
    p_i[p_i < eps] = eps
    return p_i
""",
        """
import torch

bias = torch.zeros(4)
tiled = bias.expand(3, 4).clone()
tiled += 1
""",
        """
import torch

def add_bias(x, bias):
    b = bias.expand(x.shape[0], -1)
    return x + b
""",
        """
import torch

def scaled(mask, n):
    m = mask.expand(n, -1).clone()
    m.mul_(0.5)
    return m
""",
        """
import torch

def reset_tiles(n):
    tiles = torch.ones(1, 4).expand(n, -1)
    tiles.zero_()
    return tiles
""",
        """
import torch

@torch.no_grad()
def clipped_marginal(head, x, eps=1e-8):
    probs = torch.softmax(head(x), dim=1)
    k = probs.size(1)
    p_i = (probs.t() @ probs).sum(dim=1).view(k, 1).expand(k, k)
    p_i[p_i < eps] = eps
    return p_i
""",
        # an index tensor held in a name: index_put_, which runs on an expanded tensor without grad (F36)
        """
import torch

def blank_columns(row, n, columns):
    grid = row.unsqueeze(0).expand(n, -1)
    picked = torch.tensor(columns)
    grid[:, picked] = 0.0
    return grid
""",
        # one element of every dimension: a 0-dim view, which a scalar fill writes without error
        """
import torch

weight = torch.randn(4, 3, 2, 2)
mask = torch.ones(4)[:, None, None, None].expand_as(weight)
mask[1, 0, 0, 0] = 0.0
""",
    )
    INVALID = (
        # `expand_as` stretches the size-1 dimensions the `None`s made: each filter's slice still repeats
        Invalid(
            """
import torch

weight = torch.randn(4, 3, 2, 2)
mask = torch.ones(4)[:, None, None, None].expand_as(weight)
mask[1] = 0.0
print(int(mask.sum().item()))
""",
            (6,),
            fixed="""
import torch

weight = torch.randn(4, 3, 2, 2)
mask = torch.ones(4)[:, None, None, None].expand_as(weight)
mask = mask.clone()
mask[1] = 0.0
print(int(mask.sum().item()))
""",
            prints="36",
        ),
        Invalid(
            """
import torch

J = torch.eye(2).unsqueeze(0).expand(5, 2, 2)
for i in range(2):
    J[:, i, :] = torch.randn(5, 2)
""",
            (6,),
            fixed="""
import torch

J = torch.eye(2).unsqueeze(0).expand(5, 2, 2)
for i in range(2):
    J = J.clone()
    J[:, i, :] = torch.randn(5, 2)
""",
        ),
        Invalid(
            """
import torch

def to_grayscale(images):
    gray = 0.299 * images[:, 0:1] + 0.587 * images[:, 1:2] + 0.114 * images[:, 2:3]
    return gray.expand(-1, 3, -1, -1)

batch = to_grayscale(torch.rand(2, 3, 4, 4))
batch.sub_(0.5)
""",
            (9,),
            fixed="""
import torch

def to_grayscale(images):
    gray = 0.299 * images[:, 0:1] + 0.587 * images[:, 1:2] + 0.114 * images[:, 2:3]
    return gray.expand(-1, 3, -1, -1)

batch = to_grayscale(torch.rand(2, 3, 4, 4))
batch = batch.sub(0.5)
""",
        ),
        Invalid(
            """
import torch

class Momentum(torch.optim.Optimizer):
    def __init__(self, params, lr=0.1):
        super().__init__(params, {"lr": lr})

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                if "buf" not in state:
                    state["buf"] = torch.zeros(1).expand_as(p)
                state["buf"].mul_(0.9).add_(p.grad)
                p.add_(state["buf"], alpha=-group["lr"])

w = torch.nn.Parameter(torch.randn(3))
opt = Momentum([w])
w.sum().backward()
opt.step()
""",
            (15,),
        ),
        Invalid(
            """
import torch
import torch.nn as nn

class Tiled(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.register_buffer("mask", torch.ones(1, 4).expand(n, -1))

    def forward(self, x):
        self.mask.mul_(0.5)
        return x * self.mask

Tiled(3)(torch.ones(3, 4))
""",
            (11,),
        ),
        Invalid(
            """
import torch

bias = torch.zeros(4)
tiled = bias.expand(3, 4)
tiled += 1
print(tiled.sum().item())
""",
            (6,),
            fixed="""
import torch

bias = torch.zeros(4)
tiled = bias.expand(3, 4)
tiled = tiled + 1
print(tiled.sum().item())
""",
            prints="12.0",
        ),
        Invalid(
            """
import torch

def noisy_bias(bias, batch, noise):
    b = bias.expand(batch, -1)
    b += noise
    return b
""",
            (6,),
            fixed="""
import torch

def noisy_bias(bias, batch, noise):
    b = bias.expand(batch, -1)
    b = b + noise
    return b
""",
        ),
        Invalid(
            """
import torch

head = torch.nn.Linear(8, 4)
probs = torch.softmax(head(torch.randn(16, 8)), dim=1)
joint = probs.t() @ probs / 16
marginal = joint.sum(dim=1).view(4, 1).expand(4, 4)
marginal[marginal < 1e-8] = 1e-8
loss = -(joint * (joint.log() - marginal.log())).sum()
loss.backward()
print(tuple(head.weight.grad.shape))
""",
            (8,),
            fixed="""
import torch

head = torch.nn.Linear(8, 4)
probs = torch.softmax(head(torch.randn(16, 8)), dim=1)
joint = probs.t() @ probs / 16
marginal = joint.sum(dim=1).view(4, 1).expand(4, 4)
marginal = marginal.clone()
marginal[marginal < 1e-8] = 1e-8
loss = -(joint * (joint.log() - marginal.log())).sum()
loss.backward()
print(tuple(head.weight.grad.shape))
""",
            prints="(4, 8)",
        ),
        # a mask held in a name: the write runs, and backward raises
        Invalid(
            """
import torch

weight = torch.randn(4, requires_grad=True)
tiled = (weight * 2).unsqueeze(0).expand(3, 4)
even = torch.arange(12).view(3, 4) % 2 == 0
tiled[even] = 0.0
tiled.sum().backward()
""",
            (7,),
            fixed="""
import torch

weight = torch.randn(4, requires_grad=True)
tiled = (weight * 2).unsqueeze(0).expand(3, 4)
even = torch.arange(12).view(3, 4) % 2 == 0
tiled = tiled.clone()
tiled[even] = 0.0
tiled.sum().backward()
""",
        ),
        # `...` stands for the expanded leading dimension, whole
        Invalid(
            """
import torch

def camera_frames(batch):
    frames = torch.zeros(4, 4).unsqueeze(0).expand(batch, -1, -1)
    frames[..., 3, 3] = 1.0
    return frames
""",
            (6,),
            fixed="""
import torch

def camera_frames(batch):
    frames = torch.zeros(4, 4).unsqueeze(0).expand(batch, -1, -1)
    frames = frames.clone()
    frames[..., 3, 3] = 1.0
    return frames
""",
        ),
    )

    def check(self, ctx: FileContext) -> Iterator[Report]:
        for facts in ctx.semantic.facts:
            for write in facts.writes:
                if write.writer.kind is not AliasKind.EXPAND:
                    continue
                if _raises_in_forward(write):
                    effect = "whose elements share memory: PyTorch raises"
                elif _runs_in_forward(write) and write.writer.grad is Grad.YES and not write.no_grad:
                    effect = "that requires grad: `backward()` raises"
                else:
                    continue
                yield Report(
                    write.node,
                    f"{write_text(ctx, write)} writes in place to an expanded tensor (line "
                    f"{ctx.line(_expanded_at(write))}) {effect} "
                    '"more than one element of the written-to tensor refers to a single memory location"',
                    fix=unshared_write(ctx, write),
                )


def _raises_in_forward(write: Write) -> bool:
    if write.op.startswith("[]"):
        return not _index_put(write) and _hits_repeats(write)
    return write.op not in knowledge().expanded_forward_runs


def _runs_in_forward(write: Write) -> bool:
    """`e.zero_()`, `e.masked_fill_(m, v)`, `e[e < 0] = v`: no error until autograd replays the write
    in backward (F36)."""
    if write.op.startswith("[]"):
        return _index_put(write)
    return write.op in knowledge().expanded_forward_runs


def _index_put(write: Write) -> bool:
    """`e[idx] = v` with a tensor, array or list index, known by its value (`idx = x > 0`) or shown by
    its syntax where the value is unknown (`e[e < 0]` on an untyped `e`): index_put_, not a view's write."""
    target = write.node.target if isinstance(write.node, cst.AugAssign) else write.node
    return write.advanced or (isinstance(target, cst.Subscript) and advanced_by_syntax(target))


def _hits_repeats(write: Write) -> bool:
    """`J[:, i] = v` on `eye(2).unsqueeze(0).expand(5, 2, 2)`: the indexed part still repeats one
    element along dimension 0 (F5); `J[0] = v` writes one copy of each element."""
    target = write.node.target if isinstance(write.node, cst.AugAssign) else write.node
    expand = _expanded_at(write)
    return isinstance(target, cst.Subscript) and keeps_dims(target, expanded_dims(expand), expanded_ndim(expand))


def _expanded_at(write: Write) -> cst.CSTNode:
    """Where the expand view was made: through a container (`state["buf"]`) or a helper's result,
    the first handle of the chain that is one."""
    origin = write.writer.node
    for handle in write.writer.chain():
        if handle.kind is AliasKind.EXPAND and handle.node is not None:
            origin = handle.node
    return origin
