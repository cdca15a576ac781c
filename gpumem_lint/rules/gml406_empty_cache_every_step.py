import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property

import libcst as cst

from gpumem_lint.context import FileContext
from gpumem_lint.diagnostics import Severity
from gpumem_lint.knowledge import knowledge
from gpumem_lint.knowledge.memory_api import memory_api
from gpumem_lint.rules._test_files import is_test_file
from gpumem_lint.rules.base import Invalid, Report, Rule
from gpumem_lint.semantic.conditions import LoopInvariants
from gpumem_lint.semantic.imports import ImportTable, dotted_name
from gpumem_lint.semantic.walk import Walker


class EmptyCacheEveryStep(Rule):
    """
    ## What it does
    Flags `torch.cuda.empty_cache()` called unconditionally in the body of a training loop: the
    innermost loop that runs `loss.backward()` or `optimizer.step()` (or `scaler.step(...)`),
    directly or through a function of the module, or a method of the same class (`self.training_step(batch)`),
    that the loop calls unconditionally and that calls it unconditionally.
    Calls under an `if` (every N steps, on OOM), in an outer per-epoch loop, or in test modules are
    not reported, unless the `if` tests a value the loop never changes (`if n_gpus:`, `if not
    args.keep_cache:`: every pass takes the same arm, so the call runs on every step or on none); nor
    a loop each pass of which builds what it then calls (`model = Net(width)`, then `model(x)`: a
    search for the largest batch, a benchmark of sizes), whose passes are trials of their own rather
    than steps of one training; a `torch.nn` module without parameters
    (`criterion = nn.CrossEntropyLoss()`) is not a model.

    ## Why is this bad?
    `empty_cache()` frees no memory that tensors hold: it returns the allocator's *cached, unused*
    blocks to the driver ("does not increase the amount of GPU memory available for PyTorch",
    per its documentation). The next iteration allocates the same activations again and must
    `cudaMalloc` them anew, which synchronises the device — so every step pays for it, and peak
    memory does not change. Articles recommend it as if it released live tensors (after `del`);
    only dropping the last reference does that.

    ## Example
    ```python
    for batch in loader:
        loss = model(batch).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        torch.cuda.empty_cache()
    ```

    ## Use instead
    ```python
    for batch in loader:
        loss = model(batch).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    torch.cuda.empty_cache()  # once, e.g. before evaluation or when handing the GPU over
    ```
    Against fragmentation, `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` helps without the
    per-step cost.

    ## Fix safety
    There is no automatic fix: the call may be wanted at a phase boundary the tool cannot see.

    ## References
    - [`torch.cuda.empty_cache`](https://docs.pytorch.org/docs/stable/generated/torch.cuda.empty_cache.html)
    - [CUDA memory management](https://docs.pytorch.org/docs/stable/notes/cuda.html#memory-management)
    """

    code = "GML406"
    name = "empty-cache-every-step"
    severity = Severity.WARNING
    summary = "`torch.cuda.empty_cache()` on every training step"
    fix_title = "Remove it, or call it once outside the step loop (or every N steps)"
    triggers = ("empty_cache",)
    # Each finding is an `empty_cache` call (or an alias of it: the fast path follows `import ... as`), in
    # a loop of the same scope or in a helper that a training loop of another scope calls: the scopes
    # running a training step are kept for their loops.
    scope_triggers = (re.compile(r"empty_cache"), re.compile(r"\.(?:backward|step)\s*\("))
    VALID = (
        # `oom` is set by the pass itself: the cache is emptied only after a step that ran out of memory
        """
import torch


def epoch_training(loader, model, criterion, optimizer):
    oom = False
    for images, target in loader:
        if oom:
            torch.cuda.empty_cache()
        optimizer.zero_grad()
        try:
            loss = criterion(model(images), target)
            loss.backward()
            optimizer.step()
            oom = False
        except torch.cuda.OutOfMemoryError:
            oom = True
""",
        # each pass builds and runs a model of its own, at another batch size: trials, not training steps
        """
import torch
from torch import nn


def largest_batch(width, device):
    low, high = 1, 4096
    while low <= high:
        batch = (low + high) // 2
        try:
            model = nn.Sequential(nn.Linear(width, width), nn.ReLU()).to(device)
            loss = model(torch.randn(batch, width, device=device)).sum()
            loss.backward()
            low = batch + 1
            del model, loss
            torch.cuda.empty_cache()
        except torch.cuda.OutOfMemoryError:
            high = batch - 1
    return high
""",
        """
import torch

for epoch in range(10):
    for batch in loader:
        loss = model(batch).mean()
        loss.backward()
        optimizer.step()
    torch.cuda.empty_cache()
""",
        """
import torch

for step, batch in enumerate(loader):
    loss = model(batch).mean()
    loss.backward()
    optimizer.step()
    if step % 1000 == 0:
        torch.cuda.empty_cache()
""",
        """
import torch

class Trainer:
    def free_memory(self):
        torch.cuda.empty_cache()

    def evaluate(self):
        if self.low_memory:
            torch.cuda.empty_cache()

    def train(self):
        for step, batch in enumerate(self.loader):
            self.model(batch).mean().backward()
            self.optimizer.step()
            if step % 1000 == 0:
                self.free_memory()
            self.evaluate()
        self.free_memory()
""",
    )
    INVALID = (
        # `n_gpus` is a setting the loop never changes: the test passes on every step or on none
        Invalid(
            """
import torch


def epoch_training(loader, model, criterion, optimizer, n_gpus):
    for images, target in loader:
        if n_gpus:
            torch.cuda.empty_cache()
        optimizer.zero_grad()
        loss = criterion(model(images), target)
        loss.backward()
        optimizer.step()
""",
            (8,),
        ),
        # a loss module made each pass is a function of its inputs: the model is the same every step
        Invalid(
            """
import torch
from torch import nn


def train(model, optimizer, loader):
    for inputs, labels in loader:
        criterion = nn.CrossEntropyLoss()
        loss = criterion(model(inputs), labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        torch.cuda.empty_cache()
""",
            (13,),
        ),
        Invalid(
            """
import torch

for batch in loader:
    loss = model(batch).mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    torch.cuda.empty_cache()
""",
            (9,),
        ),
        Invalid(
            """
import torch

class Trainer:
    def training_step(self, batch):
        loss = self.model(batch).mean()
        torch.cuda.empty_cache()
        loss.backward()

    def train(self):
        for batch in self.loader:
            self.training_step(batch)
            self.optimizer.step()
""",
            (7,),
        ),
    )

    def check(self, ctx: FileContext) -> Iterator[Report]:
        if is_test_file(ctx.path):
            return  # a test's loop runs a few steps; its speed is not the product's
        imports, functions = ctx.program_order.imports, memory_api().empty_cache_functions
        helpers = _helpers(ctx.module, imports, functions)
        finder = _LoopFinder(imports, functions, helpers)
        finder.walk(ctx.module)
        reported: set[int] = set()
        for call, step, through in finder.found:
            if id(call) in reported:
                continue
            reported.add(id(call))
            via = f", called through `{ctx.code(through)}` (line {ctx.line(through)})" if through is not None else ""
            yield Report(
                call,
                f"empty_cache() on every iteration of the loop that runs `{ctx.code(step)}` (line {ctx.line(step)})"
                f"{via}: it frees only cached blocks the next step allocates again",
            )


