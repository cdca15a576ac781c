"""What each `self.<attr>` of a class holds, across all of its methods.

pyflakes binds names per scope; this binds attributes per class, once: `self.weight =
nn.Parameter(...)` in `__init__` makes `self.weight` a Parameter in `forward`, and
`self.fc = nn.Linear(...)` makes `self.fc.weight` one. An attribute assigned things of
different kinds anywhere in the class (or assigned something this cannot name) is unknown,
so that a method which swaps it out is never judged by what another method stored.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import Enum

import libcst as cst

from gpumem_lint.knowledge import knowledge
from gpumem_lint.knowledge.devices import default_device
from gpumem_lint.semantic.imports import ImportTable, dotted_name
from gpumem_lint.semantic.literals import argument, is_constant, keyword
from gpumem_lint.semantic.name_values import value_bindings
from gpumem_lint.semantic.processes import process_table

_PARAMETER = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})


class Held(str, Enum):
    PARAMETER = "parameter"  # a leaf that requires grad
    BUFFER = "buffer"  # module state that does not, or a plain tensor a factory made (`torch.zeros(n)`)
    MODULE = "module"  # a submodule, of the class in `AttributeFact.module`
    EXPANDED = "expanded"  # an `expand` / `broadcast_to` view: elements share memory
    OPTIMIZER = "optimizer"  # a `torch.optim` optimizer over the parameters of `AttributeFact.steps`
    LIST = "list"  # a Python list (`[...]`, `list(range(n))`): indexing a tensor by it gathers a copy


@dataclass(frozen=True)
class AttributeFact:
    held: Held
    module: str | None = None  # "torch.nn.Linear", or the name of a class of this file
    source: cst.CSTNode | None = field(default=None, compare=False)  # the expression that made it
    elements: str | None = None  # `nn.ModuleList(Block() for _ in range(n))`: the class of every layer
    layers: tuple[str | None, ...] = ()  # `nn.Sequential(nn.Conv2d(...), nn.ReLU())`: each layer's class
    steps: tuple[str, ...] = ()  # an optimizer's: "self.vae" of `Adam(self.vae.parameters())`, "self" itself


@dataclass
class ClassFacts:
    name: str
    bases: tuple[str, ...]  # qualified where imported, else as written
    attributes: dict[str, AttributeFact | None] = field(default_factory=dict)  # None: unknown
    #: `self.pool = Pool(...)`: the pool or executor call an attribute holds (None: something else too).
    workers: dict[str, cst.Call | None] = field(default_factory=dict)
    defines_call: bool = False  # the class body defines `__call__`


class ClassTable:
    """The classes of one module, and what their instances' attributes hold."""

    def __init__(self, classes: dict[str, ClassFacts]) -> None:
        self._classes = classes
        #: Module-level names bound once, to an object of a class of this file (`norm = Normalize(...)`).
        self.instances: dict[str, str] = {}

    def defines(self, name: str) -> bool:
        return name in self._classes

    def called_method(self, name: str) -> str | None:
        """The method that calling an object of class `name` of this file runs: `forward` for an
        nn.Module, unless the class defines `__call__` in its place (then the module's forward), and
        `__call__` otherwise."""
        if name not in self._classes:
            return None
        return "forward" if self.is_module_class(name) and not self._classes[name].defines_call else "__call__"

    def is_module_class(self, name: str) -> bool:
        """A class of this file that derives from `nn.Module`, directly or through others here."""
        return self._derives(name, lambda base: _torch_module(base) is not None)

    def derives_from(self, name: str, qualified: frozenset[str]) -> bool:
        """A class of this file that derives from one of the `qualified` classes, directly or through others here."""
        return self._derives(name, qualified.__contains__)

    def _derives(self, name: str, matches: Callable[[str], bool]) -> bool:
        seen: set[str] = set()
        pending = [name]
        while pending:
            current = pending.pop()
            if current in seen or current not in self._classes:
                continue
            seen.add(current)
            for base in self._classes[current].bases:
                if matches(base):
                    return True
                pending.append(base)
        return False

    def workers(self, name: str, attribute: str) -> cst.Call | None:
        """The `Pool(...)` / `ProcessPoolExecutor(...)` call that `self.<attribute>` holds in every method
        of class `name` that assigns it (`None` aside: a closed pool is often reset to it)."""
        facts = self._classes.get(name)
        return facts.workers.get(attribute) if facts is not None else None

    def attribute(self, module: str, attribute: str) -> AttributeFact | None:
        """What `<an instance of module>.<attribute>` holds, when known."""
        k = knowledge()
        if module in k.module_parameters:
            if attribute in k.module_parameters[module]:
                return AttributeFact(Held.PARAMETER)
            if attribute in k.module_buffers[module]:
                return AttributeFact(Held.BUFFER)
            return None
        seen: set[str] = set()
        pending = [module]
        while pending:  # the class itself first, then its bases of this file
            current = pending.pop(0)
            facts = self._classes.get(current)
            if facts is None or current in seen:
                continue
            seen.add(current)
            if attribute in facts.attributes:
                return facts.attributes[attribute]
            pending.extend(facts.bases)
        return None


