from collections.abc import Iterator
from pathlib import Path

from gpumem_lint.context import FileContext
from gpumem_lint.fixes import Applicability
from gpumem_lint.rules._no_grad_fix import under_no_grad
from gpumem_lint.rules._reporting import write_text
from gpumem_lint.rules.base import Invalid, Report, Rule
from gpumem_lint.semantic.grad_callers import called_only_without_grad
from gpumem_lint.semantic.scopes import Scope
from gpumem_lint.semantic.values import AliasKind, Handle, Write
from gpumem_lint.semantic.write_triggers import WRITES

_VIEWS = frozenset({AliasKind.VIEW, AliasKind.EXPAND, AliasKind.MULTI_VIEW})


class InplaceWriteOnGradLeaf(Rule):
    """
    ## What it does
    Flags an in-place write (`mul_`, `+=`, `w[i] = …`, `out=`, `copy_`, a layout op such as
    `t_()` (F25), …) to a leaf tensor that requires grad, or to a view of one, outside
    `torch.no_grad()`. Leaves are
    Parameters (`nn.Parameter(...)`, a module's `weight` and `bias` as `torch.nn`'s own
    classes and this file's `__init__` methods define them, the items of
    `model.parameters()`), tensors made with `requires_grad=True`, and tensors after
    `requires_grad_()`. A Parameter made with `requires_grad=False` is not one, also when a
    method or function of the file builds it and `register_parameter` registers what it returns.

    ## Why is this bad?
    Autograd cannot record a change to the very tensor it differentiates with respect
    to, so the write raises at once: `RuntimeError: a leaf Variable that requires grad is
    being used in an in-place operation.`, or for a slice or other view of it `a view of a
    leaf Variable that requires grad is being used in an in-place operation.`
    ([docs/facts.md](../docs/facts.md) F21). The classic shapes are a hand-written SGD step
    (`w -= lr * w.grad`) and re-initialising part of a layer's weight.

    ## Known problems
    A module of a package whose `__init__.py` turns grad off at import (a top-level
    `torch.set_grad_enabled(False)`, as inference servers do) is taken to run without autograd,
    unless it turns grad back on itself (`torch.enable_grad()`).
    An attribute assigned `Net(...).to(device)` (or `.cuda()`, `.eval()`: the module methods that
    return the module) holds that module and its Parameters.
    Only leaves the file shows are known: a function's parameter is one when a caller in the
    same file passes a leaf (`sinusoidal(embedding.weight)`); a parameter passed in from
    another module, or a model built elsewhere, is not followed unless the function calls
    `backward()`. A function whose every call, in its file and in the first-party modules that
    import it, is made under `torch.no_grad()` (a model's `load_from` that calls each block's
    `load_from` inside `with torch.no_grad():`) runs without autograd and is not reported; a call
    made further away, or a use of the name other than a call, keeps it reported, and so does a
    function that no code of the project calls.
    A file that turns `requires_grad` off anywhere (`p.requires_grad = False`,
    `requires_grad_(False)`) has its module parameters treated as unknown, unless what it
    turns off is a parameter of the function doing it, or an attribute it names
    (`self.emb.weight.requires_grad = False`), which that function's flow follows: under `if freeze:`,
    the other path still writes a leaf that requires grad. A `for` loop is
    taken to run at least once: a leaf that every pass rebinds (`for layer in self.layers:
    h = layer(h)`) is not the value after the loop, though an empty iterable would leave it.
    A module given to a function named as an in-place op (`quantize_(model, config)`) may
    have had its layers replaced: its parameters are unknown after the call.

    ## Example
    ```python
    layer = nn.Linear(4, 4)
    layer.weight[:, :2].mul_(0.5)
    ```

    ## Use instead
    ```python
    layer = nn.Linear(4, 4)
    with torch.no_grad():
        layer.weight[:, :2].mul_(0.5)
    ```

    ## Fix safety
    The fix puts the statement under `with torch.no_grad():`. It is unsafe: the write is
    then invisible to autograd, which is what initialisation and manual updates want, but
    not a computation whose gradient should flow (write out of place there: `w = w * s`).

    ## References
    - [Autograd mechanics: in-place operations](https://docs.pytorch.org/docs/stable/notes/autograd.html#in-place-operations-with-autograd)
    - [`torch.no_grad`](https://docs.pytorch.org/docs/stable/generated/torch.no_grad.html)
    """

    code = "GML108"
    name = "inplace-write-on-grad-leaf"
    summary = "In-place write to a leaf tensor that requires grad (a Parameter), or to a view of one"
    fix_title = "Write under `with torch.no_grad():` (initialisation, manual updates), or out of place"
    fix_applicability = Applicability.UNSAFE
    triggers = ("torch",)
    scope_triggers = WRITES
    VALID = (
        # `max_norm` rescales the weight under no-grad (F57): no leaf error, the training step runs
        """
import torch
import torch.nn as nn

embedding = nn.Embedding(10, 4, max_norm=1.0)
opt = torch.optim.SGD(embedding.parameters(), lr=0.1)
for step in range(3):
    out = embedding(torch.tensor([1, 2]))
    out.sum().backward()
    opt.step()
""",
        # `self.x.detach_()` makes `x` a leaf that does not require grad: the update after it is legal (F56)
        """
import torch


class Optimizer:
    def __init__(self, x, lr):
        self.x = x
        self.lr = lr

    def step(self, loss_fn):
        self.x.requires_grad_(True)
        loss = loss_fn(self.x)
        grad = torch.autograd.grad(loss, self.x)[0]
        self.x.detach_()
        self.x -= self.lr * grad
        return loss.item()
""",
        # `requires_grad_(False)` on the moved module: its parameters no longer require grad
        """
import torch
from torch import nn


class Factors(nn.Module):
    def __init__(self, users, dim):
        super().__init__()
        self.P = nn.Parameter(torch.randn(users, dim) * 0.1)


class Trainer:
    def __init__(self, users, dim, device):
        self.net = Factors(users, dim).to(device).requires_grad_(False)

    def solve_rows(self, rows):
        for user, row in enumerate(rows):
            self.net.P[user] = row
""",
        # another method turns grad off for the embedding: what it froze is not followed across methods
        """
import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self, vocab, dim, vectors):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.freeze()
        self.emb.weight.copy_(vectors)

    def freeze(self):
        self.emb.weight.requires_grad = False
""",
        # every call of `Block.load_from` is made under the model's `no_grad`
        """
import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = nn.GroupNorm(2, width)

    def load_from(self, weights, prefix):
        self.norm.weight.copy_(weights[prefix + "/scale"])
        self.norm.bias.copy_(weights[prefix + "/bias"])


class Model(nn.Module):
    def __init__(self, width, depth):
        super().__init__()
        self.blocks = nn.ModuleList(Block(width) for _ in range(depth))

    def load_from(self, weights):
        with torch.no_grad():
            for index, block in enumerate(self.blocks):
                block.load_from(weights, f"block{index}")
""",
        """
import torch

def masked_leaf(embeds: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    embeds.requires_grad_(True)
    wanted = embeds.requires_grad
    if not embeds.is_leaf:
        embeds = embeds.detach()
    elif wanted:
        embeds.requires_grad_(False)
    embeds *= mask
    if wanted:
        embeds.requires_grad_(True)
    return embeds
""",
        """
import torch
import torch.nn as nn

class Adapter(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(8))

    def rescale(self, factor):
        if not self.scale.requires_grad:
            self.scale.mul_(factor)
""",
        """
import torch.nn as nn

class Decoder(nn.Module):
    def forward(self, embeds):
        embeds.requires_grad_(True)
        hidden = embeds
        for layer in self.layers:
            hidden = layer(hidden)
        hidden *= self.scale
        return hidden
""",
        """
import torch
import torch.nn as nn

def build(params, devs, n):
    d = {}
    for dev in devs:
        d[dev] = torch.zeros(n)
        d[dev][0:3].copy_(params[0])
        d[dev] = nn.Parameter(d[dev])
    return d
""",
        """
import math

import torch
import torch.nn as nn

def sinusoidal(table):
    positions = torch.arange(table.shape[0]).unsqueeze(1)
    table[:, 0::2] = torch.sin(positions / math.pi)

embedding = nn.Embedding(6, 4)
with torch.no_grad():
    sinusoidal(embedding.weight)
""",
        """
import torch.nn as nn

layer = nn.Linear(4, 4)
for p in layer.parameters():
    p.requires_grad = False
for p in layer.parameters():
    p.mul_(0.5)
""",
        """
import torch
import torch.nn as nn

layer = nn.Linear(4, 4)
with torch.no_grad():
    layer.weight[:, :2].mul_(0.5)
""",
        """
import torch

w = torch.randn(3, requires_grad=True)
loss = (w * 2).sum()
loss.backward()
w.data -= 0.1 * w.grad
w.grad.zero_()
""",
        """
import torch
import torch.nn as nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.register_buffer("steps", torch.zeros(()))

    def forward(self, x):
        self.steps += 1
        return self.fc(x)

Net()(torch.ones(4)).sum().backward()
""",
        """
import torch
import torch.nn as nn

model = nn.Linear(4, 4)
model.requires_grad_(False)
model.weight.mul_(0.5)
""",
        """
import torch

w = torch.randn(3)
w.mul_(2)
w.requires_grad_()
""",
        """
import torch
import torch.nn as nn

layer = nn.Linear(4, 4)
nn.init.zeros_(layer.bias)
layer.weight.detach().mul_(0.5)
""",
        """
import torch

def sgd(model, x):
    model(x).sum().backward()
    with torch.set_grad_enabled(False):
        for p in model.parameters():
            p -= 0.1 * p.grad
""",
        # a function named as an in-place op (`sparsify_`) may rebuild the layers it is given
        """
import torch
from torch import nn

from sparsity import sparsify_


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)


def load_sparse(config, weights):
    model = Head().eval()
    sparsify_(model, config)
    model.proj.weight.copy_(weights["proj.weight"])
    return model
""",
        # a registered Parameter made with `requires_grad=False`, by the method that builds it
        """
import torch
from torch import nn


class Embedding(nn.Module):
    def __init__(self, vocab, width):
        super().__init__()
        self.register_parameter("weight", self.create_weight(vocab, width))

    @staticmethod
    def create_weight(vocab, width):
        weight = nn.Parameter(torch.zeros(vocab, width), requires_grad=False)
        return weight

    def load(self, loaded, padding_idx):
        self.weight.copy_(loaded)
        self.weight[padding_idx] = 0
""",
    )
    INVALID = (
        # `.to(device)` returns the module itself: `self.net` holds `Factors`, whose `P` is a Parameter
        Invalid(
            """
import torch
from torch import nn


class Factors(nn.Module):
    def __init__(self, users, dim):
        super().__init__()
        self.P = nn.Parameter(torch.randn(users, dim) * 0.1)


class Trainer:
    def __init__(self, users, dim, device):
        self.net = Factors(users, dim).to(device)

    def solve_rows(self, rows):
        for user, row in enumerate(rows):
            self.net.P[user] = row
""",
            (18,),
            fixed="""
import torch
from torch import nn


class Factors(nn.Module):
    def __init__(self, users, dim):
        super().__init__()
        self.P = nn.Parameter(torch.randn(users, dim) * 0.1)


class Trainer:
    def __init__(self, users, dim, device):
        self.net = Factors(users, dim).to(device)

    def solve_rows(self, rows):
        for user, row in enumerate(rows):
            with torch.no_grad():
                self.net.P[user] = row
""",
        ),
        # grad is turned off only `if freeze:`; on the other path the copy writes a leaf that requires grad
        Invalid(
            """
import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self, vocab, dim, vectors, freeze):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        if freeze:
            self.emb.weight.requires_grad = False
        self.emb.weight.copy_(vectors)
""",
            (12,),
            fixed="""
import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self, vocab, dim, vectors, freeze):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        if freeze:
            self.emb.weight.requires_grad = False
        with torch.no_grad():
            self.emb.weight.copy_(vectors)
""",
        ),
        # one call of `Block.load_from` is made with grad on
        Invalid(
            """
import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = nn.GroupNorm(2, width)

    def load_from(self, weights, prefix):
        self.norm.weight.copy_(weights[prefix + "/scale"])
        self.norm.bias.copy_(weights[prefix + "/bias"])


class Model(nn.Module):
    def __init__(self, width, depth):
        super().__init__()
        self.blocks = nn.ModuleList(Block(width) for _ in range(depth))

    def load_from(self, weights):
        with torch.no_grad():
            for index, block in enumerate(self.blocks):
                block.load_from(weights, f"block{index}")


    def reset_block(self, index, weights):
        self.blocks[index].load_from(weights, f"block{index}")
""",
            (12, 13),
            fixed="""
import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = nn.GroupNorm(2, width)

    def load_from(self, weights, prefix):
        with torch.no_grad():
            self.norm.weight.copy_(weights[prefix + "/scale"])
        with torch.no_grad():
            self.norm.bias.copy_(weights[prefix + "/bias"])


class Model(nn.Module):
    def __init__(self, width, depth):
        super().__init__()
        self.blocks = nn.ModuleList(Block(width) for _ in range(depth))

    def load_from(self, weights):
        with torch.no_grad():
            for index, block in enumerate(self.blocks):
                block.load_from(weights, f"block{index}")


    def reset_block(self, index, weights):
        self.blocks[index].load_from(weights, f"block{index}")
""",
        ),
        Invalid(
            """
import torch
from torch import nn


class Gate(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.register_parameter("scale", self.initial_scale(width))

    @staticmethod
    def initial_scale(width):
        scale = nn.Parameter(torch.ones(width))
        return scale

    def reset(self):
        self.scale[0] = 0


Gate(4).reset()
""",
            (17,),
            fixed="""
import torch
from torch import nn


class Gate(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.register_parameter("scale", self.initial_scale(width))

    @staticmethod
    def initial_scale(width):
        scale = nn.Parameter(torch.ones(width))
        return scale

    def reset(self):
        with torch.no_grad():
            self.scale[0] = 0


Gate(4).reset()
""",
        ),
        Invalid(
            """
import torch.nn as nn

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

class Stack(nn.Module):
    def __init__(self, depth):
        super().__init__()
        self.blocks = nn.ModuleList(Block() for _ in range(depth))

    def scale_(self, factor):
        for block in self.blocks:
            block.proj.weight.mul_(factor)

stack = Stack(2)
stack.blocks[1].proj.bias.zero_()
""",
            (16, 19),
        ),
        Invalid(
            """
import torch
import torch.nn as nn

def create_sinusoidal(weight):
    n, d = weight.shape
    position = torch.arange(n).unsqueeze(1)
    weight[:, 0::2] = torch.sin(position / 10000 ** (torch.arange(0, d, 2) / d))
    weight.requires_grad = False

class Positions(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = nn.Embedding(16, 8)
        create_sinusoidal(self.table.weight)

Positions()
""",
            (8,),
            fixed="""
import torch
import torch.nn as nn

def create_sinusoidal(weight):
    n, d = weight.shape
    position = torch.arange(n).unsqueeze(1)
    with torch.no_grad():
        weight[:, 0::2] = torch.sin(position / 10000 ** (torch.arange(0, d, 2) / d))
    weight.requires_grad = False

class Positions(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = nn.Embedding(16, 8)
        create_sinusoidal(self.table.weight)

Positions()
""",
        ),
        Invalid(
            """
import torch.nn as nn

class Output(nn.Module):
    def __init__(self):
        super().__init__()
        self.dense = nn.Linear(4, 4)

class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.output = Output()

layer = Layer()
layer.output.dense.weight[:, 1] -= 1
""",
            (15,),
        ),
        Invalid(
            """
import torch
import torch.nn as nn

layer = nn.Linear(4, 2)
layer.weight.t_()
""",
            (6,),
            fixed="""
import torch
import torch.nn as nn

layer = nn.Linear(4, 2)
with torch.no_grad():
    layer.weight.t_()
""",
        ),
        Invalid(
            """
import math

import torch
import torch.nn as nn

def sinusoidal(table):
    positions = torch.arange(table.shape[0]).unsqueeze(1)
    table[:, 0::2] = torch.sin(positions / math.pi)

embedding = nn.Embedding(6, 4)
sinusoidal(embedding.weight)
""",
            (9,),
            fixed="""
import math

import torch
import torch.nn as nn

def sinusoidal(table):
    positions = torch.arange(table.shape[0]).unsqueeze(1)
    with torch.no_grad():
        table[:, 0::2] = torch.sin(positions / math.pi)

embedding = nn.Embedding(6, 4)
sinusoidal(embedding.weight)
""",
        ),
        Invalid(
            """
import torch
import torch.nn as nn

layer = nn.Linear(4, 4)
layer.weight[:, :2].mul_(0.5)
""",
            (6,),
            fixed="""
import torch
import torch.nn as nn

layer = nn.Linear(4, 4)
with torch.no_grad():
    layer.weight[:, :2].mul_(0.5)
""",
        ),
        Invalid(
            """
import torch

w = torch.randn(3, requires_grad=True)
loss = (w * 2).sum()
loss.backward()
w -= 0.1 * w.grad
""",
            (7,),
            fixed="""
import torch

w = torch.randn(3, requires_grad=True)
loss = (w * 2).sum()
loss.backward()
with torch.no_grad():
    w -= 0.1 * w.grad
""",
        ),
        Invalid(
            """
import torch
import torch.nn as nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(4))

    def forward(self, x):
        self.scale.clamp_(min=0)
        return x * self.scale

Net()(torch.ones(4)).sum().backward()
""",
            (11,),
            fixed="""
import torch
import torch.nn as nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(4))

    def forward(self, x):
        with torch.no_grad():
            self.scale.clamp_(min=0)
        return x * self.scale

Net()(torch.ones(4)).sum().backward()
""",
        ),
        Invalid(
            """
import torch

def train(model, batches, lr):
    for x, y in batches:
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        for p in model.parameters():
            p.add_(p.grad, alpha=-lr)
""",
            (9,),
            fixed="""
import torch

def train(model, batches, lr):
    for x, y in batches:
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        for p in model.parameters():
            with torch.no_grad():
                p.add_(p.grad, alpha=-lr)
""",
        ),
        Invalid(
            """
import torch

x = torch.zeros(4)
x.requires_grad_()
x[0] = 1.0
""",
            (6,),
            fixed="""
import torch

x = torch.zeros(4)
x.requires_grad_()
with torch.no_grad():
    x[0] = 1.0
""",
        ),
    )

    def check(self, ctx: FileContext) -> Iterator[Report]:
        callers_turn_grad_off: dict[str, bool] = {}
        for facts in ctx.semantic.facts:
            for write in facts.autograd_writes:
                leaf = _written_leaf(write)
                if leaf is None or _run_without_grad(ctx, facts.scope, callers_turn_grad_off):
                    continue
                what = "a view of a leaf" if _through_view(write, leaf) else "a leaf"
                yield Report(
                    write.node,
                    f"{write_text(ctx, write)} writes in place to {what} that requires grad: autograd raises "
                    f"`{what} Variable that requires grad is being used in an in-place operation`",
                    fix=under_no_grad(ctx, write.node),
                )


