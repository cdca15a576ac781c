from collections.abc import Iterator

import libcst as cst

from gpumem_lint.context import FileContext
from gpumem_lint.diagnostics import Severity
from gpumem_lint.rules._boundaries import module_datasets
from gpumem_lint.rules.base import Invalid, Report, Rule
from gpumem_lint.semantic.datasets import DatasetClass, Loader
from gpumem_lint.semantic.imports import dotted_name
from gpumem_lint.semantic.walk import Walker


class DatasetUpdatedAfterWorkersStarted(Rule):
    """
    ## What it does
    Flags, in an epoch loop that iterates a `DataLoader(..., num_workers > 0,
    persistent_workers=True)`, a change to the loader's dataset made in the main process —
    `train_set.set_epoch(epoch)`, `loader.dataset.scale = s` — when the attribute it changes
    is read by the dataset's `__getitem__` / `__iter__` (or a method they call), that is,
    inside the workers.

    ## Why is this bad?
    Persistent workers are started at the first iteration, each with its own copy of the
    dataset (forked or pickled), and kept for every later epoch. A change made afterwards in
    the main process stays there: the workers go on returning data for the old epoch, the
    old augmentation strength or the old curriculum stage ([docs/facts.md](../docs/facts.md)
    F16; the research notes measured "workers keep returning the old values"). The same
    code works with `persistent_workers=False`, where workers are started again each epoch.

    ## Example
    ```python
    loader = DataLoader(train_set, num_workers=8, persistent_workers=True)
    for epoch in range(epochs):
        train_set.set_epoch(epoch)  # __getitem__ seeds its augmentation with self.epoch
        for batch in loader:
            ...
    ```

    ## Use instead
    ```python
    loader = DataLoader(train_set, num_workers=8, persistent_workers=False)
    # or derive per-epoch state in the worker (torch.utils.data.get_worker_info(), a
    # sampler that yields (index, epoch) pairs), or keep it in shared memory (mp.Value)
    ```

    ## Fix safety
    There is no automatic fix: turning persistent workers off costs a worker start per
    epoch, and the other remedies change the dataset's interface.

    ## References
    - [torch.utils.data.DataLoader: persistent_workers](https://docs.pytorch.org/docs/stable/data.html#torch.utils.data.DataLoader)
    """

    code = "GML210"
    name = "dataset-updated-after-workers-started"
    severity = Severity.ERROR
    summary = "Dataset state changed in the main process while persistent DataLoader workers keep their own copy"
    fix_title = (
        "Use `persistent_workers=False`, or pass per-epoch state to the workers another way (sampler, shared memory)"
    )
    triggers = ("persistent_workers",)
    VALID = (
        """
from torch.utils.data import DataLoader, Dataset

class Augmented(Dataset):
    def set_epoch(self, epoch):
        self.epoch = epoch

    def __getitem__(self, i):
        return self.rows[i] * self.epoch

def train(epochs):
    train_set = Augmented()
    loader = DataLoader(train_set, num_workers=4, persistent_workers=False)
    for epoch in range(epochs):
        train_set.set_epoch(epoch)
        for batch in loader:
            pass
""",
    )
    INVALID = (
        Invalid(
            """
from torch.utils.data import DataLoader, Dataset

class Augmented(Dataset):
    def set_epoch(self, epoch):
        self.epoch = epoch

    def __getitem__(self, i):
        return self.rows[i] * self.epoch

def train(epochs):
    train_set = Augmented()
    loader = DataLoader(train_set, num_workers=4, persistent_workers=True)
    for epoch in range(epochs):
        train_set.set_epoch(epoch)
        for batch in loader:
            pass
""",
            (15,),
        ),
    )

    def check(self, ctx: FileContext) -> Iterator[Report]:
        found = module_datasets(ctx)
        for loader in found.loaders:
            if not loader.persistent or not loader.dataset_places:
                continue
            cls = found.classes[loader.dataset]
            read_by_workers = _attributes_read(cls) - cls.shared_attributes(ctx.semantic.imports)
            changes = {
                name: changed & read_by_workers
                for name, method in cls.methods.items()
                if name not in cls.worker_methods() and name != "__init__" and (changed := _attributes_changed(method))
            }
            finder = _EpochUpdates(loader, changes, read_by_workers)
            finder.walk(ctx.module)
            for node, attribute in finder.found:
                yield Report(
                    node,
                    f"`{ctx.code(node)}` changes `{attribute}` of the dataset in the main process, but the persistent "
                    f"workers of `DataLoader` at line {ctx.line(loader.node)} keep reading their own, old copy",
                )