class ClassFactsBuilder:
    """Fed by the scope collector's walk; `table()` once the walk is done."""

    def __init__(self, imports: ImportTable) -> None:
        self._imports = imports
        self._classes: dict[str, ClassFacts] = {}
        self._assignments: list[tuple[ClassFacts, str, cst.BaseExpression | None]] = []
        #: What each module-level function (`"build_mlp"`) and method (`"Embedding.create_weight"`) of the
        #: file returns, `return` by `return` (None: no value, a `yield`, or a second definition):
        #: `self.net = build_mlp(...)` holds the container it makes.
        self._returns: dict[str, list[cst.BaseExpression | None]] = {}
        self._definitions: dict[str, cst.FunctionDef | None] = {}  # None: defined twice
        self._bindings: dict[str, dict] = {}  # a definition's `value_bindings`, read when a question needs them
        #: `self.layers.append(value)` in a method: the layers of a module list built empty.
        self._appends: dict[tuple[str, str], list[cst.BaseExpression]] = {}
        #: `self.register_parameter("w", value)` in the function of that key, judged once every return is known.
        self._registered_parameters: list[tuple[ClassFacts, str, cst.BaseExpression, str | None]] = []

    def open_class(self, node: cst.ClassDef) -> ClassFacts:
        bases = []
        for arg in node.bases:
            name = dotted_name(arg.value)
            if name is not None:
                bases.append(self._imports.qualify_name(name) or name)
        defines_call = any(isinstance(s, cst.FunctionDef) and s.name.value == "__call__" for s in node.body.body)
        facts = ClassFacts(node.name.value, tuple(bases), defines_call=defines_call)
        self._classes.setdefault(facts.name, facts)  # a redefinition keeps the first: its facts are unknown
        return facts

    def assign(self, owner: ClassFacts, attribute: str, value: cst.BaseExpression | None) -> None:
        """`self.<attribute> = value` in a method (None: a value this cannot see, as in `+=`)."""
        self._assignments.append((owner, attribute, value))

    def append(self, owner: ClassFacts, attribute: str, value: cst.BaseExpression) -> None:
        """`self.<attribute>.append(value)` in a method."""
        self._appends.setdefault((owner.name, attribute), []).append(value)

    def open_function(self, key: str, node: cst.FunctionDef) -> None:
        """A module-level `def name` (key `"name"`) or a method (key `"Class.name"`); a second one makes
        what it returns unknown."""
        twice = key in self._returns
        self._returns[key] = [None] if twice else []
        self._definitions[key] = None if twice else node

    def returns(self, function: str, value: cst.BaseExpression | None) -> None:
        """`return value` (or a `yield`: None) in the body of the function or method of key `function`."""
        self._returns[function].append(value)

    def register(self, owner: ClassFacts, call: cst.Call, function: str | None) -> None:
        """`self.register_parameter("w", ...)` / `self.register_buffer("b", ...)` in the method of key `function`."""
        method = call.func.attr.value  # type: ignore[attr-defined]
        if not call.args or not isinstance(call.args[0].value, cst.SimpleString):
            return
        attribute = call.args[0].value.evaluated_value
        if not isinstance(attribute, str):
            return
        held = Held.PARAMETER if method == "register_parameter" else Held.BUFFER
        parameter = call.args[1].value if len(call.args) > 1 else None
        if held is Held.PARAMETER and (parameter is None or is_constant(parameter, "None")):
            self._merge(owner, attribute, None)
            return
        if held is Held.BUFFER and parameter is not None and self._expands(parameter):
            self._merge(owner, attribute, AttributeFact(Held.EXPANDED, source=parameter))
            return
        if held is Held.PARAMETER:
            self._registered_parameters.append((owner, attribute, parameter, function))
            return
        self._merge(owner, attribute, AttributeFact(held))

    def table(self) -> ClassTable:
        table = ClassTable(self._classes)
        for owner, attribute, parameter, function in self._registered_parameters:
            # A Parameter made with `requires_grad=False` is not a grad leaf; any other is, as by default.
            frozen = function is not None and self._frozen_parameter(parameter, function, owner)
            self._merge(owner, attribute, None if frozen else AttributeFact(Held.PARAMETER))
        for owner, attribute, value in self._assignments:
            self._merge(owner, attribute, self._fact(value, table))
            if not is_constant(value, "None"):
                workers = value if self._makes_workers(value) else None
                known = owner.workers.get(attribute, workers)
                owner.workers[attribute] = workers if known is workers else None
        for (name, attribute), values in self._appends.items():
            self._note_appended_layers(self._classes[name], attribute, values, table)
        for facts in self._classes.values():
            _keep_module_steps(facts)
        return table

    def _note_appended_layers(
        self, owner: ClassFacts, attribute: str, values: list[cst.BaseExpression], table: ClassTable
    ) -> None:
        """`self.convs = nn.ModuleList()`, then `self.convs.append(Block(...))` in a loop: every layer is a
        Block, when every append in the class appends one and the list was built empty."""
        fact = owner.attributes.get(attribute)
        if fact is None or fact.held is not Held.MODULE or fact.module != "torch.nn.ModuleList" or fact.elements:
            return
        if not (isinstance(fact.source, cst.Call) and not fact.source.args):
            return
        classes = {self._module_class(value, table) for value in values}
        if len(classes) == 1 and None not in classes:
            owner.attributes[attribute] = replace(fact, elements=classes.pop())

    def _makes_workers(self, value: cst.BaseExpression | None) -> bool:
        if not isinstance(value, cst.Call):
            return False
        kind = process_table().constructors.get(self._imports.qualify(value.func) or "")
        return kind in ("pool", "executor")

    def _fact(self, value: cst.BaseExpression | None, table: ClassTable) -> AttributeFact | None:
        if is_list_display(value):
            return AttributeFact(Held.LIST)
        if type(value) is cst.IfExp and is_constant(value.orelse, "None"):  # `nn.ReLU() if act else None`: optional
            return self._fact(value.body, table)
        if not isinstance(value, cst.Call):
            return None
        if self._expands(value):
            return AttributeFact(Held.EXPANDED, source=value)
        value = _made_module(value)
        name = dotted_name(value.func)
        if name is None:
            return None
        qualified = self._imports.qualify_name(name)
        if qualified in _PARAMETER:
            return None if _makes_frozen_parameter(value) else AttributeFact(Held.PARAMETER)
        if qualified in default_device().factories and keyword(value, "requires_grad") is None:
            return AttributeFact(Held.BUFFER)  # `self.buffer = torch.zeros(n, k)`: a tensor, not a leaf
        if _is_optimizer(qualified or ""):
            steps = _stepped_modules(value)
            return AttributeFact(Held.OPTIMIZER, steps=steps) if steps else None
        module = _torch_module(qualified or "")
        if module is not None:
            return AttributeFact(
                Held.MODULE,
                module,
                source=value,
                elements=self._layer_class(value, table),
                layers=self._layers(value, table),
            )
        if qualified is None and table.is_module_class(name):
            return AttributeFact(Held.MODULE, name)
        if qualified is None and name in self._returns:
            return self._returned_container(name, table)
        return None

    def _frozen_parameter(self, value: cst.BaseExpression, function: str, owner: ClassFacts, depth: int = 0) -> bool:
        """`value`, read in the function of key `function`, is always `nn.Parameter(t, requires_grad=False)`:
        made there, bound to a local name once, or returned by every `return` of a function or a method
        of `owner` that it calls (`self.create_weight(...)`), up to three calls deep."""
        if depth > 3:
            return False
        if isinstance(value, cst.Name):
            bindings = self._local_bindings(function).get(value.value)
            return bool(bindings) and all(
                isinstance(bound, cst.BaseExpression) and self._frozen_parameter(bound, function, owner, depth + 1)
                for bound in bindings
            )
        if not isinstance(value, cst.Call):
            return False
        if self._imports.qualify(value.func) in _PARAMETER:
            return _makes_frozen_parameter(value)
        callee = self._callee(value.func, owner)
        returned = self._returns.get(callee) if callee is not None else None
        return bool(returned) and all(
            result is not None and self._frozen_parameter(result, callee, owner, depth + 1)  # type: ignore[arg-type]
            for result in returned
        )

    def _callee(self, func: cst.BaseExpression, owner: ClassFacts) -> str | None:
        """The key of the function of this file that `func(...)` calls: `self.m` and `Owner.m` a method
        of `owner`, a bare name a module-level function nothing imports under that name."""
        receiver = func.value.value if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) else None
        if receiver in ("self", owner.name):
            return f"{owner.name}.{func.attr.value}"  # type: ignore[union-attr]
        if isinstance(func, cst.Name) and self._imports.qualify_name(func.value) is None:
            return func.value
        return None

    def _local_bindings(self, function: str) -> dict:
        if function not in self._bindings:
            node = self._definitions.get(function)
            self._bindings[function] = value_bindings(node) if node is not None else {}
        return self._bindings[function]

    def _returned_container(self, function: str, table: ClassTable) -> AttributeFact | None:
        """`def build_mlp(...): return nn.Sequential(*layers)`: the container of layers every `return`
        builds (the fast path keeps such a function by its `Sequential(`, `ModuleList(`, ...)."""
        facts = set()
        for value in self._returns[function]:
            module = _torch_module(self._imports.qualify(value.func) or "") if isinstance(value, cst.Call) else None
            if module not in knowledge().container_modules:
                return None
            facts.add(AttributeFact(Held.MODULE, module, elements=self._layer_class(value, table)))
        return facts.pop() if len(facts) == 1 else None

    def _layer_class(self, container: cst.Call, table: ClassTable) -> str | None:
        """`nn.ModuleList(Block(d) for _ in range(n))`, `nn.ModuleList([Block(d) for ...])`,
        `nn.ModuleList([Block(a), Block(b)])`: each layer's class."""
        if len(container.args) != 1 or container.args[0].keyword is not None:
            return None
        built = container.args[0].value
        if isinstance(built, (cst.GeneratorExp, cst.ListComp)):
            return self._module_class(built.elt, table)
        if isinstance(built, (cst.List, cst.Tuple)) and built.elements:
            if any(isinstance(element, cst.StarredElement) for element in built.elements):
                return None
            classes = {self._module_class(element.value, table) for element in built.elements}
            return classes.pop() if len(classes) == 1 else None
        return None

    def _layers(self, container: cst.Call, table: ClassTable) -> tuple[str | None, ...]:
        """`nn.Sequential(nn.Conv2d(...), nn.ReLU(inplace=True))`: the class of each layer, in order (None
        where not known); nothing for other containers, or layers passed through `*` or by keyword."""
        if _torch_module(self._imports.qualify_name(dotted_name(container.func) or "") or "") != "torch.nn.Sequential":
            return ()
        if any(arg.star or arg.keyword is not None for arg in container.args):
            return ()
        return tuple(self._module_class(arg.value, table) for arg in container.args)

    def _module_class(self, value: cst.BaseExpression, table: ClassTable) -> str | None:
        name = dotted_name(value.func) if isinstance(value, cst.Call) else None
        if name is None:
            return None
        qualified = self._imports.qualify_name(name)
        if qualified is None:
            return name if table.is_module_class(name) else None
        return _torch_module(qualified)

    def _expands(self, value: cst.BaseExpression) -> bool:
        """`x.expand(n, -1)`, `x.expand_as(y)`, `torch.broadcast_to(x, s)`: a view repeating elements."""
        if not isinstance(value, cst.Call) or not value.args:
            return False
        k = knowledge()
        func = value.func
        if isinstance(func, cst.Attribute) and func.attr.value in k.expand_methods:
            qualified = self._imports.qualify(func)
            return qualified is None or qualified.startswith("torch.")  # not `sympy.expand(e)`
        qualified = self._imports.qualify(func) or ""
        return qualified.startswith("torch.") and qualified.rsplit(".", 1)[-1] in k.expand_functions

    def _merge(self, owner: ClassFacts, attribute: str, fact: AttributeFact | None) -> None:
        if attribute in owner.attributes and owner.attributes[attribute] != fact:
            owner.attributes[attribute] = _joined(owner.attributes[attribute], fact)
        else:
            owner.attributes[attribute] = fact


