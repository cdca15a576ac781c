"""DataLoader workers: the module's Dataset classes, which of their methods run inside
worker processes, and the DataLoaders that start workers over them.

A Dataset class is one whose bases name `torch.utils.data.Dataset` / `IterableDataset`
(or another Dataset class of the module). Its *worker methods* are `__getitem__`,
`__getitems__`, `__iter__`, `__next__` and the methods they call through `self.`: with
`num_workers > 0` they run in the workers, each of which holds its own copy of the
dataset (F16). A DataLoader is matched to a class when its dataset argument is
`Cls(...)` or a name (or `self.` attribute) assigned `Cls(...)` anywhere in the module.

`Datasets.worker_loaders` are all the DataLoaders that start workers, whatever they load;
`constructions` the calls that build each Dataset class; `values` what each name (or `self.`
attribute) was last assigned in the module; `returned_loaders` what the module's functions return of
those loaders (`def create_dataloader(...): return DataLoader(..., num_workers=4)`), and
`Datasets.loader_given(value)` the loader with workers an expression gives: the `DataLoader(...)` call
itself, or a call of such a function (`test_loader = create_dataloader(test_set, opt)`). `semantic/worker_code.py` reads them to find the
rest of the code that runs in workers (collate_fn, worker_init_fn, transforms, TensorDataset).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

import libcst as cst

from gpumem_lint.semantic.given_keywords import Given, GivenKeywords
from gpumem_lint.semantic.imports import ImportTable, dotted_name
from gpumem_lint.semantic.literals import assigned_pairs, keyword
from gpumem_lint.semantic.name_values import Unpacked, value_bindings
from gpumem_lint.semantic.pickling import returned_values
from gpumem_lint.semantic.processes import START_METHODS
from gpumem_lint.semantic.walk import Walker

_DATASET_BASES = frozenset(
    {
        "torch.utils.data.Dataset",
        "torch.utils.data.IterableDataset",
        "torch.utils.data.dataset.Dataset",
        "torch.utils.data.dataset.IterableDataset",
        "torch.utils.data.TensorDataset",
    }
)
_DATALOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
_WORKER_ENTRY = ("__getitem__", "__getitems__", "__iter__", "__next__")


@dataclass
class DatasetClass:
    node: cst.ClassDef
    methods: dict[str, cst.FunctionDef] = field(default_factory=dict)

    @classmethod
    def of(cls, node: cst.ClassDef) -> DatasetClass:
        """Any class of the module, read as a Dataset class is: its methods, what `__init__` stores."""
        return cls(node, _methods(node))

    @property
    def name(self) -> str:
        return self.node.name.value

    def shared_attributes(self, imports: ImportTable) -> set[str]:
        """Attributes shared across processes on purpose: assigned a `multiprocessing` object
        (`mp.Value`, a manager dict), or a tensor made `share_memory_()`."""
        collector = _SharedAttributes(imports)
        for method in self.methods.values():
            collector.walk(method.body)
        return collector.shared

    def stored_arguments(
        self, construction: cst.Call, spread: list[tuple[str, cst.BaseExpression]] = ()
    ) -> list[tuple[cst.BaseExpression, str]]:
        """What a `Cls(...)` call passes that `__init__` keeps on the instance (`self.fn = fn`), with
        the attribute: pickling the dataset for a worker pickles those too. `spread`: the keywords a
        `**kwargs` of the call gives (given_keywords.py `spread_keywords`)."""
        init = self.methods.get("__init__")
        if init is None:
            return []
        stores = _parameter_stores(init)
        params = [param.name.value for param in init.params.params][1:]  # past `self`
        stored = []
        for position, arg in enumerate(construction.args):
            if arg.star:
                break
            param = (
                arg.keyword.value if arg.keyword is not None else params[position] if position < len(params) else None
            )
            if param in stores:
                stored.append((arg.value, stores[param]))
        return stored + [(value, stores[key]) for key, value in spread if key in stores]

    def worker_methods(self) -> dict[str, cst.FunctionDef]:
        """The entry points and the `self.` methods they reach."""
        return methods_reached(self.methods, _WORKER_ENTRY)


def methods_reached(methods: dict[str, cst.FunctionDef], entries: tuple[str, ...]) -> dict[str, cst.FunctionDef]:
    """The methods named `entries` and the `self.` methods they call, transitively (`__init__` excluded)."""
    found: dict[str, cst.FunctionDef] = {}
    pending = [name for name in entries if name in methods]
    while pending:
        name = pending.pop()
        if name in found or name == "__init__":
            continue
        found[name] = methods[name]
        pending.extend(callee for callee in self_calls(found[name]) if callee in methods)
    return found


@dataclass(frozen=True)
class Loader:
    node: cst.Call
    dataset: str  # the Dataset class it loads
    start_method: str | None  # `multiprocessing_context="spawn"`; None: the default
    persistent: bool = False  # `persistent_workers=True`: workers started once, kept across epochs
    #: How code reaches the dataset: the name passed in, and `<loader name>.dataset`.
    dataset_places: tuple[str, ...] = ()
    name: str | None = None  # the name the loader is assigned to


@dataclass(frozen=True)
class WorkerLoader:
    """A DataLoader that starts workers, whatever it loads."""

    node: cst.Call
    dataset: cst.BaseExpression | None
    start_method: str | None
    #: The class whose method makes the loader (`collate_fn=self.collate` is one of its methods).
    owner: cst.ClassDef | None = None


@dataclass
class Datasets:
    classes: dict[str, DatasetClass]
    loaders: list[Loader]  # DataLoaders that start workers over a class of this module
    instances: dict[str, str]  # name or `self.` attribute -> Dataset class it was assigned
    worker_loaders: list[WorkerLoader] = field(default_factory=list)
    constructions: dict[str, list[cst.Call]] = field(default_factory=dict)  # class name -> `Cls(...)` calls
    values: dict[str, cst.BaseExpression] = field(default_factory=dict)  # name -> the value last assigned
    #: Module-level function name -> the loaders with workers it returns: the value itself (key None),
    #: or element i of a tuple it returns (`return train_loader, val_loader`).
    returned_loaders: dict[str, dict[int | None, WorkerLoader]] = field(default_factory=dict)

    def loaders_of(self, cls: DatasetClass) -> list[Loader]:
        return [loader for loader in self.loaders if loader.dataset == cls.name]

    def loader_given(self, value: cst.BaseExpression | None, position: int | None = None) -> WorkerLoader | None:
        """The DataLoader with workers that evaluating `value` gives (element `position` of it, for an
        unpacking: `train_loader, val_loader = make_loaders()`): the `DataLoader(...)` call itself, or a
        call of a function of the module that returns one; None if it gives none that is seen."""
        return _loader_given(value, position, self.worker_loaders, self.returned_loaders)


#: What a DataLoader that starts workers looks like in source: `num_workers=` or a sixth positional
#: argument (arguments without `=`, calls nested two deep). A file without it has no worker loader.
WORKER_LOADER = re.compile(r"num_workers|DataLoader\s*\((?:(?:[^=(),]|\((?:[^()]|\([^()]*\))*\))*,){5}")


def datasets(module: cst.Module, imports: ImportTable) -> Datasets:
    collector = _Collector(imports)
    collector.walk(module)
    zeros = _zero_names(module)
    classes: dict[str, DatasetClass] = {}
    changed = True
    while changed:  # subclasses of the module's own Dataset classes
        changed = False
        for node in collector.class_nodes:
            if node.name.value not in classes and any(
                imports.qualify(base.value) in _DATASET_BASES or dotted_name(base.value) in classes
                for base in node.bases
            ):
                classes[node.name.value] = DatasetClass(node, _inherited_methods(node, classes))
                changed = True
    instances = {name: cls for name, cls in collector.assigned.items() if cls in classes}
    # `ds = make()`, `ds = Images().cache()`: a function or method every `return` of which builds one class
    makers = _makers(module, collector.class_nodes)
    for name, called in collector.assigned.items():
        made = makers.get(called.rsplit(".", 1)[-1]) if name not in instances else None
        if made in classes:
            instances[name] = made
    loaders = []
    worker_loaders = []
    plain = _loader_subclasses(collector, imports, plain=True)
    if plain:
        collector.loader_calls += [call for call in collector.calls if dotted_name(call.func) in plain]
    given = GivenKeywords(module) if any(arg.star == "**" for c in collector.loader_calls for arg in c.args) else None
    for call in collector.loader_calls:
        dataset = keyword(call, "dataset") or (
            call.args[0].value if call.args and call.args[0].keyword is None else None
        )
        spread = given.of(call) if given is not None else []
        starts = _starts_workers(call, collector.values, zeros) or _given_workers(spread, zeros)
        method = _context_method(call, spread)
        if starts:
            worker_loaders.append(WorkerLoader(call, dataset, method, collector.owners.get(id(call))))
        cls = _dataset_class(dataset, classes, instances)
        if cls is not None and starts:
            persistent = keyword(call, "persistent_workers")
            name = collector.loader_names.get(id(call))
            places = tuple(
                p
                for p in (dotted_name(dataset) if dataset is not None else None, f"{name}.dataset" if name else None)
                if p
            )
            loaders.append(
                Loader(
                    call,
                    cls,
                    method,
                    isinstance(persistent, cst.Name) and persistent.value == "True",
                    places,
                    name,
                )
            )
    worker_loaders += _subclass_loaders(collector, imports, zeros)
    names = {node.name.value for node in collector.class_nodes}  # every class: a collate method's too
    constructions = {name: [c for c in collector.calls if dotted_name(c.func) == name] for name in names}
    returned = _returned_loaders(module, worker_loaders)
    return Datasets(classes, loaders, instances, worker_loaders, constructions, collector.values, returned)


def _loader_given(
    value: cst.BaseExpression | None,
    position: int | None,
    made: list[WorkerLoader],
    returned: dict[str, dict[int | None, WorkerLoader]],
) -> WorkerLoader | None:
    if isinstance(value, cst.Call):
        if position is None:
            loader = next((loader for loader in made if loader.node is value), None)
            if loader is not None:
                return loader
        if isinstance(value.func, cst.Name):
            return returned.get(value.func.value, {}).get(position)
    if isinstance(value, cst.IfExp):  # either arm may be what runs
        return _loader_given(value.body, position, made, returned) or _loader_given(
            value.orelse, position, made, returned
        )
    return None


def _returned_loaders(module: cst.Module, made: list[WorkerLoader]) -> dict[str, dict[int | None, WorkerLoader]]:
    """What each module-level function returns of the DataLoaders with workers: one it makes (`return
    DataLoader(...)`, or the name it assigned one to), one a function of the module returns
    (`return create_dataloader(ds, opt)`), or a tuple of them (key: the element). A return that gives a
    loader is enough (`if phase == "train": return DataLoader(...)`, else another): calling the function
    may give it."""
    functions = [s for s in module.body if isinstance(s, cst.FunctionDef)]
    returns = {id(f): returned_values(f) for f in functions}
    returned: dict[str, dict[int | None, WorkerLoader]] = {}
    bindings: dict[int, dict] = {}
    for _ in range(len(functions) + 1):  # until no function gives more: a function returning another's call
        changed = False
        for function in functions:
            gives: dict[int | None, WorkerLoader] = {}
            for value in returns[id(function)]:
                elements = value.elements if isinstance(value, cst.Tuple) else None
                pairs = [(None, value)] if elements is None else [(i, e.value) for i, e in enumerate(elements)]
                if elements is not None and any(isinstance(e, cst.StarredElement) for e in elements):
                    continue  # `return *loaders, model`: the positions are not known
                for position, element in pairs:
                    if isinstance(element, cst.Name):
                        if id(function) not in bindings:
                            bindings[id(function)] = value_bindings(function)
                        assigned = bindings[id(function)].get(element.value, [])
                        found = (
                            _loader_given(b, None, made, returned) for b in assigned if not isinstance(b, Unpacked)
                        )
                    else:
                        found = iter((_loader_given(element, None, made, returned),))
                    loader = next((loader for loader in found if loader is not None), None)
                    if loader is not None:
                        gives.setdefault(position, loader)
            if gives and gives.keys() != returned.get(function.name.value, {}).keys():
                returned[function.name.value] = gives
                changed = True
        if not changed:
            break
    return returned


class _Collector(Walker):
    def __init__(self, imports: ImportTable) -> None:
        self.imports = imports
        self.class_nodes: list[cst.ClassDef] = []
        self.loader_calls: list[cst.Call] = []
        self.assigned: dict[str, str] = {}  # name -> the class, function or method called to make it
        self.loader_names: dict[int, str] = {}  # id(DataLoader call) -> the name it is assigned to
        self.calls: list[cst.Call] = []
        self.values: dict[str, cst.BaseExpression] = {}
        self.owners: dict[int, cst.ClassDef] = {}  # id(DataLoader call) -> the class around it
        self.super_inits: list[tuple[cst.Call, cst.ClassDef]] = []  # `super().__init__(...)`, in its class
        self._enclosing: list[cst.ClassDef] = []

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.class_nodes.append(node)
        self._enclosing.append(node)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._enclosing.pop()

    def visit_Call(self, node: cst.Call) -> None:
        self.calls.append(node)
        if self.imports.qualify(node.func) in _DATALOADERS:
            self.loader_calls.append(node)
            if self._enclosing:
                self.owners[id(node)] = self._enclosing[-1]
        func = node.func
        if (
            self._enclosing
            and isinstance(func, cst.Attribute)
            and func.attr.value == "__init__"
            and isinstance(func.value, cst.Call)
            and dotted_name(func.value.func) == "super"
        ):
            self.super_inits.append((node, self._enclosing[-1]))

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            name = dotted_name(target.target)
            if name is not None:
                self.values[name] = node.value
        if isinstance(node.value, cst.Call):
            func = node.value.func
            # the class called, or the function or method (`Images().cache()`: `cache`) that may build one
            cls = dotted_name(func) or (func.attr.value if isinstance(func, cst.Attribute) else None)
            for target in node.targets:
                name = dotted_name(target.target)
                if name is not None and cls is not None:
                    self.assigned[name] = cls
                if name is not None and self.imports.qualify(node.value.func) in _DATALOADERS:
                    self.loader_names[id(node.value)] = name


def _loader_subclasses(collector: _Collector, imports: ImportTable, plain: bool) -> set[str]:
    """The module's DataLoader subclasses; with `plain`, only those that define no `__init__` of their
    own, nor do their bases of this module (`class DataLoader(torch.utils.data.DataLoader): pass`): a
    construction of one is a DataLoader's."""
    subclasses: set[str] = set()
    changed = True
    while changed:
        changed = False
        for node in collector.class_nodes:
            if node.name.value in subclasses or (plain and "__init__" in _methods(node)):
                continue
            if any(
                imports.qualify(base.value) in _DATALOADERS or dotted_name(base.value) in subclasses
                for base in node.bases
            ):
                subclasses.add(node.name.value)
                changed = True
    return subclasses


