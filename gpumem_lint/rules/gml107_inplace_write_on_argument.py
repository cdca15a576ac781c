from collections.abc import Iterator

import libcst as cst

from gpumem_lint.context import FileContext
from gpumem_lint.diagnostics import Severity
from gpumem_lint.fixes import Applicability
from gpumem_lint.knowledge import knowledge
from gpumem_lint.knowledge.heuristics import heuristics
from gpumem_lint.rules._clone_fix import unshared_write
from gpumem_lint.rules._reporting import write_text
from gpumem_lint.rules.base import Invalid, Report, Rule
from gpumem_lint.semantic.flow import ScopeFacts
from gpumem_lint.semantic.literals import announces_inplace, called_name
from gpumem_lint.semantic.model import called_key
from gpumem_lint.semantic.scopes import Scope
from gpumem_lint.semantic.values import Write
from gpumem_lint.semantic.write_triggers import WRITES


class InplaceWriteOnArgument(Rule):
    """
    ## What it does
    Flags an in-place write to a tensor the caller passed in — `x += self.bias`,
    `x.relu_()`, `F.relu(x, inplace=True)`, an `nn.ReLU(inplace=True)` applied to the
    input (also as the first layer of an `nn.Sequential` called on it, or the first put in the list it is built from), `x[mask] = 0` — in a module's `forward`, or in a plain function (or the
    `__call__` of a class, such as a transform: `norm(x)` and `Normalize(m, s)(x)` run `Normalize.__call__`) that
    returns a value and that a caller in the same module passes a tensor it reads again
    afterwards, when nothing says that mutating the argument is the function's job. A function that
    writes its argument and returns nothing (`check_audio(clip)`), or only a constant
    (`return False`, a status flag), is an in-place procedure: its callers read the argument
    for its result. So is one that returns the argument it wrote, where the caller drops the
    result (`paste(frame, face)` alone on its line): the call is made for its write. A `forward`
    whose write is its result is an in-place layer itself, as `nn.ReLU(inplace=True)` is: one that
    applies an in-place layer to its input (`return self.act(x)`), returns the tensor it wrote
    (`hidden += residual; return norm(hidden), hidden`, a fused add-norm) or returns nothing (a
    rotary embedding rotating `query` in place). It is reported only where it reads its input again
    through another name, or where a caller in the module reads the tensor again after the call, or the
    result it holds of an earlier call (`first = net(x)`, then `second = net(x)` shifts `first` too: a
    forward that returns its input hands the caller its `x`); reading the call's own result is not. A
    write such as `x[2:5] += 1` to a parameter of unseen type counts where such a caller passes a tensor.
    An argument the caller made with numpy (`np.array(...)`, `a.astype(t)`, or a function of the
    module whose every `return` gives such an array) is an array of its own, no tensor's memory,
    and its caller is not counted; one that is a tensor's memory (`t.numpy()`) is. Under a test that shows a
    container (`isinstance(batch, dict)`, `type(batch) == dict`, `type(batch) in (list, tuple)`), a store
    into the parameter replaces one of its items: no tensor is written.

    ## Why is this bad?
    The caller still holds the tensor. A residual connection (`block(x) + x`), a logged
    input, or a second model fed the same batch then sees modified values, and if the
    argument is a leaf that requires grad autograd raises `a leaf Variable that requires
    grad is being used in an in-place operation`. Nothing warns otherwise.

    Mutation is taken as intended, and not reported, in functions (or classes) whose name ends with
    `_` or says `init`/`reset`/`update`/`step`/`inplace`, whose docstring says "in place",
    under `torch.no_grad()`, through `.data`/`.detach()`, via `nn.init`, for
    parameters named like outputs (`out`, `buf`, `dst`, `*_out`), for an optional
    parameter (default `None`) that the function fills and returns, and for a parameter it
    overwrites whole (`buf.copy_(x)`, `out=buf`) before reading its values, or writes into and
    never reads (`record[:, i] = ids`): an output buffer. A loop that hands the function one row
    per pass (`normalise(batch[i, :n])`) and reads `batch[i, :n]` again only in a later pass reads
    another row: each pass's `i` selects elements apart. A plain
    function's write is reported only at a call that passes that parameter: one left at its
    default (`scratch=None`, allocated by the function) is memory no caller sees. Methods other than
    `forward` and `__call__` are not checked: updating state is what they are for.

    ## Known problems
    Whether mutation is a function's job is partly read from its spelling, in
    [`heuristics.toml`](../gpumem_lint/knowledge/heuristics.toml): words of its name
    (`mutating_function_words`: `init`, `reset`, `update`, `fill`, `clip`, ...), parameter
    names that are outputs by contract (`output_parameters`: `out`, `buf`, `dst`,
    `running_*`) and a docstring that says "in place" (`documented_mutation`). A function
    spelled otherwise whose callers rely on its mutation is reported, unless they pass a
    buffer to be filled: memory made for the call (`torch.zeros(n)`, `x.clone()`) whose values
    it has not read before the call, or overwritten whole before it (`buf.zero_()`, `buf.copy_(src)`).

    ## Example
    ```python
    class PositionalEncoding(nn.Module):
        def forward(self, x):
            x += self.pe[: x.size(0)]
            return self.dropout(x)
    ```

    ## Use instead
    ```python
    class PositionalEncoding(nn.Module):
        def forward(self, x):
            x = x + self.pe[: x.size(0)]
            return self.dropout(x)
    ```

    ## Fix safety
    The fix writes out of place (`x = x + b`, `return x.add(n).clamp(0, 1)`,
    `F.relu(x)` for `F.relu(x, inplace=True)`), or writes a copy made just before
    (`x = x.clone()` above `x[mask] = 0`). It is unsafe: a caller that relied on the
    change no longer sees it, and the new tensor costs memory. A module made with
    `inplace=True` applied to the argument gets a copy of it (`self.act(x)` ->
    `self.act(x.clone())`): the layer stays in place where it is applied to the block's
    own tensors.

    ## References
    - [Autograd mechanics: in-place operations](https://docs.pytorch.org/docs/stable/notes/autograd.html#in-place-operations-with-autograd)
    """

    code = "GML107"
    name = "inplace-write-on-argument"
    severity = Severity.WARNING
    summary = "In-place write to a tensor the caller passed in"
    fix_title = (
        "Write out of place (`x = x + b`), or `x = x.clone()` first; name the function `*_` if mutation is its job"
    )
    fix_applicability = Applicability.UNSAFE
    triggers = ("torch",)
    scope_triggers = WRITES
    VALID = (
        # `rows[i] = v` on a list the caller passes stores an item: no tensor is written
        """
import torch


class Mark:
    def __init__(self, value):
        self.value = value

    def __call__(self, rows, i):
        rows[i] = self.value
        return rows


def build(n):
    rows = [torch.zeros(3) for _ in range(n)]
    marked = Mark(None)(rows, 0)
    return rows, marked
""",
        # `/=` on a float rebinds the name: the caller's `total` keeps its value
        """
import torch


def scale(total):
    total /= 255
    return total


def show(images):
    total = float(images.sum())
    scaled = scale(total)
    return total, scaled * torch.ones(3)
""",
        # the object is made and called at once, and the caller returns its result without reading `x` again
        """
import torch


class Scale:
    def __call__(self, t):
        t.mul_(2)
        return t + 1


def show(x):
    x = torch.as_tensor(x)
    return Scale()(x)
""",
        # each pass normalises another row: `maps[i + 1]` moves with `i`, and no pass reads a row it wrote
        """
import torch


def normalise(image, attention):
    attention -= attention.min()
    attention /= attention.max()
    return attention * image


def show(image, tokens):
    maps = torch.rand(len(tokens) + 1, 16)
    for i, token in enumerate(tokens):
        print(token, normalise(image, maps[i + 1]).sum())
""",
        # `astype`, which torch tensors lack: the function is given a numpy array
        """
import numpy as np
import torch


def crop(image, box):
    box[[0, 2]] = np.clip(box[[0, 2]], 0, image.shape[-1])
    box = box.round().astype(np.int64)
    return image[..., box[1] : box[3], box[0] : box[2]]


def crops(mask, image, box):
    return crop(mask, box), crop(image, box), torch.as_tensor(box)
""",
        # the caller's box is a numpy array of its own (what `astype` made): no tensor's memory
        """
import numpy as np
import torch


def widen(box):
    box = box.astype(np.float32)
    box[2:] += 1
    return box


def crop(image, box):
    box[[0, 2]] = np.clip(box[[0, 2]], 0, image.shape[-1])
    box = box.round().astype(np.int64)
    return image[..., box[1] : box[3], box[0] : box[2]]


def crops(mask, image):
    box = widen(np.array([1, 2, 30, 40]))
    return crop(mask, box), crop(image, box), torch.from_numpy(box)
""",
        """
import torch.nn as nn

class Activation(nn.Module):
    def __init__(self, slope):
        super().__init__()
        self.func = nn.LeakyReLU(slope, inplace=True)

    def forward(self, x):
        return self.func(x)
""",
        """
import torch
import torch.nn as nn

class AddNorm(nn.Module):
    def forward(self, hidden, residual=None):
        if residual is not None:
            hidden += residual
        residual = hidden
        variance = hidden.to(torch.float32).pow(2).mean(-1, keepdim=True)
        return self.weight * hidden * torch.rsqrt(variance + 1e-6), residual

class DecoderLayer(nn.Module):
    def forward(self, hidden, residual):
        normed, residual = self.input_norm(hidden, residual)
        return self.mlp(normed), residual
""",
        """
import torch

def mask_scores(scores, mask):
    scores.masked_fill_(mask, -10000.0)
    return scores

def masked_softmax(scores, mask=None):
    scaled = mask_scores(scores, mask) if mask is not None else scores * 0.125
    return torch.softmax(scaled, dim=-1)
""",
        """
import torch

def mask_scores(scores, mask):
    scores.masked_fill_(mask, -10000.0)
    return scores

def scaled_masked_softmax(scores, mask, scale):
    scores = scores * scale
    masked = mask_scores(scores, mask) if mask is not None else scores
    return torch.softmax(masked, dim=-1)
""",
        """
import torch.nn as nn

class LoRAAdapter(nn.Module):
    def forward(self, x, base_output):
        columns = base_output.narrow(-1, self.start, self.width)
        columns.add_(self.up(self.down(x)) * self.scaling)
        return base_output
""",
        """
import torch
import torch.nn as nn

class RotaryEmbedding(nn.Module):
    def forward(self, query, key, cos, sin):
        rotated_query = torch.cat((-query[..., 1::2], query[..., ::2]), dim=-1)
        rotated_key = torch.cat((-key[..., 1::2], key[..., ::2]), dim=-1)
        query.mul_(cos).addcmul_(rotated_query, sin)
        key.mul_(cos).addcmul_(rotated_key, sin)
""",
        """
import torch
from tensordict import TensorDict

def attach_action(batch: TensorDict, actor) -> TensorDict:
    batch[("agents", "action")] = actor(batch.clone())
    return batch

def rollout(actor, loss):
    batch = TensorDict({"obs": torch.randn(2, 3)}, [2])
    attach_action(batch, actor)
    return loss(batch)
""",
        """
import torch

def check_audio(audio: torch.Tensor, source: str) -> None:
    if audio.abs().max() > 2:
        print(f"{source}: samples out of range")
    audio.clamp_(-1, 1)

def load_clips(source, decode):
    clips = [decode(source, rate) for rate in (16000, 22050)]
    for clip in clips:
        check_audio(clip, source)
    return [clip.unsqueeze(0) for clip in clips]
""",
        """
import torch.nn as nn
import torch.nn.functional as F

class SynthesisBlock(nn.Module):
    def forward(self, x, img):
        if img is not None:
            img = F.interpolate(img, scale_factor=2)
        y = self.torgb(x)
        img = img.add_(y) if img is not None else y
        return x, img
""",
        """
import torch

def precondition(grad, norms):
    norms.add_(grad.norm(dim=1))
    return grad / norms.sqrt().unsqueeze(1)

def step(grads):
    norms = torch.zeros(len(grads))
    update = precondition(grads, norms)
    return update, norms
""",
        """
import torch

def precondition(grad, norms):
    norms.add_(grad.norm(dim=1))
    return grad / norms.sqrt().unsqueeze(1)

def step(grads, norms):
    norms.zero_()
    update = precondition(grads, norms)
    return update, norms
""",
        """
from typing import Optional

import torch
import torch.nn as nn

class ChunkedConv(nn.Module):
    def forward(self, x, write_to: Optional[torch.Tensor] = None):
        if write_to is None:
            write_to = torch.empty_like(x)
        write_to[:, :4] = x[:, :4] * 2
        return write_to
""",
        """
import torch.nn as nn

class PositionalEncoding(nn.Module):
    def forward(self, x):
        x = x + self.pe[: x.size(0)]
        return self.dropout(x)
""",
        """
import torch

def clip_(x: torch.Tensor, bound: float) -> torch.Tensor:
    return x.clamp_(-bound, bound)
""",
        """
import torch

def standardise(x: torch.Tensor) -> torch.Tensor:
    x.sub_(x.mean()).div_(x.std())
    return x

def encode(batch):
    batch = standardise(batch)
    return torch.cat([batch, batch.flip(0)], dim=1)
""",
        """
from typing import Dict, Optional, Tuple

import torch
import torch.nn as nn

class RotaryCache(nn.Module):
    def forward(self, x, cache: Optional[Dict[Tuple[int, int], torch.Tensor]] = None):
        size = tuple(x.shape[-2:])
        if cache is not None:
            cache[size] = self.table(size)
        return x
""",
        """
import torch

def move_to_device(batch, device):
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        for key, value in batch.items():
            batch[key] = move_to_device(value, device)
    elif isinstance(batch, list):
        for i, item in enumerate(batch):
            batch[i] = move_to_device(item, device)
    return batch
""",
        """
import torch

def count(total: int, batch):
    total += len(batch)
    return total
""",
        """
import torch.nn as nn

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):
        out = self.conv(x)
        out = self.act(out)
        return out + x
""",
        # a transform object: `standardize(x)` runs `Standardize.__call__`, and this caller rebinds
        """
import torch


class Standardize:
    def __init__(self, mean, std):
        self.mean, self.std = mean, std

    def __call__(self, x):
        x.sub_(self.mean).div_(self.std)
        return x


standardize = Standardize(0.5, 0.25)
batch = standardize(torch.rand(4, 3))
print(batch.shape)
""",
        # returns only a status flag: an in-place procedure, like one that returns nothing
        """
import torch


def to_master(model_grad, master_grad, scale):
    master_grad.copy_(model_grad)
    master_grad.mul_(scale)
    return False


def unscale(model_grads, master_grads, scale):
    for model, master in zip(model_grads, master_grads):
        to_master(model, master, 1.0 / scale)
""",
        # a module named as an in-place op is one
        """
import torch
from torch import nn

class Add_(nn.Module):
    def forward(self, x):
        return x.add_(1)

def blocks():
    return nn.Sequential(nn.Linear(10, 10), Add_(), nn.Linear(10, 10))
""",
        # `g = squash(g)` binds `g` to the result: a read of `g` in the loop's next pass is not of the old values
        """
import torch

def squash(x):
    return x.tanh_()

def refine(x, steps):
    g = x
    for _ in range(steps):
        g = squash(g)
    return g
""",
        # the function returns the image it pastes into, and the caller drops the result: called for the write
        """
import torch

def paste(image: torch.Tensor, patch: torch.Tensor) -> torch.Tensor:
    image[:, :8, :8] = patch
    return image

def framed(image, patch):
    paste(image, patch)
    return image.mean()
""",
        # the generator's `x` is its own: `x.transpose` says nothing of the list `forward` was given
        """
import torch
from torch import nn

class Detect(nn.Module):
    def __init__(self, convs, make_grid):
        super().__init__()
        self.convs = convs
        self.make_grid = make_grid

    def forward(self, x):
        for i in range(len(x)):
            x[i] = self.convs[i](x[i])
        self.grid = tuple(x.transpose(0, 1) for x in self.make_grid(x))
        return x
""",
        # asserted to be a list, the argument's items are replaced, not written
        """
import torch
from torch import nn

class TwoViews(nn.Module):
    def __init__(self, encoder):
        super().__init__()
        self.encoder = encoder

    def forward(self, views: torch.Tensor | list[torch.Tensor]):
        if not self.training:
            return self.encoder(views)
        assert isinstance(views, list)
        for i, view in enumerate(views):
            views[i] = self.encoder(view)
        return views
""",
        # the layer writes its slot of the routing record and never reads it: a buffer it fills
        """
import torch


class Router(torch.nn.Module):
    def __init__(self, layer, dim, experts):
        super().__init__()
        self.layer, self.gate = layer, torch.nn.Linear(dim, experts)

    def forward(self, hidden, routed: torch.Tensor = None):
        chosen = self.gate(hidden).topk(2, dim=-1).indices
        if routed is not None:
            routed[:, self.layer, :] = chosen
        return hidden * 2


class Model(torch.nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.layers = torch.nn.ModuleList(layers)

    def forward(self, hidden):
        routed = hidden.new_empty((hidden.size(0), len(self.layers), 2), dtype=torch.long)
        for layer in self.layers:
            hidden = layer(hidden, routed=routed)
        return hidden, routed
""",
        # iterated by `.items()`, the batch is a mapping: `batch[key] = ...` stores an item (F45)
        """
import torch


class Wrapper(torch.nn.Module):
    def __init__(self, model, device):
        super().__init__()
        self.model, self.device = model, device

    def forward(self, batch, training=True):
        data = batch["image"].to(self.device) if isinstance(batch, dict) else batch.to(self.device)
        pred = self.model(data)
        if training:
            for key, value in batch.items():
                batch[key] = value.to(self.device)
            return pred, batch
        return pred
""",
        # `a, b = f(x), f(y)`: the call reads its argument before it writes it, and nothing reads it after
        """
import torch


def cov(m, rowvar=False):
    if not rowvar and m.size(0) != 1:
        m = m.t()
    fact = 1.0 / (m.size(1) - 1)
    m -= torch.mean(m, dim=1, keepdim=True)
    return fact * m.matmul(m.t()).squeeze()


def frechet_distance(x1, x2):
    x1 = x1.flatten(start_dim=1)
    x2 = x2.flatten(start_dim=1)
    sigma, sigma_w = cov(x1, rowvar=False), cov(x2, rowvar=False)
    return torch.trace(sigma + sigma_w)
""",
        # each pass writes its own row (`batch[i, :n]`) and the next pass reads another one
        """
import torch


def normalise(frames, stats):
    length, dim = frames.shape
    frames -= stats[0, :dim].to(frames.device)
    return frames.float()


def per_utterance(batch: torch.Tensor, lengths, stats):
    feats = []
    for i in range(batch.size(0)):
        utterance = batch[i, : lengths[i]]
        utterance = normalise(utterance, stats)
        feats.append(utterance)
    return feats
""",
        # the caller's buffers are overwritten whole (`copy_`, `out=`) before they are read: scratch memory
        """
import torch


def rms_norm_inference(weight, x, scratch=None, variance=None):
    if scratch is None:
        scratch = x.float()
        variance = scratch.square().mean(-1, keepdim=True)
    else:
        scratch.copy_(x)
        torch.mean(scratch.square(), -1, keepdim=True, out=variance)
    variance += 1e-6
    scratch *= variance.rsqrt()
    return (scratch * weight).to(x.dtype)


def decode(layers, hidden):
    scratch = torch.empty(4, 8)
    variance = torch.empty(4, 1)
    for attention_norm, mlp_norm in layers:
        hidden = rms_norm_inference(attention_norm, hidden, scratch, variance)
        hidden = rms_norm_inference(mlp_norm, hidden, scratch, variance)
    return hidden
""",
        # the list starts with a Linear: the in-place ReLUs rectify the Linears' outputs, never the input
        """
import torch.nn as nn


class Head(nn.Module):
    def __init__(self, sizes):
        super().__init__()
        layers = [nn.Linear(sizes[0], sizes[1])]
        for i in range(1, len(sizes) - 1):
            layers.append(nn.ReLU(inplace=True))
            layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)
""",
        # the head is replaced after the loop: the Sequential starts with an out-of-place ReLU
        """
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, channels, reps):
        super().__init__()
        layers = []
        for _ in range(reps):
            layers.append(nn.ReLU(inplace=True))
            layers.append(nn.Conv2d(channels, channels, 3, padding=1))
        layers[0] = nn.ReLU()
        self.body = nn.Sequential(*layers)

    def forward(self, x):
        out = self.body(x)
        out += x
        return out
""",
        # `cache[:, 0] = x[:, -1]` copies a column of `x` into the cache: writing the cache later writes no `x`
        """
import torch
from torch import nn


class Halo(nn.Module):
    def forward(self, x, first, cache):
        if first:
            cache = x * 2
        else:
            cache[:, 0] = x[:, -1]
        for x in x.split(2, dim=1):
            pass
        cache[:, 1] = 0
        return cache + x
""",
        # `type(batch) == dict` and `type(batch) in (list, tuple)` show a container: its items are replaced
        """
import torch


def to_device(batch, device):
    if type(batch) == torch.Tensor:
        return batch.to(device)
    if type(batch) == dict:
        for key in batch.keys():
            batch[key] = to_device(batch[key], device)
    elif type(batch) in (list, tuple):
        for i in range(len(batch)):
            batch[i] = to_device(batch[i], device)
    return batch
""",
        # the forward returns the input it shifted: the caller reads that result, which is the new values
        """
import torch
from torch import nn

class Shift(nn.Module):
    def forward(self, x):
        x[2:5, ...] += 1
        return x

def run():
    net = Shift()
    x = torch.zeros(8, 5)
    shifted = net(x)
    print(shifted.sum())
""",
    )
    INVALID = (
        # the caller passes a tensor, so `pitch[mask] = nan` writes it: `torch.isnan(pitch)` counts the marked frames
        Invalid(
            """
import torch


class At:
    def __init__(self, value):
        self.value = value

    def __call__(self, pitch, harmonicity):
        pitch[harmonicity < self.value] = float("nan")
        return pitch


def voiced():
    pitch = torch.tensor([100.0, 110.0])
    out = At(0.2)(pitch, torch.tensor([0.1, 0.3]))
    return out, torch.isnan(pitch).sum()
""",
            (10,),
            fixed="""
import torch


class At:
    def __init__(self, value):
        self.value = value

    def __call__(self, pitch, harmonicity):
        pitch = pitch.clone()
        pitch[harmonicity < self.value] = float("nan")
        return pitch


def voiced():
    pitch = torch.tensor([100.0, 110.0])
    out = At(0.2)(pitch, torch.tensor([0.1, 0.3]))
    return out, torch.isnan(pitch).sum()
""",
        ),
        # the caller passes a tensor, so `/=` divides it in place: `image.mean()` reads the scaled values
        Invalid(
            """
import torch


def scale(image):
    image /= 255
    return image


def show():
    image = torch.rand(3, 8, 8) * 255
    scaled = scale(image)
    return image.mean(), scaled.mean()
""",
            (6,),
            fixed="""
import torch


def scale(image):
    image = image / 255
    return image


def show():
    image = torch.rand(3, 8, 8) * 255
    scaled = scale(image)
    return image.mean(), scaled.mean()
""",
        ),
        # `Scale()(x)` runs `Scale.__call__`, which doubles `x` before the caller adds it to the result
        Invalid(
            """
import torch


class Scale:
    def __call__(self, t):
        t.mul_(2)
        return t + 1


def show(x):
    x = torch.as_tensor(x)
    y = Scale()(x)
    return x + y
""",
            (7,),
            fixed="""
import torch


class Scale:
    def __call__(self, t):
        t = t.mul(2)
        return t + 1


def show(x):
    x = torch.as_tensor(x)
    y = Scale()(x)
    return x + y
""",
        ),
        # the second call shifts `x` again, and with it `first`, the first call's result
        Invalid(
            """
import torch
from torch import nn

class Shift(nn.Module):
    def forward(self, x):
        x[2:5, ...] += 1
        return x

def run():
    net = Shift()
    x = torch.zeros(8, 5)
    first = net(x)
    second = net(x)
    print(first.sum(), second.sum())
""",
            (7,),
            fixed="""
import torch
from torch import nn

class Shift(nn.Module):
    def forward(self, x):
        x = x.clone()
        x[2:5, ...] += 1
        return x

def run():
    net = Shift()
    x = torch.zeros(8, 5)
    first = net(x)
    second = net(x)
    print(first.sum(), second.sum())
""",
        ),
        Invalid(
            # the Sequential's first layer is `ReLU(inplace=True)`: calling it rectifies `x`, which the residual reads
            """
import torch.nn as nn


class ResBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Sequential(
            nn.ReLU(inplace=True),
            nn.Conv2d(channels, channels, 3, padding=1),
        )

    def forward(self, x):
        out = self.conv(x)
        out += x
        return out
""",
            (14,),
            fixed="""
import torch.nn as nn


class ResBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Sequential(
            nn.ReLU(inplace=True),
            nn.Conv2d(channels, channels, 3, padding=1),
        )

    def forward(self, x):
        out = self.conv(x.clone())
        out += x
        return out
""",
        ),
        # the list the Sequential is built from starts with `ReLU(inplace=True)`: calling the head rectifies the
        # caller's embeddings, and returns the last Linear's output, not the tensor it wrote
        Invalid(
            """
import torch
import torch.nn as nn


class Head(nn.Module):
    def __init__(self, sizes):
        super().__init__()
        layers = []
        for i in range(len(sizes) - 1):
            layers.append(nn.ReLU(inplace=True))
            layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


embeddings = -torch.ones(2, 4)
Head([4, 2])(embeddings)
print(embeddings.sum().item())
""",
            (16,),
            fixed="""
import torch
import torch.nn as nn


class Head(nn.Module):
    def __init__(self, sizes):
        super().__init__()
        layers = []
        for i in range(len(sizes) - 1):
            layers.append(nn.ReLU(inplace=True))
            layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x.clone())


embeddings = -torch.ones(2, 4)
Head([4, 2])(embeddings)
print(embeddings.sum().item())
""",
            prints="-8.0",
        ),
        # the row one pass normalises is the row the next pass reads as `maps[i]`
        Invalid(
            """
import torch


def normalise(image, attention):
    attention -= attention.min()
    attention /= attention.max()
    return attention * image


def show(image, tokens):
    maps = torch.rand(len(tokens) + 1, 16)
    for i, token in enumerate(tokens):
        before = maps[i].sum()
        print(token, before, normalise(image, maps[i + 1]).sum())
""",
            (6, 7),
            fixed="""
import torch


def normalise(image, attention):
    attention = attention - attention.min()
    attention = attention / attention.max()
    return attention * image


def show(image, tokens):
    maps = torch.rand(len(tokens) + 1, 16)
    for i, token in enumerate(tokens):
        before = maps[i].sum()
        print(token, before, normalise(image, maps[i + 1]).sum())
""",
        ),
        # the caller's box is a tensor: the second crop reads the first one's clipping
        Invalid(
            """
import torch


def widen(box):
    box = box.float()
    box[2:] += 1
    return box


def crop(image, box):
    box[[0, 2]] = box[[0, 2]].clamp(0, image.shape[-1])
    box = box.round().long()
    return image[..., box[1] : box[3], box[0] : box[2]]


def crops(mask, image):
    box = widen(torch.tensor([1, 2, 30, 40]))
    return crop(mask, box), crop(image, box), box
""",
            (12,),
            fixed="""
import torch


def widen(box):
    box = box.float()
    box[2:] += 1
    return box


def crop(image, box):
    box = box.clone()
    box[[0, 2]] = box[[0, 2]].clamp(0, image.shape[-1])
    box = box.round().long()
    return image[..., box[1] : box[3], box[0] : box[2]]


def crops(mask, image):
    box = widen(torch.tensor([1, 2, 30, 40]))
    return crop(mask, box), crop(image, box), box
""",
        ),
        Invalid(
            """
import torch
import torch.nn as nn

class AddNorm(nn.Module):
    def forward(self, hidden, residual=None):
        if residual is not None:
            hidden += residual
        residual = hidden
        variance = hidden.to(torch.float32).pow(2).mean(-1, keepdim=True)
        return hidden * torch.rsqrt(variance + 1e-6), residual

norm = AddNorm()

def block(tokens, residual, embed, mlp):
    embedded = embed(tokens)
    normed, residual = norm(embedded, residual)
    return mlp(normed) + embedded, residual

out, _ = block(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 1.0]), torch.clone, torch.zeros_like)
print(out.tolist())
""",
            (8,),
            fixed="""
import torch
import torch.nn as nn

class AddNorm(nn.Module):
    def forward(self, hidden, residual=None):
        if residual is not None:
            hidden = hidden + residual
        residual = hidden
        variance = hidden.to(torch.float32).pow(2).mean(-1, keepdim=True)
        return hidden * torch.rsqrt(variance + 1e-6), residual

norm = AddNorm()

def block(tokens, residual, embed, mlp):
    embedded = embed(tokens)
    normed, residual = norm(embedded, residual)
    return mlp(normed) + embedded, residual

out, _ = block(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 1.0]), torch.clone, torch.zeros_like)
print(out.tolist())
""",
            prints="[1.0, 2.0]",
        ),
        Invalid(
            """
import torch

def standardise(x):
    x.sub_(x.mean()).div_(x.std())
    return x

batch = torch.tensor([1.0, 2.0, 3.0])
features = standardise(batch)
print(batch.tolist())
""",
            (5,),
            fixed="""
import torch

def standardise(x):
    x = x.sub(x.mean()).div(x.std())
    return x

batch = torch.tensor([1.0, 2.0, 3.0])
features = standardise(batch)
print(batch.tolist())
""",
            prints="[1.0, 2.0, 3.0]",
        ),
        Invalid(
            """
import torch.nn as nn

class PositionalEncoding(nn.Module):
    def forward(self, x):
        x += self.pe[: x.size(0)]
        return self.dropout(x)
""",
            (6,),
            fixed="""
import torch.nn as nn

class PositionalEncoding(nn.Module):
    def forward(self, x):
        x = x + self.pe[: x.size(0)]
        return self.dropout(x)
""",
        ),
        Invalid(
            """
import torch
import torch.nn.functional as F

def standardise(x: torch.Tensor) -> torch.Tensor:
    x.sub_(x.mean()).div_(x.std())
    return F.relu(x, inplace=True)

def encode(batch):
    features = standardise(batch)
    return torch.cat([features, batch], dim=1)
""",
            (6, 7),
            fixed="""
import torch
import torch.nn.functional as F

def standardise(x: torch.Tensor) -> torch.Tensor:
    x = x.sub(x.mean()).div(x.std())
    return F.relu(x)

def encode(batch):
    features = standardise(batch)
    return torch.cat([features, batch], dim=1)
""",
        ),
        Invalid(
            """
import torch

def rms_norm_inference(weight, x, scratch=None, variance=None):
    if scratch is None:
        scratch = x.float()
        variance = scratch.square().mean(-1, keepdim=True)
    else:
        scratch.copy_(x)
    variance += 1e-6
    scratch *= variance.rsqrt()
    x.copy_(scratch)
    x *= weight
    return x

def decode_step(weight, hidden):
    residual = hidden
    hidden = rms_norm_inference(weight, hidden)
    return hidden + residual
""",
            (12, 13),
            fixed="""
import torch

def rms_norm_inference(weight, x, scratch=None, variance=None):
    if scratch is None:
        scratch = x.float()
        variance = scratch.square().mean(-1, keepdim=True)
    else:
        scratch.copy_(x)
    variance += 1e-6
    scratch *= variance.rsqrt()
    x = x.clone()
    x.copy_(scratch)
    x = x * weight
    return x

def decode_step(weight, hidden):
    residual = hidden
    hidden = rms_norm_inference(weight, hidden)
    return hidden + residual
""",
        ),
        Invalid(
            """
import torch.nn as nn

class PreAct(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):
        out = self.act(x)
        return self.conv(out) + x
""",
            (10,),
            fixed="""
import torch.nn as nn

class PreAct(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):
        out = self.act(x.clone())
        return self.conv(out) + x
""",
        ),
        Invalid(
            """
import torch
import torch.nn as nn

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = nn.ReLU(inplace=True)
        self.scale = nn.Identity()

    def forward(self, x):
        return self.scale(self.act(x)) + x

x = torch.tensor([[-1.0, 2.0]])
print(Block()(x).tolist(), x.tolist())
""",
            (12,),
            fixed="""
import torch
import torch.nn as nn

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = nn.ReLU(inplace=True)
        self.scale = nn.Identity()

    def forward(self, x):
        return self.scale(self.act(x.clone())) + x

x = torch.tensor([[-1.0, 2.0]])
print(Block()(x).tolist(), x.tolist())
""",
            prints="[[-1.0, 4.0]] [[-1.0, 2.0]]",
        ),
        Invalid(
            """
import torch


class Standardize:
    def __init__(self, mean, std):
        self.mean, self.std = mean, std

    def __call__(self, x):
        x.sub_(self.mean).div_(self.std)
        return x


standardize = Standardize(0.5, 0.25)
batch = torch.linspace(0, 1, 12).reshape(4, 3)
inputs = standardize(batch)
print(round((inputs - batch).abs().max().item(), 3))
""",
            (10,),
            fixed="""
import torch


class Standardize:
    def __init__(self, mean, std):
        self.mean, self.std = mean, std

    def __call__(self, x):
        x = x.sub(self.mean).div(self.std)
        return x


standardize = Standardize(0.5, 0.25)
batch = torch.linspace(0, 1, 12).reshape(4, 3)
inputs = standardize(batch)
print(round((inputs - batch).abs().max().item(), 3))
""",
            prints="2.0",
        ),
        # reported at the child's write only, not again at the parent's `self.shift(x)`
        Invalid(
            """
import torch.nn as nn


class Shift(nn.Module):
    def forward(self, x):
        x.add_(1.0)
        return x


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.shift = Shift()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(self.shift(x)).relu_()
""",
            (7,),
            fixed="""
import torch.nn as nn


class Shift(nn.Module):
    def forward(self, x):
        x = x.add(1.0)
        return x


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.shift = Shift()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(self.shift(x)).relu_()
""",
        ),
        # memory made by torch.zeros, but read before the call (`before = initial.clone()`): no buffer to fill
        Invalid(
            """
import torch


def advance(field, dt):
    field[1:].add_(dt * field[:-1])
    return field.norm().item()


initial = torch.zeros(8)
initial[0] = 1.0
before = initial.clone()
energy = advance(initial, 0.5)
print(torch.equal(initial, before))
""",
            (6,),
        ),
        # the caller reads its argument again after the tuple's calls wrote it
        Invalid(
            """
import torch


def cov(m, rowvar=False):
    if not rowvar and m.size(0) != 1:
        m = m.t()
    fact = 1.0 / (m.size(1) - 1)
    m -= torch.mean(m, dim=1, keepdim=True)
    return fact * m.matmul(m.t()).squeeze()


def frechet_distance(x1, x2):
    x1 = x1.flatten(start_dim=1)
    x2 = x2.flatten(start_dim=1)
    sigma, sigma_w = cov(x1, rowvar=False), cov(x2, rowvar=False)
    mean = torch.sum((x1.mean(dim=0) - x2.mean(dim=0)) ** 2)
    return torch.trace(sigma + sigma_w) + mean
""",
            (9,),
            fixed="""
import torch


def cov(m, rowvar=False):
    if not rowvar and m.size(0) != 1:
        m = m.t()
    fact = 1.0 / (m.size(1) - 1)
    m = m - torch.mean(m, dim=1, keepdim=True)
    return fact * m.matmul(m.t()).squeeze()


def frechet_distance(x1, x2):
    x1 = x1.flatten(start_dim=1)
    x2 = x2.flatten(start_dim=1)
    sigma, sigma_w = cov(x1, rowvar=False), cov(x2, rowvar=False)
    mean = torch.sum((x1.mean(dim=0) - x2.mean(dim=0)) ** 2)
    return torch.trace(sigma + sigma_w) + mean
""",
        ),
        # the same pass reads its row again after the call wrote it
        Invalid(
            """
import torch


def normalise(frames, stats):
    length, dim = frames.shape
    frames -= stats[0, :dim].to(frames.device)
    return frames.float()


def per_utterance(batch: torch.Tensor, lengths, stats):
    feats = []
    for i in range(batch.size(0)):
        utterance = normalise(batch[i, : lengths[i]], stats)
        feats.append(utterance - batch[i, : lengths[i]].mean())
    return feats
""",
            (7,),
            fixed="""
import torch


def normalise(frames, stats):
    length, dim = frames.shape
    frames = frames - stats[0, :dim].to(frames.device)
    return frames.float()


def per_utterance(batch: torch.Tensor, lengths, stats):
    feats = []
    for i in range(batch.size(0)):
        utterance = normalise(batch[i, : lengths[i]], stats)
        feats.append(utterance - batch[i, : lengths[i]].mean())
    return feats
""",
        ),
        # a module's `forward` hands its own input to a function that normalises it in place
        Invalid(
            """
import torch
from torch import nn

def zscore(x: torch.Tensor) -> torch.Tensor:
    x[:, 0] = (x[:, 0] - 0.485) / 0.229
    return x

class Perceptual(nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, input):
        input = zscore(input)
        return self.net(input)
""",
            (6,),
            fixed="""
import torch
from torch import nn

def zscore(x: torch.Tensor) -> torch.Tensor:
    x = x.clone()
    x[:, 0] = (x[:, 0] - 0.485) / 0.229
    return x

class Perceptual(nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, input):
        input = zscore(input)
        return self.net(input)
""",
        ),
    )

    def check(self, ctx: FileContext) -> Iterator[Report]:
        confirmed = _confirmed_calls(ctx)
        for facts in ctx.semantic.facts:
            scope = facts.scope
            if not _checked(scope):
                continue
            evident = facts.argument_writes()
            for write in facts.argument_writes(evidence_needed=False):
                name = write.storage.label
                if write not in evident and (called_key(scope), name) not in confirmed:
                    continue  # `x[2:5] += 1` writes in place if `x` is a tensor: a caller that passes one says so
                if heuristics().output_parameter.search(name) or facts.is_output_buffer(write) or _numpy_only(write):
                    continue
                if scope.name == "forward" and scope.is_method:
                    if write.callee is not None:
                        continue  # `self.block(x)`: reported at the write, in `Block.forward`
                    if _in_place_layer(facts, write) and (called_key(scope), name) not in confirmed:
                        continue  # like `nn.ReLU(inplace=True)`, its callers decide
                    yield Report(
                        write.node,
                        f"{write_text(ctx, write)} writes the caller's tensor `{name}` in place: the caller sees the "
                        "new values, and autograd raises if it is a leaf that requires grad",
                        fix=unshared_write(ctx, write),
                    )
                elif (called_key(scope), name) in confirmed and facts.returns_value:
                    call, read, dropped = confirmed[called_key(scope), name]
                    if dropped and write.storage in facts.returned:
                        continue  # `paste(frame, face)` returns the frame it wrote: called for the write
                    again = f"at line {ctx.line(read)}" if read is not None else "by the caller of that `forward`"
                    yield Report(
                        write.node,
                        f"{write_text(ctx, write)} writes the caller's tensor `{name}` in place: "
                        f"`{ctx.code(call)}` at line {ctx.line(call)} changes its argument, which is read again "
                        f"{again}",
                        fix=unshared_write(ctx, write),
                    )