class _EpochUpdates(Walker):
    """Updates of the dataset inside a loop whose body also iterates the loader."""

    def __init__(self, loader: Loader, changes: dict[str, set[str]], read: set[str]) -> None:
        self.loader = loader
        self.changes = changes
        self.read = read
        self.found: list[tuple[cst.CSTNode, str]] = []
        self._seen: set[int] = set()  # nested loops see the same statement again

    def visit_For(self, node: cst.For) -> None:
        self._loop(node)

    def visit_While(self, node: cst.While) -> None:
        self._loop(node)

    def _loop(self, node: cst.For | cst.While) -> None:
        if self.loader.name is None or not _iterates(node.body, self.loader.name):
            return
        for statement in _small_statements(node.body):
            self._statement(statement)

    def _statement(self, statement: cst.BaseSmallStatement) -> None:
        if id(statement) in self._seen:
            return
        self._seen.add(id(statement))
        places = self.loader.dataset_places
        if isinstance(statement, cst.Expr) and isinstance(statement.value, cst.Call):
            func = statement.value.func
            if isinstance(func, cst.Attribute) and dotted_name(func.value) in places:
                changed = self.changes.get(func.attr.value)
                if changed:
                    self.found.append((statement.value, min(changed)))
        elif isinstance(statement, (cst.Assign, cst.AugAssign)):
            targets = [t.target for t in statement.targets] if isinstance(statement, cst.Assign) else [statement.target]
            for target in targets:
                if (
                    isinstance(target, cst.Attribute)
                    and dotted_name(target.value) in places
                    and (target.attr.value in self.read)
                ):
                    self.found.append((statement, target.attr.value))


def _iterates(body: cst.CSTNode, loader: str) -> bool:
    finder = _LoaderLoops(loader)
    finder.walk(body)
    return finder.found


class _LoaderLoops(Walker):
    def __init__(self, loader: str) -> None:
        self.loader = loader
        self.found = False

    def visit_For(self, node: cst.For) -> None:
        iterable = node.iter
        while isinstance(iterable, cst.Call) and iterable.args:  # enumerate(loader), tqdm(loader)
            if dotted_name(iterable.func) == self.loader:
                break
            iterable = iterable.args[0].value
        if dotted_name(iterable) == self.loader:
            self.found = True


def _small_statements(body: cst.CSTNode) -> list[cst.BaseSmallStatement]:
    collector = _Statements()
    collector.walk(body)
    return collector.found


class _Statements(Walker):
    def __init__(self) -> None:
        self.found: list[cst.BaseSmallStatement] = []

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
        self.found.extend(node.body)
        return False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False


def _attributes_read(cls: DatasetClass) -> set[str]:
    reader = _SelfAttributes()
    for method in cls.worker_methods().values():
        reader.walk(method.body)
    return reader.read


def _attributes_changed(method: cst.FunctionDef) -> set[str]:
    writer = _SelfAttributes()
    writer.walk(method.body)
    return writer.written


class _SelfAttributes(Walker):
    """`self.<attr>` read, and `self.<attr>` assigned (`self.x = v`, `self.x += v`, `self.x[k] = v`)."""

    def __init__(self) -> None:
        self.read: set[str] = set()
        self.written: set[str] = set()

    def visit_Assign(self, node: cst.Assign) -> bool:
        for target in node.targets:
            self._written(target.target)
        self.walk(node.value)
        return False

    def visit_AugAssign(self, node: cst.AugAssign) -> bool:
        self._written(node.target)
        self.walk(node.value)
        return False

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        if isinstance(node.value, cst.Name) and node.value.value == "self":
            self.read.add(node.attr.value)
            return False
        return True

    def _written(self, target: cst.BaseExpression) -> None:
        while isinstance(target, cst.Subscript):
            target = target.value
        if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self":
            self.written.add(target.attr.value)