def _joined(known: AttributeFact | None, other: AttributeFact | None) -> AttributeFact | None:
    """What an attribute holds that two assignments bind to modules of one container class (`if bn:
    self.unit = nn.Sequential(conv, bn, relu)` / `else: self.unit = nn.Sequential(conv, relu)`): that class,
    with the first and last layers both agree on (the output a last ReLU keeps is kept either way); else unknown."""
    if known is None or other is None or known.held is not Held.MODULE or other.held is not Held.MODULE:
        return None
    if known.module != other.module or not known.layers or not other.layers or known.steps != other.steps:
        return None
    length = max(len(known.layers), len(other.layers))
    first = known.layers[0] if known.layers[0] == other.layers[0] else None
    last = known.layers[-1] if known.layers[-1] == other.layers[-1] else None
    layers = (first, *(None,) * (length - 2), last) if length > 1 else (first,)
    elements = known.elements if known.elements == other.elements else None
    return AttributeFact(Held.MODULE, known.module, known.source, elements, layers)


#: Builtins that return a new list.
_LIST_MAKERS = frozenset({"list", "sorted"})


def is_list_display(value: cst.BaseExpression | None) -> bool:
    """`[a, b]`, `[f(x) for x in xs]`, `list(range(n))`, `sorted(ids)`: a new Python list."""
    if type(value) is cst.List or type(value) is cst.ListComp:
        return True
    return type(value) is cst.Call and type(value.func) is cst.Name and value.func.value in _LIST_MAKERS