def _confirmed_calls(ctx: FileContext) -> dict[tuple[str, str], tuple[cst.CSTNode, cst.CSTNode | None, bool]]:
    """Same-module calls whose mutated argument is read again by the caller, by the function and the
    parameter the argument is bound to: a parameter the call leaves at its default (`scratch=None`,
    allocated by the function) is memory the caller never sees. With each, whether every such call
    drops the result (made for its effect), which matters when the function returns what it wrote. A
    module's `forward` passing its own input on needs no read: the module's caller holds the tensor (None)."""
    confirmed: dict[tuple[str, str], tuple[cst.CSTNode, cst.CSTNode | None, bool]] = {}
    for facts in ctx.semantic.facts:
        reads_by_write = {}
        for read in facts.reads:
            reads_by_write.setdefault(read.write, read.node)
        forward = facts.scope.name == "forward" and facts.scope.is_method and _checked(facts.scope)
        for write in facts.writes:
            read = facts.own_reads.get(write) or reads_by_write.get(write)
            # A module's `forward` passing on its own input: the module's caller holds that tensor.
            held = read is not None or (forward and write.storage.origin == "param")
            # Under no_grad (an optimizer step, an update) mutating the argument is the point.
            if (
                write.callee is not None
                and held
                and not write.no_grad
                and not _prepared(facts, write)
                and not _numpy_only(write)
            ):
                key, dropped = (write.callee, write.parameter), id(write.node) in facts.dropped
                if key not in confirmed or confirmed[key][2] and not dropped:
                    confirmed[key] = (write.node, read, dropped)
    return confirmed


