from collections.abc import Iterator

import libcst as cst

from gpumem_lint.context import FileContext
from gpumem_lint.diagnostics import Severity
from gpumem_lint.knowledge import knowledge
from gpumem_lint.rules.base import Invalid, Report, Rule
from gpumem_lint.semantic.imports import dotted_name
from gpumem_lint.semantic.walk import Walker

# Iterating these yields a module's own tensors: never in shared memory unless shared on purpose.
_MODULE_TENSORS = frozenset({"parameters", "named_parameters", "buffers", "named_buffers"})
_COPIES = frozenset({"clone", "copy.deepcopy", "torch.clone", "deepcopy"})


class IsSharedAsAliasCheck(Rule):
    """
    ## What it does
    Flags `t.is_shared()` used as if it answered "does this tensor share memory with
    another one?":

    - two tensors' `is_shared()` combined (`a.is_shared() and b.is_shared()`,
      `a.is_shared() == b.is_shared()`);
    - `is_shared()` asked of a view, `.detach()` or `.clone()` just made from another tensor;
    - in a module that never shares memory between processes, a module parameter copied
      when `p.is_shared()` (the "un-share tied weights" recipe).

    ## Why is this bad?
    `is_shared()` says whether a tensor's storage lives in shared memory that *other
    processes* can map — it becomes True after `share_memory_()` or after the tensor was
    pickled for a queue or a spawn child ([docs/facts.md](../docs/facts.md) F12), and it is
    always True for CUDA tensors. It says nothing about aliasing inside one process: a view
    and its base, or two tied parameters, are both `is_shared() == False`
    ([torch-runtime facts §5](https://docs.pytorch.org/docs/stable/generated/torch.Tensor.is_shared.html)).
    A check built on it never fires, or fires for every CUDA tensor.

    ## Example
    ```python
    for param in model.parameters():
        if param.is_shared():
            param.data = param.data.clone()
    ```

    ## Use instead
    ```python
    seen = set()
    for param in model.parameters():
        key = param.untyped_storage().data_ptr()
        if key in seen:  # tied to a parameter already seen
            ...
        seen.add(key)
    ```

    ## Fix safety
    There is no automatic fix: what the check should compare depends on its purpose.

    ## References
    - [torch.Tensor.is_shared](https://docs.pytorch.org/docs/stable/generated/torch.Tensor.is_shared.html)
    - [torch.Tensor.untyped_storage](https://docs.pytorch.org/docs/stable/generated/torch.Tensor.untyped_storage.html)
    """

    code = "GML207"
    name = "is-shared-as-alias-check"
    severity = Severity.WARNING
    summary = "`is_shared()` used to test whether tensors alias each other"
    fix_title = "Compare `untyped_storage().data_ptr()` (same memory) or use `torch._C._overlaps`; `is_shared()` is about IPC memory"
    triggers = ("is_shared",)
    VALID = (
        """
import torch.multiprocessing as mp

def prepare(model):
    for param in model.parameters():
        if not param.is_shared():
            param.share_memory_()
""",
        """
def receive(queue):
    batch = queue.get()
    if batch.is_shared():
        batch = batch.clone()
    return batch
""",
    )
    INVALID = (
        Invalid(
            """
import torch

def untie(model):
    for param in model.parameters():
        if param.is_shared():
            param.data = param.data.clone()
""",
            (6,),
        ),
        Invalid(
            """
import torch

def same_memory(a, b):
    return a.is_shared() and b.is_shared()
""",
            (5,),
        ),
        Invalid(
            """
import torch

def flatten_copy(x):
    flat = x.view(-1)
    if flat.is_shared():
        flat = flat.clone()
    return flat
""",
            (6,),
        ),
    )

    def check(self, ctx: FileContext) -> Iterator[Report]:
        imports = ctx.semantic.imports
        shares = (
            imports.imports("multiprocessing") or imports.imports("torch.multiprocessing") or "share_memory" in ctx.text
        )
        finder = _Finder(ctx, shares)
        finder.walk(ctx.module)
        for node, why in finder.found:
            yield Report(
                node,
                f"`{ctx.code(node)}` {why}: it tells whether other processes can map the storage, not whether "
                "tensors alias",
            )


class _Finder(Walker):
    def __init__(self, ctx: FileContext, shares: bool) -> None:
        self.ctx = ctx
        self.shares = shares
        self.found: list[tuple[cst.Call, str]] = []
        self._module_tensors: list[set[str]] = [set()]  # loop variables over model.parameters()
        self._derived: list[dict[str, str]] = [{}]  # name -> how it was just made from another tensor
        self._views = knowledge().view_methods | knowledge().detach_methods | {"clone"}

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._module_tensors.append(set())
        self._derived.append({})

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._module_tensors.pop()
        self._derived.pop()

    def visit_For(self, node: cst.For) -> None:
        call = node.iter
        if (
            isinstance(call, cst.Call)
            and isinstance(call.func, cst.Attribute)
            and call.func.attr.value in _MODULE_TENSORS
        ):
            target = node.target
            if isinstance(target, cst.Tuple) and len(target.elements) == 2:
                target = target.elements[1].value
            if isinstance(target, cst.Name):
                self._module_tensors[-1].add(target.value)

    def visit_Assign(self, node: cst.Assign) -> None:
        value = node.value
        how = None
        if (
            isinstance(value, cst.Call)
            and isinstance(value.func, cst.Attribute)
            and value.func.attr.value in self._views
        ):
            how = "a copy" if value.func.attr.value == "clone" else f"a `{value.func.attr.value}()` alias"
        elif isinstance(value, cst.Subscript):
            how = "a view"
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                if how is None:
                    self._derived[-1].pop(target.target.value, None)
                else:
                    self._derived[-1][target.target.value] = how

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        self._pair(node, [node.left, node.right])

    def visit_Comparison(self, node: cst.Comparison) -> None:
        self._pair(node, [node.left, *(c.comparator for c in node.comparisons)])

    def visit_If(self, node: cst.If) -> None:
        call = _is_shared_call(node.test)
        if call is None:
            return
        name = dotted_name(call.func.value)
        if name in self._derived[-1] and not self.shares:
            self.found.append((call, f"asks about {self._derived[-1][name]} made just before, in one process"))
        elif name in self._module_tensors[-1] and not self.shares and _copies(node.body, name):
            why = (
                "is asked of a parameter that is never shared, so it is always False"
            )
            self.found.append((call, why))

    def _pair(self, node: cst.CSTNode, operands: list[cst.BaseExpression]) -> None:
        calls = [call for operand in operands if (call := _is_shared_call(operand)) is not None]
        receivers = {dotted_name(call.func.value) for call in calls}
        if len(calls) >= 2 and len(receivers) >= 2:
            self.found.append(
                (calls[0], "is combined with another tensor's `is_shared()` as if it said they share memory")
            )


def _is_shared_call(node: cst.BaseExpression) -> cst.Call | None:
    if isinstance(node, cst.UnaryOperation):
        node = node.expression
    if (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == "is_shared"
        and not node.args
        and dotted_name(node.func.value) is not None
    ):
        return node
    return None


def _copies(body: cst.BaseSuite, name: str) -> bool:
    text = cst.Module([]).code_for_node(body)
    return any(f"{name}{suffix}" in text for suffix in (".clone()", ".data.clone()", ".detach().clone()")) or (
        f"deepcopy({name}" in text
    )