def _subclass_loaders(collector: _Collector, imports: ImportTable, zeros: frozenset[str]) -> list[WorkerLoader]:
    """`class Masking(DataLoader)` whose `__init__` calls `super().__init__(dataset, collate_fn=...,
    **kwargs)`: that call makes the loader, and it starts workers when it says so or when a construction
    of the class does (`Masking(data, num_workers=4)`, passed on through `**kwargs`)."""
    subclasses = _loader_subclasses(collector, imports, plain=False)
    found = []
    for call, owner in collector.super_inits:
        if owner.name.value not in subclasses:
            continue
        constructions = [c for c in collector.calls if dotted_name(c.func) == owner.name.value]
        if not any(_starts_workers(made, collector.values, zeros) for made in (call, *constructions)):
            continue
        first = call.args[0].value if call.args and call.args[0].keyword is None else None
        dataset = keyword(call, "dataset") or first
        method = next((m for m in map(_context_method, (call, *constructions)) if m is not None), None)
        found.append(WorkerLoader(call, dataset, method, owner))
    return found


def _parameter_stores(init: cst.FunctionDef) -> dict[str, str]:
    """`self.degradation = degradation` in `__init__`: parameter -> the attribute that keeps it."""
    params = {param.name.value for param in init.params.params}
    stores = {}
    for statement in init.body.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if not isinstance(small, cst.Assign):
                continue
            for target, value in assigned_pairs(small):  # `self.n, self.transform = n, transform` too
                attribute = self_attribute(target)
                if attribute is not None and isinstance(value, cst.Name) and value.value in params:
                    stores[value.value] = attribute
    return stores


