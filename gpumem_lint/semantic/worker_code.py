"""Code a DataLoader runs in its worker processes besides the Dataset's own methods, and the
tensors its workers index that the main process made.

- its `collate_fn` and `worker_init_fn`, also a method (`collate_fn=self.collate`, or `dm.collate` of
  `dm = DataModule(...)`): the method and the `self.` methods it calls, whose `self.device` is what
  the class's `__init__` stored there;
- a transform the Dataset's worker methods call through an attribute, `self.transform(x)`, where
  `__init__` stored a callable there: directly (`self.transform = ToGpu()`) or from a parameter
  that a construction of the class fills (`Features(rows, transform=ToGpu())`);
- the tensors a `TensorDataset(x.cuda(), y)` holds (`held_tensors`), and the CUDA tensors a Dataset
  class stores on `self` (`cuda_attributes`), made there or handed to its constructor.

A callable is resolved within the module: a module-level function by name (also through
`functools.partial(f, ...)`), a lambda, or an instance of a module class that defines `__call__`
(its `__call__` and the `self.` methods it calls), also inside a composition passed as the
value (`Compose([Resize(), ToGpu()])`: each class instantiated in it, each function named).
Anything else (an imported function, a parameter of the caller) is unknown and yields nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from gpumem_lint.semantic.datasets import (
    DatasetClass,
    Datasets,
    WorkerLoader,
    methods_reached,
    self_attribute,
    self_calls,
)
from gpumem_lint.semantic.devices import cuda_call
from gpumem_lint.semantic.imports import ImportTable, dotted_name
from gpumem_lint.semantic.literals import keyword
from gpumem_lint.semantic.walk import Walker

_TENSOR_DATASETS = frozenset({"torch.utils.data.TensorDataset", "torch.utils.data.dataset.TensorDataset"})
#: `functools.partial(f, ...)` runs `f`.
PARTIAL_FUNCTIONS = frozenset({"functools.partial"})


@dataclass(frozen=True)
class WorkerCode:
    """A body that runs in the workers of `loader`, and how it gets there, a phrase that names the loader
    next (`"the `collate_fn` of"`)."""

    body: cst.CSTNode
    role: str
    loader: WorkerLoader
    #: For a method given as the callable (`collate_fn=self.collate`), its class: what `self.` means there.
    owner: cst.ClassDef | None = None


class ModuleCallables:
    """The module's top-level functions and its classes that define `__call__`."""

    def __init__(self, module: cst.Module, imports: ImportTable, values: dict[str, cst.BaseExpression]) -> None:
        self.imports = imports
        self.values = values
        self.functions = {s.name.value: s for s in module.body if isinstance(s, cst.FunctionDef)}
        self.classes: dict[str, dict[str, cst.FunctionDef]] = {}
        self.all_classes: dict[str, cst.ClassDef] = {}
        for statement in module.body:
            if isinstance(statement, cst.ClassDef):
                self.all_classes[statement.name.value] = statement
                methods = {s.name.value: s for s in statement.body.body if isinstance(s, cst.FunctionDef)}
                if "__call__" in methods:
                    self.classes[statement.name.value] = methods

    def bound_method(
        self, value: cst.BaseExpression | None, owner: cst.ClassDef | None
    ) -> tuple[cst.ClassDef, list[cst.CSTNode]] | None:
        """`self.collate` inside a method of `owner`, or `module.collate` of `module = DataModule(...)`:
        the class, and the bodies calling that method runs (the `self.` methods it calls too)."""
        if not isinstance(value, cst.Attribute) or not isinstance(value.value, cst.Name):
            return None
        holder = value.value.value
        if holder == "self":
            cls = owner
        else:
            made = self.values.get(holder)
            cls = self.all_classes.get(dotted_name(made.func) or "") if isinstance(made, cst.Call) else None
        if cls is None:
            return None
        methods = {s.name.value: s for s in cls.body.body if isinstance(s, cst.FunctionDef)}
        reached = methods_reached(methods, (value.attr.value,))
        return (cls, [method.body for method in reached.values()]) if reached else None

    def bodies(self, value: cst.BaseExpression | None, depth: int = 0) -> list[cst.CSTNode]:
        """The bodies that calling `value` runs (empty when unknown)."""
        if value is None or depth > 3:
            return []
        if isinstance(value, cst.Lambda):
            return [value.body]
        if isinstance(value, cst.Name):
            if value.value in self.functions:
                return [self.functions[value.value].body]
            assigned = self.values.get(value.value)
            return self.bodies(assigned, depth + 1) if isinstance(assigned, (cst.Call, cst.Lambda)) else []
        if isinstance(value, cst.Call):
            name = dotted_name(value.func)
            if name in self.classes:
                return [method.body for method in methods_reached(self.classes[name], ("__call__",)).values()]
            if self.imports.qualify(value.func) in PARTIAL_FUNCTIONS and value.args:
                return self.bodies(value.args[0].value, depth + 1)
        return []

    def bodies_within(self, value: cst.BaseExpression) -> list[cst.CSTNode]:
        """The bodies of the callables named or instantiated anywhere in `value` (a composition)."""
        collector = _Callables()
        collector.walk(value)
        return [body for node in collector.found for body in self.bodies(node)]


