"""Scope discovery: one pass over the module that finds every function and method,
what its parameters are, and the per-scope facts the alias analysis starts from."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from gpumem_lint.knowledge import knowledge
from gpumem_lint.semantic.class_facts import ClassFacts, ClassFactsBuilder, ClassTable
from gpumem_lint.semantic.imports import ImportTable, dotted_name
from gpumem_lint.semantic.indexing import keyed_by_string
from gpumem_lint.semantic.literals import is_constant, keyword, split_like_tensor
from gpumem_lint.semantic.walk import Walker, used_names

#: Annotations that say a parameter is not a tensor (`x += 1` rebinds it).
_SCALAR_ANNOTATIONS = frozenset({"int", "float", "bool", "str", "bytes", "complex", "None"})
#: Attributes that tensors and ndarrays have and containers do not.
_TENSOR_ATTRIBUTES = frozenset({"shape", "dtype", "ndim", "is_cuda", "requires_grad", "grad_fn"})
_TENSOR_ANNOTATIONS = ("Tensor", "torch.Tensor", "FloatTensor", "LongTensor", "np.ndarray", "ndarray", "Parameter")


@dataclass
class Scope:
    node: cst.Module | cst.FunctionDef
    body: tuple
    name: str
    class_name: str | None = None
    params: dict[str, bool | None] = field(default_factory=dict)  # name -> tensor? (None: unknown)
    no_grad: bool = False  # decorated @torch.no_grad() / @torch.inference_mode()
    inplace_modules: dict[str, str] = field(default_factory=dict)  # "self.act" -> "torch.nn.ReLU" (inplace=True)
    tensor_places: set[str] = field(default_factory=set)  # used as receiver of a tensor-only method
    array_places: set[str] = field(default_factory=set)  # receiver of an ndarray-only method: `box.astype(t)`
    #: A numba-compiled function's array parameters, with the dimensions its signature gives (None: unsaid).
    array_params: dict[str, int | None] = field(default_factory=dict)
    string_keyed: set[str] = field(default_factory=set)  # names indexed by a string key: `inputs["positions"]`
    #: Parameters shown to hold integer tensors, which never require grad, before any rebinding: the first
    #: argument of `F.one_hot`, a `.min()` or `.max()` given to `range()`.
    integer_places: set[str] = field(default_factory=set)
    rebound: set[str] = field(default_factory=set)  # names the collector's walk has seen assigned so far
    converts_arrays: bool = False  # calls `torch.from_numpy` (what it converts is read only then)
    #: Attributes assigned a tensor that cannot be a Parameter (`m.h = m.h.detach()`): `nn.Module` refuses
    #: that for a registered Parameter's name, so what they hold is no parameter of their module (F51).
    plain_attributes: set[str] = field(default_factory=set)
    docstring: str | None = None
    enclosing: tuple[str, ...] = ()  # names of the functions this one is nested in
    mentions_inplace: bool = False  # an `inplace` flag decides whether it mutates
    calls: set[str] = field(default_factory=set)  # bare names and own methods called: `helper(x)`, `self.f(x)`
    assumed_tensor: str | None = None  # forward's input, taken for a tensor without evidence
    all_params: tuple[str, ...] = ()  # positional order, including self
    classes: ClassTable | None = None  # the module's classes, shared by its scopes
    trains: bool = False  # calls `backward()`: what it computes with a model requires grad
    freezes_parameters: bool = False  # the module turns requires_grad off somewhere
    optional_params: frozenset[str] = frozenset()  # default `None`: the caller may pass one or not

    @property
    def is_function(self) -> bool:
        return isinstance(self.node, cst.FunctionDef)

    @property
    def is_method(self) -> bool:
        return self.class_name is not None

    @property
    def is_forward(self) -> bool:
        """A module's forward: a method `forward`, or the `__call__` an `nn.Module` class defines in its
        place (calling the module runs it, with the hooks `nn.Module.__call__` would run skipped)."""
        if not self.is_method or self.name not in ("forward", "__call__"):
            return False
        if self.name == "forward":
            return True
        return self.classes is not None and self.classes.is_module_class(self.class_name)


@dataclass
class _Class:
    name: str
    facts: ClassFacts
    inplace_modules: dict[str, str] = field(default_factory=dict)
    pending: list[tuple[str, cst.Call, cst.CSTNode]] = field(default_factory=list)  # with the function assigning
    methods: list[Scope] = field(default_factory=list)


class ScopeCollector(Walker):
    """Collects imports and scopes in one traversal."""

    def __init__(self, module: cst.Module) -> None:
        self.imports = ImportTable()
        self.scopes: list[Scope] = [Scope(module, tuple(module.body), "<module>")]
        self._functions: list[Scope] = [self.scopes[0]]
        self._classes: list[_Class | None] = [None]
        self._all_classes: list[_Class] = []
        self._tensor_methods = knowledge().tensor_only_methods
        self._multi_view_methods = knowledge().multi_view_methods
        self._class_facts = ClassFactsBuilder(self.imports)
        self._freezes_unseen = False  # requires_grad turned off where no flow sees which parameters
        self._freezers: set[int] = set()  # ids of the scopes turning it off on an attribute they name
        self._module_bindings: dict[str, str | None] = {}  # module-level name -> the class it is bound to an object of
        self._comprehension_names: list[frozenset[str]] = []  # bound by the comprehensions we are in

    def visit_Import(self, node: cst.Import) -> None:
        self.imports.add(node)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        self.imports.add(node)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        info = _Class(node.name.value, self._class_facts.open_class(node))
        self._classes.append(info)
        self._all_classes.append(info)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._classes.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        owner = self._classes[-1] if self._direct_method(node) else None
        if owner is not None:
            self._class_facts.open_function(f"{owner.name}.{node.name.value}", node)
        elif len(self._functions) == 1 and self._classes[-1] is None:
            self._class_facts.open_function(node.name.value, node)
        scope = Scope(
            node,
            tuple(node.body.body),
            node.name.value,
            owner.name if owner else None,
            _parameters(node, is_method=owner is not None, imports=self.imports),
            docstring=node.get_docstring(),
            enclosing=tuple(scope.name for scope in self._functions[1:]),
            all_params=tuple(p.name.value for p in (*node.params.posonly_params, *node.params.params)),
        )
        scope.no_grad = any(_no_grad_decorator(d.decorator) for d in node.decorators) or (
            owner is not None and node.name.value == "forward" and _AUTOGRAD_FUNCTION in owner.facts.bases
        )  # autograd runs a Function's forward with grad mode off
        scope.optional_params = _optional_parameters(node)
        scope.array_params = numba_arrays(node, self.imports)
        for name in scope.array_params:
            scope.params[name] = False
            scope.array_places.add(name)
        self.scopes.append(scope)
        self._functions.append(scope)
        self._classes.append(self._classes[-1] if owner else None)
        if owner is not None:
            owner.methods.append(scope)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._functions.pop()
        self._classes.pop()

    def visit_Arg(self, node: cst.Arg) -> bool:
        self.walk(node.value)  # not the keyword: `inplace=True` is not an inplace flag
        return False

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Name):
            self._functions[-1].calls.add(func.value)
        elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            self._functions[-1].calls.add(f"self.{func.attr.value}")
        if isinstance(func, cst.Attribute) and (
            func.attr.value in self._tensor_methods
            or func.attr.value in self._multi_view_methods
            and split_like_tensor(node)  # `h.split(1, dim=0)`
        ):
            self._note_tensor_place(func.value)
        if isinstance(func, cst.Attribute) and func.attr.value in knowledge().array_copy_methods:
            self._note_array_place(func.value)
        if isinstance(func, cst.Attribute) and func.attr.value == "backward":
            self._functions[-1].trains = True
        self._note_integer_arguments(node)
        if self.imports.qualify(func) == "torch.from_numpy":
            self._functions[-1].converts_arrays = True
        if isinstance(func, cst.Attribute) and func.attr.value == "requires_grad_" and node.args:
            if is_constant(node.args[0].value, "False") and self._freezes_beyond(func.value):
                self._freezes_unseen = True  # `model.requires_grad_(False)`: its parameters, which no flow names
        owner = self._method_owner()
        registers = isinstance(func, cst.Attribute) and func.attr.value in ("register_parameter", "register_buffer")
        if owner is not None and registers and _is_self(func.value):
            self._class_facts.register(owner.facts, node, self._function_key())
        appends = isinstance(func, cst.Attribute) and func.attr.value == "append" and len(node.args) == 1
        if owner is not None and appends and isinstance(func.value, cst.Attribute) and _is_self(func.value.value):
            self._class_facts.append(owner.facts, func.value.attr.value, node.args[0].value)

    def visit_Return(self, node: cst.Return) -> None:
        self._note_returned(node.value)

    def visit_Yield(self, node: cst.Yield) -> None:
        self._note_returned(None)  # a generator function: calling it makes a generator

    def _note_returned(self, value: cst.BaseExpression | None) -> None:
        key = self._function_key()
        if key is not None:
            self._class_facts.returns(key, value)

    def _function_key(self) -> str | None:
        """The class facts' key of the function whose own body is being walked: `"f"` for a module-level
        function, `"Class.m"` for a method; None for a nested function or the module."""
        function = self._functions[-1]
        if function.class_name is not None:
            return f"{function.class_name}.{function.name}"
        return function.name if len(self._functions) == 2 else None

    def visit_Name(self, node: cst.Name) -> None:
        if "inplace" in node.value.lower():
            self._functions[-1].mentions_inplace = True

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if "inplace" in node.attr.value.lower():
            self._functions[-1].mentions_inplace = True
        if node.attr.value in _TENSOR_ATTRIBUTES:
            self._note_tensor_place(node.value)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if type(node.value) is cst.Name and keyed_by_string(node):
            if not any(node.value.value in names for names in self._comprehension_names):
                self._functions[-1].string_keyed.add(node.value.value)

    def _note_integer_arguments(self, node: cst.Call) -> None:
        """`F.one_hot(target, n)`, `range(target.min(), target.max())`: `target` holds an integer tensor."""
        shown = []
        if self.imports.qualify(node.func) == "torch.nn.functional.one_hot" and node.args:
            shown.append(node.args[0].value)
        if type(node.func) is cst.Name and node.func.value == "range":
            shown.extend(
                arg.value.func.value
                for arg in node.args
                if isinstance(arg.value, cst.Call)
                and isinstance(arg.value.func, cst.Attribute)
                and arg.value.func.attr.value in ("min", "max")
                and not arg.value.args
            )
        function = self._functions[-1]
        for value in shown:
            if type(value) is cst.Name and value.value not in function.rebound:
                function.integer_places.add(value.value)

    def _note_tensor_place(self, node: cst.BaseExpression) -> None:
        """`x.transpose(0, 1)`: evidence that `x` holds a tensor, unless a comprehension binds its own `x`."""
        place = dotted_name(node)
        if place is not None and not any(place.split(".", 1)[0] in names for names in self._comprehension_names):
            self._functions[-1].tensor_places.add(place)

    def _note_array_place(self, node: cst.BaseExpression) -> None:
        """`box.round().astype(np.int64)`: `box` holds a numpy array (torch tensors have no `astype`), unless
        the chain converts a tensor on the way (`t.numpy().astype(...)`)."""
        while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            if node.func.attr.value in knowledge().tensor_to_numpy_methods:
                return
            node = node.func.value
        place = dotted_name(node)
        if place is not None and not any(place.split(".", 1)[0] in names for names in self._comprehension_names):
            self._functions[-1].array_places.add(place)

    def visit_GeneratorExp(self, node: cst.GeneratorExp) -> None:
        self._comprehension_names.append(_comprehension_targets(node))

    def leave_GeneratorExp(self, original_node: cst.GeneratorExp) -> None:
        self._comprehension_names.pop()

    def visit_ListComp(self, node: cst.ListComp) -> None:
        self._comprehension_names.append(_comprehension_targets(node))

    def leave_ListComp(self, original_node: cst.ListComp) -> None:
        self._comprehension_names.pop()

    def visit_SetComp(self, node: cst.SetComp) -> None:
        self._comprehension_names.append(_comprehension_targets(node))

    def leave_SetComp(self, original_node: cst.SetComp) -> None:
        self._comprehension_names.pop()

    def visit_DictComp(self, node: cst.DictComp) -> None:
        self._comprehension_names.append(_comprehension_targets(node))

    def leave_DictComp(self, original_node: cst.DictComp) -> None:
        self._comprehension_names.pop()

    def visit_Assign(self, node: cst.Assign) -> None:
        self._functions[-1].rebound.update(t.target.value for t in node.targets if type(t.target) is cst.Name)
        if _never_a_parameter(node.value):
            for target in node.targets:
                place = dotted_name(target.target)
                if place is not None and "." in place:
                    self._functions[-1].plain_attributes.add(place)
        for target in node.targets:
            frozen = target.target
            if not (is_constant(node.value, "False") and isinstance(frozen, cst.Attribute)):
                continue
            if frozen.attr.value == "requires_grad" and self._freezes_beyond(frozen.value):
                # `self.emb.weight.requires_grad = False`: the function's own flow sees it where it happens
                if "." in (dotted_name(frozen.value) or ""):
                    self._freezers.add(id(self._functions[-1]))
                else:  # `p.requires_grad = False` of `for p in model.parameters()`
                    self._freezes_unseen = True
        if len(self._functions) == 1 and self._classes[-1] is None:
            self._bind_module_names(node)
        owner = self._method_owner()
        if owner is None:
            return
        for target in node.targets:
            self._assign_attribute(owner, target.target, node.value)
            place = dotted_name(target.target)
            if isinstance(node.value, cst.Call) and place is not None and place.startswith("self."):
                owner.pending.append((place, node.value, self._functions[-1].node))

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        owner = self._method_owner()
        if owner is not None and node.value is not None:
            self._assign_attribute(owner, node.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if type(node.target) is cst.Name:
            self._functions[-1].rebound.add(node.target.value)
        owner = self._method_owner()
        if owner is not None:
            self._assign_attribute(owner, node.target, None)

    def _bind_module_names(self, node: cst.Assign) -> None:
        """`norm = Normalize(...)` at module level: what `norm(x)` calls in every function. A name
        bound twice is unknown."""
        value = node.value
        made = value.func.value if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) else None
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                name = target.target.value
                self._module_bindings[name] = None if name in self._module_bindings else made

    def _assign_attribute(self, owner: _Class, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:  # `self.a, self.b = f()`: each holds something unseen
                self._assign_attribute(owner, element.value, None)
        elif isinstance(target, cst.Attribute) and _is_self(target.value):
            self._class_facts.assign(owner.facts, target.attr.value, value)

    def _freezes_beyond(self, tensor: cst.BaseExpression) -> bool:
        """Turning grad off for more than one function's flow can follow: not for a parameter of
        the function itself (`E.requires_grad = False`), which its flow sees where it happens."""
        return not (isinstance(tensor, cst.Name) and tensor.value in self._functions[-1].all_params)

    def _method_owner(self) -> _Class | None:
        """The class whose method's own body is being walked (not a nested function's)."""
        return self._classes[-1] if self._functions[-1].class_name is not None else None

    def _direct_method(self, node: cst.FunctionDef) -> bool:
        # A def directly inside a class body: the innermost open scope is the class.
        return self._classes[-1] is not None and self._functions[-1].class_name != self._classes[-1].name

    @staticmethod
    def _writes_in_place(call: cst.Call, qualified: str, inplace) -> bool:
        return (
            qualified.startswith("torch.nn.")
            and qualified.rsplit(".", 1)[1] in inplace
            and is_constant(keyword(call, "inplace"), "True")
        )

    def finish(self) -> list[Scope]:
        inplace = knowledge().module_inplace_kwarg
        classes = self._class_facts.table()
        classes.instances = {
            name: made for name, made in self._module_bindings.items() if made is not None and classes.defines(made)
        }
        for info in self._all_classes:
            for place, call, function in info.pending:
                qualified = self.imports.qualify(call.func) or ""
                if self._writes_in_place(call, qualified, inplace):
                    info.inplace_modules[place] = qualified
                elif (
                    qualified == SEQUENTIAL
                    and (first := _first_layer(call, function)) is not None
                    and self._writes_in_place(first, self.imports.qualify(first.func) or "", inplace)
                ):
                    # `nn.Sequential(nn.ReLU(inplace=True), ...)`: its first layer writes what the call is given
                    info.inplace_modules[place] = SEQUENTIAL
            for method in info.methods:
                method.inplace_modules = info.inplace_modules
        for scope in self.scopes:
            scope.classes = classes
            scope.freezes_parameters = self._freezes_unseen or bool(self._freezers - {id(scope)})
            scope.params = {name: _parameter_kind(scope, name, tensor) for name, tensor in scope.params.items()}
            first = next(iter(scope.params), None)
            # The input of a module's forward is a tensor unless annotated otherwise, or unless the forward
            # converts numpy arrays (`torch.from_numpy(...)`: a transform module handed an image array).
            forward = scope.is_forward
            if forward and first is not None and scope.params[first] is None and not self._converts(scope, first):
                scope.params[first] = True
                scope.assumed_tensor = first
        return self.scopes

    def _converts(self, scope: Scope, parameter: str) -> bool:
        """Whether the function hands `parameter`, or a name bound from it, to `torch.from_numpy`: then it
        is given a numpy array. Read only for a function that calls `torch.from_numpy` at all."""
        if not scope.converts_arrays:
            return False
        flow = _ArrayFlow(self.imports)
        flow.walk(scope.node.body)
        derived = {parameter}
        while True:
            more = {name for name, read in flow.bindings if read & derived} - derived
            if not more:
                return bool(flow.converted & derived)
            derived |= more


class _ArrayFlow(Walker):
    """The names each assignment to a plain name reads, and the names given to `torch.from_numpy`."""

    def __init__(self, imports: ImportTable) -> None:
        self.imports = imports
        self.bindings: list[tuple[str, frozenset[str]]] = []
        self.converted: set[str] = set()

    def visit_Assign(self, node: cst.Assign) -> None:
        read = frozenset(used_names(node.value))
        for target in node.targets:
            if type(target.target) is cst.Name:
                self.bindings.append((target.target.value, read))

    def visit_Call(self, node: cst.Call) -> None:
        if self.imports.qualify(node.func) == "torch.from_numpy" and node.args:
            self.converted |= used_names(node.args[0].value)


_AUTOGRAD_FUNCTION = "torch.autograd.Function"


def _never_a_parameter(value: cst.BaseExpression) -> bool:
    """`h.detach()`, `p.clone()`, `p.data`, `a * b`: a tensor that is not an `nn.Parameter` (F51)."""
    k = knowledge()
    if isinstance(value, (cst.BinaryOperation, cst.UnaryOperation)):
        return True
    if isinstance(value, cst.Attribute):
        return value.attr.value in k.plain_tensor_properties
    return (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Attribute)
        and value.func.attr.value in k.plain_tensor_methods
    )


def _parameter_kind(scope: Scope, name: str, annotated: bool | None) -> bool | None:
    """Whether a parameter holds a tensor: annotated so, or the receiver of a tensor-only method; not
    when the function indexes it by a string key (`inputs["positions"]`: a mapping of tensors), or calls
    a method torch tensors lack (`box.astype(t)`: a numpy array, whatever methods both share)."""
    if annotated:
        return True
    if name in scope.array_places or name in scope.string_keyed:
        return False
    return True if name in scope.tensor_places else annotated


def _comprehension_targets(node) -> frozenset[str]:
    """The names a comprehension's `for` clauses bind: its own variables, not the function's."""
    names = set()
    clause = node.for_in
    while clause is not None:
        names.update(n.value for n in _target_names(clause.target))
        clause = clause.inner_for_in
    return frozenset(names)


def _target_names(target: cst.BaseExpression) -> list[cst.Name]:
    if isinstance(target, cst.Name):
        return [target]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [name for element in target.elements for name in _target_names(element.value)]
    return []


def _is_self(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "self"


def _no_grad_decorator(node: cst.BaseExpression) -> bool:
    target = node.func if isinstance(node, cst.Call) else node
    name = dotted_name(target) or ""
    return name.rsplit(".", 1)[-1] in ("no_grad", "inference_mode")


def _parameters(node: cst.FunctionDef, is_method: bool, imports: ImportTable) -> dict[str, bool | None]:
    """Parameter name -> whether its annotation says tensor. `self`/`cls` are not caller tensors."""
    params = node.params
    ordered = [*params.posonly_params, *params.params, *params.kwonly_params]
    result: dict[str, bool | None] = {}
    for index, param in enumerate(ordered):
        name = param.name.value
        if is_method and index == 0:
            continue
        annotation = dotted_name(param.annotation.annotation) if param.annotation else None
        if annotation is None and param.annotation is not None:
            annotation = cst.Module([]).code_for_node(param.annotation.annotation)
        if annotation in _SCALAR_ANNOTATIONS or _scalar_default(param.default) or _container(annotation):
            result[name] = False
            continue
        result[name] = True if _tensor_annotation(param.annotation, annotation, imports) else None
    return result


def numba_arrays(node: cst.FunctionDef, imports: ImportTable) -> dict[str, int | None]:
    """The parameters of a function numba compiles (`@numba.jit(...)`, `@njit`): numba takes numpy arrays and
    scalars, never torch tensors. With a signature string (`"float32[:, :], float32"`), each array's number of
    dimensions and the scalars (left out); without one, every parameter, of dimensions unsaid."""
    for decorator in node.decorators:
        expression = decorator.decorator
        called = expression.func if isinstance(expression, cst.Call) else expression
        if not (imports.qualify(called) or "").startswith("numba."):
            continue
        names = [p.name.value for p in (*node.params.posonly_params, *node.params.params)]
        signature = expression.args[0].value if isinstance(expression, cst.Call) and expression.args else None
        if isinstance(signature, cst.SimpleString):
            types = _signature_types(signature.evaluated_value)
            if types is not None and len(types) == len(names):
                return {name: kind.count(":") for name, kind in zip(names, types) if "[" in kind}
        return dict.fromkeys(names)
    return {}


def _signature_types(signature: str) -> list[str] | None:
    """`"float32[:](float32[:, :], int32)"` or `"float32[:, :], int32"` -> the argument types, split at the
    commas outside brackets; None when it does not read so."""
    start = signature.find("(")
    if start != -1:
        if not signature.rstrip().endswith(")"):
            return None
        signature = signature[start + 1 : signature.rstrip().rfind(")")]
    types, depth, current = [], 0, ""
    for character in signature:
        depth += {"[": 1, "(": 1, "]": -1, ")": -1}.get(character, 0)
        if character == "," and depth == 0:
            types.append(current.strip())
            current = ""
        else:
            current += character
    types.append(current.strip())
    return types if all(types) else None


def _optional_parameters(node: cst.FunctionDef) -> frozenset[str]:
    params = node.params
    return frozenset(
        param.name.value
        for param in (*params.posonly_params, *params.params, *params.kwonly_params)
        if isinstance(param.default, cst.Name) and param.default.value == "None"
    )


def _tensor_annotation(node: cst.Annotation | None, text: str | None, imports: ImportTable) -> bool:
    """`torch.Tensor`, `Tensor` (from torch), `Optional[Tensor]`, `np.ndarray`; not `cute.Tensor`."""
    if node is None or text is None or not text.rstrip("]").endswith(_TENSOR_ANNOTATIONS):
        return False
    qualified = imports.qualify(node.annotation)
    return qualified is None or qualified.startswith(("torch.", "numpy."))


def _container(annotation: str | None) -> bool:
    """`List[Tensor]`, `dict[str, Tensor]`, `Optional[Dict[str, Tensor]]`: not a tensor itself."""
    head = _without_none(annotation or "").split("[", 1)[0].rsplit(".", 1)[-1]
    return head.lower() in ("list", "tuple", "dict", "sequence", "iterable", "mapping", "set")


def _without_none(annotation: str) -> str:
    """`Optional[X]`, `X | None`, `None | X` -> `X`."""
    text = annotation.strip()
    for prefix in ("Optional[", "typing.Optional["):
        if text.startswith(prefix) and text.endswith("]"):
            return text[len(prefix) : -1].strip()
    for none in (" | None", "|None"):
        if text.endswith(none):
            return text[: -len(none)].strip()
    return text.removeprefix("None |").removeprefix("None|").strip()


def _scalar_default(default: cst.BaseExpression | None) -> bool:
    return isinstance(default, (cst.Integer, cst.Float, cst.SimpleString)) or (
        isinstance(default, cst.Name) and default.value in ("True", "False")
    )


#: A module of layers: called, it runs them in order on its argument.
SEQUENTIAL = "torch.nn.Sequential"


def _first_layer(call: cst.Call, function: cst.CSTNode) -> cst.Call | None:
    """The first layer a `nn.Sequential(...)` is built with, when it is written there as a call, or as the
    first layer put in the list it is given (`nn.Sequential(*layers)`, `function` building `layers`)."""
    first = call.args[0] if call.args else None
    if first is None or first.keyword is not None:
        return None
    if first.star == "*" and isinstance(first.value, cst.Name):
        finder = _FirstListed(first.value.value)
        finder.walk(function)
        return finder.layer
    if first.star or not isinstance(first.value, cst.Call):
        return None
    return first.value


class _FirstListed(Walker):
    """The call first put in list `name`, in source order: `name = [f(), ...]`, `name.append(f())`,
    `name += [f()]`, `name.extend([f()])`. A loop whose body appends under a condition (`if i < n:
    layers.append(nn.ReLU(inplace=True))`) starts the list with it whenever the first pass takes it.
    None once `name` gets anything else first (`name = build()`, `name.append(block)`), or where the
    function changes the list's head later (`name[0] = nn.ReLU()`, `name = name[1:]`, `name.insert(0, m)`)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.layer: cst.Call | None = None
        self.found = False

    def _is_list(self, node: cst.BaseExpression) -> bool:
        return isinstance(node, cst.Name) and node.value == self.name

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if self._is_list(target.target):
                self._bound(node.value)
            elif isinstance(target.target, cst.Subscript) and self._is_list(target.target.value):
                self._reordered()

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if self._is_list(node.target):
            self._extended(node.value)

    def visit_Del(self, node: cst.Del) -> None:
        if isinstance(node.target, cst.Subscript) and self._is_list(node.target.value):
            self._reordered()

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and self._is_list(func.value)):
            return
        method = func.attr.value
        if method == "append" and node.args:
            self._found(node.args[0].value)
        elif method == "extend" and node.args:
            self._extended(node.args[0].value)
        elif method in _REORDERING:
            self._reordered()

    def _bound(self, value: cst.BaseExpression) -> None:
        """`name = [...]`: the list's first layer, unless it held layers before (`name = name[1:]`)."""
        if self.found or not isinstance(value, (cst.List, cst.Tuple)):
            self._reordered()
        elif value.elements:  # `layers = []` puts nothing in yet
            self._found(value.elements[0].value)

    def _extended(self, value: cst.BaseExpression) -> None:
        if isinstance(value, (cst.List, cst.Tuple)):
            if value.elements:
                self._found(value.elements[0].value)
        else:
            self._found(None)  # `layers += blocks`: layers unseen

    def _found(self, layer: cst.BaseExpression | None) -> None:
        if not self.found:
            self.layer = layer if isinstance(layer, cst.Call) else None
            self.found = True

    def _reordered(self) -> None:
        self.layer, self.found = None, True


#: List methods that may put another layer at its head.
_REORDERING = frozenset({"insert", "pop", "remove", "reverse", "sort", "clear"})
