from collections.abc import Iterator

import libcst as cst

from gpumem_lint.context import FileContext
from gpumem_lint.diagnostics import Severity
from gpumem_lint.fixes import Applicability
from gpumem_lint.rules._clone_fix import clone_at
from gpumem_lint.rules._reporting import alias_phrase, first_reads, write_text
from gpumem_lint.rules.base import Invalid, Report, Rule
from gpumem_lint.semantic.flow import ScopeFacts
from gpumem_lint.semantic.imports import dotted_name
from gpumem_lint.semantic.values import SNAPSHOT_KINDS, AliasKind, Read
from gpumem_lint.semantic.write_triggers import WRITES

# Aliases people write *through* on purpose (`p.data.add_()`, `v = x[0]; v.zero_()`)
# are not snapshots; a `.detach()` alias written and then read next to its source
# is one the author took for a copy.
_COPY_LOOKALIKES = frozenset({AliasKind.DETACH})


class AliasReadAfterInplaceWrite(Rule):
    """
    ## What it does
    Flags an in-place write to a tensor while a view, `.detach()` or `.data` alias of it
    made earlier is still read afterwards as if it held the old values. Three shapes of
    the same mistake are included:
    - a `.detach()` alias written in place while both it and its source are read
      afterwards as two different values;
    - a tuple assignment that swaps through views, `x[i], x[j] = x[j], x[i]`: the
      right-hand side `x[i]` is a view, overwritten before it is assigned to `x[j]`;
    - a tensor put into a list (`states.append(hidden)`) and then written in place,
      so that every stored entry ends up holding the last value.

    ## Why is this bad?
    Views, `.detach()` and `.data` share memory with their source ([docs/facts.md](../docs/facts.md)
    F1, F2, F4): `prev = h.detach()` or `first = x[0]` is not a copy. After `h.mul_(…)` the
    "previous" value is the new one, and a difference such as `h - prev` is silently zero.
    PyTorch raises only when autograd saved the tensor; everything else is silent.

    Only aliases that are really read after the write are reported; writing *through* a
    view on purpose (`row = x[0]; row.zero_()`) is not, and neither are two writes to
    different slices (`x[0]` and `x[1]`), nor the outputs of one `split`/`chunk` (disjoint
    parts: writing `q` does not change `v`), nor numpy's `a[i]` on a 1-D array, a scalar
    copy (F23). A view written back onto the slice it views (`row = a[:, i]`, masked in place,
    then `a[:, i] = row`) copies memory onto itself and changes nothing; indexing by a tensor
    (`x[ids]`, where `ids = batch["ids"].view(-1)`) is advanced indexing, a copy, and so is indexing by
    a list (`ids = [1, 2]`, `list(range(n))`, `sorted(...)`, or an attribute every method of the class
    binds to one, `self.finger_ids = list(range(3, 8))`). A view made in
    one arm of a test and a write in the other arm of the same test, made again of a value the
    function never rebinds (`if on_gpu:` twice), are never on one path. An optimizer step writes a
    module's parameters, not what an attribute holds that the program assigns a plain tensor
    (`m.state = m.state.detach()`): `nn.Module` refuses that for a Parameter's name (F51).

    ## Known problems
    numpy's `a[i]` is known to be a scalar only where the array's constructor shows its
    rank (`np.zeros(n)`, `np.zeros((n,))`, `np.arange`, the arrays `np.unique` returns), or where
    a numba signature does (`@numba.jit("float32[:, :], float32")`: a function numba compiles takes
    numpy arrays, never tensors), or where an `if` truth-tests a comparison of its one-integer
    indexes (`if a[2] < a[0]:`: rows would make that raise); on an array of unknown rank, such as
    `np.zeros_like(x)`, it is taken for a view of a row.
    A view of memory allocated without values (`torch.empty`, `new_empty`), made before
    the first write to it, is taken to present the buffer (`inputs = staging[:n]`, then
    `staging.copy_(batch)` each step), not to keep old values: it has none.

    ## Example
    ```python
    prev = hidden.detach()
    hidden.mul_(decay).add_(update)
    delta = hidden - prev  # always zero
    ```

    ## Use instead
    ```python
    prev = hidden.detach().clone()
    hidden.mul_(decay).add_(update)
    delta = hidden - prev
    ```

    ## Fix safety
    The fix adds `.clone()` (`.copy()` for a numpy array) where the alias is made (`prev = hidden.detach().clone()`) or
    where the tensor is stored (`states.append(hidden.clone())`); in a swap through views,
    to the right-hand side's view that an earlier target overwrites
    (`x[i], x[j] = x[j], x[i].clone()`), unless it is a conditional expression. It is
    unsafe: the copy costs memory, and code that meant to follow the tensor's later values
    no longer does.

    ## References
    - [Tensor views](https://docs.pytorch.org/docs/stable/tensor_view.html)
    - [`torch.Tensor.detach`](https://docs.pytorch.org/docs/stable/generated/torch.Tensor.detach.html)
    """

    code = "GML103"
    name = "alias-read-after-inplace-write"
    severity = Severity.WARNING
    fix_applicability = Applicability.UNSAFE
    summary = "A view or `.detach()`/`.data` alias is read after its memory was written in place"
    fix_title = "Take a copy where the alias is made (`.clone()`), or write out of place"
    triggers = ("torch", "numpy")
    scope_triggers = WRITES
    VALID = (
        # an attribute every method binds to a list indexes by gathering: `relative` is a copy
        """
import torch
from torch import nn


class HandHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.finger_ids = list(range(3, 8))
        self.fc = nn.Linear(16, 30)

    def forward(self, x):
        joints = self.fc(x).view(-1, 10, 3)
        relative = joints[:, self.finger_ids, :]
        joints[:, self.finger_ids, :] = relative + joints[:, [2], :]
        return joints, relative
""",
        # `if box[2] < box[0]:` truth-tests elements: the array is 1-D, its `box[i]` scalars, the swap correct
        """
import numpy as np


def clip_box(box: np.ndarray, width: float):
    box = box.astype(float)[:4]
    if box[2] < box[0]:
        box[0], box[2] = box[2], box[0]
    return np.clip(box, 0, width)
""",
        # `m.recurrent.weight = ... .detach()` succeeds only for a name that is no Parameter (F51): the step leaves it
        """
import torch
from torch import nn
from graph_layers import EvolvingGCN


class Forecaster(nn.Module):
    def __init__(self):
        super().__init__()
        self.recurrent = EvolvingGCN(20, 4)
        self.head = nn.Linear(4, 1)

    def forward(self, x):
        return self.head(self.recurrent(x))


model = Forecaster()
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
for epoch in range(10):
    loss = model(torch.randn(20, 4)).square().mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    model.recurrent.weight = model.recurrent.weight.detach()
""",
        # `if on_gpu:` tested twice of an unchanged flag: the view and the write are on opposite arms
        """
import numpy as np
import torch


def load_series(values: np.ndarray, on_gpu: bool):
    if on_gpu:
        data = torch.empty(values.shape + (2,), device="cuda")
        data[..., 0] = torch.from_numpy(values).cuda()
    else:
        data = np.expand_dims(values, axis=-1)
        parts = [data[:]]
    if on_gpu:
        data[..., 1] = torch.arange(values.shape[0], device="cuda")[:, None]
    else:
        parts.append(np.zeros_like(values)[..., None])
    return data if on_gpu else np.concatenate(parts, axis=-1)
""",
        # indexed by a list, `clamped[chosen]` is a copy: zeroing those entries leaves it as it was
        """
import torch


def slate_probability(values, slate, position_of):
    clamped = torch.clamp(values, 0.0)
    chosen = [position_of(item) for item in slate]
    picked = clamped[chosen]
    clamped[chosen] = 0.0
    return (picked / (picked.sum() + clamped.sum())).prod().item()
""",
        """
import torch

def batches(chunks, batch, length):
    staging = torch.empty(2 * batch * length, dtype=torch.long)
    inputs = staging[: batch * length].view(batch, length)
    targets = staging[batch * length :].view(batch, length)
    for chunk in chunks:
        staging.copy_(chunk)
        yield inputs, targets
""",
        """
import torch

def invert_scales(groups, copy_many):
    for scales, inverses in groups:
        packed = torch.empty(len(scales))
        views = [packed[i].view(1) for i in range(len(scales))]
        copy_many(scales, views)
        torch.reciprocal(packed, out=packed)
        copy_many(views, inverses)
""",
        """
import torch


def discounted_returns(rewards: torch.Tensor, gamma: float) -> torch.Tensor:
    returns = torch.zeros_like(rewards)
    last = 0.0
    for i in reversed(range(len(rewards))):
        returns[i] = rewards[i]
        returns[i] += last * gamma
        last = returns[i]
    return returns
""",
        """
import torch

def predivide_gradient(param, factor, stream):
    grad = param.grad.data
    param.grad.data.div_(factor)
    grad.record_stream(stream)
""",
        """
import torch

def add_token_types(ids, kwargs, drop_images):
    token_types = torch.zeros_like(ids)
    token_types[ids == 3] = 1
    kwargs["token_types"] = token_types
    if drop_images:
        token_types.zero_()
        kwargs["token_types"] = token_types
    return kwargs
""",
        """
import torch

def store_types(ids, kwargs, key):
    types = torch.zeros_like(ids)
    kwargs[key] = types
    types.zero_()
    kwargs[key] = types
""",
        """
import numpy as np

def episode_returns(rewards_per_step, n_envs):
    current = np.zeros(n_envs)
    finished = []
    for rewards in rewards_per_step:
        current += rewards
        for i in range(n_envs):
            finished.append(current[i])
            current[i] = 0
    return finished
""",
        """
import torch

def attention(qkv, rope, heads):
    query, key, value = qkv.chunk(3, dim=-1)
    value = value.view(value.shape[0], -1, heads, 8).transpose(1, 2)
    query = query.view(query.shape[0], -1, heads, 8).transpose(1, 2)
    query[:, :, 1:] = rope(query[:, :, 1:])
    return torch.softmax(query @ key.transpose(-1, -2), -1) @ value
""",
        """
import torch

def normalise_rows(x: torch.Tensor) -> torch.Tensor:
    out = x.clone()
    for i in range(out.shape[0]):
        row = out[i]
        row.div_(row.norm())
    return out
""",
        """
import torch

def smoothed_change(updates, decay):
    hidden = torch.zeros_like(updates[0])
    prev = hidden.detach().clone()
    for update in updates:
        hidden.mul_(decay).add_(update)
    return hidden - prev
""",
        """
import torch

def fill(values):
    buf = torch.zeros(2, len(values[0]))
    first = buf[0]
    buf[1] = values[1]
    return first.sum()
""",
        # read through the module after the load: the loaded values, as meant
        """
import torch
import torch.nn as nn

def test_load_reaches_a_swapped_parameter(model, checkpoint):
    with torch.no_grad():
        old = model.scale
        model.scale = nn.Parameter(old.data.unsqueeze(0))
    model.load_state_dict(checkpoint)
    assert torch.equal(model.scale, checkpoint["scale"])
""",
        # `acc` and `d_b` both start as `None`, which is no memory: writing `acc` changes nothing `d_b` made
        """
import torch

def accumulate(dY, W, B, n):
    acc = None
    outs = []
    for _ in range(n):
        d_b = None
        if B is not None:
            d_b = torch.empty_like(B)
        if acc is None:
            acc = torch.mm(dY, W)
        else:
            acc.add_(dY)
        outs.append(d_b.t() if d_b is not None else None)
    return acc, outs
""",
        # a swap through views with a clone, in a loop: each pass makes its views anew
        """
import torch

def flip_pairs(keypoints: torch.Tensor, pairs):
    for a, b in pairs:
        keypoints[:, a], keypoints[:, b] = keypoints[:, b], keypoints[:, a].clone()
    return keypoints
""",
        """
import torch

def constrain(logits, masks, apply_mask):
    scores = logits.clone().view(2, 3, -1)
    for pos in range(3):
        row = scores[:, pos, :]
        apply_mask(row, masks[pos])
        scores[:, pos, :] = row
        print(row.argmax(dim=-1))
    return scores
""",
        """
import torch

class InferenceWorker:
    def step(self, batch_obs):
        batch = batch_obs(self.requests, device=self.device)
        environment_ids = batch["environment_ids"].view(-1)
        hidden = self.rollouts.hidden_states[environment_ids]
        new_hidden = self.policy(batch["observations"], hidden)
        self.rollouts.hidden_states.index_copy_(0, environment_ids, new_hidden)
        return hidden.norm()
""",
        # numba compiles for numpy arrays, and its signature says `boxes` is 2-D: `boxes[i, 0]` is a scalar copy
        """
import numba


@numba.jit("float32[:, :], float32", nopython=True)
def suppress(boxes, threshold):
    n = boxes.shape[0]
    for i in range(n):
        first = boxes[i, 0]
        boxes[i, 0] = boxes[n - 1, 0]
        for j in range(i + 1, n):
            if boxes[j, 0] - first < threshold:
                boxes[j, 4] = 0
    return boxes
""",
        # sorted by an index array of its own dimensions, `counts` stays 1-D: `counts[i]` is still a scalar
        """
import numpy as np


def largest_first(relations):
    _, counts = np.unique(relations, return_counts=True)
    counts = counts[np.flip(np.argsort(counts))]
    shares = []
    for i in range(len(counts)):
        left = counts[i]
        for part in range(3):
            share = left if left < 10 else 10
            shares.append([part, share])
            left -= share
    return shares
""",
        # `np.unique` gives 1-D arrays: `counts[i]` is a scalar, and `-=` rebinds it
        """
import numpy as np


def split_counts(relations, parts_per_relation):
    _, counts = np.unique(relations, return_counts=True)
    parts = []
    for i in range(len(counts)):
        remaining = counts[i]
        for j in range(parts_per_relation):
            part = remaining if remaining < 10 else 10
            parts.append([j, part])
            remaining -= part
    return parts
""",
    )
    INVALID = (
        # the same head with a slice kept in the attribute: `relative` is a view
        Invalid(
            """
import torch
from torch import nn


class HandHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.finger_ids = slice(3, 8)
        self.fc = nn.Linear(16, 30)

    def forward(self, x):
        joints = self.fc(x).view(-1, 10, 3)
        relative = joints[:, self.finger_ids, :]
        joints[:, self.finger_ids, :] = relative + joints[:, [2], :]
        return joints, relative
""",
            (15,),
            fixed="""
import torch
from torch import nn


class HandHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.finger_ids = slice(3, 8)
        self.fc = nn.Linear(16, 30)

    def forward(self, x):
        joints = self.fc(x).view(-1, 10, 3)
        relative = joints[:, self.finger_ids, :].clone()
        joints[:, self.finger_ids, :] = relative + joints[:, [2], :]
        return joints, relative
""",
        ),
        # a test of two integers per element says nothing of one-integer rows: they are views
        Invalid(
            """
import numpy as np


def order_boxes(boxes: np.ndarray):
    boxes = boxes.astype(float)[:4]
    if boxes[2, 0] < boxes[0, 0]:
        boxes[0], boxes[2] = boxes[2], boxes[0]
    return boxes
""",
            (8,),
            fixed="""
import numpy as np


def order_boxes(boxes: np.ndarray):
    boxes = boxes.astype(float)[:4]
    if boxes[2, 0] < boxes[0, 0]:
        boxes[0], boxes[2] = boxes[2], boxes[0].copy()
    return boxes
""",
        ),
        # the same swap on a torch tensor: `boxes[i, 0]` is a 0-d view, which the next line overwrites
        Invalid(
            """
import torch


def suppress(boxes: torch.Tensor, threshold: float):
    n = boxes.shape[0]
    for i in range(n):
        first = boxes[i, 0]
        boxes[i, 0] = boxes[n - 1, 0]
        for j in range(i + 1, n):
            if boxes[j, 0] - first < threshold:
                boxes[j, 4] = 0
    return boxes
""",
            (9,),
            fixed="""
import torch


def suppress(boxes: torch.Tensor, threshold: float):
    n = boxes.shape[0]
    for i in range(n):
        first = boxes[i, 0].clone()
        boxes[i, 0] = boxes[n - 1, 0]
        for j in range(i + 1, n):
            if boxes[j, 0] - first < threshold:
                boxes[j, 4] = 0
    return boxes
""",
        ),
        # a detached Parameter is the Parameter's memory, which the step writes
        Invalid(
            """
import torch
from torch import nn


class Forecaster(nn.Module):
    def __init__(self):
        super().__init__()
        self.recurrent = nn.GRUCell(4, 4)
        self.head = nn.Linear(4, 1)

    def forward(self, x):
        return self.head(self.recurrent(x))


model = Forecaster()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
before = model.head.weight.detach()
loss = model(torch.randn(20, 4)).square().mean()
loss.backward()
optimizer.step()
print(bool((model.head.weight - before).abs().sum() > 0))
""",
            (21,),
            fixed="""
import torch
from torch import nn


class Forecaster(nn.Module):
    def __init__(self):
        super().__init__()
        self.recurrent = nn.GRUCell(4, 4)
        self.head = nn.Linear(4, 1)

    def forward(self, x):
        return self.head(self.recurrent(x))


model = Forecaster()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
before = model.head.weight.detach().clone()
loss = model(torch.randn(20, 4)).square().mean()
loss.backward()
optimizer.step()
print(bool((model.head.weight - before).abs().sum() > 0))
""",
            prints="True",
        ),
        # the same flag's `else` arm writes the array its view was taken of
        Invalid(
            """
import numpy as np
import torch


def load_series(values: np.ndarray, on_gpu: bool):
    if on_gpu:
        data = torch.empty(values.shape + (2,), device="cuda")
        data[..., 0] = torch.from_numpy(values).cuda()
    else:
        data = np.expand_dims(values, axis=-1)
        parts = [data[:]]
    if on_gpu:
        data[..., 1] = torch.arange(values.shape[0], device="cuda")[:, None]
    else:
        data[..., 0] += 1.0
        parts.append(np.zeros_like(values)[..., None])
    return data if on_gpu else np.concatenate(parts, axis=-1)
""",
            (16,),
            fixed="""
import numpy as np
import torch


def load_series(values: np.ndarray, on_gpu: bool):
    if on_gpu:
        data = torch.empty(values.shape + (2,), device="cuda")
        data[..., 0] = torch.from_numpy(values).cuda()
    else:
        data = np.expand_dims(values, axis=-1)
        parts = [data[:].copy()]
    if on_gpu:
        data[..., 1] = torch.arange(values.shape[0], device="cuda")[:, None]
    else:
        data[..., 0] += 1.0
        parts.append(np.zeros_like(values)[..., None])
    return data if on_gpu else np.concatenate(parts, axis=-1)
""",
        ),
        Invalid(
            """
import torch

def shift(scores, center):
    first = scores[0]
    scores = scores.sub_(scores.mean()) if center else scores
    return first, scores
""",
            (6,),
            fixed="""
import torch

def shift(scores, center):
    first = scores[0].clone()
    scores = scores.sub_(scores.mean()) if center else scores
    return first, scores
""",
        ),
        Invalid(
            """
import torch

def swap_rows(m: torch.Tensor, i: int, j: int) -> torch.Tensor:
    m = m.clone()
    m[i], m[j] = m[j], m[i]
    return m
""",
            (6,),
            fixed="""
import torch

def swap_rows(m: torch.Tensor, i: int, j: int) -> torch.Tensor:
    m = m.clone()
    m[i], m[j] = m[j], m[i].clone()
    return m
""",
        ),
        Invalid(
            """
import torch

m = torch.tensor([[1.0], [2.0]])
m[0], m[1] = m[1], m[0]
print(m.flatten().tolist())
""",
            (5,),
            fixed="""
import torch

m = torch.tensor([[1.0], [2.0]])
m[0], m[1] = m[1], m[0].clone()
print(m.flatten().tolist())
""",
            prints="[2.0, 1.0]",
        ),
        Invalid(
            """
import torch

def swap_rows(m: torch.Tensor, i: int, j: int, first: bool) -> torch.Tensor:
    m = m.clone()
    m[i], m[j] = m[j], m[i] if first else m[0]
    return m
""",
            (6,),
        ),
        Invalid(
            """
import torch

def unroll(cell, xs):
    hidden = torch.zeros(xs.shape[1:])
    states = []
    for x in xs:
        hidden.copy_(cell(x, hidden))
        states.append(hidden)
    return torch.stack(states)
""",
            (8,),
            fixed="""
import torch

def unroll(cell, xs):
    hidden = torch.zeros(xs.shape[1:])
    states = []
    for x in xs:
        hidden.copy_(cell(x, hidden))
        states.append(hidden.clone())
    return torch.stack(states)
""",
        ),
        Invalid(
            """
import torch

def smoothed_change(updates, decay):
    hidden = torch.zeros_like(updates[0])
    prev = hidden.detach()
    for update in updates:
        hidden.mul_(decay).add_(update)
    return hidden - prev
""",
            (8,),
            fixed="""
import torch

def smoothed_change(updates, decay):
    hidden = torch.zeros_like(updates[0])
    prev = hidden.detach().clone()
    for update in updates:
        hidden.mul_(decay).add_(update)
    return hidden - prev
""",
        ),
        Invalid(
            """
import torch

def perturbed_pair(model, batch, scale: float):
    x = model.encode(batch)
    noisy = x.detach()
    noisy += torch.randn_like(noisy) * scale
    return x, noisy
""",
            (7,),
            fixed="""
import torch

def perturbed_pair(model, batch, scale: float):
    x = model.encode(batch)
    noisy = x.detach().clone()
    noisy += torch.randn_like(noisy) * scale
    return x, noisy
""",
        ),
        Invalid(
            """
import torch

hidden = torch.ones(3)
prev = hidden.detach()
hidden.mul_(0.5).add_(1.0)
print((hidden - prev).tolist())
""",
            (6,),
            fixed="""
import torch

hidden = torch.ones(3)
prev = hidden.detach().clone()
hidden.mul_(0.5).add_(1.0)
print((hidden - prev).tolist())
""",
            prints="[0.5, 0.5, 0.5]",
        ),
    )

    def check(self, ctx: FileContext) -> Iterator[Report]:
        for facts in ctx.semantic.facts:
            for read in first_reads(ctx, facts, _is_reported, lambda read: id(read.write)):
                yield Report(
                    read.write.node,
                    self._message(ctx, read),
                    fix=clone_at(ctx, _copy_point(ctx, read), _numpy_only(read)),
                )

    def _message(self, ctx: FileContext, read: Read) -> str:
        write = read.write
        if not _is_place(read.place):  # a right-hand side of `a, b = b, a`
            return (
                f"{write_text(ctx, write)} also changes `{read.place}`, a view on the right-hand side of this "
                "tuple assignment, before it is assigned in turn: the swap copies one value twice"
            )
        if read.reader.stored and read.reader.kind is AliasKind.OWN:
            return (
                f"{write_text(ctx, write)} also changes the tensor stored in `{read.place}` at line "
                f"{ctx.line(read.reader.node)}: the container holds the tensor itself, not its value then, "
                f"and is read at line {ctx.line(read.node)}"
            )
        if read.reader.kind in SNAPSHOT_KINDS:
            return (
                f"{write_text(ctx, write)} also changes `{read.place}`, {alias_phrase(read.reader)} of the same "
                f"memory made at line {ctx.line(read.reader.node)} and read at line {ctx.line(read.node)} "
                "as if it still held the old values"
            )
        return (
            f"{write_text(ctx, write)} writes through {alias_phrase(write.writer)} made at line "
            f"{ctx.line(write.writer.node)}, not a copy: `{read.place}`, read at line {ctx.line(read.node)}, "
            "changes too"
        )