def worker_code(datasets: Datasets, callables: ModuleCallables) -> list[WorkerCode]:
    """What each worker loader runs besides the Dataset's methods: collate_fn, worker_init_fn, transforms."""
    found: list[WorkerCode] = []
    for loader in datasets.worker_loaders:
        for argument in ("collate_fn", "worker_init_fn"):
            value = keyword(loader.node, argument)
            for body in callables.bodies(value):
                found.append(WorkerCode(body, f"the `{argument}` of", loader))
            if (method := callables.bound_method(value, loader.owner)) is not None:
                cls, bodies = method
                found.extend(WorkerCode(body, f"the `{argument}` of", loader, cls) for body in bodies)
    for cls in datasets.classes.values():
        nodes = {id(loader.node) for loader in datasets.loaders_of(cls)}
        loaders = [loader for loader in datasets.worker_loaders if id(loader.node) in nodes]
        if not loaders:
            continue
        for attribute, values in _transforms(cls, datasets).items():
            for value in values:
                for body in callables.bodies_within(value):
                    found.extend(
                        WorkerCode(body, f"the transform `self.{attribute}` of `{cls.name}`, loaded by", loader)
                        for loader in loaders
                    )
    return found


def held_tensors(loader: WorkerLoader, datasets: Datasets, imports: ImportTable) -> list[cst.BaseExpression]:
    """The tensors a `TensorDataset(...)` that `loader` loads was built from (the expressions passed,
    or the values last assigned to the names passed)."""
    dataset = loader.dataset
    if isinstance(dataset, (cst.Name, cst.Attribute)):
        dataset = datasets.values.get(dotted_name(dataset) or "")
    if not (isinstance(dataset, cst.Call) and imports.qualify(dataset.func) in _TENSOR_DATASETS):
        return []
    held = []
    for arg in dataset.args:
        value = arg.value
        if isinstance(value, cst.Name) and value.value in datasets.values:
            held.append(datasets.values[value.value])
        else:
            held.append(value)
    return held


def _transforms(cls: DatasetClass, datasets: Datasets) -> dict[str, list[cst.BaseExpression]]:
    """`self.<attribute>(...)` calls of the worker methods (attributes that are not methods), each with
    the values `__init__` may have stored there."""
    called = set().union(*(self_calls(method) for method in cls.worker_methods().values()))
    return stored_values(cls, datasets, called - cls.methods.keys())


