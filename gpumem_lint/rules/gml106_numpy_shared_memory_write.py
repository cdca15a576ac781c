from collections.abc import Iterator

import libcst as cst

from gpumem_lint.context import FileContext
from gpumem_lint.diagnostics import Applicability, Severity
from gpumem_lint.fixes import Fix, insert_after
from gpumem_lint.rules._reporting import first_reads, write_text
from gpumem_lint.rules.base import Invalid, Report, Rule
from gpumem_lint.semantic.flow import ScopeFacts
from gpumem_lint.semantic.values import AliasKind, Handle, Read, Write
from gpumem_lint.semantic.write_triggers import WRITES

# Bridges by what they return: a tensor is copied with `.clone()`, an ndarray with `.copy()`.
_TENSOR_BRIDGES = frozenset({"torch.from_numpy", "torch.as_tensor", "torch.asarray"})
_ARRAY_BRIDGES = frozenset({"numpy.asarray", "numpy.array"})


class NumpySharedMemoryWrite(Rule):
    """
    ## What it does
    Flags an in-place write on one side of a numpy bridge — `torch.from_numpy(a)`,
    `torch.as_tensor(a)` / `torch.asarray(a)` without a dtype change, `t.numpy()`,
    `np.asarray(t)` — while the other side is read afterwards as a separate value. The
    common shape is one numpy buffer refilled in a loop while the tensors made from it
    are collected: every collected tensor ends up holding the last batch. Also flagged: a
    method (a Dataset's `__getitem__`) writing, through a bridge, an array the object keeps
    (`torch.from_numpy(self.features[i]).sub_(mean)`) and then reading or returning what it wrote:
    every later call reads the written values. A method that uses none of it afterwards
    (`self.slots.numpy()[a:b] = ids`) writes the object's state on purpose. In a module that
    imports TensorFlow, JAX, Paddle or MindSpore and not torch, `.numpy()` is theirs, which
    returns a copy (`aliasing.toml` [numpy_bridge] `other_numpy_frameworks`).

    ## Why is this bad?
    A CPU tensor and its numpy array share memory, and the tensor's version counter
    does not move when numpy writes ([docs/facts.md](../docs/facts.md) F7: `t.numpy()[0] = 42`
    changes the tensor with `_version` still 0). Nothing in PyTorch or numpy reports it;
    the program just computes with other values than it appears to.

    ## Known problems
    `torch.as_tensor(a)` shares memory only when `a` is an ndarray (or a tensor) of the
    same dtype; it is followed only when `a` is known to be one (made by numpy in the same
    function). Memory allocated again by each loop iteration is told apart from the previous
    iteration's, so a buffer created inside the loop is not reported. A mapping whose item is
    replaced by its tensor (`sample["depth"] = torch.from_numpy(sample["depth"])`) holds the
    tensor only: writing `sample["depth"]` and returning `sample` uses one side of the bridge.

    ## Example
    ```python
    buffer = np.empty((batch, dim), dtype=np.float32)
    batches = []
    for chunk in reader:
        buffer[:] = chunk
        batches.append(torch.from_numpy(buffer))
    ```

    ## Use instead
    ```python
    for chunk in reader:
        buffer[:] = chunk
        batches.append(torch.from_numpy(buffer).clone())  # or torch.tensor(buffer)
    ```

    ## Fix safety
    The fix copies at the bridge: `.clone()` after `torch.from_numpy(a)` /
    `torch.as_tensor(a)` / `torch.asarray(a)`, `.copy()` after `t.numpy()` / `np.asarray(t)`.
    It is unsafe: the copy costs memory and time for every call, and code that relied on
    the two sides sharing memory (a buffer meant to be seen through the tensor) changes
    meaning. Apply it with `--fix --unsafe-fixes` and review the diff.

    ## References
    - [`torch.from_numpy`](https://docs.pytorch.org/docs/stable/generated/torch.from_numpy.html)
    - [`torch.Tensor.numpy`](https://docs.pytorch.org/docs/stable/generated/torch.Tensor.numpy.html)
    """

    code = "GML106"
    name = "numpy-shared-memory-write"
    severity = Severity.WARNING
    summary = "In-place write on one side of a numpy bridge while the other side is still used"
    fix_title = "Copy at the bridge (`torch.tensor(a)`, `t.numpy().copy()`, `.clone()`) when the two must differ"
    triggers = ("numpy", "as_tensor", "asarray")
    scope_triggers = WRITES
    fix_applicability = Applicability.UNSAFE
    VALID = (
        # a module of TensorFlow's: `.numpy()` of its variable is a copy
        """
import tensorflow as tf


class Controller:
    def __init__(self, steps):
        self.global_step = tf.Variable(0, dtype=tf.int64)
        self.train_steps = steps

    def train(self, train_fn):
        current_step = self.global_step.numpy()
        while current_step < self.train_steps:
            current_step += 10
            train_fn(10)
            if current_step != self.global_step.numpy():
                raise RuntimeError("step not updated")
""",
        """
import numpy as np
import torch

def load(reader, batch, dim):
    buffer = np.empty((batch, dim), dtype=np.float32)
    batches = []
    for chunk in reader:
        buffer[:] = chunk
        batches.append(torch.tensor(buffer))
    return torch.stack(batches)
""",
        """
import torch

def to_image(t: torch.Tensor):
    array = t.detach().cpu().numpy()
    return (array * 255).astype("uint8")
""",
        # the bridge shares `record.tokens` only: reading `record.mask` reads another array
        """
import torch

def to_inputs(record):
    tokens = torch.from_numpy(record.tokens)
    tokens[0] = 31
    counts = [int(row.sum()) for row in record.mask]
    return tokens, counts
""",
        # the method writes its free list through the bridge and reads none of it after: the write is its job
        """
import torch

class FreeList:
    def __init__(self, size: int):
        self.slots = torch.arange(size, dtype=torch.int32)
        self.top = size

    def release(self, ids: list):
        self.slots.numpy()[self.top - len(ids):self.top] = ids
        self.top -= len(ids)
""",
        # the dict's "depth" is replaced by the tensor: returning the dict hands back the written side only
        """
import torch


def load(transform, image, depth):
    sample = transform({"image": image, "depth": depth})
    sample["image"] = torch.from_numpy(sample["image"])
    sample["depth"] = torch.from_numpy(sample["depth"])
    sample["depth"][sample["depth"] < 0] = 0
    return sample
""",
    )
    INVALID = (
        # the array is still read through a name of its own after the tensor made from it was written
        Invalid(
            """
import torch


def load(transform, image, depth):
    sample = transform({"image": image, "depth": depth})
    array = sample["depth"]
    sample["depth"] = torch.from_numpy(array)
    sample["depth"][sample["depth"] < 0] = 0
    return sample, float(array.mean())
""",
            (9,),
            fixed="""
import torch


def load(transform, image, depth):
    sample = transform({"image": image, "depth": depth})
    array = sample["depth"]
    sample["depth"] = torch.from_numpy(array).clone()
    sample["depth"][sample["depth"] < 0] = 0
    return sample, float(array.mean())
""",
        ),
        # the same with torch: the step counter's array is the tensor's memory
        Invalid(
            """
import torch


class Controller:
    def __init__(self, steps):
        self.global_step = torch.zeros((), dtype=torch.int64)
        self.train_steps = steps

    def train(self, train_fn):
        current_step = self.global_step.numpy()
        while current_step < self.train_steps:
            current_step += 10
            train_fn(10)
            if current_step != self.global_step.numpy():
                raise RuntimeError("step not updated")
""",
            (13,),
            fixed="""
import torch


class Controller:
    def __init__(self, steps):
        self.global_step = torch.zeros((), dtype=torch.int64)
        self.train_steps = steps

    def train(self, train_fn):
        current_step = self.global_step.numpy().copy()
        while current_step < self.train_steps:
            current_step += 10
            train_fn(10)
            if current_step != self.global_step.numpy():
                raise RuntimeError("step not updated")
""",
        ),
        Invalid(
            """
import numpy as np
import torch

buffer = np.zeros(2, dtype=np.float32)
batches = []
for value in (1.0, 2.0):
    buffer[:] = value
    batches.append(torch.from_numpy(buffer))
print(torch.stack(batches).tolist())
""",
            (8,),
            fixed="""
import numpy as np
import torch

buffer = np.zeros(2, dtype=np.float32)
batches = []
for value in (1.0, 2.0):
    buffer[:] = value
    batches.append(torch.from_numpy(buffer).clone())
print(torch.stack(batches).tolist())
""",
            prints='[[1.0, 1.0], [2.0, 2.0]]',
        ),
        Invalid(
            """
import numpy as np
import torch

def load(reader, batch, dim):
    buffer = np.empty((batch, dim), dtype=np.float32)
    batches = []
    for chunk in reader:
        buffer[:] = chunk
        batches.append(torch.from_numpy(buffer))
    return torch.stack(batches)
""",
            (9,),
            fixed="""
import numpy as np
import torch

def load(reader, batch, dim):
    buffer = np.empty((batch, dim), dtype=np.float32)
    batches = []
    for chunk in reader:
        buffer[:] = chunk
        batches.append(torch.from_numpy(buffer).clone())
    return torch.stack(batches)
""",
        ),
        Invalid(
            """
import torch

def augment(path):
    t = torch.load(path)
    original = t.numpy()
    t.mul_(2)
    return original.mean(), t.mean()
""",
            (7,),
            fixed="""
import torch

def augment(path):
    t = torch.load(path)
    original = t.numpy().copy()
    t.mul_(2)
    return original.mean(), t.mean()
""",
        ),
        # the dataset keeps the array: each `__getitem__` normalises the stored features again
        Invalid(
            """
import numpy as np
import torch
from torch.utils.data import Dataset

class Features(Dataset):
    def __init__(self, features: np.ndarray):
        self.features = features.astype(np.float32)
        self.mean = torch.from_numpy(self.features.mean(axis=0))

    def __len__(self):
        return len(self.features)

    def __getitem__(self, i):
        x = torch.from_numpy(self.features[i])
        x.sub_(self.mean)
        return x

data = Features(np.ones((2, 3)))
data[0]
print(data[0].tolist())
""",
            (16,),
            fixed="""
import numpy as np
import torch
from torch.utils.data import Dataset

class Features(Dataset):
    def __init__(self, features: np.ndarray):
        self.features = features.astype(np.float32)
        self.mean = torch.from_numpy(self.features.mean(axis=0))

    def __len__(self):
        return len(self.features)

    def __getitem__(self, i):
        x = torch.from_numpy(self.features[i]).clone()
        x.sub_(self.mean)
        return x

data = Features(np.ones((2, 3)))
data[0]
print(data[0].tolist())
""",
            prints="[0.0, 0.0, 0.0]",
        ),
    )

    def check(self, ctx: FileContext) -> Iterator[Report]:
        for facts in ctx.semantic.facts:
            reported = set()
            for read in first_reads(ctx, facts, _crosses_bridge, lambda read: id(read.write)):
                reported.add(read.write.node)
                yield Report(
                    read.write.node,
                    f"{write_text(ctx, read.write)} also changes `{read.place}` (read at line "
                    f"{ctx.line(read.node)}): the two sides of the numpy bridge share memory",
                    fix=_copy_at_bridge(ctx, read.reader if read.reader.kind is AliasKind.NUMPY else read.write.writer),
                )
            for write in _object_state_writes(facts):
                if write.node not in reported:
                    reported.add(write.node)
                    yield Report(
                        write.node,
                        f"{write_text(ctx, write)} writes `{write.storage.label}` through the numpy bridge: the object "
                        "keeps that array, so every later call sees the written values",
                        fix=_copy_at_bridge(ctx, write.writer),
                    )


