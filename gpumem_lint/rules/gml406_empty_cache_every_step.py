import re
from collections.abc import Iterator
from dataclasses import dataclass, field

import libcst as cst

from gpumem_lint.context import FileContext
from gpumem_lint.diagnostics import Severity
from gpumem_lint.knowledge.memory_api import memory_api
from gpumem_lint.rules._test_files import is_test_file
from gpumem_lint.rules.base import Invalid, Report, Rule
from gpumem_lint.semantic.imports import ImportTable, dotted_name
from gpumem_lint.semantic.walk import Walker


class EmptyCacheEveryStep(Rule):
    """
    ## What it does
    Flags `torch.cuda.empty_cache()` called unconditionally in the body of a training loop: the
    innermost loop that runs `loss.backward()` or `optimizer.step()` (or `scaler.step(...)`).
    Calls under an `if` (every N steps, on OOM), in an outer per-epoch loop, or in test modules are
    not reported.

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
    # Each finding is an `empty_cache` call, in a loop of the same scope (or an alias of it: the fast
    # path follows `import ... as`).
    scope_triggers = (re.compile(r"empty_cache"),)
    VALID = (
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
    )
    INVALID = (
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
    )

    def check(self, ctx: FileContext) -> Iterator[Report]:
        if is_test_file(ctx.path):
            return  # a test's loop runs a few steps; its speed is not the product's
        finder = _LoopFinder(ctx.program_order.imports, memory_api().empty_cache_functions)
        finder.walk(ctx.module)
        for call, step in finder.found:
            yield Report(
                call,
                f"empty_cache() on every iteration of the loop that runs `{ctx.code(step)}` (line {ctx.line(step)}): "
                "it frees only cached blocks the next step allocates again",
            )


@dataclass
class _Loop:
    step: cst.Call | None = None  # a backward()/optimizer step directly in this loop
    conditional: int = 0  # depth of if/except inside this loop
    calls: list[cst.Call] = field(default_factory=list)  # unconditional empty_cache() calls


class _LoopFinder(Walker):
    def __init__(self, imports: ImportTable, functions: frozenset[str]) -> None:
        self.imports = imports
        self.functions = functions
        self.loops: list[_Loop | None] = [None]
        self.found: list[tuple[cst.Call, cst.Call]] = []

    def _enter_loop(self, node) -> None:
        self.loops.append(_Loop())

    def _leave_loop(self, node) -> None:
        loop = self.loops.pop()
        if loop is not None and loop.step is not None:
            self.found.extend((call, loop.step) for call in loop.calls)

    visit_For = visit_While = _enter_loop
    leave_For = leave_While = _leave_loop

    def _barrier(self, node) -> None:
        self.loops.append(None)  # a nested function runs when called, not per iteration

    def _leave_barrier(self, node) -> None:
        self.loops.pop()

    visit_FunctionDef = visit_Lambda = visit_ClassDef = _barrier
    leave_FunctionDef = leave_Lambda = leave_ClassDef = _leave_barrier

    def _enter_condition(self, node) -> None:
        if self.loops[-1] is not None:
            self.loops[-1].conditional += 1

    def _leave_condition(self, node) -> None:
        if self.loops[-1] is not None:
            self.loops[-1].conditional -= 1

    visit_If = visit_IfExp = visit_ExceptHandler = visit_BooleanOperation = _enter_condition
    leave_If = leave_IfExp = leave_ExceptHandler = leave_BooleanOperation = _leave_condition

    def visit_Call(self, node: cst.Call) -> None:
        loop = self.loops[-1]
        if loop is None:
            return
        if self.imports.qualify(node.func) in self.functions:
            if not loop.conditional:
                loop.calls.append(node)
        elif loop.step is None and _is_training_step(node):
            loop.step = node


def _is_training_step(call: cst.Call) -> bool:
    if not isinstance(call.func, cst.Attribute):
        return False
    method = call.func.attr.value
    if method == "backward":
        return True
    receiver = (dotted_name(call.func.value) or "").rsplit(".", 1)[-1].lower()
    return method == "step" and ("optim" in receiver or "scaler" in receiver)
