"""Which tensors are on a CUDA device, from the syntax that made them: `.cuda()`,
`.to("cuda")`, `device="cuda:0"`, `torch.device("cuda", rank)`, or a name bound to one
of those (`device = torch.device("cuda" if use_cuda else "cpu")` counts: it may be)."""

from __future__ import annotations

import libcst as cst

from gpumem_lint.knowledge.devices import default_device
from gpumem_lint.knowledge.heuristics import heuristics
from gpumem_lint.semantic.imports import ImportTable, dotted_name
from gpumem_lint.semantic.values import Handle
from gpumem_lint.semantic.walk import Walker


class CudaNames(Walker):
    """Names assigned a CUDA device anywhere in a tree: `device = torch.device("cuda")`."""

    def __init__(self, imports: ImportTable) -> None:
        self.imports = imports
        self.names: set[str] = set()

    def visit_Assign(self, node: cst.Assign) -> None:
        if not isinstance(node.value, cst.Integer) and is_cuda_device(node.value, self.names, self.imports):
            for target in node.targets:
                name = dotted_name(target.target)
                if name is not None:
                    self.names.add(name)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        name = dotted_name(node.target)
        if (
            node.value is not None
            and name is not None
            and not isinstance(node.value, cst.Integer)
            and is_cuda_device(node.value, self.names, self.imports)
        ):
            self.names.add(name)


def cuda_names(module: cst.Module, imports: ImportTable) -> set[str]:
    collector = CudaNames(imports)
    collector.walk(module)
    return collector.names


def is_cuda_device(node: cst.BaseExpression, names: set[str], imports: ImportTable) -> bool:
    if isinstance(node, cst.Integer):
        return True  # `.to(0)`, `device=1`: a CUDA device index
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return isinstance(value, str) and value.startswith("cuda")
    if isinstance(node, cst.FormattedString):
        head = node.parts[0] if node.parts else None
        return isinstance(head, cst.FormattedStringText) and head.value.startswith("cuda")
    if isinstance(node, cst.IfExp):
        return is_cuda_device(node.body, names, imports) or is_cuda_device(node.orelse, names, imports)
    if isinstance(node, cst.Call) and imports.qualify(node.func) == "torch.device" and node.args:
        return is_cuda_device(node.args[0].value, names, imports)
    name = dotted_name(node)
    # A name bound to a CUDA device, or one that holds a device index by convention (heuristics.toml).
    return name is not None and (name in names or bool(heuristics().device_index_name.search(name)))


def moved_to_cuda(body: cst.CSTNode, names: set[str], imports: ImportTable) -> set[str]:
    """Names moved to CUDA in place by a statement: `model.cuda()`, `net.to(device)` (modules
    move their parameters and return themselves)."""
    collector = _InPlaceMoves(names, imports)
    collector.walk(body)
    return collector.moved


class _InPlaceMoves(Walker):
    def __init__(self, names: set[str], imports: ImportTable) -> None:
        self.names = names
        self.imports = imports
        self.moved: set[str] = set()

    def visit_Expr(self, node: cst.Expr) -> None:
        call = node.value
        if (
            isinstance(call, cst.Call)
            and isinstance(call.func, cst.Attribute)
            and cuda_call(call, self.names, self.imports)
        ):
            name = dotted_name(call.func.value)
            if name is not None:
                self.moved.add(name)


def made_on_cuda(handle: Handle, names: set[str], imports: ImportTable) -> bool:
    """The tensor, or the one it was derived from, was made on (or moved to) a CUDA device."""
    return any(isinstance(h.node, cst.Call) and cuda_call(h.node, names, imports) for h in handle.chain())


def cuda_call(node: cst.Call, names: set[str], imports: ImportTable) -> bool:
    func = node.func
    if isinstance(func, cst.Attribute) and func.attr.value == "cuda":
        return imports.qualify(func) is None  # `x.cuda()`, not the `torch.cuda` module
    for arg in node.args:
        if arg.keyword is not None and arg.keyword.value == "device" and is_cuda_device(arg.value, names, imports):
            return True
    if isinstance(func, cst.Attribute) and func.attr.value == "to":
        positional = [arg.value for arg in node.args if arg.keyword is None]
        return bool(positional) and is_cuda_device(positional[0], names, imports)
    qualified = imports.qualify(func) or ""
    return qualified.startswith("torch.cuda.") and qualified.endswith("Tensor")


#: torch.cuda calls that work in a forked child: they ask NVML or Python state, not the driver. The seeding
#: functions are queued until torch.cuda initialises (torch/cuda/__init__.py::_lazy_call), and in a forked
#: child `is_initialized()` is False, so a `worker_init_fn` that seeds CUDA raises nothing; `empty_cache()`
#: does nothing before initialisation.
_FORK_SAFE = frozenset(
    {
        "torch.cuda.device_count",
        "torch.cuda.is_initialized",
        "torch.cuda.is_available",
        "torch.cuda.manual_seed",
        "torch.cuda.manual_seed_all",
        "torch.cuda.seed",
        "torch.cuda.seed_all",
        "torch.cuda.empty_cache",
    }
)


class CudaUses(Walker):
    """The calls in a body that use CUDA (nested functions excluded), and the names of the
    functions it calls by bare name (to follow same-module helpers)."""

    def __init__(self, names: set[str], imports: ImportTable) -> None:
        self.names = names
        self.imports = imports
        self.found: list[cst.Call] = []
        self.called: set[str] = set()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.imports.qualify(node.func) or ""
        if cuda_call(node, self.names, self.imports) or (
            qualified.startswith("torch.cuda.") and qualified not in _FORK_SAFE
        ):
            self.found.append(node)
        if isinstance(node.func, cst.Name):
            self.called.add(node.func.value)


def default_cuda_setting(module: cst.Module, names: set[str], imports: ImportTable) -> cst.Call | None:
    """The first call in the module that makes CUDA the default device of the factories (devices.toml):
    `torch.set_default_device("cuda")`, `torch.set_default_tensor_type("torch.cuda.FloatTensor")`."""
    collector = _DefaultCuda(names, imports)
    collector.walk(module)
    return collector.found[0] if collector.found else None


class _DefaultCuda(Walker):
    def __init__(self, names: set[str], imports: ImportTable) -> None:
        self.names = names
        self.imports = imports
        self.table = default_device()
        self.found: list[cst.Call] = []

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.imports.qualify(node.func)
        first = node.args[0].value if node.args else None
        if first is None:
            return
        if qualified in self.table.device_setters and is_cuda_device(first, self.names, self.imports):
            self.found.append(node)
        elif qualified in self.table.type_setters:
            named = first.evaluated_value if isinstance(first, cst.SimpleString) else self.imports.qualify(first)
            if isinstance(named, str) and named.startswith("torch.cuda."):
                self.found.append(node)
