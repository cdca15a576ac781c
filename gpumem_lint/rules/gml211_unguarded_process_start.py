from __future__ import annotations

import re
from collections.abc import Iterator

import libcst as cst

from gpumem_lint.context import FileContext
from gpumem_lint.diagnostics import Position, Severity
from gpumem_lint.fixes import Applicability, Edit, Fix, line_starts, source_rows
from gpumem_lint.rules._boundaries import (
    crossing_text,
    is_main_guard,
    loader_start_method,
    module_datasets,
    pickling_method_text,
    process_model,
)
from gpumem_lint.rules.base import Invalid, Report, Rule
from gpumem_lint.semantic.datasets import WORKER_LOADER, Datasets, WorkerLoader
from gpumem_lint.semantic.imports import dotted_name
from gpumem_lint.semantic.processes import PROCESS_CROSSING
from gpumem_lint.semantic.reimport import skipped_on_reimport
from gpumem_lint.semantic.walk import NodeIds, Walker

_STARTS_PROCESSES = ("process", "spawn", "pool", "executor")


class UnguardedProcessStart(Rule):
    """
    ## What it does
    Flags processes started by a module's top-level code — `mp.spawn(...)`,
    `Process(...).start()`, a `Pool` or `ProcessPoolExecutor`, a pass over a `DataLoader`
    with workers (`for batch in loader:`, `enumerate(loader)`, `iter(loader)`: each pass starts
    them), or a call of a function of the module that starts them (`main()`, or a `train()` that
    iterates a loader with workers it makes, or that top-level code made, alone or in a dict:
    `for batch in loaders[phase]:`) — outside
    `if __name__ == "__main__":`, when they start with spawn or forkserver: chosen by the
    code (`torch.multiprocessing.spawn` always spawns) or by default (forkserver is the
    stdlib default on Linux from Python 3.14; spawn on macOS and Windows).
    A loader is one a `DataLoader(...)` call makes, or one a function of the module returns
    (`test_loader = create_dataloader(test_set, opt)`, whose `return DataLoader(...)` asks for
    workers; `train_loader, val_loader = get_loaders()` of a `return train, val`), also kept in a
    list or dict and taken out again (`test_loaders.append(test_loader)`, then `for test_loader in
    test_loaders:`); a pass over the list itself starts nothing.

    ## Why is this bad?
    A spawn or forkserver child starts a fresh interpreter and imports the main module
    again to find the function it runs. Top-level code runs again with it, reaches the same
    launch, and the child fails with `RuntimeError: An attempt has been made to start a new
    process before the current process has finished its bootstrapping phase`
    ([docs/facts.md](../docs/facts.md) F19). Scripts written for fork break the day the
    start method changes — for instance when they move to Python 3.14.

    A notebook is not reported: its cells run in the kernel's `__main__`, which has no file, so a
    child imports nothing again and no launch re-runs (a `__main__` guard would change nothing there).
    Nor is a launch under an `if` whose test is falsy in the child whatever the parent saw: a
    Streamlit page's widget (`submitted = col1.button("Run")`, `if submitted:`) returns its default
    there, outside Streamlit's runner (`processes.toml` [reimport_defaults]; F44, measured with
    streamlit 1.67.0: the launch under a clicked button is not re-run, one under `if True:` is),
    or `mp.current_process().name == "MainProcess"` (the child has its own name by then; F47).
    `mp.parent_process() is None` is no guard: it is still None while the child re-imports.

    ## Example
    ```python
    def train(rank):
        ...

    mp.spawn(train, nprocs=2)
    ```

    ## Use instead
    ```python
    def train(rank):
        ...

    if __name__ == "__main__":
        mp.spawn(train, nprocs=2)
    ```

    ## Fix safety
    The fix puts the launch and every top-level statement after it under
    `if __name__ == "__main__":`, when none of them defines or imports anything (the
    children need those) and none holds a string spanning lines (indenting would change
    it). It is unsafe: names those statements bind are no longer set when the module is
    imported, and what the launch needs above it (argument parsing, data preparation)
    still runs in every child; it usually belongs under the guard too.

    ## References
    - [multiprocessing programming guidelines: safe importing of main module](https://docs.python.org/3/library/multiprocessing.html#multiprocessing-programming)
    """

    code = "GML211"
    name = "unguarded-process-start"
    severity = Severity.ERROR
    summary = "Processes started by top-level code that spawn children re-run on import"
    fix_title = 'Start the processes under `if __name__ == "__main__":`'
    fix_applicability = Applicability.UNSAFE
    triggers = ("multiprocessing", "ProcessPoolExecutor", "DataLoader")
    file_trigger = re.compile(f"{PROCESS_CROSSING.pattern}|{WORKER_LOADER.pattern}")
    VALID = (
        # the helper's loader has no workers: iterating it starts no process
        """
import torch
from torch.utils.data import DataLoader, TensorDataset


def create_dataloader(dataset):
    return DataLoader(dataset, batch_size=4, num_workers=0)


loader = create_dataloader(TensorDataset(torch.randn(16, 3)))
for (batch,) in loader:
    print(batch.shape)
""",
        # the loop over the loader the helper returns runs under the guard
        """
import torch
from torch.utils.data import DataLoader, TensorDataset


def create_dataloader(dataset):
    return DataLoader(dataset, batch_size=4, num_workers=2, multiprocessing_context="spawn")


if __name__ == "__main__":
    loader = create_dataloader(TensorDataset(torch.randn(16, 3)))
    for (batch,) in loader:
        print(batch.shape)
""",
        # a pass over the list of loaders is no pass over a loader: only their lengths are read
        """
import torch
from torch.utils.data import DataLoader, TensorDataset


def create_dataloader(dataset):
    return DataLoader(dataset, batch_size=4, num_workers=2, multiprocessing_context="spawn")


loaders = []
for size in (8, 16):
    loaders.append(create_dataloader(TensorDataset(torch.randn(size, 3))))
for loader in loaders:
    print(len(loader))
""",
        # the function iterates the loaders it is given, not the module's dict of the same name
        """
import torch
from torch.utils.data import DataLoader, TensorDataset

sets = {x: TensorDataset(torch.randn(16, 4)) for x in ("train", "val")}
loaders = {x: DataLoader(sets[x], batch_size=4, num_workers=2, multiprocessing_context="spawn") for x in sets}


def evaluate(loaders):
    return [batch.sum() for (batch,) in loaders["val"]]


evaluate({"val": [(torch.zeros(4),)]})
""",
        # the function that iterates a worker loader is called under the guard
        """
import torch
from torch.utils.data import DataLoader, TensorDataset


def train(epochs):
    data = TensorDataset(torch.randn(64, 8))
    loader = DataLoader(data, batch_size=8, num_workers=2, multiprocessing_context="spawn")
    for _ in range(epochs):
        for (batch,) in loader:
            batch.sum()


if __name__ == "__main__":
    train(2)
""",
        # forked workers copy the parent's memory: they import nothing again
        """
import torch
from torch.utils.data import DataLoader

data = [torch.randn(3) for _ in range(8)]
loader = DataLoader(data, batch_size=2, num_workers=2, multiprocessing_context="fork")
for batch in loader:
    print(batch.shape)
""",
        """
import torch.multiprocessing as mp

def train(rank):
    pass

def main():
    mp.spawn(train, nprocs=2)

if __name__ == "__main__":
    main()
""",
        """
import torch.multiprocessing as mp

def train(rank):
    pass

if __name__ == "__main__":
    mp.spawn(train, nprocs=2)
""",
        """
import multiprocessing as mp

def work(x):
    return x * 2

with mp.get_context("fork").Pool(4) as pool:  # fork: the children do not import this module
    print(pool.map(work, range(8)))
""",
        # a Streamlit page: a spawn child re-imports it outside Streamlit's runner, where the button is False
        """
import multiprocessing as mp

import streamlit as st

def work(x):
    return x * 2

col1, col2 = st.columns(2)
submitted = col1.button("Run")
if submitted:
    with mp.get_context("spawn").Pool(2) as pool:
        col2.write(pool.map(work, range(4)))
""",
        """
import multiprocessing as mp

def work(x):
    return x * 2

if mp.current_process().name == "MainProcess":  # a re-importing child already has its own name
    with mp.get_context("spawn").Pool(2) as pool:
        print(pool.map(work, range(4)))
""",
    )
    INVALID = (
        # the loaders a helper of the script returns, kept in a list and iterated by top-level code (SPSR)
        Invalid(
            """
import torch
from torch.utils.data import DataLoader, TensorDataset


def create_dataloader(dataset, phase):
    if phase == "train":
        return DataLoader(dataset, batch_size=4, shuffle=True, num_workers=2, multiprocessing_context="spawn")
    return DataLoader(dataset, batch_size=1, num_workers=1, multiprocessing_context="spawn")


test_loaders = []
for phase in ("val", "test"):
    test_loader = create_dataloader(TensorDataset(torch.randn(4, 3)), phase)
    test_loaders.append(test_loader)

for test_loader in test_loaders:
    for (batch,) in test_loader:
        print(batch.shape)
""",
            (18,),
            fixed="""
import torch
from torch.utils.data import DataLoader, TensorDataset


def create_dataloader(dataset, phase):
    if phase == "train":
        return DataLoader(dataset, batch_size=4, shuffle=True, num_workers=2, multiprocessing_context="spawn")
    return DataLoader(dataset, batch_size=1, num_workers=1, multiprocessing_context="spawn")


test_loaders = []
for phase in ("val", "test"):
    test_loader = create_dataloader(TensorDataset(torch.randn(4, 3)), phase)
    test_loaders.append(test_loader)

if __name__ == "__main__":
    for test_loader in test_loaders:
        for (batch,) in test_loader:
            print(batch.shape)
""",
        ),
        # one of the loaders a helper returns as a tuple, iterated in the script's epoch loop (DID-MDN)
        Invalid(
            """
import torch
from torch.utils.data import DataLoader, TensorDataset


def get_loaders(batch_size, workers):
    spawn = {"num_workers": workers, "multiprocessing_context": "spawn"}
    train = DataLoader(TensorDataset(torch.randn(16, 3)), batch_size=batch_size, shuffle=True, **spawn)
    val = DataLoader(TensorDataset(torch.randn(8, 3)), batch_size=batch_size, **spawn)
    return train, val


train_loader, val_loader = get_loaders(4, 2)
for epoch in range(2):
    for i, (batch,) in enumerate(val_loader, 0):
        print(epoch, i, batch.shape)
""",
            (15,),
            fixed="""
import torch
from torch.utils.data import DataLoader, TensorDataset


def get_loaders(batch_size, workers):
    spawn = {"num_workers": workers, "multiprocessing_context": "spawn"}
    train = DataLoader(TensorDataset(torch.randn(16, 3)), batch_size=batch_size, shuffle=True, **spawn)
    val = DataLoader(TensorDataset(torch.randn(8, 3)), batch_size=batch_size, **spawn)
    return train, val


train_loader, val_loader = get_loaders(4, 2)
if __name__ == "__main__":
    for epoch in range(2):
        for i, (batch,) in enumerate(val_loader, 0):
            print(epoch, i, batch.shape)
""",
        ),
        # the script's training function iterates the loaders top-level code put in a dict
        Invalid(
            """
import torch
from torch.utils.data import DataLoader, TensorDataset

sets = {x: TensorDataset(torch.randn(16, 4)) for x in ("train", "val")}
loaders = {x: DataLoader(sets[x], batch_size=4, num_workers=2, multiprocessing_context="spawn") for x in sets}


def train_model(epochs):
    for _ in range(epochs):
        for phase in ("train", "val"):
            for (batch,) in loaders[phase]:
                batch.sum()


train_model(2)
""",
            (16,),
            fixed="""
import torch
from torch.utils.data import DataLoader, TensorDataset

sets = {x: TensorDataset(torch.randn(16, 4)) for x in ("train", "val")}
loaders = {x: DataLoader(sets[x], batch_size=4, num_workers=2, multiprocessing_context="spawn") for x in sets}


def train_model(epochs):
    for _ in range(epochs):
        for phase in ("train", "val"):
            for (batch,) in loaders[phase]:
                batch.sum()


if __name__ == "__main__":
    train_model(2)
""",
        ),
        # a script's top-level call of the function that iterates a loader with workers
        Invalid(
            """
import torch
from torch.utils.data import DataLoader, TensorDataset


def train(epochs):
    data = TensorDataset(torch.randn(64, 8))
    loader = DataLoader(data, batch_size=8, num_workers=2, multiprocessing_context="spawn")
    for _ in range(epochs):
        for (batch,) in loader:
            batch.sum()


train(2)
""",
            (14,),
            fixed="""
import torch
from torch.utils.data import DataLoader, TensorDataset


def train(epochs):
    data = TensorDataset(torch.randn(64, 8))
    loader = DataLoader(data, batch_size=8, num_workers=2, multiprocessing_context="spawn")
    for _ in range(epochs):
        for (batch,) in loader:
            batch.sum()


if __name__ == "__main__":
    train(2)
""",
        ),
        # each pass over a loader with workers starts them; a spawned worker re-runs this loop
        Invalid(
            """
import torch
from torch.utils.data import DataLoader

data = [torch.randn(3) for _ in range(8)]
loader = DataLoader(data, batch_size=2, num_workers=2, multiprocessing_context="spawn")
for epoch in range(2):
    for step, batch in enumerate(loader):
        print(epoch, step, batch.shape)
""",
            (8,),
            fixed="""
import torch
from torch.utils.data import DataLoader

data = [torch.randn(3) for _ in range(8)]
loader = DataLoader(data, batch_size=2, num_workers=2, multiprocessing_context="spawn")
if __name__ == "__main__":
    for epoch in range(2):
        for step, batch in enumerate(loader):
            print(epoch, step, batch.shape)
""",
        ),
        Invalid(
            """
import torch.multiprocessing as mp

def train(rank):
    print(rank)

def main():
    mp.spawn(train, nprocs=1)

main()
""",
            (10,),
            fixed="""
import torch.multiprocessing as mp

def train(rank):
    print(rank)

def main():
    mp.spawn(train, nprocs=1)

if __name__ == "__main__":
    main()
""",
            prints="0",
        ),
        Invalid(
            """
import torch.multiprocessing as mp

def train(rank):
    print(rank)

mp.spawn(train, nprocs=1)
""",
            (7,),
            fixed="""
import torch.multiprocessing as mp

def train(rank):
    print(rank)

if __name__ == "__main__":
    mp.spawn(train, nprocs=1)
""",
            prints="0",
        ),
        Invalid(
            """
import torch.multiprocessing as mp

def train(rank):
    pass

mp.spawn(train, nprocs=2)
""",
            (7,),
            fixed="""
import torch.multiprocessing as mp

def train(rank):
    pass

if __name__ == "__main__":
    mp.spawn(train, nprocs=2)
""",
        ),
        Invalid(
            """
import multiprocessing as mp

import streamlit as st

def work(x):
    return x * 2

if st.checkbox("Run", value=True):  # True in the child too: it re-runs the launch
    with mp.get_context("spawn").Pool(2) as pool:
        st.write(pool.map(work, range(4)))
""",
            (10,),
            fixed="""
import multiprocessing as mp

import streamlit as st

def work(x):
    return x * 2

if __name__ == "__main__":
    if st.checkbox("Run", value=True):  # True in the child too: it re-runs the launch
        with mp.get_context("spawn").Pool(2) as pool:
            st.write(pool.map(work, range(4)))
""",
            standalone=False,  # a Streamlit page runs under `streamlit run` (F44 measures it there)
        ),
        Invalid(
            """
import multiprocessing as mp

def work():
    pass

if mp.parent_process() is None:  # still None while a spawn child re-imports this module
    child = mp.get_context("spawn").Process(target=work)
    child.start()
    child.join()
    print(child.exitcode)
""",
            (8,),
            fixed="""
import multiprocessing as mp

def work():
    pass

if __name__ == "__main__":
    if mp.parent_process() is None:  # still None while a spawn child re-imports this module
        child = mp.get_context("spawn").Process(target=work)
        child.start()
        child.join()
        print(child.exitcode)
""",
            prints="0",
        ),
    )

    def check(self, ctx: FileContext) -> Iterator[Report]:
        if ctx.path.endswith(".ipynb"):
            return  # a notebook runs in the kernel's `__main__`, which has no file a child could import again
        model = process_model(ctx)
        guarded = _guarded_nodes(ctx.module) | skipped_on_reimport(ctx.module, ctx.semantic.imports, ctx.text)
        reported = set()
        for facts, crossing in model.crossings():
            scope = facts.scope
            if crossing.kind not in _STARTS_PROCESSES or scope.is_method or scope.enclosing:
                continue
            method = model.start_method(crossing)
            if not method.pickles:
                continue
            launcher = crossing.launcher or crossing.node
            if scope.is_function:  # `run()` at top level, whose body launches
                what = f"`{scope.name}()`, called here, starts processes at line {ctx.line(launcher)}"
                launches = _calls_of(ctx, scope.name)
            else:
                what, launches = f"{crossing_text(ctx, crossing)} starts processes", [launcher]
            for launch in launches:
                if id(launch) in guarded or id(launch) in reported:
                    continue
                reported.add(id(launch))
                yield Report(
                    launch,
                    f"{what} from top-level code with {pickling_method_text(method)}: each child re-imports this "
                    "module, re-runs this launch and fails with `RuntimeError`",
                    fix=_guard_the_rest(ctx, launch),
                )
        for iteration, loader in _loader_passes(ctx):
            method = loader_start_method(ctx, loader)
            if id(iteration) in guarded or id(iteration) in reported or not method.pickles:
                continue
            reported.add(id(iteration))
            yield Report(
                iteration,
                f"`{ctx.code(iteration)}` starts the workers of the DataLoader at line {ctx.line(loader.node)} "
                f"from top-level code with {pickling_method_text(method)}: each re-imports this module, re-runs "
                "this loop and fails with `RuntimeError`",
                fix=_guard_the_rest(ctx, iteration),
            )
        for function, iteration, loader in _function_loader_passes(ctx):
            method = loader_start_method(ctx, loader)
            if not method.pickles:
                continue
            for launch in _calls_of(ctx, function.name.value):
                if id(launch) in guarded or id(launch) in reported:
                    continue
                reported.add(id(launch))
                yield Report(
                    launch,
                    f"`{function.name.value}()`, called here, runs the DataLoader workers of line {ctx.line(loader.node)} "
                    f"from top-level code with {pickling_method_text(method)}: each worker re-runs this call",
                    fix=_guard_the_rest(ctx, launch),
                )