def _makes_frozen_parameter(parameter: cst.Call) -> bool:
    """`nn.Parameter(t, requires_grad=False)` (or `nn.Parameter(t, False)`): a Parameter that is no grad leaf."""
    return is_constant(argument(parameter, "requires_grad", 1), "False")


def _keep_module_steps(facts: ClassFacts) -> None:
    """An optimizer steps `self` or attributes known to hold a module (`self.vae`); one given anything
    else (an attribute holding something unknown, another optimizer) is unknown, as if unseen."""
    for attribute, fact in facts.attributes.items():
        if fact is None or fact.held is not Held.OPTIMIZER:
            continue
        held = [facts.attributes.get(step.removeprefix("self."), None) for step in fact.steps if step != "self"]
        if not all(other is not None and other.held is Held.MODULE for other in held):
            facts.attributes[attribute] = None


def _made_module(value: cst.Call) -> cst.Call:
    """`Net(...)` of `Net(...).to(device).eval()`: the module methods that return the module itself
    (aliasing.toml `returns_self`) hold the object the first call made."""
    while (
        isinstance(value.func, cst.Attribute)
        and value.func.attr.value in knowledge().module_self_methods
        and isinstance(value.func.value, cst.Call)
    ):
        value = value.func.value
    return value


def _is_optimizer(qualified: str) -> bool:
    """`torch.optim.Adam`: a class of `torch.optim` itself (not `torch.optim.lr_scheduler.StepLR`)."""
    return qualified.startswith("torch.optim.") and qualified.count(".") == 2 and qualified[12:13].isupper()


