"""What the process-boundary rules (GML2xx) share: the module's process model, and words
for crossings and start methods."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

import libcst as cst

from gpumem_lint.context import FileContext
from gpumem_lint.semantic.boundaries import ProcessModel, StartMethod
from gpumem_lint.semantic.callers import importers_of, parsed_module, read_text
from gpumem_lint.semantic.datasets import Datasets, WorkerLoader, datasets
from gpumem_lint.semantic.devices import cuda_names, made_on_cuda, moved_to_cuda
from gpumem_lint.semantic.flow import ScopeFacts
from gpumem_lint.semantic.imports import dotted_name
from gpumem_lint.semantic.processes import FRESH_METHODS, START_METHODS, Crossing, method_argument, process_table
from gpumem_lint.semantic.walk import Walker
from gpumem_lint.target import find_target


def is_main_guard(test: cst.BaseExpression) -> bool:
    """`__name__ == "__main__"` (either way round)."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    sides = [test.left, test.comparisons[0].comparator]
    names = {side.value for side in sides if isinstance(side, cst.Name)}
    strings = {side.evaluated_value for side in sides if isinstance(side, cst.SimpleString)}
    return names == {"__name__"} and strings == {"__main__"} and isinstance(test.comparisons[0].operator, cst.Equal)


def is_main_block(statement: cst.BaseStatement) -> bool:
    """`if __name__ == "__main__":` at module level."""
    return isinstance(statement, cst.If) and is_main_guard(statement.test)


def process_model(ctx: FileContext) -> ProcessModel:
    """The module's process model, shared by the rules of the file."""
    return ctx.shared(_process_model)


def _process_model(ctx: FileContext) -> ProcessModel:
    return ProcessModel(
        ctx.semantic.facts, ctx.semantic.imports, target_version(ctx), entry_method=lambda: entry_start_method(ctx)
    )


def entry_start_method(ctx: FileContext) -> str | None:
    """The start method the entry scripts set for this module: every first-party script that imports it
    (a module with a `__main__` block, up to `IMPORT_DEPTH` imports up) calls `set_start_method` with the
    same literal method (`torch.multiprocessing.set_start_method("spawn")` before building the object
    whose method starts the children). None when one sets none, or there is no such script."""
    source = Path(ctx.path)
    if not source.is_file():
        return None
    methods = set()
    for importer in importers_of(source.resolve()):
        if "__main__" not in (read_text(importer.path) or ""):  # no main block: not an entry script
            continue
        parsed = parsed_module(importer.path)
        if parsed is None or not any(is_main_block(statement) for statement in parsed[0].body):
            continue
        ctx.dependencies.add(importer.path)
        setters = _StartMethodSetters(parsed[1].imports)
        setters.walk(parsed[0])
        methods |= setters.methods or {None}
    return methods.pop() if len(methods) == 1 else None


class _StartMethodSetters(Walker):
    def __init__(self, imports) -> None:
        self.imports = imports
        self.methods: set[str | None] = set()

    def visit_Call(self, node: cst.Call) -> None:
        if self.imports.qualify(node.func) in process_table().setters:
            method = method_argument(node)
            self.methods.add(method if method in START_METHODS else None)


def module_datasets(ctx: FileContext) -> Datasets:
    """The module's Dataset classes and the DataLoaders that start workers over them, shared by the rules of the file."""
    return ctx.shared(_datasets)


def _datasets(ctx: FileContext) -> Datasets:
    return datasets(ctx.module, ctx.semantic.imports)


def module_cuda_names(ctx: FileContext) -> set[str]:
    """Names assigned a CUDA device anywhere in the module (semantic/devices.py)."""
    return cuda_evidence(ctx).names


def cuda_evidence(ctx: FileContext) -> CudaEvidence:
    """Which crossings hand over a CUDA tensor, shared by the rules of the file."""
    return ctx.shared(CudaEvidence)


def target_version(ctx: FileContext) -> tuple[int, int] | None:
    """The Python version the file targets (target.py); its pyproject.toml becomes a
    dependency of the findings, so cached results follow a change of target."""
    source = Path(ctx.path)
    if not source.is_file():
        return None
    target = find_target(source.resolve())
    if target.config is not None:
        ctx.dependencies.add(target.config)
    return target.version


def loader_start_method(ctx: FileContext, loader: WorkerLoader) -> StartMethod:
    """How a DataLoader starts its workers: its `multiprocessing_context`, else the module's default."""
    if loader.start_method is None:
        return process_model(ctx).default_start_method()
    return StartMethod(loader.start_method if loader.start_method in START_METHODS else None)


def crossing_text(ctx: FileContext, crossing: Crossing) -> str:
    code = ctx.code(crossing.node)
    return f"`{code if len(code) <= 36 else code[:35] + '…'}` (line {ctx.line(crossing.node)})"


def start_method_text(method: StartMethod) -> str:
    if method.name is None:
        return "a start method chosen at run time"
    if method.default:
        return f"the default start method ({method.name} here)"
    return f"the {method.name} start method"


def pickling_method_text(method: StartMethod) -> str:
    """The start method under which children unpickle what they are handed (`method.pickles`): a
    default that forks on Linux is spawn on macOS and Windows."""
    if method.default and method.name not in FRESH_METHODS:
        return f"the default of macOS and Windows (spawn; {method.name} on Linux here)"
    return start_method_text(method)


class CudaEvidence:
    """Whether a crossing hands over a CUDA tensor: made on (or moved to) a CUDA device, or a
    name moved there in place before (`model.cuda()` then `args=(model,)`). Built lazily: most
    files with crossings hand over none that forks."""

    def __init__(self, ctx: FileContext) -> None:
        self._module = ctx.module
        self.imports = ctx.semantic.imports
        self._moved: dict[int, set[str]] = {}

    @cached_property
    def names(self) -> set[str]:
        return cuda_names(self._module, self.imports)

    def sends_cuda(self, facts: ScopeFacts, crossing: Crossing) -> bool:
        sent = (handle for handle in crossing.sent.handles if handle.role is None)
        if any(made_on_cuda(handle, self.names, self.imports) for handle in sent):
            return True
        scope = facts.scope.node
        if id(scope) not in self._moved:
            self._moved[id(scope)] = moved_to_cuda(scope, self.names, self.imports)
        return bool(_argument_names(crossing.node) & self._moved[id(scope)])


def _argument_names(call: cst.Call) -> set[str]:
    """The names passed in a call, also inside `args=(...)` tuples and lists."""
    collector = _Names()
    for arg in call.args:
        collector.walk(arg.value)
    return collector.found


class _Names(Walker):
    def __init__(self) -> None:
        self.found: set[str] = set()

    def visit_Call(self, node: cst.Call) -> bool:
        return False  # `f(model)` inside the arguments passes f's result

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        name = dotted_name(node)
        if name is not None:
            self.found.add(name)
        return False

    def visit_Name(self, node: cst.Name) -> None:
        self.found.add(node.value)