def _loader_passes(ctx: FileContext) -> Iterator[tuple[cst.BaseExpression, WorkerLoader]]:
    """Top-level code iterating a DataLoader with workers that top-level code made or got from a function
    of the module (`for b in loader:`, `enumerate(loader)`, `iter(loader)`): each pass starts its workers."""
    found = module_datasets(ctx)
    if not found.worker_loaders:
        return
    held = _module_loader_names(ctx, found)
    if held.loaders or held.holders:
        finder = _Passes(held)
        for statement in _top_level_code(ctx.module):
            finder.walk(statement)
        yield from finder.found


def _top_level_code(module: cst.Module) -> list[cst.CSTNode]:
    return [s for s in module.body if not isinstance(s, (cst.FunctionDef, cst.ClassDef))]


def _module_loader_names(ctx: FileContext, found: Datasets) -> _LoaderNames:
    """The names top-level code (also in its loops, `if`s and `with`s) binds to DataLoaders with workers,
    and to lists or dicts of them (`loaders = {x: DataLoader(sets[x], num_workers=4) for x in ...}`,
    `test_loaders.append(test_loader)`)."""
    names = _LoaderNames(found)
    for _ in range(2):  # a name bound in a loop's body, read by the loop's head
        for statement in _top_level_code(ctx.module):
            names.walk(statement)
    return names