def _run_without_grad(ctx: FileContext, scope: Scope, known: dict[str, bool]) -> bool:
    """Every call of the function, in its file and in the modules importing it, is made with grad off.
    `forward` and dunder methods are called through the object (`model(x)`, `Cls()`), not by name."""
    name = scope.name
    if not scope.is_function or name == "forward" or name.startswith("__"):
        return False
    if name not in known:
        known[name] = called_only_without_grad(name, ctx.text, Path(ctx.path), ctx.dependencies)
    return known[name]


def _through_view(write: Write, leaf: Handle) -> bool:
    """`w[0] = v`, `w[:, :2].mul_(s)`: autograd sees a write to a view of the leaf."""
    if write.op.startswith("[]"):
        return write.partial  # `w[:] = v` writes the leaf itself
    for handle in write.writer.chain():
        if handle is leaf:
            return False
        if handle.kind in _VIEWS:
            return True
    return False


def _written_leaf(write: Write) -> Handle | None:
    """The grad-requiring leaf a write reaches, when autograd would see the write."""
    # A call to a function that writes its argument (`write.callee`) is reported at that write, in
    # the function, which starts from the leaf its caller passes (model.py `_passed`).
    if write.no_grad or write.init or write.module or write.rebinds or write.callee is not None:
        return None
    return write.writer.grad_leaf()
