from collections.abc import Iterator

import libcst as cst

from gpumem_lint.context import FileContext
from gpumem_lint.diagnostics import Severity
from gpumem_lint.knowledge import knowledge
from gpumem_lint.rules._boundaries import module_datasets
from gpumem_lint.rules.base import Invalid, Report, Rule
from gpumem_lint.semantic.datasets import (
    WORKER_LOADER,
    DatasetClass,
    Datasets,
    self_attribute,
)
from gpumem_lint.semantic.imports import dotted_name
from gpumem_lint.semantic.walk import Walker

# Container methods that change the container.
_MUTATING_METHODS = frozenset(
    {
        "append",
        "extend",
        "insert",
        "add",
        "update",
        "setdefault",
        "pop",
        "popitem",
        "remove",
        "discard",
        "clear",
        "appendleft",
        "__setitem__",
    }
)


class DatasetStateMutatedInWorker(Rule):
    """
    ## What it does
    Flags a Dataset's `__getitem__` / `__iter__` (or a method they call through `self.`)
    that updates an attribute of the dataset — `self.count += 1`, `self.seen.append(i)`,
    `self.stats[k] = v`, `self.buf.add_(x)` — which the main process evidently reads:
    another method of the class (not `__init__`) or code holding the dataset reads that
    attribute, and a `DataLoader` in the same module loads the Dataset with `num_workers`
    other than 0. The loader's dataset is known by the class it is built with, or by the function
    or method that makes it (`Images().cache()`, `make()`) when every `return` of every function of
    that name builds one class of the module.

    ## Why is this bad?
    Each worker process holds its own copy of the dataset (forked, or pickled when the
    iterator starts), so the update stays in the worker: the main process keeps the value
    it had when the workers started (`sum=0` in the measurement behind
    [docs/facts.md](../docs/facts.md) F16). Counters, statistics, caches meant to be
    reused and "current epoch" bookkeeping silently read as if nothing happened — and
    the same code works with `num_workers=0`.

    A cache that only `__getitem__` itself reads is per-worker memoisation and is not
    reported. Attributes made with `multiprocessing` primitives (`mp.Value`, a `Manager`
    dict) are shared on purpose and are not reported either.

    ## Example
    ```python
    class Corpus(Dataset):
        def __getitem__(self, i):
            self.tokens_served += len(self.rows[i])
            return self.rows[i]

        def throughput(self):
            return self.tokens_served
    ```

    ## Use instead
    ```python
    class Corpus(Dataset):
        def __getitem__(self, i):
            return self.rows[i], len(self.rows[i])  # count in the main process, per batch
    ```

    ## Fix safety
    There is no automatic fix: the state has to travel with the batch, or live in
    shared memory (`share_memory_()` tensors, `multiprocessing.Value`) under a lock.

    ## References
    - [torch.utils.data: multi-process data loading](https://docs.pytorch.org/docs/stable/data.html#multi-process-data-loading)
    """

    code = "GML206"
    name = "dataset-state-mutated-in-worker"
    severity = Severity.WARNING
    summary = "A Dataset updates its own state in DataLoader workers, where the main process never sees it"
    fix_title = "Return the information with the batch, or keep it in shared memory (`mp.Value`, `share_memory_()`)"
    triggers = ("DataLoader",)
    file_trigger = WORKER_LOADER
    VALID = (
        """
from torch.utils.data import DataLoader, Dataset

class Cached(Dataset):
    def __getitem__(self, i):
        if i not in self.cache:
            self.cache[i] = self.load(i)
        return self.cache[i]

loader = DataLoader(Cached(), num_workers=4)
""",
        """
from torch.utils.data import DataLoader, Dataset

class Counting(Dataset):
    def __getitem__(self, i):
        self.served += 1
        return self.rows[i]

    def report(self):
        return self.served

loader = DataLoader(Counting(), batch_size=8)
""",
        # two classes' `wrap()` build different datasets: which one `wrap()` gives is not known
        """
from torch.utils.data import DataLoader, Dataset


class Filling(Dataset):
    def __init__(self):
        self.store = {}

    def __getitem__(self, i):
        self.store[i] = i
        return i


class Plain(Dataset):
    def __getitem__(self, i):
        return i


class Other:
    def wrap(self):
        return Plain()


class Source:
    def wrap(self):
        return Filling()


dataset = Other().wrap()
for batch in DataLoader(dataset, batch_size=4, num_workers=2):
    print(batch, dataset.store)
""",
    )
    INVALID = (
        # `cache()` builds the caching wrapper: the loader's dataset is a `Cached`, filled in the workers
        Invalid(
            """
from torch.utils.data import DataLoader, Dataset


class Base(Dataset):
    def cache(self):
        return Cached(self)


class Cached(Base):
    def __init__(self, inner):
        self.inner, self.store = inner, {}

    def __len__(self):
        return len(self.inner)

    def __getitem__(self, i):
        if i not in self.store:
            self.store[i] = self.inner[i]
        return self.store[i]


class Squares(Base):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return i * i


dataset = Squares().cache()
for batch in DataLoader(dataset, batch_size=4, num_workers=2):
    print(batch, len(dataset.store))
""",
            (19,),
        ),
        Invalid(
            """
from torch.utils.data import DataLoader, Dataset

class Counting(Dataset):
    def __getitem__(self, i):
        self.served += 1
        return self.rows[i]

    def report(self):
        return self.served

loader = DataLoader(Counting(), batch_size=8, num_workers=2)
""",
            (6,),
        ),
    )

    def check(self, ctx: FileContext) -> Iterator[Report]:
        found = module_datasets(ctx)
        for cls in found.classes.values():
            loaders = found.loaders_of(cls)
            if not loaders:
                continue
            worker = cls.worker_methods()
            shared = cls.shared_attributes(ctx.semantic.imports)
            mutations = _Mutations()
            for method in worker.values():
                mutations.walk(method.body)
            reported = set()
            for attribute, node in sorted(mutations.found, key=lambda item: ctx.line(item[1])):
                if attribute in reported or attribute in shared:
                    continue
                reader = _main_process_reader(cls, worker, attribute, found, ctx)
                if reader is None:
                    continue
                reported.add(attribute)
                yield Report(
                    node,
                    f"`{ctx.code(node)}` updates `self.{attribute}` in DataLoader workers (line "
                    f"{ctx.line(loaders[0].node)}): each changes its own copy, so {reader} in the main process "
                    "never sees it",
                )


