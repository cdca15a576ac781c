from collections.abc import Iterator

import libcst as cst

from gpumem_lint.context import FileContext
from gpumem_lint.diagnostics import Applicability
from gpumem_lint.rules._copy_fix import copy_the_tensors
from gpumem_lint.rules._reporting import first_reads, write_text
from gpumem_lint.rules.base import Invalid, Report, Rule
from gpumem_lint.semantic.imports import dotted_name
from gpumem_lint.semantic.values import AliasKind, Read
from gpumem_lint.semantic.write_triggers import WRITES


class StateDictAliasSnapshot(Rule):
    """
    ## What it does
    Flags a `state_dict()` kept as a snapshot (the "best weights so far") while the
    module keeps changing: an optimizer step, `load_state_dict`, or a training call
    that receives the module runs after it, and the snapshot is read later.

    ## Why is this bad?
    `Module.state_dict()` returns the module's own parameter and buffer tensors
    (detached aliases), not copies. Every later optimizer step writes them in place, so
    the "snapshot" always holds the *current* weights: the model you save or restore as
    "best" is silently the last one. Measured on torch 2.13:
    `model.state_dict()[k].zero_()` zeroes the model's weight
    ([docs/facts.md](../docs/facts.md) F3). Wrapping the dict (`dict(…)`,
    `OrderedDict(…)`, `.copy()`, a comprehension over `.items()`, `v.detach()`) copies
    only the dictionary, not the tensors.

    A snapshot kept on the object (`self.best = self.model.state_dict()`) in a method that
    goes on training is reported when another method of the class reads it (`restore_best`
    loading it); so is one that the keeping method loads back into the module it came from
    on another path, so on a later call (an early-stopping callback that keeps the "best"
    weights at one epoch's end and restores them at another's): the load copies the module's
    current weights onto themselves.

    ## Known problems
    `{k: v.cpu() for …}` and `v.to("cpu")` copy only when the model is on another
    device; on a CPU model they return the same tensors. They are treated as copies.
    A call trains the module it is given when its name says so (`train_one_epoch(model)`,
    `trainer.fit(model)`: `training_calls` in
    [`heuristics.toml`](../gpumem_lint/knowledge/heuristics.toml)), and `x.step()` is an
    optimizer step when the optimizer was built in view or `x` is named like one
    (`optimizer_names`); the `load_state_dict()` of a receiver named like one loads
    the optimizer's state and writes no module's. An object's `__dict__` (`model.config.__dict__`) is a
    dict of its own, so its `update()` trains nothing. A dict given to
    `torch.distributed.checkpoint.load` is the load's destination: it fills those tensors in
    place (F42), so the module is restored and nothing is reported.

    ## Example
    ```python
    best_state, best_acc = None, 0.0
    for epoch in range(epochs):
        train_one_epoch(model, loader, optimizer)
        acc = evaluate(model, val_loader)
        if acc > best_acc:
            best_acc, best_state = acc, model.state_dict()
    model.load_state_dict(best_state)
    ```

    ## Use instead
    ```python
    best_state = copy.deepcopy(model.state_dict())
    # or: {k: v.detach().clone() for k, v in model.state_dict().items()}
    ```

    ## Fix safety
    The fix copies the tensors: `model.state_dict()` becomes
    `copy.deepcopy(model.state_dict())` (adding `import copy` when needed), and a
    `v.detach()` taken from it becomes `v.detach().clone()`. It is unsafe: the copy
    costs memory equal to the model's size (on the model's device), which is a choice
    the author should make, and code that meant to follow the live weights changes
    meaning.

    ## References
    - [Saving and loading models: `state_dict`](https://docs.pytorch.org/tutorials/beginner/saving_loading_models.html)
    - [`torch.nn.Module.state_dict`](https://docs.pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.state_dict)
    """

    code = "GML102"
    name = "state-dict-alias-snapshot"
    summary = "`state_dict()` kept as a snapshot shares memory with the live parameters"
    fix_title = "Copy the tensors: `copy.deepcopy(model.state_dict())` or `{k: v.detach().clone() for k, v in ...}`"
    fix_applicability = Applicability.UNSAFE
    triggers = ("state_dict",)
    scope_triggers = WRITES
    VALID = (
        # `model.config.__dict__` is a dict of its own: updating it writes no tensor of the model
        """
import torch


def export(model, path):
    weights = model.state_dict()
    info = model.config.__dict__
    info.update(model.generation_config.__dict__)
    torch.save({"weights": weights, "info": info}, path)
""",
        """
def resume(state, optimizer_state):
    snapshot = {"state": state.state_dict()}
    state.optimizers[0].load_state_dict(optimizer_state)
    return snapshot["state"]
""",
        """
import torch

def check_warm_start(model, new_model, x, y):
    model.fit(x, y)
    state = model.state_dict()
    new_model.fit(x, y, initialization=state)
    for key, value in state.items():
        assert torch.equal(value, new_model.state_dict()[key])
""",
        """
from trainer.optim import StepInBackward


def state_is_unchanged_by_step(model, inputs):
    optimizer = StepInBackward(model.parameters(), lr=0.1)
    before = optimizer.state_dict()
    model(inputs).sum().backward()
    optimizer.step()
    return optimizer.state_dict() == before
""",
        """
import copy

def fit(model, optimizer, loader, epochs):
    best_state, best_loss = None, float("inf")
    for epoch in range(epochs):
        loss = train_one_epoch(model, loader, optimizer)
        if loss < best_loss:
            best_loss, best_state = loss, copy.deepcopy(model.state_dict())
    model.load_state_dict(best_state)
""",
        """
import torch

def checkpoint(model, optimizer, path):
    for step in range(100):
        optimizer.step()
        if step % 10 == 0:
            torch.save(model.state_dict(), path)
""",
        # `.update(...)` on what a state_dict holds is a dict's (a tensor has no such method)
        """
import torch

from schedules import Warmup


def retune(params):
    optimizer = Warmup(torch.optim.AdamW([{"params": params}], lr=1e-3))
    state = optimizer.state_dict()
    state["param_groups"][0].update({"lr": 1e-4, "weight_decay": 0.0})
    optimizer.load_state_dict(state)
    return optimizer
""",
        # a checkpoint load fills the dict it is given in place (F42): the dict is its destination
        """
import torch
import torch.distributed.checkpoint as dcp

def round_trip(model, path):
    state = model.state_dict()
    dcp.save(state, checkpoint_id=path)
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
    dcp.load(state, checkpoint_id=path)
    model.load_state_dict(state)
""",
        # `assign=True` makes each layer hold the other's tensors: the earlier dicts keep their values (F46)
        """
import copy

import torch


def swap_weights(first: torch.nn.Linear, second: torch.nn.Linear):
    first_state, second_state = first.state_dict(), second.state_dict()
    first.load_state_dict(second_state, assign=True)
    second.load_state_dict(first_state, assign=True)
    return all(torch.equal(second.state_dict()[k], first_state[k]) for k in first_state)
""",
        # kept on the object, but only written out before the next step; no other method reads it
        """
import torch
from torch import nn


class Trainer:
    def __init__(self, model: nn.Module, lr: float, path: str):
        self.model, self.path = model, path
        self.optimizer = torch.optim.SGD(model.parameters(), lr=lr)
        self.best_loss = float("inf")

    def train(self, batches, epochs):
        for epoch in range(epochs):
            for inputs, targets in batches:
                self.optimizer.zero_grad()
                nn.functional.mse_loss(self.model(inputs), targets).backward()
                self.optimizer.step()
            loss = sum(nn.functional.mse_loss(self.model(x), y).item() for x, y in batches)
            if loss < self.best_loss:
                self.best_loss, self.best_state = loss, self.model.state_dict()
                torch.save(self.best_state, self.path)  # written out before the next step
""",
        # kept, then loaded into another module: a copy of the current weights into the target, as meant
        """
from torch import nn


class TargetSync:
    def __init__(self, online: nn.Module, target: nn.Module, every: int):
        self.online, self.target, self.every = online, target, every
        self.weights = None

    def on_step_end(self, step):
        if step % self.every == 0:
            self.weights = self.online.state_dict()
        elif self.weights is not None:
            self.target.load_state_dict(self.weights)
""",
        # kept by one method, loaded back by another: whether anything changed it between them is the caller's
        """
class SparsityCallback:
    def __init__(self, sparsifier):
        self.sparsifier, self.state = sparsifier, None

    def on_epoch_start(self):
        if self.state is not None:
            self.sparsifier.load_state_dict(self.state)

    def on_epoch_end(self):
        self.sparsifier.squash()
        self.state = self.sparsifier.state_dict()
""",
    )
    INVALID = (
        # an early-stopping callback keeps the "best" weights and loads them back on a later call
        Invalid(
            """
from torch import nn


class EarlyStopping:
    def __init__(self, model: nn.Module, patience: int):
        self.model, self.patience = model, patience
        self.best_loss, self.bad_epochs, self.best = float("inf"), 0, None

    def on_epoch_end(self, loss):
        if loss < self.best_loss:
            self.best_loss, self.bad_epochs = loss, 0
            self.best = self.model.state_dict()
        else:
            self.bad_epochs += 1
            if self.bad_epochs >= self.patience:
                self.model.load_state_dict(self.best)
""",
            (13,),
            fixed="""
import copy
from torch import nn


class EarlyStopping:
    def __init__(self, model: nn.Module, patience: int):
        self.model, self.patience = model, patience
        self.best_loss, self.bad_epochs, self.best = float("inf"), 0, None

    def on_epoch_end(self, loss):
        if loss < self.best_loss:
            self.best_loss, self.bad_epochs = loss, 0
            self.best = copy.deepcopy(self.model.state_dict())
        else:
            self.bad_epochs += 1
            if self.bad_epochs >= self.patience:
                self.model.load_state_dict(self.best)
""",
        ),
        # the optimizer's step, not the dict's update, writes the model's tensors
        Invalid(
            """
import torch


def export(model, optimizer, batch, path):
    weights = model.state_dict()
    info = model.config.__dict__
    model(batch).sum().backward()
    optimizer.step()
    torch.save({"weights": weights, "info": info}, path)
""",
            (6,),
            fixed="""
import copy
import torch


def export(model, optimizer, batch, path):
    weights = copy.deepcopy(model.state_dict())
    info = model.config.__dict__
    model(batch).sum().backward()
    optimizer.step()
    torch.save({"weights": weights, "info": info}, path)
""",
        ),
        # kept on the trainer while training goes on; `restore_best` loads the last weights
        Invalid(
            """
import torch
from torch import nn


class Trainer:
    def __init__(self, model: nn.Module, lr: float):
        self.model = model
        self.optimizer = torch.optim.SGD(model.parameters(), lr=lr)
        self.best_loss, self.best_state = float("inf"), None

    def train(self, batches, epochs):
        for epoch in range(epochs):
            for inputs, targets in batches:
                self.optimizer.zero_grad()
                nn.functional.mse_loss(self.model(inputs), targets).backward()
                self.optimizer.step()
            loss = self.evaluate(batches)
            if loss < self.best_loss:
                self.best_loss, self.best_state = loss, self.model.state_dict()

    @torch.no_grad()
    def evaluate(self, batches):
        return sum(nn.functional.mse_loss(self.model(x), y).item() for x, y in batches)

    def restore_best(self):
        self.model.load_state_dict(self.best_state)
""",
            (20,),
            fixed="""
import copy
import torch
from torch import nn


class Trainer:
    def __init__(self, model: nn.Module, lr: float):
        self.model = model
        self.optimizer = torch.optim.SGD(model.parameters(), lr=lr)
        self.best_loss, self.best_state = float("inf"), None

    def train(self, batches, epochs):
        for epoch in range(epochs):
            for inputs, targets in batches:
                self.optimizer.zero_grad()
                nn.functional.mse_loss(self.model(inputs), targets).backward()
                self.optimizer.step()
            loss = self.evaluate(batches)
            if loss < self.best_loss:
                self.best_loss, self.best_state = loss, copy.deepcopy(self.model.state_dict())

    @torch.no_grad()
    def evaluate(self, batches):
        return sum(nn.functional.mse_loss(self.model(x), y).item() for x, y in batches)

    def restore_best(self):
        self.model.load_state_dict(self.best_state)
""",
        ),
        Invalid(
            """
import torch

model = torch.nn.Linear(1, 1, bias=False)
torch.nn.init.ones_(model.weight)
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
initial = model.state_dict()
model(torch.ones(1, 1)).sum().backward()
optimizer.step()
print(model.weight.item(), initial["weight"].item())
""",
            (7,),
            fixed="""
import copy
import torch

model = torch.nn.Linear(1, 1, bias=False)
torch.nn.init.ones_(model.weight)
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
initial = copy.deepcopy(model.state_dict())
model(torch.ones(1, 1)).sum().backward()
optimizer.step()
print(model.weight.item(), initial["weight"].item())
""",
            prints="0.5 1.0",
        ),
        Invalid(
            """
def fit(model, optimizer, loader, epochs):
    best_state, best_loss = None, float("inf")
    for epoch in range(epochs):
        loss = train_one_epoch(model, loader, optimizer)
        if loss < best_loss:
            best_loss, best_state = loss, model.state_dict()
    model.load_state_dict(best_state)
""",
            (7,),
            fixed="""
import copy

def fit(model, optimizer, loader, epochs):
    best_state, best_loss = None, float("inf")
    for epoch in range(epochs):
        loss = train_one_epoch(model, loader, optimizer)
        if loss < best_loss:
            best_loss, best_state = loss, copy.deepcopy(model.state_dict())
    model.load_state_dict(best_state)
""",
        ),
        Invalid(
            """
import torch

def finetune(model, batches):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    initial = {k: v.detach() for k, v in model.state_dict().items()}
    for x, y in batches:
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
    return {k: model.state_dict()[k] - initial[k] for k in initial}
""",
            (6,),
            fixed="""
import torch

def finetune(model, batches):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    initial = {k: v.detach().clone() for k, v in model.state_dict().items()}
    for x, y in batches:
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
    return {k: model.state_dict()[k] - initial[k] for k in initial}
""",
        ),
    )

    def check(self, ctx: FileContext) -> Iterator[Report]:
        reported: set[int] = set()
        for facts in ctx.semantic.facts:
            for read in first_reads(ctx, facts, _is_snapshot_read, lambda read: id(read.reader.node)):
                reported.add(id(read.reader.node))
                yield Report(
                    read.reader.node,
                    f"this `state_dict()` is not a snapshot: its tensors are the module's own, so "
                    f"{write_text(ctx, read.write)} at line {ctx.line(read.write.node)} overwrites them before "
                    f"`{read.place}` is read at line {ctx.line(read.node)}",
                    fix=copy_the_tensors(ctx, read.reader.node),
                )
        yield from _kept_on_the_object(ctx, reported)


