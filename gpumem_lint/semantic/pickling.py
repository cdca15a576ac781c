"""Callables that `pickle` cannot send to another process: a lambda (anywhere: pickle looks a
function up by its qualified name, and `<lambda>` names nothing), and a function defined inside
another function (`main.<locals>.init`), or a class defined inside one and its instances
(`get_dataset.<locals>.Dataset`). Module-level functions, classes and methods of module
classes are sent by reference and survive.

API: `unpicklable(value, scope, module)` says which of the two `value` is, or None: `value` is the
expression passed (`collate_fn=lambda b: b`, `target=init`), `scope` the function the call is
in (a name bound there to a lambda or a nested `def` is local; a name not bound there is looked
up at module level), or None at module level. The answer is an `Unpicklable`: what the value is
and the error pickling it raises (`AttributeError: Can't pickle local object` for a local object,
`PicklingError` for a module-level lambda).
`held_unpicklable(value, scope, module)` finds such a callable anywhere pickling `value` would reach it:
inside a list, tuple, set or dict, among the arguments of an object built by a class (an instance keeps
what it was built from: `Compose([..., lambda img: img.convert("RGB")])`), in what a function of the
module returns, or a method of the class around the call (`self._get_collate_fun()`, also a module
subclass's override of it), and through the names bound to any of these.
`enclosing_functions(module)` maps each call (by id) to the innermost function around it.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from gpumem_lint.semantic.imports import dotted_name
from gpumem_lint.semantic.literals import assigned_pairs
from gpumem_lint.semantic.walk import Walker

_LOCAL = "`AttributeError: Can't pickle local object`"
_LOCAL_CLASS = "a class defined inside a function"


@dataclass(frozen=True)
class Unpicklable:
    kind: str  # "a lambda", "a function defined inside another function"
    error: str


def unpicklable(
    value: cst.BaseExpression | None, scope: cst.FunctionDef | None, module: cst.Module
) -> Unpicklable | None:
    if isinstance(value, cst.Lambda):
        return Unpicklable("a lambda", _LOCAL if scope is not None else "`PicklingError`")
    if not isinstance(value, cst.Name):
        return None
    while scope is not None:  # the function's own names, then those of the functions it is nested in
        local = _LocalBindings(value.value)
        local.walk(scope.body)
        if local.bound:
            return Unpicklable(local.kind, _LOCAL) if local.kind is not None else None
        if value.value in _parameters(scope):
            return None
        scope = _enclosing_function(scope, module)
    module_level = _LocalBindings(value.value)
    for statement in module.body:
        if isinstance(statement, cst.SimpleStatementLine):
            module_level.walk(statement)
    return Unpicklable("a lambda", "`PicklingError`") if module_level.kind == "a lambda" else None


def held_unpicklable(
    value: cst.BaseExpression | None, scope: cst.FunctionDef | None, module: cst.Module
) -> tuple[cst.BaseExpression, Unpicklable] | None:
    """The lambda or local function that pickling `value` pickles, and what it is; None if none is seen."""
    return _Holdings(module).search(value, scope, _DEPTH)


def held_by_instance(class_name: str, module: cst.Module) -> tuple[cst.BaseExpression, Unpicklable] | None:
    """The lambda or local function an instance of module class `class_name` stores on itself while it is
    built (`_Holdings.instance_state`); None if none is seen."""
    return _Holdings(module).instance_state(class_name)


#: How many names, calls and returns the search follows from the value handed over.
_DEPTH = 10


class _Holdings:
    def __init__(self, module: cst.Module) -> None:
        self.module = module
        self.functions = {s.name.value: s for s in module.body if isinstance(s, cst.FunctionDef)}
        self.class_defs = {s.name.value: s for s in module.body if isinstance(s, cst.ClassDef)}
        self.classes = set(self.class_defs)

    def instance_state(self, name: str, depth: int = _DEPTH) -> tuple[cst.BaseExpression, Unpicklable] | None:
        """A lambda or local function an instance of module class `name` holds of its own making: what
        the `__init__` of the class and of its module base classes (`super().__init__()`) and the `self.`
        methods they call store on `self` (`self.len_fn = lambda tokens: len(tokens) + 2`,
        `self.augment = Compose([..., lambda img: ...])`). Pickling the instance pickles its `__dict__`; a
        class that says how it pickles (`__getstate__`, `__reduce__`) is not followed."""
        chain = _class_chain(name, self.class_defs)
        methods: dict[str, cst.FunctionDef] = {}
        for body in chain:
            for method in body:
                methods.setdefault(method.name.value, method)
        if not chain or methods.keys() & _PICKLING_HOOKS:
            return None
        pending = [method for body in chain for method in body if method.name.value == "__init__"]
        seen = set()
        while pending:
            method = pending.pop()
            if id(method) in seen:
                continue
            seen.add(id(method))
            stores = _SelfStores()
            stores.walk(method.body)
            found = self._first(method, depth, stores.values)
            if found is not None:
                return found
            pending.extend(methods[called] for called in stores.called if called in methods)
        return None

    def search(
        self, value: cst.BaseExpression | None, scope: cst.FunctionDef | None, depth: int, index: int | None = None
    ) -> tuple[cst.BaseExpression, Unpicklable] | None:
        """`index`: only element `index` of a tuple is wanted (`a, b = make()`)."""
        if value is None or depth == 0:
            return None
        if isinstance(value, cst.Lambda):
            return value, Unpicklable("a lambda", _LOCAL if scope is not None else "`PicklingError`")
        if isinstance(value, cst.Name):
            return self._name(value, scope, depth, index)
        if isinstance(value, (cst.Tuple, cst.List, cst.Set)):
            elements = value.elements
            if index is not None and isinstance(value, cst.Tuple):
                starred = any(isinstance(e, cst.StarredElement) for e in elements)
                elements = elements[index : index + 1] if not starred and index < len(elements) else elements
            return self._first(scope, depth, (e.value for e in elements))
        if isinstance(value, cst.Dict):
            return self._first(scope, depth, (e.value for e in value.elements))
        if isinstance(value, cst.IfExp):  # either arm may be what runs
            return self._first(scope, depth, (value.body, value.orelse), index)
        if isinstance(value, cst.Call):
            if isinstance(value.func, cst.Name):  # an instance of a local class: pickle looks its class up by name
                made_by = self.search(value.func, scope, depth - 1)
                if made_by is not None and made_by[1].kind == _LOCAL_CLASS:
                    return value, Unpicklable("an instance of a class defined inside a function", _LOCAL)
            name = dotted_name(value.func)
            if name in self.functions:
                function = self.functions[name]
                return self._first(function, depth - 1, returned_values(function), index)
            for method in self._self_methods(value.func, scope):  # `collate_fn=self._get_collate_fun()`
                found = self._first(method, depth - 1, returned_values(method), index)
                if found is not None:
                    return found
            if name == "dict" or name in self.classes or name is not None and _names_class(name.rsplit(".", 1)[-1]):
                made = self._first(scope, depth - 1, (arg.value for arg in value.args))
                return made if made is not None or name not in self.classes else self.instance_state(name, depth - 1)
        return None

    def _self_methods(self, func: cst.BaseExpression, scope: cst.FunctionDef | None) -> list[cst.FunctionDef]:
        """The methods `self.<name>(...)` called in method `scope` of a module class may run: the one the
        class or its module bases define (attribute lookup's first), and the overrides of the module's
        subclasses of the class (`self` may be one of them)."""
        if not (
            scope is not None
            and isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value == "self"
        ):
            return []
        owner = next((name for name, node in self.class_defs.items() if scope in node.body.body), None)
        if owner is None:
            return []
        wanted = func.attr.value
        inherited = (m for body in _class_chain(owner, self.class_defs) for m in body if m.name.value == wanted)
        methods = [m for m in (next(inherited, None),) if m is not None]
        for name in self.class_defs:
            if name != owner and owner in _lineage(name, self.class_defs):
                methods += [m for m in _class_chain(name, self.class_defs)[0] if m.name.value == wanted]
        return methods

    def _first(self, scope, depth: int, values, index: int | None = None):
        for value in values:
            found = self.search(value, scope, depth, index)
            if found is not None:
                return found
        return None

    def _name(self, name: cst.Name, scope: cst.FunctionDef | None, depth: int, index: int | None):
        direct = unpicklable(name, scope, self.module)
        if direct is not None:
            return name, direct
        body = scope.body if scope is not None else self.module
        if scope is not None and name.value in _parameters(scope):
            return None  # the caller's value
        bindings = _Assignments(name.value)
        bindings.walk(body)
        if not bindings.values and scope is not None:
            return self._name(name, None, depth, index)  # a global
        for value, position in bindings.values:
            found = self.search(value, scope, depth - 1, position if position is not None else index)
            if found is not None:
                return found
        return None


#: Methods by which a class says how its instances pickle: what `__dict__` holds need not be sent.
_PICKLING_HOOKS = frozenset({"__getstate__", "__reduce__", "__reduce_ex__"})


def _class_chain(name: str, classes: dict[str, cst.ClassDef]) -> list[list[cst.FunctionDef]]:
    """The methods of module class `name`, then of its module base classes (`class Tokenizer(Language)`),
    in the order attribute lookup searches them; empty for a class of another module."""
    return [[s for s in classes[c].body.body if isinstance(s, cst.FunctionDef)] for c in _lineage(name, classes)]


def _lineage(name: str, classes: dict[str, cst.ClassDef]) -> list[str]:
    """Module class `name`, then the module classes it derives from, in the order attribute lookup
    searches them."""
    lineage, pending = [], [name]
    while pending:
        current = pending.pop(0)
        if current in lineage or current not in classes:
            continue
        lineage.append(current)
        pending.extend(dotted_name(base.value) or "" for base in classes[current].bases)
    return lineage


class _SelfStores(Walker):
    """What a method stores on `self` (`self.fn = v`), and the `self.` methods it calls."""

    def __init__(self) -> None:
        self.values: list[cst.BaseExpression] = []
        self.called: list[str] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Assign(self, node: cst.Assign) -> None:
        self.values += [value for target, value in assigned_pairs(node) if _on_self(target)]

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None and _on_self(node.target):
            self.values.append(node.value)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            self.called.append(func.attr.value)


def _on_self(target: cst.BaseExpression) -> bool:
    return isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self"


def _enclosing_function(function: cst.FunctionDef, module: cst.Module) -> cst.FunctionDef | None:
    """The function `function` is defined in (a closure reads its names), or None at module or class level."""
    finder = _Parent(function)
    finder.walk(module)
    return finder.parent


class _Parent(Walker):
    def __init__(self, function: cst.FunctionDef) -> None:
        self.function = function
        self.stack: list[cst.FunctionDef | None] = []
        self.parent: cst.FunctionDef | None = None

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        if node is self.function:
            self.parent = self.stack[-1] if self.stack else None
            return False
        self.stack.append(node)
        return True

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        if node is not self.function:
            self.stack.pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.stack.append(None)  # a method does not read the names of a function around its class

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self.stack.pop()


def _names_class(name: str) -> bool:
    """`Compose`, `transforms.Lambda`: CapWords, PEP 8's spelling of a class, for a callable of another
    module (one of this module is known by its `class` statement)."""
    return name[:1].isupper()


def _parameters(function: cst.FunctionDef) -> set[str]:
    params = function.params
    every = (*params.posonly_params, *params.params, *params.kwonly_params)
    return {p.name.value for p in every} | {
        p.name.value for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)
    }


def returned_values(function: cst.FunctionDef) -> list[cst.BaseExpression | None]:
    """What each `return` of the function gives (None for a bare `return`), not counting nested functions."""
    returns = _Returns()
    returns.walk(function.body)
    return returns.values


#: List methods that put their arguments in the list (`insert`'s first argument is the position).
_FILLING = {"append": 0, "extend": 0, "insert": 1}


class _Assignments(Walker):
    """What a scope assigns to `name`: `name = v` (position None), `a, name = v` (position 1), and
    what it puts in the list `name` holds (`name.append(v)`, `name.extend(vs)`, `name += vs`)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.values: list[tuple[cst.BaseExpression, int | None]] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if isinstance(target.target, cst.Name) and target.target.value == self.name:
                self.values.append((node.value, None))
            elif isinstance(target.target, (cst.Tuple, cst.List)):
                for position, element in enumerate(target.target.elements):
                    if isinstance(element.value, cst.Name) and element.value.value == self.name:
                        self.values.append((node.value, position))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if (
            isinstance(node.target, cst.Name)
            and node.target.value == self.name
            and isinstance(node.operator, cst.AddAssign)
        ):
            self.values.append((node.value, None))

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value == self.name
            and func.attr.value in _FILLING
        ):
            self.values += [(arg.value, None) for arg in node.args[_FILLING[func.attr.value] :]]