class _Mutations(Walker):
    """`self.<attr>` updated in place: augmented assignment, item assignment, a mutating call."""

    def __init__(self) -> None:
        self.found: list[tuple[str, cst.CSTNode]] = []
        self._inplace = knowledge().data_write_methods

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._target(node.target, node)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if isinstance(target.target, cst.Subscript):
                self._target(target.target, node)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and (
            func.attr.value in _MUTATING_METHODS or func.attr.value in self._inplace
        ):
            self._target(func.value, node)

    def _target(self, target: cst.BaseExpression, node: cst.CSTNode) -> None:
        while isinstance(target, cst.Subscript):
            target = target.value
        attribute = self_attribute(target)
        if attribute is not None:
            self.found.append((attribute, node))


def _main_process_reader(
    cls: DatasetClass, worker: dict, attribute: str, found: Datasets, ctx: FileContext
) -> str | None:
    """Where the main process reads the attribute: a method that does not run in workers, or
    `dataset.attr` on an instance of the class (also `loader.dataset.attr`)."""
    for name, method in cls.methods.items():
        if name in worker or name == "__init__":
            continue
        if _reads(method.body, "self", attribute):
            return f"`{name}()` (line {ctx.line(method)})"
    instances = {name for name, owner in found.instances.items() if owner == cls.name}
    instances.update(place for loader in found.loaders_of(cls) for place in loader.dataset_places)  # `loader.dataset`
    for instance in sorted(instances):
        reader = _first_read(ctx.module, instance, attribute)
        if reader is not None:
            return f"`{ctx.code(reader)}` (line {ctx.line(reader)})"
    return None


def _reads(node: cst.CSTNode, owner: str, attribute: str) -> bool:
    return _first_read(node, owner, attribute) is not None


def _first_read(node: cst.CSTNode, owner: str, attribute: str) -> cst.Attribute | None:
    collector = _AttributeReads(f"{owner}.{attribute}")
    collector.walk(node)
    return collector.found


class _AttributeReads(Walker):
    def __init__(self, place: str) -> None:
        self.place = place
        self.found: cst.Attribute | None = None

    def visit_Assign(self, node: cst.Assign) -> bool:
        self.walk(node.value)  # `self.count = 0` (a reset) does not read it
        return False

    def visit_AugAssign(self, node: cst.AugAssign) -> bool:
        self.walk(node.value)
        return False

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        if self.found is None and dotted_name(node) == self.place:
            self.found = node
            return False
        return True