def _copy_point(ctx: FileContext, read: Read):
    """Where a `.clone()` makes the alias a copy: the snapshot or the stored tensor, else the alias
    written through; in a swap through views, the right-hand side's view that an earlier target
    overwrote (`x[i], x[j] = x[j], x[i].clone()`), when it is one expression (not `p if c else q`)."""
    if not _is_place(read.place):
        return read.node if ctx.code(read.node) == read.place else None
    node = read.reader.node
    if read.reader.stored and isinstance(node, cst.Call):  # `states.append(hidden)`: the tensor stored
        return node.args[-1].value if node.args and node.args[-1].keyword is None else None
    if read.reader.kind in SNAPSHOT_KINDS or read.reader.stored:
        return node
    return read.write.writer.node


def _numpy_only(read: Read) -> bool:
    """The memory is a numpy array's, never a tensor's: its copy is `.copy()`."""
    handles = (read.reader, read.write.writer)
    return all(h.ndarray and not h.tensor for h in handles)


def _is_reported(read: Read, facts: ScopeFacts) -> bool:
    return _is_stale_snapshot(read, facts) or _is_copy_lookalike_write(read, facts)


def _is_stale_snapshot(read: Read, facts: ScopeFacts) -> bool:
    reader, write = read.reader, read.write
    if not (reader.kind in SNAPSHOT_KINDS or _is_stored_local(read)) or reader.node is None or write.init:
        return False
    if reader in facts.written_handles:
        return False  # written through itself: a working view, not a snapshot
    if write.module and _read_through_module(read):
        return False
    both_partial = reader.partial and write.partial
    return not both_partial or (reader.index is not None and reader.index == write.index)