def stored_values(
    cls: DatasetClass, datasets: Datasets, attributes: set[str] | None = None
) -> dict[str, list[cst.BaseExpression]]:
    """The values `__init__` may store in `self.<attribute>` (every attribute when `attributes` is None):
    what it assigns, or, for a parameter, what each construction of the class passes for it
    (`MyDataset(64, device)` for `self.device = device`)."""
    init = cls.methods.get("__init__")
    if init is None or attributes == set():
        return {}
    parameters = [param.name.value for param in init.params.params]
    stores = _Stores(attributes)
    stores.walk(init.body)
    found: dict[str, list[cst.BaseExpression]] = {}
    for attribute, value in stores.values:
        if isinstance(value, cst.Name) and value.value in parameters:
            position = parameters.index(value.value) - 1  # after `self`
            for construction in datasets.constructions.get(cls.name, ()):
                passed = _argument(construction, value.value, position)
                if passed is not None:
                    found.setdefault(attribute, []).append(passed)
        else:
            found.setdefault(attribute, []).append(value)
    return found


def _argument(call: cst.Call, name: str, position: int) -> cst.BaseExpression | None:
    passed = keyword(call, name)
    if passed is not None:
        return passed
    positional = [arg.value for arg in call.args if arg.keyword is None and not arg.star]
    return positional[position] if 0 <= position < len(positional) else None


class _Stores(Walker):
    """`self.<attribute> = value` for the attributes asked about, or all (`value or default`: both sides)."""

    def __init__(self, attributes: set[str] | None) -> None:
        self.attributes = attributes
        self.values: list[tuple[str, cst.BaseExpression]] = []

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            attribute = self_attribute(target.target)
            if attribute is None or (self.attributes is not None and attribute not in self.attributes):
                continue
            if dotted_name(target.target) == f"self.{attribute}":
                value = node.value
                sides = [value.left, value.right] if isinstance(value, cst.BooleanOperation) else [value]
                self.values.extend((attribute, side) for side in sides)


class _Callables(Walker):
    """Names and calls inside an expression that may stand for callables (not a call's own function name)."""

    def __init__(self) -> None:
        self.found: list[cst.BaseExpression] = []

    def visit_Call(self, node: cst.Call) -> bool:
        self.found.append(node)
        for arg in node.args:
            self.walk(arg.value)
        return False

    def visit_Name(self, node: cst.Name) -> None:
        self.found.append(node)

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        self.found.append(node)
        return False

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        return False


def cuda_attributes(
    cls: DatasetClass, datasets: Datasets, names: set[str], imports: ImportTable
) -> dict[str, cst.Call]:
    """The attributes any method of `cls` assigns a CUDA tensor (`self.X = X.cuda()`), or `__init__` stores
    from a parameter that a construction fills with one (`NodeData(x)` after `x = x.cuda()`), each with
    the call that made it: the dataset object holds them when it reaches the workers."""
    collector = _CudaAttributes(names, imports)
    for method in cls.methods.values():
        collector.walk(method.body)
    made = collector.made
    for attribute, values in stored_values(cls, datasets).items():
        for value in values:
            if isinstance(value, cst.Name):
                value = datasets.values.get(value.value, value)
            if isinstance(value, cst.Call) and cuda_call(value, names, imports):
                made.setdefault(attribute, value)
    return made


class _CudaAttributes(Walker):
    """`self.X = x.cuda()` (and `self.X, self.y = X.cuda(), y.cuda()`): attributes holding CUDA tensors."""

    def __init__(self, names: set[str], imports) -> None:
        self.names = names
        self.imports = imports
        self.made: dict[str, cst.Call] = {}

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            pairs = [(target.target, node.value)]
            if (
                isinstance(target.target, cst.Tuple)
                and isinstance(node.value, cst.Tuple)
                and len(target.target.elements) == len(node.value.elements)
            ):
                pairs = [(t.value, v.value) for t, v in zip(target.target.elements, node.value.elements)]
            for place, value in pairs:
                attribute = self_attribute(place)
                if attribute and isinstance(value, cst.Call) and cuda_call(value, self.names, self.imports):
                    self.made.setdefault(attribute, value)