def _function_loader_passes(ctx: FileContext) -> Iterator[tuple[cst.FunctionDef, cst.BaseExpression, WorkerLoader]]:
    """Top-level functions that iterate a DataLoader with workers that they make, or that top-level code
    made (`train_model()` of a script): calling one starts the workers. Each with its first pass."""
    found = module_datasets(ctx)
    if not found.worker_loaders:
        return
    module_names = _module_loader_names(ctx, found)
    for statement in ctx.module.body:
        if not isinstance(statement, cst.FunctionDef):
            continue
        bound = _LoaderNames(found)
        bound.walk(statement.body)
        local = bound.bound | {param.name.value for param in statement.params.params}
        bound.inherit(module_names, local)
        if bound.loaders or bound.holders:
            finder = _Passes(bound)
            finder.walk(statement.body)
            if finder.found:
                yield statement, *finder.found[0]


class _LoaderNames(Walker):
    """The names a scope binds to DataLoaders with workers (`loader = DataLoader(ds, num_workers=2)`,
    `loader = create_dataloader(ds)` of a function that returns one, `a, b = make_loaders()`, `for
    loader in loaders:`), and to lists and dicts that hold them."""

    def __init__(self, found: Datasets) -> None:
        self.found = found
        self.loaders: dict[str, WorkerLoader] = {}
        self.holders: dict[str, WorkerLoader] = {}  # a list or dict of loaders: `loaders[phase]` is one
        self.bound: set[str] = set()  # every name the scope assigns: a global of that name is not read

    def inherit(self, outer: _LoaderNames, local: set[str]) -> None:
        """The outer scope's names that this one does not bind itself."""
        self.loaders = {n: v for n, v in outer.loaders.items() if n not in local} | self.loaders
        self.holders = {n: v for n, v in outer.holders.items() if n not in local} | self.holders

    def loader(self, value: cst.BaseExpression, position: int | None = None) -> WorkerLoader | None:
        if position is None and isinstance(value, cst.Name) and value.value in self.loaders:
            return self.loaders[value.value]
        return self.found.loader_given(value, position)

    def held(self, value: cst.BaseExpression) -> WorkerLoader | None:
        """The loader a dict or list written out holds, or that a holder's name holds."""
        if isinstance(value, cst.Name):
            return self.holders.get(value.value)
        if isinstance(value, cst.DictComp):
            return self.loader(value.value)
        if isinstance(value, (cst.ListComp, cst.GeneratorExp)):
            return self.loader(value.elt)
        if isinstance(value, cst.Dict):
            elements = (e.value for e in value.elements if isinstance(e, cst.DictElement))
        elif isinstance(value, (cst.List, cst.Tuple)):
            elements = (e.value for e in value.elements if isinstance(e, cst.Element))
        else:
            return None
        return next((loader for loader in map(self.loader, elements) if loader is not None), None)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind(target.target, node.value)

    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            self.bound.add(target.value)
            loader, held = self.loader(value), self.held(value)
            if loader is not None:
                self.loaders[target.value] = loader
            elif held is not None:
                self.holders[target.value] = held
        elif isinstance(target, (cst.Tuple, cst.List)):
            elements = [e.value for e in target.elements]
            values = value.elements if isinstance(value, (cst.Tuple, cst.List)) else None
            if values is not None and len(values) == len(elements):
                for element, item in zip(elements, values):
                    self._bind(element, item.value)
                return
            for position, element in enumerate(elements):
                if isinstance(element, cst.Name):
                    self.bound.add(element.value)
                    loader = self.loader(value, position)
                    if loader is not None:
                        self.loaders[element.value] = loader

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func  # `loaders.append(loader)`: the list holds a loader
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.attr.value == "append":
            loader = self.loader(node.args[0].value) if node.args else None
            if loader is not None:
                self.holders[func.value.value] = loader

    def visit_For(self, node: cst.For) -> None:
        """`for loader in loaders:`, `for phase, loader in loaders.items():` over a holder."""
        source, target = node.iter, node.target
        if isinstance(source, cst.Call) and isinstance(source.func, cst.Attribute):
            method, source = source.func.attr.value, source.func.value
            if method == "items" and isinstance(target, cst.Tuple) and len(target.elements) == 2:
                target = target.elements[1].value
            elif method != "values":
                return
        held = self.held(source) if isinstance(source, cst.Name) else None
        if held is not None and isinstance(target, cst.Name):
            self.loaders[target.value] = held

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False  # a nested function's loader is its own

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False