class _SharedAttributes(Walker):
    def __init__(self, imports: ImportTable) -> None:
        self.imports = imports
        self.shared: set[str] = set()

    def visit_Assign(self, node: cst.Assign) -> None:
        if _shared_value(node.value, self.imports):
            self.shared.update(a for t in node.targets if (a := self_attribute(t.target)))

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "share_memory_":
            attribute = self_attribute(func.value)
            if attribute:
                self.shared.add(attribute)


def _shared_value(node: cst.BaseExpression, imports: ImportTable) -> bool:
    """`mp.Value("i", 0)`, `torch.zeros(3).share_memory_()`."""
    if not isinstance(node, cst.Call):
        return False
    qualified = imports.qualify(node.func) or ""
    if qualified.startswith(("multiprocessing.", "torch.multiprocessing.")):
        return True
    return isinstance(node.func, cst.Attribute) and node.func.attr.value == "share_memory_"


def self_attribute(node: cst.BaseExpression) -> str | None:
    """`self.count` -> "count"; `self.stats.total` -> "stats"."""
    name = dotted_name(node)
    if name is None or not name.startswith("self."):
        return None
    return name.split(".")[1]


def _makers(module: cst.Module, class_nodes: list[cst.ClassDef]) -> dict[str, str]:
    """Module-level functions and methods, by name, every `return` of which builds an object of one class
    of the module (`def cache(self): return _Cached(self, Memory())`): what calling them gives. A name
    that functions or methods of different classes share is left out."""
    classes = {node.name.value for node in class_nodes}
    functions = [s for s in module.body if isinstance(s, cst.FunctionDef)]
    functions += [m for node in class_nodes for m in _methods(node).values()]
    made: dict[str, set[str | None]] = {}
    for function in functions:
        returned = returned_values(function)
        built = {dotted_name(value.func) if isinstance(value, cst.Call) else None for value in returned}
        made.setdefault(function.name.value, set()).update(built if returned else {None})
    return {name: next(iter(built)) for name, built in made.items() if len(built) == 1 and built <= classes}