def _object_state_writes(facts: ScopeFacts) -> Iterator[Write]:
    """`x = torch.from_numpy(self.features[i]); x.sub_(mean)` in a method other than `__init__`: the write
    lands in an array the object keeps, which its next call reads again (normalised twice, and so on)."""
    scope = facts.scope
    if not scope.is_method or scope.name == "__init__" or not scope.all_params:
        return
    kept = scope.all_params[0] + "."  # an attribute of the object the method is bound to
    # A write the method neither reads again nor returns changes nothing but the object's state: that
    # is what it is for (`self.free.numpy()[a:b] = ids`, a fast way to write the tensor itself).
    read_again = {id(read.write) for read in facts.reads} | {id(write) for write in facts.own_reads}
    for write in facts.writes:
        if write.writer.kind is not AliasKind.NUMPY or not write.storage.label.startswith(kept) or write.no_grad:
            continue
        if id(write) in read_again or any(write.storage.related(storage) for storage in facts.returned):
            yield write


def _copy_at_bridge(ctx: FileContext, shared: Handle) -> Fix | None:
    """Copy where the shared side is made, so the side read later owns its memory."""
    for handle in shared.chain():
        call = handle.node
        if handle.kind is not AliasKind.NUMPY or not isinstance(call, cst.Call):
            continue
        name = ctx.semantic.imports.qualify(call.func)
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == "numpy" and not call.args:
            copy = ".copy()"
        elif name in _TENSOR_BRIDGES:
            copy = ".clone()"
        elif name in _ARRAY_BRIDGES:
            copy = ".copy()"
        else:
            continue
        return Fix((insert_after(call, copy),), Applicability.UNSAFE, f"Append `{copy}` to `{ctx.code(call)}`")
    return None


def _crosses_bridge(read: Read, facts: ScopeFacts) -> bool:
    writer, reader = read.write.writer, read.reader
    if reader.kind is AliasKind.NUMPY:
        return writer.kind is not AliasKind.NUMPY and reader.node is not None and reader not in facts.written_handles
    # Written through the bridge while both sides are still used as two values.
    return writer.kind is AliasKind.NUMPY and writer.node is not None and read.write in facts.own_reads