#: Calls that iterate their first argument (or hand its items on, to be iterated).
_ITERATING = frozenset({"iter", "list", "tuple", "enumerate", "zip", "tqdm", "islice", "sorted"})


def _last_name(func: cst.BaseExpression) -> str | None:
    name = dotted_name(func)
    return name.rsplit(".", 1)[-1] if name is not None else None


class _Passes(Walker):
    def __init__(self, names: _LoaderNames) -> None:
        self.loaders = names.loaders
        self.holders = names.holders
        self.found: list[tuple[cst.BaseExpression, WorkerLoader]] = []

    def visit_For(self, node: cst.For) -> None:
        self._iterated(node.iter)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._iterated(node.iter)

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value in ("iter", "list") and node.args:
            self._iterated(node)  # `next(iter(loader))`, `list(loader)` outside a `for`

    def _iterated(self, node: cst.BaseExpression) -> None:
        """The loader itself, or calls that iterate their first argument (`enumerate(tqdm(loader))`);
        `len(loader)` does not."""
        named = node
        while isinstance(named, cst.Call) and named.args and _last_name(named.func) in _ITERATING:
            named = named.args[0].value
        if isinstance(named, cst.Subscript):  # `loaders[phase]` of a dict of loaders
            if isinstance(named.value, cst.Name) and named.value.value in self.holders:
                self.found.append((node, self.holders[named.value.value]))
        elif isinstance(named, cst.Name) and named.value in self.loaders:
            self.found.append((node, self.loaders[named.value]))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False