def _inherited_methods(node: cst.ClassDef, classes: dict[str, DatasetClass]) -> dict[str, cst.FunctionDef]:
    """The class's methods with those it inherits from the module's Dataset classes it derives from (a
    `__getitem__` defined once in a base): the first base's win, as Python's method order has it."""
    methods: dict[str, cst.FunctionDef] = {}
    for base in reversed(node.bases):
        inherited = classes.get(dotted_name(base.value) or "")
        if inherited is not None:
            methods.update(inherited.methods)
    return methods | _methods(node)


def _methods(node: cst.ClassDef) -> dict[str, cst.FunctionDef]:
    return {statement.name.value: statement for statement in node.body.body if isinstance(statement, cst.FunctionDef)}


def self_calls(function: cst.FunctionDef) -> set[str]:
    """The names called as `self.<name>(...)` in a function's body: methods, or callables held in attributes."""
    collector = _SelfCalls()
    collector.walk(function.body)
    return collector.names


class _SelfCalls(Walker):
    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            self.names.add(func.attr.value)


def _dataset_class(node: cst.BaseExpression | None, classes: dict, instances: dict[str, str]) -> str | None:
    if isinstance(node, cst.Call):
        name = dotted_name(node.func)
        return name if name in classes else None
    name = dotted_name(node) if node is not None else None
    return instances.get(name) if name is not None else None