def _read_through_module(read: Read) -> bool:
    """`model.load_state_dict(sd)` then `model.head.bias`: a load writes the module's tensors where
    they are, and a read through the module's own attributes reads what it loaded, as meant; an
    alias bound elsewhere before the load is what keeps a name for the old values."""
    call = read.write.node
    if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)):
        return False
    module = dotted_name(call.func.value)
    return module is not None and read.place.startswith(module + ".")


def _is_copy_lookalike_write(read: Read, facts: ScopeFacts) -> bool:
    writer = read.write.writer
    return (
        writer.kind in _COPY_LOOKALIKES
        and writer.node is not None
        and read.reader.kind in (AliasKind.OWN, AliasKind.PARAMETERS)
        and read.reader.storage is writer.storage  # the same tensor, not the object holding it
        and read.write in facts.own_reads
    )


def _is_stored_local(read: Read) -> bool:
    """`outputs.append(hidden)` then `hidden.add_(x)`: the list holds the live tensor, not
    its value at the time. Only for tensors this function made, outside optimizer steps."""
    reader = read.reader
    return (
        reader.stored
        and reader.kind is AliasKind.OWN
        and reader.storage.origin == "fresh"
        and read.write.certain  # `+=` may rebind an int or a tuple
        and not (read.write.module or read.write.partial)
    )


def _is_place(text: str) -> bool:
    return all(part.isidentifier() for part in text.split("."))