def _guard_the_rest(ctx: FileContext, launch: cst.CSTNode) -> Fix | None:
    """Indent the top-level statement holding `launch`, and all after it, under a `__main__` guard."""
    positions = ctx.positions
    row = positions[launch].start.line
    body = list(ctx.module.body)
    first = next((i for i, s in enumerate(body) if positions[s].start.line <= row <= positions[s].end.line), None)
    if first is None or any(
        _defines(statement) or _spans_lines_in_a_string(ctx, statement) for statement in body[first:]
    ):
        return None
    start = positions[body[first]].start.line
    lines = source_rows(ctx.text, start)
    indented = "".join(f"    {line}" if line.strip() else line for line in lines)
    starts = line_starts(ctx.text)
    end = Position(len(starts), len(ctx.text) - starts[-1] + 1)  # the end of the file
    return Fix(
        (Edit(Position(start, 1), end, 'if __name__ == "__main__":\n' + indented),),
        Applicability.UNSAFE,
        'Start the processes under `if __name__ == "__main__":`',
    )


def _defines(statement: cst.CSTNode) -> bool:
    if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
        return True
    return isinstance(statement, cst.SimpleStatementLine) and any(
        isinstance(small, (cst.Import, cst.ImportFrom)) for small in statement.body
    )


def _spans_lines_in_a_string(ctx: FileContext, statement: cst.CSTNode) -> bool:
    strings = _Strings()
    strings.walk(statement)
    return any(ctx.positions[node].start.line != ctx.positions[node].end.line for node in strings.found)


class _Strings(Walker):
    def __init__(self) -> None:
        self.found: list[cst.CSTNode] = []

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        self.found.append(node)

    def visit_FormattedString(self, node: cst.FormattedString) -> None:
        self.found.append(node)


def _calls_of(ctx: FileContext, function: str) -> list[cst.Call]:
    """Calls of a top-level function made by the module's own statements (not inside a def or class)."""
    finder = _CallsOf(function)
    for statement in ctx.module.body:
        if not isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            finder.walk(statement)
    return finder.found


class _CallsOf(Walker):
    def __init__(self, function: str) -> None:
        self.function = function
        self.found: list[cst.Call] = []

    def visit_Call(self, node: cst.Call) -> bool:
        if isinstance(node.func, cst.Name) and node.func.value == self.function:
            self.found.append(node)
        return True

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False  # a def under a top-level `if`: its calls run when it is called

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False


def _guarded_nodes(module: cst.Module) -> set[int]:
    """Ids of every node under a top-level `if __name__ == "__main__":`."""
    collector = NodeIds()
    for statement in module.body:
        if isinstance(statement, cst.If) and is_main_guard(statement.test):
            collector.walk(statement.body)
    return collector.ids