def _numpy_only(write: Write) -> bool:
    """The caller passes a numpy array of its own (`np.array(...)`), no tensor's memory: what numpy code
    does to its arrays is not a tensor shared (through `t.numpy()` it is, and stays reported)."""
    return write.writer.own_array()


def _in_place_layer(facts: ScopeFacts, write: Write) -> bool:
    """A `forward` whose write is its result: it applies an in-place layer to its input, returns the tensor it
    wrote (`hidden += residual; return norm(hidden), hidden`) or returns nothing (a rotary embedding rotating
    `query` in place). The caller is handed the new values; only a caller that reads its own tensor again is hurt."""
    if write.op == "inplace module" and _read_after(facts, write):
        return False
    if any(read.write is write and id(read.node) not in facts.handed_back for read in facts.reads):
        return False  # it reads its input again through another name, expecting the values it had
    return not facts.returns_value or write.storage in facts.returned


def _read_after(facts: ScopeFacts, write: Write) -> bool:
    return write in facts.own_reads or any(read.write is write for read in facts.reads)


def _prepared(facts: ScopeFacts, call: Write) -> bool:
    """The caller passes a buffer to be filled: memory it made for the call (`torch.zeros(n)`,
    `x.clone()`) and has not read before it, or overwrote whole (`buf.zero_()`, `buf.copy_(src)`)."""
    k = knowledge()
    root = list(call.writer.chain())[-1]
    if isinstance(root.node, cst.Call) and called_name(root.node) in k.buffer_makers and not call.read_before:
        return True  # made for the call: it holds nothing the caller has looked at
    return any(
        write.op in k.buffer_overwrites and not write.partial and write.storage.related(call.storage)
        for write in facts.writes
        if write is not call and write.callee is None
    )


def _checked(scope: Scope) -> bool:
    if not scope.is_function or scope.no_grad:
        return False
    if scope.is_method and scope.name not in ("forward", "__call__"):
        return False
    # `class Add_(nn.Module)` announces its forward's mutation as `add_` does
    names = (scope.class_name or "", *scope.enclosing, scope.name)
    if scope.mentions_inplace or any(_announces_mutation(name) for name in names):
        return False
    return not (scope.docstring and heuristics().documented_mutation.search(scope.docstring))


def _announces_mutation(name: str) -> bool:
    if announces_inplace(name):
        return True
    return any(word in heuristics().mutating_function_words for word in name.lower().split("_"))