def _stepped_modules(optimizer: cst.Call) -> tuple[str, ...]:
    """`Adam(self.vae.parameters())`, `Adam(list(self.a.parameters()) + list(self.b.parameters()))`,
    `Adam([{"params": self.a.parameters()}])`: `self` and its attributes whose parameters the optimizer
    is given; none when it is given anything else too (a name, a call of another kind)."""
    if not optimizer.args or optimizer.args[0].keyword is not None or optimizer.args[0].star:
        return ()
    found: list[str] = []
    pending: list[cst.BaseExpression] = [optimizer.args[0].value]
    while pending:
        node = pending.pop()
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "parameters":
            owner = dotted_name(node.func.value)
            if owner is None or not (owner == "self" or owner.startswith("self.")):
                return ()
            found.append(owner)
        elif isinstance(node, cst.Call) and dotted_name(node.func) in ("list", "itertools.chain", "chain"):
            pending.extend(arg.value for arg in node.args)
        elif isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
            pending.extend((node.left, node.right))
        elif isinstance(node, (cst.List, cst.Tuple)):
            pending.extend(element.value for element in node.elements)
        elif isinstance(node, cst.Dict):
            for element in node.elements:
                if not isinstance(element, cst.DictElement):
                    return ()
                if isinstance(element.key, cst.SimpleString) and element.key.evaluated_value == "params":
                    pending.append(element.value)
        else:
            return ()
    return tuple(sorted(set(found)))


def _torch_module(qualified: str) -> str | None:
    """`torch.nn.Linear`, `torch.nn.modules.linear.Linear` -> `torch.nn.Linear`."""
    if not qualified.startswith("torch.nn."):
        return None
    candidate = "torch.nn." + qualified.rsplit(".", 1)[-1]
    return candidate if candidate in knowledge().module_parameters else None