def _starts_workers(call: cst.Call, values: dict[str, cst.BaseExpression], zeros: frozenset[str]) -> bool:
    """`num_workers=4`, `num_workers=args.workers`: workers unless the literal 0, a name every binding of
    which in the module is the literal 0 (`num_workers = 0`), or absent; also `**kwargs` of a dict literal
    the module assigns with such a `"num_workers"` (either side of an `if`-expression:
    `{"num_workers": 1} if use_cuda else {}`)."""
    workers = keyword(call, "num_workers")
    if workers is None:
        positional = [arg.value for arg in call.args if arg.keyword is None and not arg.star]
        workers = (
            positional[5] if len(positional) > 5 else None
        )  # DataLoader(dataset, bs, shuffle, sampler, batch_sampler, num_workers)
    if workers is None:
        spread = [values.get(dotted_name(arg.value) or "") for arg in call.args if arg.star == "**"]
        return any(_dict_starts_workers(value) for value in spread)
    return _nonzero(workers) and not (isinstance(workers, cst.Name) and workers.value in zeros)


def _given_workers(given, zeros: frozenset[str]) -> bool:
    """A `num_workers` that `**` spreads give the loader (given_keywords.py), other than 0."""
    return any(
        key == "num_workers" and _nonzero(value) and not (isinstance(value, cst.Name) and value.value in zeros)
        for key, value, _ in given
    )