#: A function of the module (`("", name)`) or a method (`(class name, name)`).
_Key = tuple[str, str]


def _helpers(module: cst.Module, imports: ImportTable, functions: frozenset[str]) -> dict[_Key, list[cst.Call]]:
    """The module's functions and methods that call `empty_cache()` unconditionally, directly or through
    another such function they call unconditionally, each with those `empty_cache()` calls."""
    bodies = _Bodies(imports, functions)
    bodies.walk(module)
    found = {key: list(calls) for key, (calls, _) in bodies.functions.items() if calls}
    changed = True
    while changed:  # through helpers of helpers
        changed = False
        for key, (_, callees) in bodies.functions.items():
            reached = [call for callee in callees for call in found.get(callee, ()) if callee != key]
            new = [call for call in reached if call not in found.get(key, [])]
            if new:
                found.setdefault(key, []).extend(new)
                changed = True
    return found


class _Bodies(Walker):
    """For each function and method: its unconditional `empty_cache()` calls and the module functions
    (or methods of its class, through `self.`) it calls unconditionally. Nested functions are left out."""

    def __init__(self, imports: ImportTable, functions: frozenset[str]) -> None:
        self.imports = imports
        self.empty_cache = functions
        self.functions: dict[_Key, tuple[list[cst.Call], list[_Key]]] = {}
        self.classes: list[str] = []
        self.current: list[_Key | None] = []
        self.conditional = 0

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.classes.append(node.name.value)
        self.current.append(None)

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self.classes.pop()
        self.current.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        outer = self.current[-1] if self.current else None
        nested = outer is not None
        key = None if nested else (self.classes[-1] if self.classes else "", node.name.value)
        if key is not None:
            self.functions[key] = ([], [])
        self.current.append(key)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.current.pop()

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self.current.append(None)

    def leave_Lambda(self, node: cst.Lambda) -> None:
        self.current.pop()

    def _enter_condition(self, node) -> None:
        self.conditional += 1

    def _leave_condition(self, node) -> None:
        self.conditional -= 1

    visit_If = visit_IfExp = visit_ExceptHandler = visit_BooleanOperation = visit_For = visit_While = _enter_condition
    leave_If = leave_IfExp = leave_ExceptHandler = leave_BooleanOperation = leave_For = leave_While = _leave_condition

    def visit_Call(self, node: cst.Call) -> None:
        key = self.current[-1] if self.current else None
        if key is None or self.conditional:
            return
        calls, callees = self.functions[key]
        if self.imports.qualify(node.func) in self.empty_cache:
            calls.append(node)
        elif (callee := _callee(node, key[0])) is not None:
            callees.append(callee)


