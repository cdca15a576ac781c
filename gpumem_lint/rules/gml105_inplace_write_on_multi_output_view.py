from collections.abc import Iterator

from gpumem_lint.context import FileContext
from gpumem_lint.fixes import Applicability
from gpumem_lint.rules._clone_fix import unshared_write
from gpumem_lint.rules._reporting import write_text
from gpumem_lint.rules.base import Invalid, Report, Rule
from gpumem_lint.semantic.values import AliasKind, Grad, Handle
from gpumem_lint.semantic.write_triggers import WRITES


class InplaceWriteOnMultiOutputView(Rule):
    """
    ## What it does
    Flags an in-place write to an output of `unbind`, `split`, `chunk`, `tensor_split`
    (and `hsplit`/`vsplit`/`dsplit`), or to a row got by iterating or unpacking a tensor
    (`for row in x`, `zip(x, …)`, `a, b = x`: that is `unbind(0)`), when the tensor may
    require grad: computed from a Parameter or a module's output, a module's `forward`
    input, or computed by a function that calls `backward()`, outside `torch.no_grad()`.

    ## Why is this bad?
    These functions return several views of one tensor, and autograd cannot track an
    in-place change to one of them. When the input requires grad PyTorch raises
    `RuntimeError: Output 0 of SplitBackward0 is a view and is being modified inplace.
    This view is the output of a function that returns multiple views. Such functions
    do not allow the output views to be modified inplace.` ([docs/facts.md](../docs/facts.md) F6).
    In-place layout ops (`k.transpose_(-2, -1)`, `squeeze_`, `t_`) count as writes too
    (F25). The classic shape is scaling the query of a fused QKV projection in place. Without
    grad the write silently changes the split tensor, which is why this rule only looks
    at autograd code.

    ## Known problems
    A module of a package whose `__init__.py` turns grad off at import (a top-level
    `torch.set_grad_enabled(False)`, as inference servers do) is taken to run without autograd,
    unless it turns grad back on itself (`torch.enable_grad()`).
    A tensor passed into a helper function is not known to require grad unless the helper
    is a module's `forward`, calls `backward()` itself, or is given one by a caller of this
    file (followed a few calls deep). The `forward` of a `torch.autograd.Function` runs with
    grad mode off, so nothing in it is reported. A helper of the file that returns a view of its
    parameter made by a view call (`return x.view(b, heads, -1, h, w)`) gives its caller a view of what
    it passed; one made by indexing or a property (`x[:, 1:]`, `x.mT`) is not followed, and neither
    is `reshape` (a view or a copy, by the strides at run time).

    ## Example
    ```python
    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q *= self.scale
        return attention(q, k, v)
    ```

    ## Use instead
    ```python
    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q * self.scale
        return attention(q, k, v)
    ```

    ## Fix safety
    The fix writes out of place (`q = q * scale`, `first = first.sigmoid()`, `k = k.t()`
    for `k.t_()`, `first = states[0].squeeze(0)` where the write's result is used), or,
    for a write that has no out-of-place form (`q[0] = 0`), writes a copy made just
    before it (`q = q.clone()`). It is unsafe: the split tensor no longer sees the write,
    which is what a loop such as `for row in x: row.clamp_(0)` meant to change.

    ## References
    - [`torch.chunk`](https://docs.pytorch.org/docs/stable/generated/torch.chunk.html)
    - [Autograd mechanics: in-place operations](https://docs.pytorch.org/docs/stable/notes/autograd.html#in-place-operations-with-autograd)
    """

    code = "GML105"
    name = "inplace-write-on-multi-output-view"
    summary = "In-place write to an output of `unbind`/`split`/`chunk` under autograd"
    fix_title = "Write out of place (`q = q * scale`), or `.clone()` the output first"
    fix_applicability = Applicability.UNSAFE
    triggers = ("torch",)
    scope_triggers = WRITES
    VALID = (
        # a forward iterating its input: a list of per-scale outputs, not a tensor unbound row by row
        """
import torch
import torch.nn.functional as F
from torch import nn


class YoloLoss(nn.Module):
    def forward(self, outputs, target, mask):
        loss = 0
        for output in outputs:
            output = output.view(output.shape[0], 3, -1).permute(0, 2, 1)
            output[..., 0] *= mask
            loss = loss + F.mse_loss(output, target)
        return loss


conv = nn.Conv2d(3, 6, 1)
scales = [conv(torch.randn(2, 3, 2, 2)), conv(torch.randn(2, 3, 2, 2))]
YoloLoss()(scales, torch.randn(2, 8, 3), torch.rand(2, 8)).backward()
""",
        # a helper's view of a convolution's whole output, not of one of several
        """
import torch
from torch import nn


def split_heads(x, heads):
    b, c, h, w = x.size()
    return x.view(b, heads, c // heads, h, w)


class AugmentedConv(nn.Module):
    def __init__(self, channels, heads):
        super().__init__()
        self.q, self.kv = nn.Conv2d(channels, channels, 1), nn.Conv2d(channels, 2 * channels, 1)
        self.heads, self.scale = heads, (channels // heads) ** -0.5

    def forward(self, x):
        q = split_heads(self.q(x), self.heads)
        q *= self.scale
        k, v = torch.split(self.kv(x), x.shape[1], dim=1)
        return q.flatten(1, 2) + k + v
""",
        """
import torch.nn as nn

class PairBlock(nn.Module):
    def forward(self, pair):
        first, second = pair
        second.mul_(2)
        return first * second
""",
        """
import torch.nn as nn

class Attention(nn.Module):
    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q * self.scale
        return (q @ k.transpose(-2, -1)).softmax(-1) @ v
""",
        """
import torch

@torch.no_grad()
def denormalise(image, mean, std):
    for channel, m, s in zip(image.unbind(0), mean, std):
        channel.mul_(s).add_(m)
    return image
""",
        """
import torch

def clip_rows(scores):
    for row in scores:
        row.clamp_(min=0)
    return scores

clip_rows(torch.randn(3, 3))
""",
        # autograd runs a Function's forward with grad mode off: nothing raises
        """
import torch


class StackedLinear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        out = torch.empty(4, 3, requires_grad=True)
        top, bottom = torch.split(out, 2, dim=0)
        torch.mm(x[:2].view(2, 5), w.t(), out=top.view(2, 3))
        torch.mm(x[2:].view(2, 5), w.t(), out=bottom.view(2, 3))
        ctx.save_for_backward(x, w)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        return grad @ w, grad.t() @ x


x = torch.randn(4, 5, requires_grad=True)
w = torch.randn(3, 5, requires_grad=True)
StackedLinear.apply(x, w).sum().backward()
print(tuple(x.grad.shape))
""",
        # an `nn.Sequential` of activations holds no parameter: what it returns needs no grad
        """
import torch
from torch import nn

squash = nn.Sequential(nn.Tanh(), nn.Hardtanh())
low, high = squash(torch.randn(4, 6)).chunk(2, dim=-1)
high.clamp_(-0.5, 0.5)
""",
        # the helper's network run without grad: its outputs need none
        """
import torch
from torch import nn


def build_mlp(n, hidden=32):
    return nn.Sequential(nn.Linear(n, hidden), nn.Tanh(), nn.Linear(hidden, 2 * n))


class Policy(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.net = build_mlp(n)

    def sample(self, states):
        with torch.no_grad():  # acting, not learning: no graph
            means, log_stds = self.net(states).chunk(2, dim=-1)
            return means + log_stds.clamp_(-20, 2).exp()


print(Policy(3).sample(torch.randn(4, 3)).shape)
""",
    )
    INVALID = (
        # a forward iterating a tensor it computed: the rows are `unbind`'s views
        Invalid(
            """
import torch
from torch import nn


class Rows(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        scores = self.fc(x)
        for row in scores:
            row.clamp_(min=0)
        return scores


Rows()(torch.randn(3, 4)).sum().backward()
""",
            (14,),
            fixed="""
import torch
from torch import nn


class Rows(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        scores = self.fc(x)
        for row in scores:
            row = row.clamp(min=0)
        return scores


Rows()(torch.randn(3, 4)).sum().backward()
""",
        ),
        # a helper returns a view of the split output it is given: still one of several views
        Invalid(
            """
import torch
from torch import nn


def split_heads(x, heads):
    b, c, h, w = x.size()
    return x.view(b, heads, c // heads, h, w)


class AugmentedConv(nn.Module):
    def __init__(self, channels, heads):
        super().__init__()
        self.qkv = nn.Conv2d(channels, 3 * channels, 1)
        self.heads, self.scale = heads, (channels // heads) ** -0.5

    def forward(self, x):
        q, k, v = torch.split(self.qkv(x), x.shape[1], dim=1)
        q = split_heads(q, self.heads)
        q *= self.scale
        return q.flatten(1, 2) + k + v
""",
            (20,),
            fixed="""
import torch
from torch import nn


def split_heads(x, heads):
    b, c, h, w = x.size()
    return x.view(b, heads, c // heads, h, w)


class AugmentedConv(nn.Module):
    def __init__(self, channels, heads):
        super().__init__()
        self.qkv = nn.Conv2d(channels, 3 * channels, 1)
        self.heads, self.scale = heads, (channels // heads) ** -0.5

    def forward(self, x):
        q, k, v = torch.split(self.qkv(x), x.shape[1], dim=1)
        q = split_heads(q, self.heads)
        q = q * self.scale
        return q.flatten(1, 2) + k + v
""",
        ),
        # a function of the file builds the network `self.net` holds: its output requires grad
        Invalid(
            """
import torch
from torch import nn


def build_mlp(n, hidden=32):
    return nn.Sequential(nn.Linear(n, hidden), nn.Tanh(), nn.Linear(hidden, 2 * n))


class Policy(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.net = build_mlp(n)

    def sample(self, states):
        means, log_stds = self.net(states).chunk(2, dim=-1)
        return means + log_stds.clamp_(-20, 2).exp()


print(Policy(3).sample(torch.randn(4, 3)).shape)
""",
            (17,),
            fixed="""
import torch
from torch import nn


def build_mlp(n, hidden=32):
    return nn.Sequential(nn.Linear(n, hidden), nn.Tanh(), nn.Linear(hidden, 2 * n))


class Policy(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.net = build_mlp(n)

    def sample(self, states):
        means, log_stds = self.net(states).chunk(2, dim=-1)
        return means + log_stds.clamp(-20, 2).exp()


print(Policy(3).sample(torch.randn(4, 3)).shape)
""",
            prints="torch.Size([4, 3])",
        ),
        # the policy's network is an `nn.Sequential` of Linear layers: its output requires grad
        Invalid(
            """
import torch
from torch import nn


class GaussianPolicy(nn.Module):
    def __init__(self, state_dim, action_dim):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(state_dim, 64), nn.Tanh(), nn.Linear(64, 2 * action_dim))

    def sample(self, states):
        means, log_stds = self.net(states).chunk(2, dim=-1)
        log_stds.clamp_(-20, 2)
        return means + log_stds.exp() * torch.randn_like(means)
""",
            (13,),
            fixed="""
import torch
from torch import nn


class GaussianPolicy(nn.Module):
    def __init__(self, state_dim, action_dim):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(state_dim, 64), nn.Tanh(), nn.Linear(64, 2 * action_dim))

    def sample(self, states):
        means, log_stds = self.net(states).chunk(2, dim=-1)
        log_stds = log_stds.clamp(-20, 2)
        return means + log_stds.exp() * torch.randn_like(means)
""",
        ),
        Invalid(
            """
import torch.nn as nn

class StackedCells(nn.Module):
    def forward(self, x, hx):
        states = hx.split(1, dim=0)
        first = states[0].squeeze_(0)
        return x + first
""",
            (7,),
            fixed="""
import torch.nn as nn

class StackedCells(nn.Module):
    def forward(self, x, hx):
        states = hx.split(1, dim=0)
        first = states[0].squeeze(0)
        return x + first
""",
        ),
        Invalid(
            """
import torch

w = torch.randn(3, 3, requires_grad=True)
q, k = (torch.randn(2, 3) @ w).chunk(2, dim=0)
gate = torch.sigmoid_(q)
(gate * k).sum().backward()
""",
            (6,),
            fixed="""
import torch

w = torch.randn(3, 3, requires_grad=True)
q, k = (torch.randn(2, 3) @ w).chunk(2, dim=0)
gate = torch.sigmoid(q)
(gate * k).sum().backward()
""",
        ),
        Invalid(
            """
import torch

w = torch.randn(3, 3, requires_grad=True)
q, k = (torch.randn(2, 3) @ w).chunk(2, dim=0)
torch.sigmoid_(q)
(q * k).sum().backward()
""",
            (6,),
            fixed="""
import torch

w = torch.randn(3, 3, requires_grad=True)
q, k = (torch.randn(2, 3) @ w).chunk(2, dim=0)
q = torch.sigmoid(q)
(q * k).sum().backward()
""",
        ),
        Invalid(
            """
import torch.nn as nn

class Attention(nn.Module):
    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q *= self.scale
        return (q @ k.transpose(-2, -1)).softmax(-1) @ v
""",
            (7,),
            fixed="""
import torch.nn as nn

class Attention(nn.Module):
    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q * self.scale
        return (q @ k.transpose(-2, -1)).softmax(-1) @ v
""",
        ),
        Invalid(
            """
import torch

def step(model, x, opt):
    first, second = model(x).split(4, dim=1)
    first.sigmoid_()
    loss = (first * second).sum()
    loss.backward()
    opt.step()
""",
            (6,),
            fixed="""
import torch

def step(model, x, opt):
    first, second = model(x).split(4, dim=1)
    first = first.sigmoid()
    loss = (first * second).sum()
    loss.backward()
    opt.step()
""",
        ),
        Invalid(
            """
import torch

w = torch.randn(3, 3, requires_grad=True)
scores = torch.randn(3, 3) @ w
for row in scores:
    row.clamp_(min=0)
scores.sum().backward()
""",
            (7,),
            fixed="""
import torch

w = torch.randn(3, 3, requires_grad=True)
scores = torch.randn(3, 3) @ w
for row in scores:
    row = row.clamp(min=0)
scores.sum().backward()
""",
        ),
        # a model of the file returns a tuple; its element sliced over several dimensions requires grad
        Invalid(
            """
import torch
from torch import nn


class LanguageModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(16, 50)

    def forward(self, hidden):
        return (self.head(hidden),)


model = LanguageModel()
outputs = model(torch.randn(2, 3, 16))
logits = outputs[0][:, -1, :]
for row in logits:
    row[0] = -float("inf")
logits.logsumexp(-1).sum().backward()
""",
            (19,),
            fixed="""
import torch
from torch import nn


class LanguageModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(16, 50)

    def forward(self, hidden):
        return (self.head(hidden),)


model = LanguageModel()
outputs = model(torch.randn(2, 3, 16))
logits = outputs[0][:, -1, :]
for row in logits:
    row = row.clone()
    row[0] = -float("inf")
logits.logsumexp(-1).sum().backward()
""",
        ),
        Invalid(
            """
import torch

root = torch.arange(9.0).reshape(3, 3).requires_grad_()
rows = root.clone().unbind()
rows[0].mul_(2)
""",
            (6,),
        ),
        Invalid(
            """
import torch

w = torch.randn(4, 4, requires_grad=True)
q, k = (torch.randn(2, 4) @ w).chunk(2, dim=1)
k.t_()
(q @ k).sum().backward()
""",
            (6,),
            fixed="""
import torch

w = torch.randn(4, 4, requires_grad=True)
q, k = (torch.randn(2, 4) @ w).chunk(2, dim=1)
k = k.t()
(q @ k).sum().backward()
""",
        ),
        # requires-grad set in a helper (`as_input`) and passed two calls down (`overlay` -> `unnormalize`)
        Invalid(
            """
import torch

def as_input(image):
    batch = (image - 0.5).unsqueeze(0)
    batch.requires_grad = True
    return batch

def unnormalize(batch, mean, std):
    shown = batch.clone()
    for plane, m, s in zip(shown[0], mean, std):
        plane.mul_(s).add_(m)
    return shown

def overlay(batch, heat):
    return unnormalize(batch, [0.5] * 3, [0.2] * 3)[0] * heat

x = as_input(torch.rand(3, 4, 4))
print(overlay(x, torch.rand(4, 4)).shape)
""",
            (12,),
            fixed="""
import torch

def as_input(image):
    batch = (image - 0.5).unsqueeze(0)
    batch.requires_grad = True
    return batch

def unnormalize(batch, mean, std):
    shown = batch.clone()
    for plane, m, s in zip(shown[0], mean, std):
        plane = plane.mul(s).add(m)
    return shown

def overlay(batch, heat):
    return unnormalize(batch, [0.5] * 3, [0.2] * 3)[0] * heat

x = as_input(torch.rand(3, 4, 4))
print(overlay(x, torch.rand(4, 4)).shape)
""",
        ),
        # a transform object's `__call__`, given a tensor that requires grad by a function of the file
        Invalid(
            """
import torch


class Denormalize:
    def __init__(self, mean, std):
        self.mean, self.std = mean, std

    def __call__(self, images):
        for plane, m, s in zip(images, self.mean, self.std):
            plane.mul_(s).add_(m)
        return images


denormalize = Denormalize([0.5] * 3, [0.2] * 3)


def attack(image, model):
    image = image.clone().requires_grad_(True)
    shown = denormalize(image * 1.0)
    loss = model(shown.unsqueeze(0)).sum()
    loss.backward()
    return image.grad


print(tuple(attack(torch.rand(3, 4, 4), torch.nn.Conv2d(3, 1, 1)).shape))
""",
            (11,),
            fixed="""
import torch


class Denormalize:
    def __init__(self, mean, std):
        self.mean, self.std = mean, std

    def __call__(self, images):
        for plane, m, s in zip(images, self.mean, self.std):
            plane = plane.mul(s).add(m)
        return images


denormalize = Denormalize([0.5] * 3, [0.2] * 3)


def attack(image, model):
    image = image.clone().requires_grad_(True)
    shown = denormalize(image * 1.0)
    loss = model(shown.unsqueeze(0)).sum()
    loss.backward()
    return image.grad


print(tuple(attack(torch.rand(3, 4, 4), torch.nn.Conv2d(3, 1, 1)).shape))
""",
            prints="(3, 4, 4)",
        ),
        # through a view of the output (`a.view(-1)`): "Output 0 of View is a view ..."
        Invalid(
            """
import torch


def gate(h):
    a, b = h.chunk(2, dim=0)
    flat = a.view(-1)
    flat[flat.abs() < 1e-3] = 1e-3
    return a * torch.sigmoid(b)


x = torch.randn(4, 6, requires_grad=True)
print(gate(x * 1).sum().item() != 0)
""",
            (8,),
            fixed="""
import torch


def gate(h):
    a, b = h.chunk(2, dim=0)
    flat = a.view(-1)
    flat = flat.clone()
    flat[flat.abs() < 1e-3] = 1e-3
    return a * torch.sigmoid(b)


x = torch.randn(4, 6, requires_grad=True)
print(gate(x * 1).sum().item() != 0)
""",
            prints="True",
        ),
    )

    def check(self, ctx: FileContext) -> Iterator[Report]:
        for facts in ctx.semantic.facts:
            if facts.scope.no_grad:
                continue
            for write in facts.autograd_writes:
                output = _multi_view_output(write.writer)
                if output is not None and write.writer.grad >= Grad.MAY and not write.no_grad:
                    yield Report(
                        write.node,
                        f"{write_text(ctx, write)} writes in place to one of several views returned at line "
                        f'{ctx.line(output.node)}: autograd raises "is a view and is being modified '
                        'inplace" when the input requires grad',
                        fix=unshared_write(ctx, write),
                    )


def _multi_view_output(writer: Handle) -> Handle | None:
    """The output of `chunk`/`split`/`unbind` the write reaches, itself or through views of it
    (`a.view(-1)`, `a[0]`: autograd refuses those too, "Output 0 of View is a view ...")."""
    for handle in writer.chain():
        if handle.kind is AliasKind.MULTI_VIEW:
            return handle
        if handle.kind is not AliasKind.VIEW:
            return None
    return None