class _Returns(Walker):
    def __init__(self) -> None:
        self.values: list[cst.BaseExpression | None] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Return(self, node: cst.Return) -> None:
        self.values.append(node.value)


def enclosing_functions(module: cst.Module) -> dict[int, cst.FunctionDef]:
    collector = _Enclosing()
    collector.walk(module)
    return collector.found


class _LocalBindings(Walker):
    """What `name` is bound to in a function body: `name = lambda ...` or `def name(...)` (the last wins)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.kind: str | None = None
        self.bound = False  # whether the scope binds the name at all

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        if node.name.value == self.name:
            self.kind, self.bound = "a function defined inside another function", True
        return False  # its own locals are not this scope's

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        if node.name.value == self.name:
            self.kind, self.bound = _LOCAL_CLASS, True
        return False

    def visit_Assign(self, node: cst.Assign) -> None:
        if any(isinstance(t.target, cst.Name) and t.target.value == self.name for t in node.targets):
            self.kind, self.bound = ("a lambda" if isinstance(node.value, cst.Lambda) else None), True


class _Enclosing(Walker):
    def __init__(self) -> None:
        self.stack: list[cst.FunctionDef] = []
        self.found: dict[int, cst.FunctionDef] = {}

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.stack.append(node)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.stack.pop()

    def visit_Call(self, node: cst.Call) -> None:
        if self.stack:
            self.found[id(node)] = self.stack[-1]
