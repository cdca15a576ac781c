from collections.abc import Iterator

import libcst as cst

from gpumem_lint.context import FileContext
from gpumem_lint.fixes import Applicability, Fix
from gpumem_lint.rules._clone_fix import clone_at, unshared_write
from gpumem_lint.rules._reporting import write_text
from gpumem_lint.rules.base import Invalid, Report, Rule
from gpumem_lint.semantic.flow import ScopeFacts
from gpumem_lint.semantic.saved import Saving
from gpumem_lint.semantic.values import Grad
from gpumem_lint.semantic.write_triggers import WRITES


class InplaceWriteOnSavedTensor(Rule):
    """
    ## What it does
    Flags an in-place write to a tensor (or a view of it, or its base) that an earlier op
    saved for its backward, before a `backward()` has freed the graph: `x = x.sigmoid();
    x *= mask`, `F.relu(x, inplace=True)` on the output of an op that keeps its output,
    writing the input of a product or convolution that keeps it, an in-place layer of an
    `nn.Sequential` right after an activation that keeps its output
    (`nn.ReLU(), nn.Dropout(p, inplace=True)`), a write to what an `nn.Sequential` returns when
    its last layer keeps its output (`out = self.left(x); out += x` where `self.left` ends in
    `nn.ReLU()`, also where the two arms of an `if` bind Sequentials that both end in it), and an
    optimizer step on a module whose
    call kept its weights (an `nn.Sequential` or a model: the layers after the first keep
    their weights) when a loss computed before the step is backpropagated after it, the
    GAN that steps the discriminator between `d_loss.backward(retain_graph=True)` and
    `g_loss.backward()`, or a loss computed after the step from a tensor computed before it
    (the optimizer may be built in another method: `self.optim = Adam(self.vae.parameters())`
    in `__init__`, or the module be a function's parameter that every caller in the file fills with
    one: `train(critic, Generator())`), and a call of an `nn.Embedding` made with `max_norm`
    (or `F.embedding(..., max_norm=m)`), which rescales the looked-up rows of its weight in place
    (F57), after an op saved that weight (`emb.weight @ W.t()`). What each op keeps is data
    measured from torch ([`saved_for_backward.json`](../gpumem_lint/knowledge/saved_for_backward.json),
    [docs/facts.md](../docs/facts.md) A1–A4): `relu`, `sigmoid`, `tanh`, `exp`, `softmax` keep
    their output; `a * w` and `x @ w` keep each operand for the other one's gradient; `x + y`
    and `x * 2` keep nothing. A parameter the function indexes by a string key
    (`inputs["representation"]`) is a mapping of tensors: `inputs[key] = y` stores an entry and
    writes no tensor. A write to a tensor saved on one arm of a test (`bn = self.bn(x) if
    self.with_bn else x`) through a name bound on the other arm is not one path, and is not
    reported. The input of a `forward` that hands it, or a name bound from it, to
    `torch.from_numpy` is a numpy array, which records no graph (a transform module). A helper
    method that a module's `forward` calls (`self._gate(x)`) is trained when that `forward` returns
    what requires grad, as its own ops are. A tensor that indexes another (`s_pts[idx, :]`) is an
    integer or bool tensor (F58) and never requires grad: what is computed from it alone saves nothing. `d[key] *= m` writes the item stored under `key` when the key is a literal or
    a loop over literal keys binds it (`for key in ["mask"]:`), not the dict's other items.

    ## Why is this bad?
    Autograd stores the tensor, not a copy, and checks its version counter when the
    backward runs: `RuntimeError: one of the variables needed for gradient computation has
    been modified by an inplace operation`. PyTorch's message names only the backward node
    (`SigmoidBackward0`), never the line that wrote; this rule names both lines.

    ## Known problems
    A loop over `range(n)` (or `enumerate(xs)`) exits from its last pass, where the index is
    `n - 1`: an activation skipped there (`if i < n - 1: x = F.relu(x)`) is not what the loop
    leaves in `x`; other tests of the index are taken to go either way.
    A module of a package whose `__init__.py` turns grad off at import (a top-level
    `torch.set_grad_enabled(False)`, as inference servers do) is taken to run without autograd,
    unless it turns grad back on itself (`torch.enable_grad()`).
    Only tensors known to require grad are followed: computed from a Parameter (as the
    class's `__init__` or `torch.nn`'s modules define them), a `requires_grad=True` tensor,
    a module's output, or a module's `forward` input. The rule reports in code that runs a
    backward (calls `backward()`), in a function a caller differentiates (`loss.backward()` on its
    result, or `torch.autograd.functional.jacobian(f, x)`, which calls `f` on tensors that require
    grad: F54) and in a module's `forward` (or the `__call__` a module class defines in its place), unless that `forward` returns
    only tensors that never require grad (the indices of a `topk`, a comparison's mask: F26),
    so no backward can reach the saving op; a forward that hands the graph on otherwise (an
    attribute it sets) is then missed. A module run only for inference without
    `torch.no_grad()` raises nothing. An op whose result is only compared in the same
    statement (`d[d.abs() < eps] = eps`) keeps nothing: its graph is freed with the
    statement (F43). Bound to a name first, it is taken to live until backward. A step, or a
    write after `backward(retain_graph=True)`, is reported only when a later `backward()` runs
    a loss computed through the op that kept the written tensor (followed through tensor ops
    and module calls; a helper's result is not followed, so a loss it computes is missed).
    A function or method of the file is told what its callers' ops kept of the tensors they pass
    it (`criterion(model(x))` with a Softmax last, then `self.smooth(probs)`), a few calls deep,
    and its callers what it returns when every `return` gives what an op kept as its output (a block
    class whose `forward` ends in a ReLU: `out = self.block(x); out += x`);
    `+=` on a parameter whose type the function does not show writes in place when a caller
    passes a tensor. A list of tensors stored into a slice (`feats[1:] = [conv(f) for f in feats[1:]]`)
    is a list's store: a tensor's would convert the list, which raises for tensors of more than one element.
    A parameter that the function gives to `F.one_hot`, or whose `.min()`/`.max()` it gives to `range()`, before
    rebinding it, holds integers (class labels): it never requires grad, so nothing kept of it is reported.

    ## Example
    ```python
    def forward(self, x):
        h = torch.sigmoid(self.fc(x))
        h *= self.mask
        return h
    ```

    ## Use instead
    ```python
    def forward(self, x):
        h = torch.sigmoid(self.fc(x))
        h = h * self.mask
        return h
    ```

    ## Fix safety
    The fix writes out of place (`h = h * m`, `h = h.mul(m)`, a list's item
    `xs[i] = xs[i] + y`), or writes a copy made just before (`p = p.clone()` above
    `p[mask] = 0`). It is unsafe: other aliases of the old tensor no longer see the write,
    and the new tensor costs memory.

    ## References
    - [Autograd mechanics: in-place operations](https://docs.pytorch.org/docs/stable/notes/autograd.html#in-place-operations-with-autograd)
    - [Saved tensors](https://docs.pytorch.org/docs/stable/notes/autograd.html#saved-tensors)
    """

    code = "GML109"
    name = "inplace-write-on-saved-tensor"
    summary = "In-place write to a tensor autograd saved for backward"
    fix_title = "Write out of place (`h = h * m`), or `.clone()` before the op that saves it"
    fix_applicability = Applicability.UNSAFE
    triggers = ("torch",)
    scope_triggers = WRITES
    VALID = (
        # `neighb_inds` indexes `s_pts`, so it is an integer tensor (F58), which never requires grad: its `gather`
        # records no backward and keeps no `row_inds` (KPConv-PyTorch's deformable neighbours)
        """
import torch
import torch.nn as nn


class Neighbors(nn.Module):
    def __init__(self, kernel_points):
        super().__init__()
        self.kernel_points = nn.Parameter(kernel_points)

    def forward(self, s_pts, neighb_inds, k):
        neighbors = s_pts[neighb_inds, :]
        distances = ((neighbors.unsqueeze(2) - self.kernel_points) ** 2).sum(dim=3)
        in_range = (distances < 1.0).sum(dim=2)
        row_bool, row_inds = torch.topk(in_range, k, dim=1)
        new_inds = neighb_inds.gather(1, row_inds)
        row_inds.unsqueeze_(2)
        return new_inds, distances.gather(1, row_inds.expand(-1, -1, distances.size(2)))


model = Neighbors(torch.randn(4, 3))
inds, dist = model(torch.randn(10, 3), torch.randint(0, 10, (6, 5)), 2)
dist.sum().backward()
""",
        # the forward that calls the helper returns an index, which records no graph: no backward reaches the
        # sigmoid the helper writes to
        """
import torch
import torch.nn as nn


class Gate(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n, n))
        self.bias = nn.Parameter(torch.zeros(n))

    def forward(self, x):
        return self._gate(x).argmax(-1)

    def _gate(self, x):
        value = torch.sigmoid(x @ self.weight)
        value += self.bias
        return value
""",
        # `max_norm=None` is the default: the embedding reads its weight and writes nothing
        """
import torch
import torch.nn as nn


class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(3, 5, max_norm=None)
        self.W = nn.Parameter(torch.randn(7, 5))

    def forward(self, idx):
        a = self.embedding.weight @ self.W.t()
        b = self.embedding(idx) @ self.W.t()
        return (a.unsqueeze(0) + b.unsqueeze(1)).sum()


def train(scorer, idx):
    loss = scorer(idx)
    loss.backward()
""",
        # either Sequential ends in a BatchNorm2d, which keeps no output: the dropout may write it in place
        """
import torch
import torch.nn.functional as F
from torch import nn


class ConvUnit(nn.Module):
    def __init__(self, cin, cout, batchnorm=True):
        super().__init__()
        conv = nn.Conv2d(cin, cout, 3, padding=1)
        if batchnorm:
            self.unit = nn.Sequential(conv, nn.ReLU(inplace=True), nn.BatchNorm2d(cout))
        else:
            self.unit = nn.Sequential(conv, nn.BatchNorm2d(cout))

    def forward(self, x):
        return self.unit(x)


class Head(nn.Module):
    def __init__(self, classes):
        super().__init__()
        self.final = ConvUnit(64, 32, False)
        self.dropout = nn.Dropout2d(p=0.1, inplace=True)
        self.classify = nn.Conv2d(32, classes, 1)

    def forward(self, x):
        x = self.final(x)
        x = self.dropout(x)
        return self.classify(x)
""",
        # each pass writes the next list item, another tensor than the one the pass before handed to mse_loss
        """
import torch
import torch.nn.functional as F
from torch import nn


class Heads(nn.Module):
    def __init__(self):
        super().__init__()
        self.convs = nn.ModuleList([nn.Conv2d(3, 4, 1), nn.Conv2d(3, 4, 1)])

    def forward(self, x, target, mask):
        outputs = [conv(x) for conv in self.convs]
        loss = 0
        for output in outputs:
            output[:, 0] *= mask
            loss = loss + F.mse_loss(output, target)
        return loss


Heads()(torch.randn(2, 3, 4, 4), torch.randn(2, 4, 4, 4), torch.rand(2, 4, 4)).backward()
""",
        # class labels (`range()` takes their `min()`): an integer tensor never requires grad, `min()` keeps nothing
        """
import torch.nn.functional as F
from torch import nn


class IgnoringLoss(nn.Module):
    def __init__(self, ignore_index=255):
        super().__init__()
        self.ignore_index = ignore_index

    def forward(self, output, target):
        if self.ignore_index not in range(target.min(), target.max() + 1):
            return F.cross_entropy(output, target)
        target = target.clone()
        target[target == self.ignore_index] = target.min()
        return F.cross_entropy(output, target)
""",
        # a list of tensors stored into a slice is the list's store: the backbone's list, not a tensor
        """
import torch.nn.functional as F
from torch import nn


class PyramidFuse(nn.Module):
    def __init__(self, channels, width):
        super().__init__()
        self.reduce = nn.ModuleList(nn.Conv2d(c, width, 1) for c in channels[1:])

    def forward(self, features):
        features[1:] = [conv(f) for f, conv in zip(features[1:], self.reduce)]
        size = features[1].shape[2:]
        return sum(F.interpolate(f, size) for f in features[1:])
""",
        # the blocks end in a BatchNorm (kept: its input): adding into their outputs is safe
        """
import torch
import torch.nn.functional as F
from torch import nn


class ConvBlock(nn.Module):
    def __init__(self, cin, cout, act=True):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 1)
        self.act = nn.BatchNorm2d(cout) if act else None

    def forward(self, x):
        x = self.conv(x)
        if self.act is not None:
            x = self.act(x)
        return x


class Neck(nn.Module):
    def __init__(self, channels, width):
        super().__init__()
        self.laterals = nn.ModuleList()
        for c in channels:
            self.laterals.append(ConvBlock(c, width))

    def forward(self, feats):
        outs = [conv(feats[i]) for i, conv in enumerate(self.laterals)]
        for i in range(len(outs) - 1, 0, -1):
            outs[i - 1] += F.interpolate(outs[i], size=outs[i - 1].shape[2:])
        return outs


neck = Neck([4, 8], 8)
feats = [torch.randn(1, 4, 8, 8), torch.randn(1, 8, 4, 4)]
sum(o.mean() for o in neck(feats)).backward()
""",
        # the block ends in a BatchNorm, which keeps its input, not its output: the residual add is safe
        """
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(c, c, 3, padding=1), nn.ReLU(), nn.BatchNorm2d(c))

    def forward(self, x):
        return self.body(x)


class Net(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.block = Block(c)

    def forward(self, x):
        out = self.block(x)
        out += x
        return out


Net(4)(torch.randn(1, 4, 8, 8)).sum().backward()
""",
        # no activation after the last layer: the pass the loop exits from has `i == len(self.layers) - 1`
        """
import torch.nn as nn
import torch.nn.functional as F


class ResidualMLP(nn.Module):
    def __init__(self, width, depth):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))

    def forward(self, inputs):
        x = inputs
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < len(self.layers) - 1:
                x = F.relu(x)
        x += inputs
        return x
""",
        # the block's last layer, batch norm, keeps its input, not what it returns
        """
import torch.nn as nn


class ResidualBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.left = nn.Sequential(
            nn.Conv2d(channels, channels, 3, padding=1),
            nn.BatchNorm2d(channels),
            nn.ReLU(inplace=True),
            nn.Conv2d(channels, channels, 3, padding=1),
            nn.BatchNorm2d(channels),
        )

    def forward(self, x):
        out = self.left(x)
        out += x
        return out
""",
        # batch norm saves `linear` only where `with_bn` holds; only where it does not is `bn` that tensor
        """
import torch.nn as nn


class FullyConnected(nn.Module):
    def __init__(self, inp, out, with_bn=True):
        super().__init__()
        self.linear = nn.Linear(inp, out)
        self.bn = nn.BatchNorm1d(out)
        self.relu = nn.ReLU(inplace=True)
        self.with_bn = with_bn

    def forward(self, x):
        linear = self.linear(x)
        bn = self.bn(linear) if self.with_bn else linear
        return self.relu(bn)
""",
        # the same in statements
        """
import torch.nn as nn


class FullyConnected(nn.Module):
    def __init__(self, inp, out, with_bn=True):
        super().__init__()
        self.linear = nn.Linear(inp, out)
        self.bn = nn.BatchNorm1d(out)
        self.relu = nn.ReLU(inplace=True)
        self.with_bn = with_bn

    def forward(self, x):
        linear = self.linear(x)
        if self.with_bn:
            bn = self.bn(linear)
        else:
            bn = linear
        return self.relu(bn)
""",
        # a forward that converts what it computes from its input with `torch.from_numpy` is handed a numpy array
        """
import torch
from torch import nn


class DepthToTensor(nn.Module):
    def __init__(self, max_depth=0.0, scale=1000.0):
        super().__init__()
        self.max_depth = max_depth
        self.scale = scale

    def forward(self, image):
        depth = image / self.scale
        depth = depth.clip(min=0.01)
        if self.max_depth != 0:
            depth = depth.clip(max=self.max_depth)
            depth /= self.max_depth
        else:
            depth /= depth.max()
        depth = torch.from_numpy(depth).unsqueeze(0).repeat(3, 1, 1)
        return depth.to(torch.get_default_dtype())
""",
        # each step's loss comes from a generator call made after the step before
        """
import torch
import torch.nn as nn


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Conv2d(3, 3, 3, padding=1)

    def forward(self, noise):
        return self.body(noise)


def train(critic, generator, real, steps):
    optimizer = torch.optim.Adam(generator.parameters(), lr=1e-3)
    for step in range(steps):
        fake = generator(torch.randn_like(real))
        loss = -critic(fake).mean()
        loss.backward()
        optimizer.step()


train(nn.Conv2d(3, 1, 3), Generator(), torch.randn(1, 3, 8, 8), 3)
""",
        # `for key in ["atom_exists"]:` writes the item under that key, not the indices stored under another
        """
import torch
from torch import nn


class Fold(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(23, 8)

    def forward(self, residues: torch.Tensor, mask: torch.Tensor):
        features = torch.zeros(residues.shape + (8,))
        features += self.embedding(residues)
        out: dict = {"features": features}
        out["residues"] = residues
        out["atom_exists"] = torch.ones(residues.shape + (14,))
        for key in ["atom_exists"]:
            out[key] *= mask.unsqueeze(-1)
        return out
""",
        # `inputs["representation"]`: a mapping of tensors, whose item store replaces an entry, not values
        """
import torch
from torch import nn


class ChargeHead(nn.Module):
    def __init__(self, count_key, output_key):
        super().__init__()
        self.count_key = count_key
        self.output_key = output_key
        self.net = nn.Linear(8, 1)

    def forward(self, inputs):
        features = inputs["representation"]
        counts = inputs[self.count_key]
        charges = self.net(features) / counts.unsqueeze(-1)
        inputs[self.output_key] = charges
        return inputs
""",
        # `mask.squeeze` raises on None: every path that reaches the write took `alphas * mask`
        """
import torch


class Predictor(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = torch.nn.Linear(dim, 1)

    def forward(self, hidden, mask=None, chunk=None, target_length=None):
        alphas = torch.relu(self.proj(hidden) - 0.1)
        if mask is not None:
            alphas = alphas * mask
        if chunk is not None:
            alphas = alphas * chunk
        mask = mask.squeeze(-1)  # raises on None: every path here took the first branch
        if target_length is not None:
            alphas *= (target_length / alphas.sum(-1))[:, None]
        return alphas, mask
""",
        # `self.squeeze` is a convolution named like a Tensor method: the in-place ReLU writes its output
        """
import torch
from torch import nn


class Fire(nn.Module):
    def __init__(self, inplanes, squeeze_planes):
        super().__init__()
        self.squeeze = nn.Conv2d(inplanes, squeeze_planes, kernel_size=1)
        self.squeeze_activation = nn.ReLU(inplace=True)

    def forward(self, x):
        x = self.squeeze_activation(self.squeeze(x))
        return x
""",
        """
import torch
import torch.nn as nn

class GraphConv(nn.Module):
    def forward(self, graph, feat_dst):
        rst = graph.dstdata["h"]
        if self.use_norm:
            degrees = graph.dstdata["deg"]
            norm = torch.pow(degrees, 0.5)
            norm = torch.reshape(norm, norm.shape + (1,) * feat_dst.dim())
            rst = rst * norm
        if self.dst_fc is not None:
            rst += self.dst_fc(feat_dst)
        else:
            rst += self.bias
        return rst
""",
        """
import torch
import torch.nn as nn

class GroupNorm(nn.Module):
    def forward(self, x):
        outs = []
        for i in range(x.size(1)):
            part = x[:, i : i + 1].float()
            std = part.var([2, 3], keepdim=True).add_(1e-5).sqrt_()
            outs.append((part - part.mean([2, 3], keepdim=True)) / std)
        return torch.cat(outs, dim=1)
""",
        """
import torch
import torch.nn as nn

class Head(nn.Module):
    def forward(self, x):
        h = torch.sigmoid(x)
        h @= self.proj
        return h
""",
        """
import torch
import torch.nn as nn

class GraphConv(nn.Module):
    def forward(self, graph, skip):
        rst = graph.dstdata["h"]
        if self.use_norm:
            norm = graph.in_degrees().float().clamp(min=1).pow(-0.5)
            rst = rst * norm
        if self.residual:
            rst += skip
        return rst
""",
        """
import torch

def train(accelerator, model, train_dataloader, epochs):
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    model, train_dataloader, optimizer = accelerator.prepare(model, train_dataloader, optimizer)
    for epoch in range(epochs):
        total_loss = 0
        for batch in train_dataloader:
            loss = model(**batch).loss
            total_loss += loss.detach().float()
            accelerator.backward(loss)
            optimizer.step()
        print(total_loss / len(train_dataloader))
""",
        """
import torch
import torch.nn as nn

stem = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU(inplace=True))
stem(torch.randn(2, 3, 8, 8)).sum().backward()
""",
        """
import torch
import torch.nn as nn

class BlockSelector(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x, local):
        scores = self.proj(x).amax(dim=-1)
        scores.scatter_(-1, local, float("inf"))
        _, indices = scores.topk(2, dim=-1)
        return indices
""",
        """
import torch

w = torch.randn(4, requires_grad=True)
h = torch.sigmoid(w)
h.mul_(2)
print(h)
""",
        """
import torch

w = torch.randn(3, 4, requires_grad=True)
h = w * 1.0
top = h.max(dim=1).values
h.add_(1)
top.sum().backward()
""",
        """
import torch

w = torch.randn(4, requires_grad=True)
total = None
for step in range(3):
    scale = torch.ones(4)
    scale.mul_(2)
    part = w * scale
    total = part if total is None else total + part
total.sum().backward()
""",
        """
import torch

w = torch.randn(4, 4, requires_grad=True)
h = torch.randn(2, 4) @ w
h += 1
h.sum().backward()
""",
        """
import torch

w = torch.randn(4, requires_grad=True)
h = torch.sigmoid(w)
h.sum().backward()
h.mul_(2)
""",
        """
import torch

w = torch.randn(4, requires_grad=True)
h = torch.sigmoid(w)
h = h * 2
h.sum().backward()
""",
        """
import torch
import torch.nn as nn

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 3, padding=1)
        self.bn = nn.BatchNorm2d(3)

    def forward(self, x):
        out = self.bn(self.conv(x))
        out += x
        return torch.relu_(out)

Block()(torch.randn(1, 3, 5, 5)).sum().backward()
""",
        """
import torch

w = torch.randn(4, requires_grad=True)
with torch.no_grad():
    h = torch.sigmoid(w)
h.mul_(2)
(w * h).sum().backward()
""",
        """
import torch

a = torch.randn(4)
w = torch.randn(4, requires_grad=True)
y = w * 2
a.add_(1)
y.sum().backward()
""",
        # `d.abs()` only feeds a comparison, whose result never requires grad: its graph is freed at once
        """
import torch
import torch.nn as nn

class SafeDivisor(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x, eps=1e-2):
        d = self.proj(x)
        d[d.abs() < eps] = eps
        return x / d

SafeDivisor()(torch.randn(4, 8)).sum().backward()
""",
        # after the step the generator's loss is scored again by the new D: a new graph
        """
import torch
from torch import nn

G = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 16))
D = nn.Sequential(nn.Linear(16, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
opt_G = torch.optim.Adam(G.parameters(), lr=2e-4)
opt_D = torch.optim.Adam(D.parameters(), lr=2e-4)
bce = nn.BCEWithLogitsLoss()

for real in [torch.randn(4, 16) for _ in range(3)]:
    fake = G(torch.randn(4, 8))
    d_loss = bce(D(real), torch.ones(4, 1)) + bce(D(fake), torch.zeros(4, 1))
    opt_D.zero_grad()
    d_loss.backward(retain_graph=True)
    opt_D.step()
    g_loss = bce(D(fake), torch.ones(4, 1))  # scored again by the updated D
    opt_G.zero_grad()
    g_loss.backward()
    opt_G.step()
""",
        # a retained graph no later backward runs: stepping after it raises nothing
        """
import torch
from torch import nn

policy = nn.Sequential(nn.Linear(4, 32), nn.Tanh(), nn.Linear(32, 2))
optimizer = torch.optim.SGD(policy.parameters(), lr=0.1)
for states in [torch.randn(8, 4) for _ in range(3)]:
    logits = policy(states)
    loss = logits.logsumexp(-1).mean()
    optimizer.zero_grad()
    loss.backward(retain_graph=True)
    optimizer.step()
    entropy = -(logits.softmax(-1) * logits.log_softmax(-1)).sum(-1).mean().item()
""",
        # the step writes the discriminator only; the loss backpropagated after it never ran through it
        """
import torch
from torch import nn


class Solver:
    def __init__(self):
        self.vae = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 4))
        self.disc = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 2))
        self.optim_vae = torch.optim.Adam(self.vae.parameters(), lr=1e-4)
        self.optim_disc = torch.optim.Adam(self.disc.parameters(), lr=1e-4)

    def train(self, batches):
        for x in batches:
            z = self.vae(x)
            vae_loss = z.pow(2).mean()
            d_loss = self.disc(z.detach()).logsumexp(-1).mean()
            self.optim_disc.zero_grad()
            d_loss.backward(retain_graph=True)
            self.optim_disc.step()  # the disc's weights: no part of the vae's graph
            self.optim_vae.zero_grad()
            vae_loss.backward()
            self.optim_vae.step()


Solver().train([torch.randn(4, 8) for _ in range(2)])
""",
        # the helper's `+=` on what its callers pass: a copy of the saved output, and a float
        """
import torch
from torch import nn


class SmoothedNLL(nn.Module):
    def forward(self, probs, target):
        probs = self.smooth(probs.clone())
        return -(target * probs.log()).mean() + self.total(0.0, probs.mean().item())

    def smooth(self, probs):
        probs += 1e-6
        return probs

    def total(self, running, value):
        running += value
        return running


model = nn.Sequential(nn.Linear(8, 4), nn.Softmax(dim=-1))
criterion = SmoothedNLL()
criterion(model(torch.randn(2, 8)), torch.rand(2, 4)).backward()
""",
    )
    INVALID = (
        # a helper method a module's forward calls is part of its graph: the loss's backward needs the sigmoid's
        # output, which the helper overwrites (torchTS's DCGRUCell._fc)
        Invalid(
            """
import torch
import torch.nn as nn


class Gate(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n, n))
        self.bias = nn.Parameter(torch.zeros(n))

    def forward(self, x):
        return self._gate(x) * x

    def _gate(self, x):
        value = torch.sigmoid(x @ self.weight)
        value += self.bias
        return value
""",
            (17,),
            fixed="""
import torch
import torch.nn as nn


class Gate(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n, n))
        self.bias = nn.Parameter(torch.zeros(n))

    def forward(self, x):
        return self._gate(x) * x

    def _gate(self, x):
        value = torch.sigmoid(x @ self.weight)
        value = value + self.bias
        return value
""",
        ),
        # `max_norm` makes each call of the embedding rescale the rows it looks up in place (F57): the second call
        # overwrites the weight the first matmul saved
        Invalid(
            """
import torch
import torch.nn as nn


class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(3, 5, max_norm=1.0)
        self.W = nn.Parameter(torch.randn(7, 5))

    def forward(self, idx):
        a = self.embedding.weight @ self.W.t()
        b = self.embedding(idx) @ self.W.t()
        return (a.unsqueeze(0) + b.unsqueeze(1)).sum()


def train(scorer, idx):
    loss = scorer(idx)
    loss.backward()
""",
            (14,),
        ),
        Invalid(
            """
import torch
import torch.nn.functional as F


def score(idx, weight, W):
    a = weight @ W.t()
    b = F.embedding(idx, weight, max_norm=1.0) @ W.t()
    return (a.unsqueeze(0) + b.unsqueeze(1)).sum()


weight = torch.randn(3, 5, requires_grad=True)
W = torch.randn(7, 5, requires_grad=True)
score(torch.tensor([1, 2]), weight, W).backward()
""",
            (8,),
        ),
        # both arms bind a Sequential ending in `ReLU(inplace=True)`, which keeps its output: dropout overwrites it
        Invalid(
            """
import torch
import torch.nn.functional as F
from torch import nn


class ConvUnit(nn.Module):
    def __init__(self, cin, cout, batchnorm=True):
        super().__init__()
        conv = nn.Conv2d(cin, cout, 3, padding=1)
        if batchnorm:
            self.unit = nn.Sequential(conv, nn.BatchNorm2d(cout), nn.ReLU(inplace=True))
        else:
            self.unit = nn.Sequential(conv, nn.ReLU(inplace=True))

    def forward(self, x):
        return self.unit(x)


class Head(nn.Module):
    def __init__(self, classes):
        super().__init__()
        self.final = ConvUnit(64, 32, False)
        self.dropout = nn.Dropout2d(p=0.1, inplace=True)
        self.classify = nn.Conv2d(32, classes, 1)

    def forward(self, x):
        x = self.final(x)
        x = self.dropout(x)
        return self.classify(x)
""",
            (29,),
            fixed="""
import torch
import torch.nn.functional as F
from torch import nn


class ConvUnit(nn.Module):
    def __init__(self, cin, cout, batchnorm=True):
        super().__init__()
        conv = nn.Conv2d(cin, cout, 3, padding=1)
        if batchnorm:
            self.unit = nn.Sequential(conv, nn.BatchNorm2d(cout), nn.ReLU(inplace=True))
        else:
            self.unit = nn.Sequential(conv, nn.ReLU(inplace=True))

    def forward(self, x):
        return self.unit(x)


class Head(nn.Module):
    def __init__(self, classes):
        super().__init__()
        self.final = ConvUnit(64, 32, False)
        self.dropout = nn.Dropout2d(p=0.1, inplace=True)
        self.classify = nn.Conv2d(32, classes, 1)

    def forward(self, x):
        x = self.final(x)
        x = self.dropout(x.clone())
        return self.classify(x)
""",
        ),
        # within one pass, the write follows the loss that kept the same item
        Invalid(
            """
import torch
import torch.nn.functional as F
from torch import nn


class Heads(nn.Module):
    def __init__(self):
        super().__init__()
        self.convs = nn.ModuleList([nn.Conv2d(3, 4, 1), nn.Conv2d(3, 4, 1)])

    def forward(self, x, target, mask):
        outputs = [conv(x) for conv in self.convs]
        loss = 0
        for output in outputs:
            loss = loss + F.mse_loss(output, target)
            output[:, 0] *= mask
        return loss


Heads()(torch.randn(2, 3, 4, 4), torch.randn(2, 4, 4, 4), torch.rand(2, 4, 4)).backward()
""",
            (17,),
            fixed="""
import torch
import torch.nn.functional as F
from torch import nn


class Heads(nn.Module):
    def __init__(self):
        super().__init__()
        self.convs = nn.ModuleList([nn.Conv2d(3, 4, 1), nn.Conv2d(3, 4, 1)])

    def forward(self, x, target, mask):
        outputs = [conv(x) for conv in self.convs]
        loss = 0
        for output in outputs:
            loss = loss + F.mse_loss(output, target)
            output = output.clone()
            output[:, 0] *= mask
        return loss


Heads()(torch.randn(2, 3, 4, 4), torch.randn(2, 4, 4, 4), torch.rand(2, 4, 4)).backward()
""",
        ),
        # soft targets, which require grad here: `min()` kept them, and the masked store overwrites them
        Invalid(
            """
import torch
import torch.nn.functional as F


def soft_dice_loss(output, target):
    if (target > 0.3).sum() > 0:
        target[target > 0.3] = target.min()
    probs = F.softmax(output, dim=1)
    return 1 - 2 * (probs * target).sum() / (probs.sum() + target.sum())


model, teacher = torch.nn.Conv2d(3, 4, 1), torch.nn.Conv2d(3, 4, 1)
images = torch.randn(2, 3, 8, 8)
soft_dice_loss(model(images), teacher(images).softmax(1)).backward()
""",
            (8,),
        ),
        # a module list built by `append` of one block class of the file, whose forward may end in a ReLU
        Invalid(
            """
import torch
import torch.nn.functional as F
from torch import nn


class ConvBlock(nn.Module):
    def __init__(self, cin, cout, act=True):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 1)
        self.act = nn.ReLU() if act else None

    def forward(self, x):
        x = self.conv(x)
        if self.act is not None:
            x = self.act(x)
        return x


class Neck(nn.Module):
    def __init__(self, channels, width):
        super().__init__()
        self.laterals = nn.ModuleList()
        for c in channels:
            self.laterals.append(ConvBlock(c, width))

    def forward(self, feats):
        outs = [conv(feats[i]) for i, conv in enumerate(self.laterals)]
        for i in range(len(outs) - 1, 0, -1):
            outs[i - 1] += F.interpolate(outs[i], size=outs[i - 1].shape[2:])
        return outs


neck = Neck([4, 8], 8)
feats = [torch.randn(1, 4, 8, 8), torch.randn(1, 8, 4, 4)]
sum(o.mean() for o in neck(feats)).backward()
""",
            (30,),
            fixed="""
import torch
import torch.nn.functional as F
from torch import nn


class ConvBlock(nn.Module):
    def __init__(self, cin, cout, act=True):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 1)
        self.act = nn.ReLU() if act else None

    def forward(self, x):
        x = self.conv(x)
        if self.act is not None:
            x = self.act(x)
        return x


class Neck(nn.Module):
    def __init__(self, channels, width):
        super().__init__()
        self.laterals = nn.ModuleList()
        for c in channels:
            self.laterals.append(ConvBlock(c, width))

    def forward(self, feats):
        outs = [conv(feats[i]) for i, conv in enumerate(self.laterals)]
        for i in range(len(outs) - 1, 0, -1):
            outs[i - 1] = outs[i - 1] + F.interpolate(outs[i], size=outs[i - 1].shape[2:])
        return outs


neck = Neck([4, 8], 8)
feats = [torch.randn(1, 4, 8, 8), torch.randn(1, 8, 4, 4)]
sum(o.mean() for o in neck(feats)).backward()
""",
        ),
        # a block class of the file ends in a ReLU: what its `forward` returns is what the ReLU kept
        Invalid(
            """
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c), nn.ReLU())

    def forward(self, x):
        return self.body(x)


class Net(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.block = Block(c)

    def forward(self, x):
        out = self.block(x)
        out += x
        return out


Net(4)(torch.randn(1, 4, 8, 8)).sum().backward()
""",
            (22,),
            fixed="""
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c), nn.ReLU())

    def forward(self, x):
        return self.body(x)


class Net(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.block = Block(c)

    def forward(self, x):
        out = self.block(x)
        out = out + x
        return out


Net(4)(torch.randn(1, 4, 8, 8)).sum().backward()
""",
        ),
        # a module list given as a list of one block class holds Blocks, whose output the ReLU kept
        Invalid(
            """
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(c, c, 3, padding=1), nn.ReLU())

    def forward(self, x):
        return self.body(x)


class Net(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.blocks = nn.ModuleList([Block(c), Block(c)])

    def forward(self, x):
        for block in self.blocks:
            x = block(x).unsqueeze_(0).squeeze_(0)
        return x


Net(4)(torch.randn(1, 4, 8, 8)).sum().backward()
""",
            (22,),
            fixed="""
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(c, c, 3, padding=1), nn.ReLU())

    def forward(self, x):
        return self.body(x)


class Net(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.blocks = nn.ModuleList([Block(c), Block(c)])

    def forward(self, x):
        for block in self.blocks:
            x = block(x).unsqueeze(0).squeeze(0)
        return x


Net(4)(torch.randn(1, 4, 8, 8)).sum().backward()
""",
        ),
        # a loss's helper method adds in place to the softmax output its caller passes on: Softmax kept it
        Invalid(
            """
import torch
from torch import nn


class SmoothedNLL(nn.Module):
    def forward(self, probs, target):
        probs = self.smooth(probs)
        return -(target * probs.log()).mean()

    def smooth(self, probs):
        probs += 1e-6
        return probs


model = nn.Sequential(nn.Linear(8, 4), nn.Softmax(dim=-1))
criterion = SmoothedNLL()
criterion(model(torch.randn(2, 8)), torch.rand(2, 4)).backward()
""",
            (12,),
            fixed="""
import torch
from torch import nn


class SmoothedNLL(nn.Module):
    def forward(self, probs, target):
        probs = self.smooth(probs)
        return -(target * probs.log()).mean()

    def smooth(self, probs):
        probs = probs + 1e-6
        return probs


model = nn.Sequential(nn.Linear(8, 4), nn.Softmax(dim=-1))
criterion = SmoothedNLL()
criterion(model(torch.randn(2, 8)), torch.rand(2, 4)).backward()
""",
        ),
        # an nn.Module that defines `__call__` in place of `forward`: calling it runs that, with grad recorded
        Invalid(
            """
import torch
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.relu = nn.ReLU()

    def __call__(self, x):
        att = self.relu(x.sum(1, keepdim=True))
        att[:, :, 0] = 0
        return x * att


layer = nn.Conv1d(2, 2, 1)
Attention()(layer(torch.randn(1, 2, 4))).sum().backward()
print(tuple(layer.weight.grad.shape))
""",
            (13,),
            fixed="""
import torch
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.relu = nn.ReLU()

    def __call__(self, x):
        att = self.relu(x.sum(1, keepdim=True))
        att = att.clone()
        att[:, :, 0] = 0
        return x * att


layer = nn.Conv1d(2, 2, 1)
Attention()(layer(torch.randn(1, 2, 4))).sum().backward()
print(tuple(layer.weight.grad.shape))
""",
            prints="(2, 2, 1)",
        ),
        # `jacobian` calls `fill` on an input that requires grad and differentiates it: softplus kept `b[:, 0]`
        Invalid(
            """
import torch
import torch.nn.functional as F


def fill(a):
    b = torch.zeros_like(a)
    b[:, 0] = a[:, 0]
    b[:, 1] = F.softplus(b[:, 0])
    return b


print(tuple(torch.autograd.functional.jacobian(fill, torch.randn(3, 2)).shape))
""",
            (9,),
            fixed="""
import torch
import torch.nn.functional as F


def fill(a):
    b = torch.zeros_like(a)
    b[:, 0] = a[:, 0]
    b[:, 1] = F.softplus(b[:, 0].clone())
    return b


print(tuple(torch.autograd.functional.jacobian(fill, torch.randn(3, 2)).shape))
""",
            prints="(3, 2, 3, 2)",
        ),
        Invalid(
            # the activation is skipped on the first pass, not the last: the loop exits with relu's output
            """
import torch
import torch.nn as nn
import torch.nn.functional as F


class ResidualMLP(nn.Module):
    def __init__(self, width, depth):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))

    def forward(self, inputs):
        x = inputs
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i > 0:
                x = F.relu(x)
        x += inputs
        return x


model = ResidualMLP(4, 3)
model(torch.randn(2, 4)).sum().backward()
print("ok")
""",
            (18,),
            fixed="""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ResidualMLP(nn.Module):
    def __init__(self, width, depth):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))

    def forward(self, inputs):
        x = inputs
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i > 0:
                x = F.relu(x)
        x = x + inputs
        return x


model = ResidualMLP(4, 3)
model(torch.randn(2, 4)).sum().backward()
print("ok")
""",
            prints="ok",
        ),
        # the block's last layer, a ReLU, keeps what it returns for its backward
        Invalid(
            """
import torch.nn as nn


class ResidualBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.left = nn.Sequential(
            nn.Conv2d(channels, channels, 3, padding=1),
            nn.BatchNorm2d(channels),
            nn.ReLU(inplace=True),
            nn.Conv2d(channels, channels, 3, padding=1),
            nn.BatchNorm2d(channels),
            nn.ReLU(),
        )

    def forward(self, x):
        out = self.left(x)
        out += x
        return out
""",
            (19,),
            fixed="""
import torch.nn as nn


class ResidualBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.left = nn.Sequential(
            nn.Conv2d(channels, channels, 3, padding=1),
            nn.BatchNorm2d(channels),
            nn.ReLU(inplace=True),
            nn.Conv2d(channels, channels, 3, padding=1),
            nn.BatchNorm2d(channels),
            nn.ReLU(),
        )

    def forward(self, x):
        out = self.left(x)
        out = out + x
        return out
""",
        ),
        # the in-place layer writes `linear` itself, which batch norm saved where `use_bn` holds
        Invalid(
            """
import torch.nn as nn


class FullyConnected(nn.Module):
    def __init__(self, inp, out):
        super().__init__()
        self.linear = nn.Linear(inp, out)
        self.bn = nn.BatchNorm1d(out)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x, use_bn):
        linear = self.linear(x)
        bn = self.bn(linear) if use_bn else linear
        self.relu(linear)
        return bn
""",
            (15,),
            fixed="""
import torch.nn as nn


class FullyConnected(nn.Module):
    def __init__(self, inp, out):
        super().__init__()
        self.linear = nn.Linear(inp, out)
        self.bn = nn.BatchNorm1d(out)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x, use_bn):
        linear = self.linear(x)
        bn = self.bn(linear) if use_bn else linear
        self.relu(linear.clone())
        return bn
""",
        ),
        # `torch.from_numpy` converts other data here: the input is still a module's input tensor
        Invalid(
            """
import numpy as np
import torch
from torch import nn


class Scaled(nn.Module):
    def forward(self, x):
        weights = torch.from_numpy(np.ones(4, dtype=np.float32))
        y = torch.sigmoid(x)
        y *= weights
        return y
""",
            (11,),
            fixed="""
import numpy as np
import torch
from torch import nn


class Scaled(nn.Module):
    def forward(self, x):
        weights = torch.from_numpy(np.ones(4, dtype=np.float32))
        y = torch.sigmoid(x)
        y = y * weights
        return y
""",
        ),
        # the same module on tensors: the division that follows keeps `depth`, then writes it
        Invalid(
            """
import torch
from torch import nn


class DepthToTensor(nn.Module):
    def __init__(self, max_depth=0.0, scale=1000.0):
        super().__init__()
        self.max_depth = max_depth
        self.scale = scale

    def forward(self, image):
        depth = image / self.scale
        depth = depth.clip(min=0.01)
        if self.max_depth != 0:
            depth = depth.clip(max=self.max_depth)
            depth /= self.max_depth
        else:
            depth /= depth.max()
        depth = depth.unsqueeze(0).repeat(3, 1, 1)
        return depth.to(torch.get_default_dtype())
""",
            (19,),
            fixed="""
import torch
from torch import nn


class DepthToTensor(nn.Module):
    def __init__(self, max_depth=0.0, scale=1000.0):
        super().__init__()
        self.max_depth = max_depth
        self.scale = scale

    def forward(self, image):
        depth = image / self.scale
        depth = depth.clip(min=0.01)
        if self.max_depth != 0:
            depth = depth.clip(max=self.max_depth)
            depth /= self.max_depth
        else:
            depth = depth / depth.max()
        depth = depth.unsqueeze(0).repeat(3, 1, 1)
        return depth.to(torch.get_default_dtype())
""",
        ),
        # the caller passes a module class of the file: the step writes the weights `fake`'s graph kept
        Invalid(
            """
import torch
import torch.nn as nn


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Conv2d(3, 3, 3, padding=1)

    def forward(self, noise):
        return self.body(noise)


def train(critic, generator, real, steps):
    optimizer = torch.optim.Adam(generator.parameters(), lr=1e-3)
    fake = generator(torch.randn_like(real))
    for step in range(steps):
        loss = -critic(fake).mean()
        loss.backward(retain_graph=True)
        optimizer.step()


train(nn.Conv2d(3, 1, 3), Generator(), torch.randn(1, 3, 8, 8), 3)
""",
            (21,),
        ),
        # the keys now include the one the embedding's indices are stored under
        Invalid(
            """
import torch
from torch import nn


class Fold(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(23, 8)

    def forward(self, residues: torch.Tensor, mask: torch.Tensor):
        features = torch.zeros(residues.shape + (8,))
        features += self.embedding(residues)
        out: dict = {"features": features}
        out["residues"] = residues
        out["atom_exists"] = torch.ones(residues.shape + (14,))
        for key in ["residues", "atom_exists"]:
            out[key] *= mask.unsqueeze(-1)
        return out
""",
            (18,),
            fixed="""
import torch
from torch import nn


class Fold(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(23, 8)

    def forward(self, residues: torch.Tensor, mask: torch.Tensor):
        features = torch.zeros(residues.shape + (8,))
        features += self.embedding(residues)
        out: dict = {"features": features}
        out["residues"] = residues
        out["atom_exists"] = torch.ones(residues.shape + (14,))
        for key in ["residues", "atom_exists"]:
            out[key] = out[key] * mask.unsqueeze(-1)
        return out
""",
        ),
        # the counts are a tensor of this forward's own, and the write changes what the division saved
        Invalid(
            """
import torch
from torch import nn


class ChargeHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(8, 1)

    def forward(self, inputs):
        features = inputs["representation"]
        counts = features.new_ones(features.shape[0])
        charges = self.net(features) / counts.unsqueeze(-1)
        counts[0] = 2
        return charges
""",
            (15,),
            fixed="""
import torch
from torch import nn


class ChargeHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(8, 1)

    def forward(self, inputs):
        features = inputs["representation"]
        counts = features.new_ones(features.shape[0])
        charges = self.net(features) / counts.unsqueeze(-1)
        counts = counts.clone()
        counts[0] = 2
        return charges
""",
        ),
        # the None path goes on, holding relu's output, which the write overwrites
        Invalid(
            """
import torch


class Predictor(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = torch.nn.Linear(dim, 1)

    def forward(self, hidden, mask=None, target_length=None):
        alphas = torch.relu(self.proj(hidden) - 0.1)
        if mask is not None:
            alphas = alphas * mask
        mask = mask.squeeze(-1) if mask is not None else None  # the unmasked path goes on
        if target_length is not None:
            alphas *= (target_length / alphas.sum(-1))[:, None]
        return alphas, mask
""",
            (16,),
            fixed="""
import torch


class Predictor(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = torch.nn.Linear(dim, 1)

    def forward(self, hidden, mask=None, target_length=None):
        alphas = torch.relu(self.proj(hidden) - 0.1)
        if mask is not None:
            alphas = alphas * mask
        mask = mask.squeeze(-1) if mask is not None else None  # the unmasked path goes on
        if target_length is not None:
            alphas = alphas * (target_length / alphas.sum(-1))[:, None]
        return alphas, mask
""",
        ),
        # the generator's loss, scored by D before D's step, backpropagates through D's old weights
        Invalid(
            """
import torch
from torch import nn

G = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 16))
D = nn.Sequential(nn.Linear(16, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
opt_G = torch.optim.Adam(G.parameters(), lr=2e-4)
opt_D = torch.optim.Adam(D.parameters(), lr=2e-4)

for real in [torch.randn(4, 16) for _ in range(3)]:
    fake = G(torch.randn(4, 8))
    p_real, p_fake = D(real).sigmoid(), D(fake).sigmoid()
    d_loss = -(p_real.log() + (1 - p_fake).log()).mean()
    g_loss = (1 - p_fake).log().mean()
    opt_D.zero_grad()
    d_loss.backward(retain_graph=True)
    opt_D.step()
    opt_G.zero_grad()
    g_loss.backward()
    opt_G.step()
""",
            (17,),
        ),
        # the optimizer `__init__` built steps the vae; `d_loss`, computed after it from `d_z`, runs the old graph
        Invalid(
            """
import torch
from torch import nn


class Solver:
    def __init__(self):
        self.vae = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 4))
        self.disc = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 2))
        self.optim_vae = torch.optim.Adam(self.vae.parameters(), lr=1e-4)
        self.optim_disc = torch.optim.Adam(self.disc.parameters(), lr=1e-4)

    def train(self, batches):
        for x in batches:
            z = self.vae(x)
            d_z = self.disc(z)
            vae_loss = z.pow(2).mean() + d_z.mean()
            self.optim_vae.zero_grad()
            vae_loss.backward(retain_graph=True)
            self.optim_vae.step()
            d_loss = d_z.logsumexp(-1).mean()  # after the step, through the vae's graph
            self.optim_disc.zero_grad()
            d_loss.backward()
            self.optim_disc.step()


Solver().train([torch.randn(4, 8) for _ in range(2)])
""",
            (20,),
        ),
        # ... but named and used in the loss, `d.abs()` keeps `d` until backward
        Invalid(
            """
import torch
import torch.nn as nn

class SafeDivisor(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x, eps=1e-2):
        d = self.proj(x)
        size = d.abs()
        d[size < eps] = eps
        return x / d + size

SafeDivisor()(torch.randn(4, 8)).sum().backward()
""",
            (13,),
            fixed="""
import torch
import torch.nn as nn

class SafeDivisor(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x, eps=1e-2):
        d = self.proj(x)
        size = d.abs()
        d = d.clone()
        d[size < eps] = eps
        return x / d + size

SafeDivisor()(torch.randn(4, 8)).sum().backward()
""",
        ),
        Invalid(
            """
import torch
import torch.nn as nn

class Gate(nn.Module):
    def forward(self, x):
        h = torch.relu(x)
        keep = h
        h = h * 2
        keep += 1
        return h + keep

Gate()(torch.randn(4, requires_grad=True)).sum().backward()
""",
            (10,),
            fixed="""
import torch
import torch.nn as nn

class Gate(nn.Module):
    def forward(self, x):
        h = torch.relu(x)
        keep = h
        h = h * 2
        keep = keep + 1
        return h + keep

Gate()(torch.randn(4, requires_grad=True)).sum().backward()
""",
        ),
        Invalid(
            """
import torch
import torch.nn as nn

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 3, padding=1)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        out = self.relu(self.conv(x))
        out += x
        return out

Block()(torch.randn(1, 4, 8, 8)).sum().backward()
""",
            (13,),
            fixed="""
import torch
import torch.nn as nn

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 3, padding=1)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        out = self.relu(self.conv(x))
        out = out + x
        return out

Block()(torch.randn(1, 4, 8, 8)).sum().backward()
""",
        ),
        Invalid(
            """
import torch
import torch.nn as nn
import torch.nn.functional as F

class Router(nn.Module):
    def __init__(self, d, experts, k):
        super().__init__()
        self.gate = nn.Linear(d, experts)
        self.k = k

    def forward(self, x):
        scores, indices = self.gate(x).topk(self.k, dim=-1)
        weights = F.softmax(scores, dim=-1)
        weights /= weights.sum(dim=-1, keepdim=True)
        return weights, indices

weights, _ = Router(4, 8, 2)(torch.randn(3, 4))
(weights * torch.randn(3, 2)).sum().backward()
""",
            (15,),
            fixed="""
import torch
import torch.nn as nn
import torch.nn.functional as F

class Router(nn.Module):
    def __init__(self, d, experts, k):
        super().__init__()
        self.gate = nn.Linear(d, experts)
        self.k = k

    def forward(self, x):
        scores, indices = self.gate(x).topk(self.k, dim=-1)
        weights = F.softmax(scores, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        return weights, indices

weights, _ = Router(4, 8, 2)(torch.randn(3, 4))
(weights * torch.randn(3, 2)).sum().backward()
""",
        ),
        Invalid(
            """
import torch
import torch.nn as nn

class Classifier(nn.Module):
    def __init__(self, d, classes, dropout):
        super().__init__()
        self.main = nn.Sequential(
            nn.Linear(d, 2 * d),
            nn.ReLU(),
            nn.Dropout(dropout, inplace=True),
            nn.Linear(2 * d, classes),
        )

    def forward(self, x):
        return self.main(x)

Classifier(8, 2, 0.5)(torch.randn(4, 8)).sum().backward()
""",
            (11,),
            fixed="""
import torch
import torch.nn as nn

class Classifier(nn.Module):
    def __init__(self, d, classes, dropout):
        super().__init__()
        self.main = nn.Sequential(
            nn.Linear(d, 2 * d),
            nn.ReLU(),
            nn.Dropout(dropout),
            nn.Linear(2 * d, classes),
        )

    def forward(self, x):
        return self.main(x)

Classifier(8, 2, 0.5)(torch.randn(4, 8)).sum().backward()
""",
        ),
        Invalid(
            """
import torch
import torch.nn as nn

class Head(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)
        self.norm = nn.Softmax(dim=-1)

    def forward(self, x, bias):
        probs = self.norm(self.fc(x))
        probs += bias
        return probs

head = Head(4)
head(torch.randn(2, 4), torch.ones(4)).sum().backward()
""",
            (13,),
            fixed="""
import torch
import torch.nn as nn

class Head(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)
        self.norm = nn.Softmax(dim=-1)

    def forward(self, x, bias):
        probs = self.norm(self.fc(x))
        probs = probs + bias
        return probs

head = Head(4)
head(torch.randn(2, 4), torch.ones(4)).sum().backward()
""",
        ),
        Invalid(
            """
import torch

w = torch.randn(4, 4, requires_grad=True)
h = torch.randn(2, 4)
h = torch.sigmoid(h @ w)
h *= 2
h.sum().backward()
""",
            (7,),
            fixed="""
import torch

w = torch.randn(4, 4, requires_grad=True)
h = torch.randn(2, 4)
h = torch.sigmoid(h @ w)
h = h * 2
h.sum().backward()
""",
        ),
        Invalid(
            """
import torch
import torch.nn as nn

class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        y = torch.exp(self.fc(x))
        y.div_(y.sum())
        return y

Head()(torch.randn(2, 4)).sum().backward()
""",
            (12,),
            fixed="""
import torch
import torch.nn as nn

class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        y = torch.exp(self.fc(x))
        y = y.div(y.sum())
        return y

Head()(torch.randn(2, 4)).sum().backward()
""",
        ),
        Invalid(
            """
import torch

a = torch.randn(4)
w = torch.randn(4, requires_grad=True)
y = a * w
a.add_(1)
y.sum().backward()
""",
            (7,),
            fixed="""
import torch

a = torch.randn(4)
w = torch.randn(4, requires_grad=True)
y = a * w
a = a.add(1)
y.sum().backward()
""",
        ),
        Invalid(
            """
import torch
import torch.nn as nn
import torch.nn.functional as F

class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.convs = nn.ModuleList([nn.Conv2d(3, 4, 1), nn.Conv2d(3, 4, 1)])

    def forward(self, feats):
        laterals = [F.relu(conv(f)) for conv, f in zip(self.convs, feats)]
        laterals[0] += F.interpolate(laterals[1], size=laterals[0].shape[2:])
        return laterals[0]

Head()([torch.randn(1, 3, 8, 8), torch.randn(1, 3, 4, 4)]).sum().backward()
""",
            (13,),
            fixed="""
import torch
import torch.nn as nn
import torch.nn.functional as F

class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.convs = nn.ModuleList([nn.Conv2d(3, 4, 1), nn.Conv2d(3, 4, 1)])

    def forward(self, feats):
        laterals = [F.relu(conv(f)) for conv, f in zip(self.convs, feats)]
        laterals[0] = laterals[0] + F.interpolate(laterals[1], size=laterals[0].shape[2:])
        return laterals[0]

Head()([torch.randn(1, 3, 8, 8), torch.randn(1, 3, 4, 4)]).sum().backward()
""",
        ),
        Invalid(
            """
import torch
import torch.nn as nn

def flipped_probabilities(logits, target):
    prob = logits.sigmoid()
    prob[target == 0] = 1 - prob[target == 0]
    return -(prob.clamp(min=1e-6).log()).mean()

model = nn.Linear(4, 3)
loss = flipped_probabilities(model(torch.randn(2, 4)), torch.tensor([[1, 0, 1], [0, 0, 1]]))
loss.backward()
""",
            (7,),
            fixed="""
import torch
import torch.nn as nn

def flipped_probabilities(logits, target):
    prob = logits.sigmoid()
    prob = prob.clone()
    prob[target == 0] = 1 - prob[target == 0]
    return -(prob.clamp(min=1e-6).log()).mean()

model = nn.Linear(4, 3)
loss = flipped_probabilities(model(torch.randn(2, 4)), torch.tensor([[1, 0, 1], [0, 0, 1]]))
loss.backward()
""",
        ),
    )

    def check(self, ctx: FileContext) -> Iterator[Report]:
        for facts in ctx.semantic.facts:
            runs_backward = _runs_backward(facts)
            reported = set()
            for saved in sorted(facts.saved_writes, key=lambda s: ctx.line(s.saving.node)):
                if not (runs_backward or saved.layers and _builds_a_module(facts)):
                    continue
                write = saved.write
                if id(write.node) in reported:
                    continue
                reported.add(id(write.node))
                kept = _kept_text(saved.saving.item)
                yield Report(
                    write.node,
                    f"{write_text(ctx, write)} overwrites a tensor `{_op_text(ctx, saved.saving)}` at line "
                    f"{ctx.line(saved.saving.node)} saved for backward ({kept}): `backward()` raises "
                    '"modified by an inplace operation"',
                    fix=None if write.module else _copy(ctx, write, saved.saving),  # a step: reorder by hand
                )