def _callee(call: cst.Call, class_name: str) -> _Key | None:
    """`helper(...)` names a module function; `self.helper(...)` a method of the caller's class."""
    func = call.func
    if isinstance(func, cst.Name):
        return ("", func.value)
    if (
        isinstance(func, cst.Attribute)
        and isinstance(func.value, cst.Name)
        and func.value.value == "self"
        and class_name
    ):
        return (class_name, func.attr.value)
    return None


@dataclass
class _Loop:
    node: cst.For | cst.While
    step: cst.Call | None = None  # a backward()/optimizer step directly in this loop
    conditional: int = 0  # depth of if/except inside this loop
    #: unconditional empty_cache() calls, each with the helper call that reaches it (None: in the loop)
    calls: list[tuple[cst.Call, cst.Call | None]] = field(default_factory=list)
    made: set[str] = field(default_factory=set)  # names a pass binds to what a call makes (`model = Net(cfg)`)
    trials: bool = False  # a pass calls what it made: each pass builds and runs its own model

    @cached_property
    def invariants(self) -> LoopInvariants:
        return LoopInvariants(self.node)


class _LoopFinder(Walker):
    def __init__(self, imports: ImportTable, functions: frozenset[str], helpers: dict[_Key, list[cst.Call]]) -> None:
        self.imports = imports
        self.functions = functions
        self.helpers = helpers
        self.loops: list[_Loop | None] = [None]
        self.classes: list[str] = []
        self.found: list[tuple[cst.Call, cst.Call, cst.Call | None]] = []
        self.invariant_ifs: list[bool] = []

    def _enter_loop(self, node) -> None:
        self.loops.append(_Loop(node))

    def _leave_loop(self, node) -> None:
        loop = self.loops.pop()
        if loop is not None and loop.step is not None and not loop.trials:
            self.found.extend((call, loop.step, through) for call, through in loop.calls)

    visit_For = visit_While = _enter_loop
    leave_For = leave_While = _leave_loop

    def _barrier(self, node) -> None:
        self.loops.append(None)  # a nested function runs when called, not per iteration

    def _leave_barrier(self, node) -> None:
        self.loops.pop()

    visit_FunctionDef = visit_Lambda = _barrier
    leave_FunctionDef = leave_Lambda = _leave_barrier

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.classes.append(node.name.value)
        self._barrier(node)

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self.classes.pop()
        self._leave_barrier(node)

    def _enter_condition(self, node) -> None:
        if self.loops[-1] is not None:
            self.loops[-1].conditional += 1

    def _leave_condition(self, node) -> None:
        if self.loops[-1] is not None:
            self.loops[-1].conditional -= 1

    visit_IfExp = visit_ExceptHandler = visit_BooleanOperation = _enter_condition
    leave_IfExp = leave_ExceptHandler = leave_BooleanOperation = _leave_condition

    def visit_If(self, node: cst.If) -> None:
        # `if n_gpus:` of a value the loop never changes: taken on every pass or on none
        loop = self.loops[-1]
        invariant = loop is not None and loop.invariants.holds(node.test)
        self.invariant_ifs.append(invariant)
        if not invariant:
            self._enter_condition(node)

    def leave_If(self, node: cst.If) -> None:
        if not self.invariant_ifs.pop():
            self._leave_condition(node)

    def visit_Assign(self, node: cst.Assign) -> None:
        loop = self.loops[-1]
        if loop is not None and isinstance(node.value, cst.Call) and not self._parameter_free(node.value):
            loop.made.update(t.target.value for t in node.targets if isinstance(t.target, cst.Name))

    def _parameter_free(self, call: cst.Call) -> bool:
        """`nn.CrossEntropyLoss()`: a torch.nn module without parameters, a function of its inputs."""
        while isinstance(call.func, cst.Attribute) and isinstance(call.func.value, cst.Call):
            call = call.func.value  # `nn.MSELoss().to(device)`
        qualified, k = self.imports.qualify(call.func) or "", knowledge()
        if qualified in k.container_modules:
            return False  # `nn.Sequential(nn.Linear(...))`: its layers' parameters
        return qualified.startswith("torch.nn.") and not k.module_parameters.get(qualified, True)

    def visit_Call(self, node: cst.Call) -> None:
        loop = self.loops[-1]
        if loop is None:
            return
        if isinstance(node.func, cst.Name) and node.func.value in loop.made:
            loop.trials = True  # `model = Net(width).cuda()`, then `model(x)`: a trial per pass, not a step
        if self.imports.qualify(node.func) in self.functions:
            if not loop.conditional:
                loop.calls.append((node, None))
        elif loop.step is None and _is_training_step(node):
            loop.step = node
        elif not loop.conditional and (callee := _callee(node, self.classes[-1] if self.classes else "")):
            loop.calls.extend((call, node) for call in self.helpers.get(callee, ()))


def _is_training_step(call: cst.Call) -> bool:
    if not isinstance(call.func, cst.Attribute):
        return False
    method = call.func.attr.value
    if method == "backward":
        return True
    receiver = (dotted_name(call.func.value) or "").rsplit(".", 1)[-1].lower()
    return method == "step" and ("optim" in receiver or "scaler" in receiver)