def _nonzero(workers: cst.BaseExpression) -> bool:
    return not (isinstance(workers, cst.Integer) and workers.evaluated_value == 0)


def _zero_names(module: cst.Module) -> frozenset[str]:
    """Names every binding of which, anywhere in the module, is the literal 0 (a parameter, a loop target or
    any other binding of the name makes it unknown)."""
    return frozenset(
        name
        for name, bindings in value_bindings(module).items()
        if bindings and all(isinstance(value, cst.Integer) and value.evaluated_value == 0 for value in bindings)
    )


def _dict_starts_workers(value: cst.BaseExpression | None) -> bool:
    if isinstance(value, cst.IfExp):
        return _dict_starts_workers(value.body) or _dict_starts_workers(value.orelse)
    if not isinstance(value, cst.Dict):
        return False
    return any(
        isinstance(element, cst.DictElement)
        and isinstance(element.key, cst.SimpleString)
        and element.key.evaluated_value == "num_workers"
        and _nonzero(element.value)
        for element in value.elements
    )


def _context_method(call: cst.Call, given: Iterable[Given] = ()) -> str | None:
    """The start method `multiprocessing_context=` names, also where a `**` spread gives it (given_keywords.py)."""
    context = keyword(call, "multiprocessing_context")
    if context is None:
        context = next((value for key, value, _ in given if key == "multiprocessing_context"), None)
    if isinstance(context, cst.SimpleString) and context.evaluated_value in START_METHODS:
        return context.evaluated_value
    if isinstance(context, cst.Call) and context.args and isinstance(context.args[0].value, cst.SimpleString):
        value = context.args[0].value.evaluated_value  # mp.get_context("spawn")
        return value if value in START_METHODS else "?"
    return None if context is None else "?"