def _kept_on_the_object(ctx: FileContext, reported: set[int]) -> Iterator[Report]:
    """`self.best = self.model.state_dict()` kept on the object: stale when another method of the class reads
    it after a write in the keeping method (`self.model.load_state_dict(self.best)` in `fit`), or when the
    keeping method loads it back into the module on another path, so on a later call: a method that keeps
    weights on one call to restore them on another is called between changes of them (a callback at each
    epoch's end), and what the kept dict holds then is the current weights, so the load restores nothing."""
    methods = [facts for facts in ctx.semantic.facts if facts.scope.is_method]
    for facts in methods:
        for place, snapshot, write in facts.kept_state_dicts:
            if snapshot in facts.written_handles or id(snapshot.node) in reported:
                continue  # loaded into (a handle on the module, not a snapshot), or read stale in the method
            siblings = [other for other in methods if other.scope.class_name == facts.scope.class_name]
            report = _read_elsewhere(ctx, facts, siblings, place, snapshot, write) or _loaded_back(
                ctx, facts, place, snapshot
            )
            if report is not None:
                reported.add(id(snapshot.node))
                yield report


def _read_elsewhere(ctx: FileContext, facts, siblings, place: str, snapshot, write) -> Report | None:
    readers = [
        (other, other.first_reads[place]) for other in siblings if other is not facts and place in other.first_reads
    ]
    if write is None or not readers:
        return None
    reader, node = min(readers, key=lambda item: ctx.line(item[1]))
    return Report(
        snapshot.node,
        f"this `state_dict()` kept in `{place}` is not a snapshot: {write_text(ctx, write)} at line "
        f"{ctx.line(write.node)} overwrites its tensors before `{reader.scope.name}` reads it at line "
        f"{ctx.line(node)}",
        fix=copy_the_tensors(ctx, snapshot.node),
    )


def _loaded_back(ctx: FileContext, facts, place: str, snapshot) -> Report | None:
    module = dotted_name(snapshot.node.func.value) if isinstance(snapshot.node, cst.Call) else None
    if module is None or not module.startswith("self."):
        return None  # only the object's own attribute is the same module on every call
    loads = [
        load
        for load in facts.loads
        if dotted_name(load.func.value) == module and load.args and dotted_name(load.args[0].value) == place
    ]
    if not loads:
        return None
    load = min(loads, key=ctx.line)
    return Report(
        snapshot.node,
        f"this `state_dict()` kept in `{place}` holds `{module}`'s own tensors: loaded back by a later call of "
        f"`{facts.scope.name}` at line {ctx.line(load)}, it restores nothing but the current weights",
        fix=copy_the_tensors(ctx, snapshot.node),
    )


def _is_snapshot_read(read: Read, facts) -> bool:
    reader, write = read.reader, read.write
    if reader.kind is not AliasKind.STATE_DICT or reader.node is None:
        return False
    # A state_dict written through (loading into it) is a handle on the module, not a snapshot;
    # an entry written while other entries are collected is a different tensor.
    return reader not in facts.written_handles and not (reader.partial and write.partial)
