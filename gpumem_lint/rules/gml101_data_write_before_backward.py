from collections.abc import Iterator

from gpumem_lint.context import FileContext
from gpumem_lint.diagnostics import Applicability
from gpumem_lint.rules._after_backward_fix import move_below_backward
from gpumem_lint.rules._reporting import write_text
from gpumem_lint.rules.base import Invalid, Report, Rule
from gpumem_lint.semantic.write_triggers import WRITES


class DataWriteBeforeBackward(Rule):
    """
    ## What it does
    Flags an in-place write through `.data` (`w.data.mul_(…)`, `w.data[…] = …`,
    `w.data = …`, `w.set_(…)`) to a tensor the graph uses, made after a value was
    computed from the graph and before `backward()` (or `torch.autograd.grad`) is
    called on that value. Tensors the loss does not depend on (a target network
    updated between forward and backward) are not reported, nor is a write made before
    any forward used the tensor (setting a layer up: its first forward then sees the
    new values). A tensor an op kept for its backward (`out = torch.sigmoid(z)` keeps
    `out`; `knowledge/saved_for_backward.json`) counts as used by that op: a write to it
    is reported even when the loss is computed after the write, since the loss's backward
    still runs through the op that kept it.

    ## Why is this bad?
    Autograd saves the tensors it needs for the backward pass. `.data` returns an alias
    of the same memory with a *new* version counter, so autograd cannot notice the
    write: `backward()` runs without an error and computes gradients from the modified
    values. Measured on torch 2.13: `w.data.mul_(10)` between forward and backward gives
    a gradient of `[20, 40, 60]` instead of `[2, 4, 6]`
    ([docs/facts.md](../docs/facts.md) F1, F2). The same write
    through `.detach()` or under `torch.no_grad()` bumps the shared version counter, and
    autograd raises instead of computing a wrong result.

    ## Example
    ```python
    logits = model(images)
    loss = criterion(logits, labels)
    for p in model.parameters():
        p.data.clamp_(-0.01, 0.01)  # weight clipping, but before backward
    loss.backward()
    ```

    ## Use instead
    ```python
    logits = model(images)
    loss = criterion(logits, labels)
    loss.backward()
    optimizer.step()
    with torch.no_grad():
        for p in model.parameters():
            p.clamp_(-0.01, 0.01)
    ```

    ## Fix safety
    The fix moves the statement that writes (a loop holding it too) just below the `backward()`
    call, in the block that holds both: `backward()` then computes the gradient of the values the
    forward pass used, and the optimizer step and what follows see the write as before. It is
    unsafe: the statements it moves across now run before the write, and a write meant for the
    next forward pass (a weight reset, a clamp) now lands before this step's `optimizer.step()`.
    There is no fix when a statement in between binds or uses a name the write uses, when either
    can leave the block (`return`, `break`), or when the write reads `.grad`, which `backward()`
    writes ([docs/facts.md](../docs/facts.md) F37).

    ## References
    - [Autograd mechanics: in-place operations](https://docs.pytorch.org/docs/stable/notes/autograd.html#in-place-operations-with-autograd)
    - [`torch.Tensor.detach`](https://docs.pytorch.org/docs/stable/generated/torch.Tensor.detach.html)
    """

    code = "GML101"
    name = "data-write-before-backward"
    summary = "In-place write through `.data` between the forward pass and `backward()`"
    fix_title = (
        "Move the write after `backward()`/`optimizer.step()`, or write the tensor itself under "
        "`torch.no_grad()` so autograd's version check can catch misuse"
    )
    triggers = (".data", ".set_(")
    scope_triggers = WRITES
    fix_applicability = Applicability.UNSAFE
    VALID = (
        """
import torch
import torch.nn as nn
from apex.parallel import DistributedDataParallel

start, stop = 0, 16
reference = nn.BatchNorm1d(4)
reference.weight.data = torch.ones(4)
reference(torch.randn(32, 4)).sum().backward()

synced = DistributedDataParallel(nn.BatchNorm1d(4))
out = synced(torch.randn(32, 4)[start:stop])
out.backward(torch.ones(32, 4)[start:stop])
""",
        """
import torch
import torch.nn as nn

grad_output = torch.ones(4, 3)
layer = nn.Linear(3, 3).to("cpu")
layer.weight.data = torch.randn(3, 3)
out = layer(torch.randn(4, 3))
out.backward(grad_output)
""",
        """
import torch

def train_step(model, optimizer, criterion, images, labels):
    loss = criterion(model(images), labels)
    loss.backward()
    optimizer.step()
    for p in model.parameters():
        p.data.clamp_(-0.01, 0.01)
""",
        """
import torch

def sgd_step(params, lr):
    for p in params:
        p.data.add_(p.grad, alpha=-lr)
""",
        # the write sets the layer up before its first forward, which `x` (made earlier) never saw
        """
import torch
from torch import nn

def bias_grad_with_zero_weight():
    x = torch.randn(16, 16)
    lin = nn.Linear(16, 16)
    lin.weight.data = torch.zeros(16, 16)
    lin(x).sum().backward()
    return lin.bias.grad
""",
        # `p.grad is not None` tests the binding, so no forward computed with the gradient buffer being zeroed
        """
import torch
from torch import nn

model = nn.Linear(3, 1)
loss = model(torch.ones(2, 3)).sum()
for p in model.parameters():
    if p.grad is not None:
        p.grad.data.zero_()
loss.backward()
""",
        # a product is no op's saved tensor (`@` keeps its operands): the loss is computed from the clamped values
        """
import torch

def straight_through_step(x, w):
    w.requires_grad_()
    y = x @ w
    y.data.clamp_(min=0)
    loss = (y * 2).sum()
    loss.backward()
    return w.grad
""",
    )
    INVALID = (
        Invalid(
            # `sigmoid` kept its output for its backward: the loss computed after the write still runs through it
            """
import torch

def squash_step(x, w):
    w.requires_grad_()
    out = torch.sigmoid(x @ w)
    out.data.mul_(0.5)
    loss = (out * 2).sum()
    loss.backward()
    return w.grad
""",
            (7,),
            fixed="""
import torch

def squash_step(x, w):
    w.requires_grad_()
    out = torch.sigmoid(x @ w)
    loss = (out * 2).sum()
    loss.backward()
    out.data.mul_(0.5)
    return w.grad
""",
        ),
        Invalid(
            """
import torch

def train_step(model, optimizer, criterion, images, labels):
    loss = criterion(model(images), labels)
    for p in model.parameters():
        p.data.clamp_(-0.01, 0.01)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
""",
            (7,),
            fixed="""
import torch

def train_step(model, optimizer, criterion, images, labels):
    loss = criterion(model(images), labels)
    optimizer.zero_grad()
    loss.backward()
    for p in model.parameters():
        p.data.clamp_(-0.01, 0.01)
    optimizer.step()
""",
        ),
        Invalid(
            """
import torch

w = torch.ones(3, requires_grad=True)
y = (w * w).sum()
w.data = torch.zeros(3)
y.backward()
print(w.grad.tolist(), w.tolist())
""",
            (6,),
            fixed="""
import torch

w = torch.ones(3, requires_grad=True)
y = (w * w).sum()
y.backward()
w.data = torch.zeros(3)
print(w.grad.tolist(), w.tolist())
""",
            prints="[2.0, 2.0, 2.0] [0.0, 0.0, 0.0]",
        ),
        Invalid(
            """
import torch

x = torch.ones(1, requires_grad=True)
y = 2 * x * x
x.data *= 100
y.backward()
print(x.grad.item(), x.item())
""",
            (6,),
            fixed="""
import torch

x = torch.ones(1, requires_grad=True)
y = 2 * x * x
y.backward()
x.data *= 100
print(x.grad.item(), x.item())
""",
            prints="4.0 100.0",
        ),
        Invalid(
            """
import torch

def step(w: torch.Tensor, x: torch.Tensor, fresh: torch.Tensor):
    loss = (w * x).sum()
    w.set_(fresh)
    loss.backward()
""",
            (6,),
            fixed="""
import torch

def step(w: torch.Tensor, x: torch.Tensor, fresh: torch.Tensor):
    loss = (w * x).sum()
    loss.backward()
    w.set_(fresh)
""",
        ),
        Invalid(
            """
import torch

def perturbed_step(w: torch.Tensor, x: torch.Tensor, lr: float):
    loss = (w * x).sum()
    w.data -= lr * w.grad
    loss.backward()
""",
            (6,),
        ),
        Invalid(
            """
import torch

def guarded_step(w: torch.Tensor, x: torch.Tensor, fresh: torch.Tensor):
    loss = (w * x).sum()
    w.set_(fresh)
    if not loss.requires_grad:
        return
    loss.backward()
""",
            (6,),
        ),
        Invalid(
            """
import torch

def reset_step(w: torch.Tensor, x: torch.Tensor, fresh: torch.Tensor):
    loss = (w * x).sum()
    w.data = fresh
    loss.backward()""",
            (6,),
            fixed="""
import torch

def reset_step(w: torch.Tensor, x: torch.Tensor, fresh: torch.Tensor):
    loss = (w * x).sum()
    loss.backward()
    w.data = fresh""",
        ),
        Invalid(
            """
import torch

def rescaled_step(w: torch.Tensor, x: torch.Tensor, scale: float):
    loss = (w * x).sum()
    w.data *= scale
    scale = loss.item()
    loss.backward()
    return scale
""",
            (6,),
        ),
    )

    def check(self, ctx: FileContext) -> Iterator[Report]:
        for facts in ctx.semantic.facts:
            for write, backward in facts.backward_after_hidden:
                how = "replaces the memory of a tensor" if write.rebinds else "writes through `.data`"
                yield Report(
                    write.node,
                    f"{write_text(ctx, write)} {how} after the forward pass: autograd cannot see "
                    f"it, so `backward()` at line {ctx.line(backward)} silently computes gradients from the "
                    "modified values",
                    fix=move_below_backward(ctx, write.node, backward),
                )