def _copy(ctx: FileContext, write, saving: Saving) -> Fix | None:
    """A copy written before the write, unless the op that saves the tensor is in the same statement
    (`b[:, 1] = F.softplus(b[:, 0])`): a copy made first is what the op saves, so the op's one argument
    is copied instead (`F.softplus(b[:, 0].clone())`)."""
    if ctx.line(saving.node) != ctx.line(write.node) or not write.op.startswith("[]"):
        return unshared_write(ctx, write)  # `x /= x.max()` -> `x = x / x.max()`: no write at all
    node = saving.node
    if saving.item.startswith("output") or not isinstance(node, cst.Call) or len(node.args) != 1:
        return None
    argument = node.args[0]
    return None if argument.keyword or argument.star else clone_at(ctx, argument.value)


def _kept_text(item: str) -> str:
    if item.startswith("output"):
        return "its output"
    return "its layers' weights" if item == "parameters" else f"its `{item}`"


def _op_text(ctx: FileContext, saving: Saving) -> str:
    """The op as the user spelled it: `F.softmax`, `self.fc`, `*`."""
    if not isinstance(saving.node, cst.Call):
        return saving.op
    func = saving.node.func
    if isinstance(func, cst.Attribute) and not isinstance(func.value, (cst.Name, cst.Attribute)):
        return f".{func.attr.value}()"  # `self.encoder(x).exp()` -> `.exp()`
    return ctx.code(func)


def _builds_a_module(facts: ScopeFacts) -> bool:
    """A method of an `nn.Module` class (its `__init__` builds the layers its `forward` trains)."""
    scope = facts.scope
    return scope.is_method and scope.classes is not None and scope.classes.is_module_class(scope.class_name)


def _runs_backward(facts: ScopeFacts) -> bool:
    """Code whose graph is differentiated: it calls `backward()`, a caller that does hands it tensors that
    require grad, or it is a module's `forward` (or the `__call__` it defines in its place) that returns
    something differentiable (not only the
    indices of a `topk` or a mask: no backward reaches the ops behind those)."""
    scope = facts.scope
    if scope.trains or facts.called_by_training:
        return True
    return (
        scope.is_forward
        and scope.classes is not None
        and scope.classes.is_module_class(scope.class_name)
        and facts.returns_grad is not Grad.NO
    )
