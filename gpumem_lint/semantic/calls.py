"""What calls do to tensors: library functions, tensor and module methods, training
steps, and same-module helpers that mutate their arguments. Mixed into `ScopeAnalyzer`,
whose helpers (`_alias`, `_write`, `_fresh_value`, ...) it uses."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from gpumem_lint.knowledge.heuristics import heuristics
from gpumem_lint.knowledge.memory_api import memory_api
from gpumem_lint.semantic.class_facts import Held
from gpumem_lint.semantic.imports import dotted_name, place_prefixes
from gpumem_lint.semantic.indexing import constructed_ndim
from gpumem_lint.semantic.literals import (
    announces_inplace,
    argument,
    called_name,
    is_constant,
    keyword,
    split_like_tensor,
)
from gpumem_lint.semantic.scopes import SEQUENTIAL
from gpumem_lint.semantic.summaries import Returns
from gpumem_lint.semantic.values import EMPTY, AliasKind, Grad, Role, State, Storage, Value
from gpumem_lint.semantic.walk import Walker

#: Shallow containers: they hold the same tensors, not copies.
_IDENTITY_FUNCTIONS = frozenset({"dict", "list", "tuple", "copy.copy", "collections.OrderedDict", "OrderedDict"})
_CONTAINER_METHODS = frozenset({"items", "values"})
_ITERATORS = frozenset({"zip", "enumerate", "reversed", "sorted", "iter", "filter"})
_CONTAINER_STORES = frozenset({"append", "extend", "insert", "add", "appendleft", "setdefault"})
_BACKWARD_FUNCTIONS = frozenset({"torch.autograd.backward", "torch.autograd.grad"})


@dataclass(frozen=True)
class Mutator:
    """A same-module function (or the method calling an object runs) that writes some of its
    tensor parameters in place."""

    name: str
    params: tuple[str, ...]
    mutated: frozenset[str]
    if_tensor: frozenset[str] = frozenset()  # written by `+=` / `[i] =`: only when the caller passes a tensor


class CallSemantics:
    def _call(self, node: cst.Call, state: State) -> Value:
        func = node.func
        receiver: Value | None = None
        called: Value | None = None
        attribute = type(func) is cst.Attribute
        if attribute:
            # Appending to a list, or asking for a size, does not read the values it holds.
            method = func.attr.value
            receiver = self._eval(
                func.value, state, record=method not in _CONTAINER_STORES and method not in self.k.metadata_methods
            )
        else:
            called = self._eval(func, state)
        metadata = type(func) is cst.Name and func.value in self.k.metadata_functions  # `len(x)`
        args = [self._eval(arg.value, state, record=not metadata) for arg in node.args]
        name = dotted_name(func)
        callee = called if type(func) is cst.Call else None  # `Denormalize(mu, sigma)(t)`: the object made
        if name is not None and (
            not attribute
            or not (func.attr.value in self.k.not_module_calls or func.attr.value in self.k.tensor_only_methods)
            or self._holds_module(func, state)  # `self.norm(x)` where `__init__` made `self.norm = nn.LayerNorm(d)`
        ):
            callee = self._eval(func, state, record=False)
            self._in_graph(callee)  # `model(x)`, `self.encoder(x)`
        layers = [h for h in state.env.get(name, ()) if h.role is Role.INPLACE_MODULE] if name is not None else []
        if layers and args:
            self._write(args[0], node, "inplace module", state)
            self._save_inplace_layer(node, layers[0].module, args[0], state)
            if layers[0].module != SEQUENTIAL:
                return args[0]
            # a Sequential whose first layer wrote the argument returns its last layer's output: a call as any other
        renormed = self._renormed_weight(func, name, callee, state)
        if renormed is not None:
            self._renorm(renormed, node, state)
        qualified = self.imports.qualify_name(name) if name is not None else None
        method = self._called_method(name, callee)
        if method is not None:
            self._call_object(method, node, args, state)
            summary = self.returns.get(tuple(method.split(".", 1)))
            returned = summary.argument(node, args, skip=1) if summary is not None and summary.is_argument else None
            if returned is not None:
                return returned  # `a = net(x)` of a forward that returns `x`: `a` is the caller's `x`
        self._note_release_call(node, qualified, state)
        if not attribute and name is not None and announces_inplace(name):
            self._rebuilt_modules(node, args, state)
        # `self.squeeze(x)` of a submodule named like a Tensor method runs the module, not the method
        submodule = attribute and callee is not None and any(h.module is not None for h in callee.handles)
        result = self._call_result(node, func, name, qualified, None if submodule else receiver, args, state)
        self._mark_blank(node, qualified, result)
        self._mark_host(node, qualified, result)
        self._move_off_host(node, receiver)
        self._call_grad(node, result, callee, [receiver, *args] if receiver is not None else args, qualified)
        self._save_call(node, qualified, receiver, args, callee, result, state)
        ndim = constructed_ndim(node, qualified, self.k) if qualified is not None else None
        if (
            qualified in self.k.shape_keeping
            and args
            and "axis" not in (a.keyword and a.keyword.value for a in node.args)
        ):
            ndim = _common_ndim(args[0])
        if ndim is not None:
            for handle in result.handles:
                handle.ndim = ndim
        return result

    def _call_result(
        self,
        node: cst.Call,
        func: cst.BaseExpression,
        name: str | None,
        qualified: str | None,
        receiver: Value | None,
        args: list[Value],
        state: State,
    ) -> Value:
        attribute = receiver is not None
        crossing = self._process_call(node, qualified, receiver, args, state)
        if crossing is not None:
            return crossing
        if qualified is not None and (qualified.startswith(("torch.", "numpy.")) or qualified in _IDENTITY_FUNCTIONS):
            return self._library_call(node, qualified, args, state)
        keeps = memory_api().keepers.get(qualified or "")
        if keeps is not None:  # `pl.Trainer(...)`: its `fit(model)` keeps the model
            made = self._fresh_value(node)
            for handle in made.handles:
                handle.keeps = keeps
            return made
        kept = memory_api().built_keepers.get(qualified or "")
        if kept is not None:
            return self._built_from(node, args, kept)
        if qualified is not None and attribute:
            return self._fresh_value(node)  # `sympy.expand(e)`, `math.sqrt(x)`: another library's function
        if receiver is not None:
            own_method = self.scope.class_name, func.attr.value
            if self.scope.class_name is not None and dotted_name(func.value) == "self":  # `self.reg(logits)`
                self._call_object(f"{self.scope.class_name}.{func.attr.value}", node, args, state)
            if own_method in self.returns and dotted_name(func.value) == "self":  # `self.make_mask(n)`
                return self._summarised_result(self.returns[own_method], node, args, state, skip=1)
            return self._method_call(node, func.attr.value, receiver, args, state)
        if name in _IDENTITY_FUNCTIONS and args:
            return _shallow_copy(args[0])
        if name in _ITERATORS:  # zip(a, b), enumerate(xs): a container of their elements
            parts = [self._element(value, arg.value) for arg, value in zip(node.args, args)]
            if name == "zip":
                self._zip_parts[id(node)] = parts  # `for a, b in zip(xs, ys)` binds them apart
            elif name == "enumerate" and len(parts) == 1:
                self._zip_parts[id(node)] = [EMPTY, parts[0]]  # `for i, block in enumerate(self.blocks)`: an index
            return Value(frozenset().union(*(part.handles for part in parts)), container=True)
        if type(func) is cst.Name and not self._no_grad:  # what a same-file function receives (model.py `_passed`)
            self.outgoing.setdefault(func.value, []).extend(
                (arg.keyword.value if arg.keyword is not None else position, value)
                for position, (arg, value) in enumerate(zip(node.args, args))
                if not arg.star
            )
            self._note_saved_arguments(args, state)
        if type(func) is cst.Name and self._process_subclass(node):
            return self._construct_subclass(node, args)  # `Worker(net)` of `class Worker(mp.Process)`
        if name in self.mutators:
            self._write_mutated_arguments(self.mutators[name], node, args, state)
        if name is not None and _is_training_call(name.rsplit(".", 1)[-1]):
            self._write_modules(args, node, state)
        if args and node.args[0].keyword is None and any(h.kind is AliasKind.PARAMETERS for h in args[0].handles):
            # `Optimizer(model.parameters(), ...)`: what is built from a module's parameters
            # updates them; its state_dict() is its own state, not the module's.
            return self._optimizer(node, args)
        if (None, name) in self.returns:
            return self._summarised_result(self.returns[None, name], node, args, state, skip=0)
        made = self._fresh(node, "", EMPTY)
        classes = self.scope.classes
        if type(func) is cst.Name and classes is not None and classes.called_method(func.value) is not None:
            made.instance = func.value  # `norm = Normalize(mean, std)`: `norm(x)` runs `Normalize.__call__`
        return Value(frozenset({made}))

    def _rebuilt_modules(self, node: cst.Call, args: list[Value], state: State) -> None:
        """`quantize_(model, config)`: a function named as an in-place op that is given a module may
        replace its layers and their parameters, so what the class said they hold no longer holds."""
        for arg, value in zip(node.args, args):
            place = dotted_name(arg.value)
            if place is None or not any(h.module is not None for h in value.handles):
                continue
            rebuilt = set()
            for source in value.handles:
                handle = self._handle(("rebuilt", id(node), id(source)), source.storage, source.kind, source.node)
                handle.tensor, handle.base = source.tensor, source.base
                rebuilt.add(handle)
            state.env[place] = frozenset(rebuilt)

    def _other_framework(self) -> bool:
        """The module imports TensorFlow, JAX, ... and not torch: its `.numpy()` calls are theirs."""
        imports = self.imports
        return not imports.imports("torch") and any(imports.imports(name) for name in self.k.other_numpy_frameworks)

    def _called_method(self, name: str | None, callee: Value | None) -> str | None:
        """`Normalize.__call__` for `norm(x)`, `Block.forward` for `self.block(x)`: the method of a
        class of this file that calling the object runs, when every binding agrees."""
        classes = self.scope.classes
        if classes is None:
            return None
        handles = callee.handles if callee is not None else frozenset()
        owners = {h.instance or h.module for h in handles}
        known = any(h.instance or h.module for h in handles)  # `for conv in self.convs` of a module list of one class
        if name is not None and "." not in name and not known and all(h.storage.origin == "external" for h in handles):
            owners = {classes.instances.get(name)}  # a global: bound at module level
        if len(owners) != 1:
            return None
        (owner,) = owners
        method = classes.called_method(owner) if owner is not None else None
        return f"{owner}.{method}" if method is not None else None

    def _note_saved_arguments(self, args: list[Value], state: State) -> None:
        """The ops that kept for backward the memory of arguments handed to a same-file function: its
        in-place write to them makes backward raise (model.py `_passed`)."""
        if not state.saved:
            return
        for value in args:
            savings = self._savings_of(value, state)
            if savings:
                self.outgoing_saved[id(value)] = self.outgoing_saved.get(id(value), frozenset()) | savings

    def _call_object(self, method: str, node: cst.Call, args: list[Value], state: State) -> None:
        """What the method receives (after `self`), and the arguments it writes."""
        self.object_calls.add(method)
        if not self._no_grad:
            self.outgoing.setdefault(method, []).extend(
                (arg.keyword.value if arg.keyword is not None else position + 1, value)
                for position, (arg, value) in enumerate(zip(node.args, args))
                if not arg.star
            )
            self._note_saved_arguments(args, state)
        if method in self.mutators:
            self._write_mutated_arguments(self.mutators[method], node, args, state, skip=1)

    def _built_from(self, node: cst.Call, args: list[Value], parameter: str) -> Value:
        """`Trainer(model=model, ...)`: an object that keeps what it is built from (memory_api.toml
        [built_keepers]), and places it on the training device, holds its memory; training it trains
        that module."""
        made = self._fresh_value(node)
        given = [
            value
            for position, (arg, value) in enumerate(zip(node.args, args))
            if (arg.keyword is not None and arg.keyword.value == parameter)
            or (position == 0 and not arg.keyword and not arg.star)
        ]
        kept = frozenset(handle for value in given for handle in value.handles)
        for handle in kept:
            handle.storage.host = False
        return Value(made.handles | frozenset(self._stored(handle, node) for handle in kept))

    def _differentiated_call(self, node: cst.Call, function: Value) -> None:
        """`jacobian(f, x)`: `f`, a function of this file or an object whose class's `__call__` it runs, is
        called on tensors that require grad (one per element of a tuple of inputs) and differentiated (F54)."""
        name = dotted_name(node.args[0].value)
        if name is None:
            return
        method = self._called_method(name, function)
        key, skip = (method, 1) if method is not None else (name, 0)
        inputs = node.args[1].value
        elements = [element.value for element in inputs.elements] if isinstance(inputs, cst.Tuple) else [inputs]
        for position, element in enumerate(elements):
            given = self._fresh_value(element, tensor=True)
            for handle in given.handles:
                handle.grad = Grad.YES  # a leaf for `jacobian`, not for `hessian`: not said
            self.outgoing.setdefault(key, []).append((position + skip, given))
        self.differentiated.add(key)

    def _summarised_result(self, summary: Returns, node: cst.Call, args: list[Value], state: State, skip: int) -> Value:
        """`make_mask(n)`, `split_heads(x)`, `to_image(t)`: what the function returns, made at the call."""
        if summary.saved_output is not None:  # `out = self.block(x)` of a block ending in a ReLU: kept for backward
            result = self._fresh_value(node, tensor=True)
            self._call_grad(node, result, None, args, None)
            self._keep_returned_output(node, summary.saved_output, result, state)
            return result
        if summary.host:  # no more known of it than of another call's result, but where its memory is
            result = self._fresh_value(node)
            for handle in result.handles:
                handle.storage.host = True
            return result
        if summary.array:
            return self._fresh_value(node, ndarray=True)
        if summary.param is not None:
            argument = summary.argument(node, args, skip)
            if argument is None:
                return self._fresh_value(node)
            if summary.is_argument:
                return argument
            return self._alias(argument, node, summary.kind, tensor=True)
        result = self._fresh_value(node, tensor=True)
        if summary.kind is AliasKind.OWN:  # `nn.Parameter(...)` made inside
            for handle in result.handles:
                handle.grad, handle.leaf = Grad.YES, True
            return result
        self._call_grad(node, result, None, args, None)
        return self._alias(result, node, summary.kind, tensor=True)

    def _optimizer(self, node: cst.Call, args: list[Value]) -> Value:
        storages = frozenset(h.storage for value in args for h in value.handles if h.kind is AliasKind.PARAMETERS)
        handle = self._handle(("optim", id(node)), Storage("optimizer", "fresh"), AliasKind.OWN, node)
        handle.role, handle.targets = Role.OPTIMIZER, storages
        return Value(frozenset({handle}))

    def _method_call(self, node: cst.Call, method: str, receiver: Value, args: list[Value], state: State) -> Value:
        k = self.k
        array = self._is_array(receiver)
        if args and any(method in handle.keeps for handle in receiver.handles):
            place = dotted_name(node.func.value)
            if place is not None:  # `trainer.fit(model)`
                self._hold(place, frozenset().union(*(arg.handles for arg in args)), node, state)
        if method == "backward":
            # `loss.backward()`, but `fabric.backward(loss)` / `accelerator.backward(loss)`.
            positional = [arg.value for arg in node.args if arg.keyword is None]
            if receiver.tensor or not positional:
                self._check_backward(node, node.func.value, state, receiver)
            else:
                loss = next(value for arg, value in zip(node.args, args) if arg.keyword is None)
                self._check_backward(node, positional[0], state, loss)
            return EMPTY
        if method == "requires_grad_":
            return self._requires_grad_(node, receiver, state)
        if method in k.module_self_methods and receiver.module is not None:  # `Net().cuda()` (F27)
            return receiver
        if method == "set_" and args:  # `x.set_(y)`: like `x.data = y`, invisible to autograd
            self._write(receiver, node, "set_", state)
            return receiver
        if method in k.detach_in_place_methods:  # `x.detach_()`: x is now a leaf that does not require grad (F56)
            return self._regrad(node, receiver, Grad.NO, dotted_name(node.func.value), state)
        if method in k.layout_write_methods and not receiver.ndarray:  # `k.transpose_(0, 1)`: new strides (F25)
            self._layout_write(receiver, node, method, state)
            return receiver
        if method in k.data_write_methods and (array or method in k.tensor_only_methods):
            if not (method == "copy_" and args and args[0].handles == receiver.handles):  # `x.copy_(x)`: no change
                self._write(receiver, node, method, state)
                if method in k.buffer_overwrites:
                    self._note_filled_parameter(node, node.func.value, state)
                self._check_overlap(node, receiver, [(arg.value, value) for arg, value in zip(node.args, args)])
            return receiver
        if method in k.detach_methods:
            return self._alias(receiver, node, AliasKind.DETACH, tensor=True)
        if method in k.state_dict_methods:
            self.module_storages.update(h.storage for h in receiver.handles)
            return self._alias(receiver, node, AliasKind.STATE_DICT)
        if method in k.parameter_methods:
            self.module_storages.update(h.storage for h in receiver.handles)
            parameters = self._alias(receiver, node, AliasKind.PARAMETERS, tensor=True)
            if "parameters" in method:  # not buffers
                self._parameter_grad(receiver, parameters)
            return parameters
        if method in k.load_methods and _named_like_optimizer(node.func.value):
            return EMPTY  # an optimizer's load replaces its own state: it writes no parameter
        if method in k.load_methods and is_constant(keyword(node, "assign"), "True"):
            return EMPTY  # the module now holds the given tensors: no memory was written (F46)
        if method in k.load_methods:
            self.module_storages.update(h.storage for h in receiver.handles)
            own = {h.storage for h in receiver.handles}
            if not any(h.kind is AliasKind.STATE_DICT and h.storage in own for a in args for h in a.handles):
                self._write(receiver, node, method + "()", state, module=True)  # loading its own state changes nothing
                self._loads[id(node)] = node
            return EMPTY
        if method in k.tensor_to_numpy_methods:
            if self._other_framework():
                return self._fresh_value(node, ndarray=True)  # a TensorFlow or JAX tensor's `.numpy()` copies
            return self._alias(receiver, node, AliasKind.NUMPY, tensor=False, ndarray=True)
        if method in k.array_copy_methods:
            if is_constant(keyword(node, "copy"), "False"):
                return receiver  # the array itself where the dtype already matches
            return self._fresh_value(node, ndarray=True)
        if method in _CONTAINER_METHODS and not array:
            return receiver
        if method == "copy" and receiver.kinds & {AliasKind.STATE_DICT}:
            return receiver  # dict.copy() is shallow
        if method in _CONTAINER_STORES and not array and args:
            place = dotted_name(node.func.value)
            if place is not None:
                self._hold(place, frozenset().union(*(arg.handles for arg in args)), node, state)
            return EMPTY
        if method == "step" and any(h.role is Role.OPTIMIZER for h in receiver.handles):
            self._write_optimizer_targets(receiver, node, state)
            return EMPTY
        if method == "step" and _named_like_optimizer(node.func.value):
            # An optimizer we did not see built: it may update any module of this scope.
            self._write_storages(self.module_storages, node, "step()", state)
            return EMPTY
        # `sd.update(other)` is a dict's, as is `sd["param_groups"][0].update(...)`: what a state_dict
        # holds is a tensor, which has no such method, or a dict
        dict_like = receiver.container or any(
            h.kind is AliasKind.STATE_DICT for handle in receiver.handles for h in handle.chain()
        )
        if _is_training_call(method) and method != "step" and not dict_like:
            # `trainer.fit(model)` trains its argument; `ema.update(model)` only reads it.
            targets = [receiver, *args] if method.startswith(("train", "fit")) else [receiver]
            self._write_modules(targets, node, state)
            return EMPTY
        if method in k.multi_view_methods and (array or method in k.tensor_only_methods or split_like_tensor(node)):
            return self._alias(receiver, node, AliasKind.MULTI_VIEW, tensor=True)
        if array or method in k.tensor_only_methods:
            tensor = None if receiver.ndarray else True  # `a.reshape(3, 3)` of a numpy array is an array's view
            if method in k.expand_methods and (node.args or array):
                return self._alias(receiver, node, AliasKind.EXPAND, tensor=True)
            if method in k.view_methods:
                partial = method in self.k.partial_views
                return self._alias(receiver, node, AliasKind.VIEW, partial=partial, tensor=tensor)
        if method in k.python_value_results:
            return self._python_value(node)  # `scores = scores.tolist()`: numbers, none of the tensor's memory
        tensor = (
            method in k.tensor_result_methods
            or method in k.may_alias_methods
            or (array and method in k.tensor_functions)
        )
        if tensor and receiver.ndarray and not receiver.tensor:
            return self._fresh_value(node, ndarray=True)  # `a.reshape(3, 3)`, `a.sum(0)`: numpy's methods give arrays
        return Value(frozenset({self._fresh(node, "", EMPTY, tensor=tensor)}), tensor=tensor)

    def _library_call(self, node: cst.Call, qualified: str, args: list[Value], state: State) -> Value:
        k = self.k
        if qualified.startswith("torch."):
            for value in args:
                self._in_graph(value)
        first = args[0] if args else EMPTY
        keywords = {arg.keyword.value: value for arg, value in zip(node.args, args) if arg.keyword is not None}
        positional = [value for arg, value in zip(node.args, args) if arg.keyword is None]
        first = positional[0] if positional else EMPTY
        if qualified in _IDENTITY_FUNCTIONS:
            return _shallow_copy(first)
        if qualified in k.copy_functions:
            return self._fresh_value(node, tensor=qualified.startswith("torch."), ndarray=qualified.startswith("numpy"))
        if qualified in k.numpy_to_tensor_functions:
            if qualified == "torch.from_numpy" or (first.ndarray and "dtype" not in keywords):
                return self._alias(first, node, AliasKind.NUMPY, tensor=True)
            return self._fresh_value(node, tensor=True)
        if qualified in k.tensor_to_numpy_functions:
            if first.tensor and "dtype" not in keywords:
                return self._alias(first, node, AliasKind.NUMPY, tensor=False, ndarray=True)
            return self._fresh_value(node, ndarray=True)
        if qualified in k.wrapper_functions and positional:
            parameter = self._alias(first, node, AliasKind.WRAPPER, tensor=True)
            frozen = is_constant(keyword(node, "requires_grad"), "False")
            for handle in parameter.handles:  # a Parameter is a leaf that requires grad
                handle.grad, handle.leaf = (Grad.NO, False) if frozen else (Grad.YES, True)
            return parameter
        if qualified in k.undeclared_mutators and is_constant(keyword(node, "training"), "True"):
            for position in k.undeclared_mutators[qualified]:
                if position < len(positional):
                    self._write(positional[position], node, qualified.rsplit(".", 1)[1], state)
            return self._fresh_value(node, tensor=True)
        if qualified in k.load_into_functions and positional:
            self._write(first, node, qualified.rsplit(".", 1)[1], state, module=True)  # its destination (F42)
            return EMPTY
        if qualified == "numpy.copyto" and positional:
            self._write(first, node, "numpy.copyto", state)
            return EMPTY
        if qualified in k.no_grad_contexts:
            return EMPTY
        if qualified in k.differentiating_functions and len(positional) >= 2 and node.args[1].keyword is None:
            self._differentiated_call(node, first)
            return self._fresh_value(node, tensor=True)
        if qualified in _BACKWARD_FUNCTIONS and node.args:
            self._check_backward(node, node.args[0].value, state, first)
            return self._fresh_value(node, tensor=True)
        if qualified.startswith("numpy."):
            if "out" in keywords:
                self._write(keywords["out"], node, "out=", state)
                self._note_filled_parameter(node, keyword(node, "out"), state)
            return self._fresh_value(node, ndarray=True)
        if qualified.startswith("torch.optim.") and qualified.count(".") == 2 and qualified[12:13].isupper():
            return self._optimizer(node, args)
        if qualified.startswith("torch.nn.init."):
            if qualified.rsplit(".", 1)[1] in k.init_functions:
                self._write(first, node, qualified, state, init=True)
                return first
            return EMPTY
        if qualified.startswith("torch.nn.functional."):
            name = qualified.rsplit(".", 1)[1]
            if name in k.renorming_functions and _renorms(node, k.renorming_keyword):
                weight = keywords.get("weight", args[1] if len(args) > 1 else EMPTY)
                self._renorm(weight, node, state)
            if name in k.functional_inplace_underscore or (
                name in k.functional_inplace_kwarg and is_constant(keyword(node, "inplace"), "True")
            ):
                self._write(first, node, f"{name}(inplace=True)" if not name.endswith("_") else name, state)
                return first
            return self._fresh_value(node, tensor=True)
        if qualified.startswith("torch.nn.") and qualified.count(".") == 2:
            name = qualified.rsplit(".", 1)[1]
            if name in k.module_inplace_kwarg and is_constant(keyword(node, "inplace"), "True"):
                handle = self._handle(("module", id(node)), Storage(name, "fresh"), AliasKind.OWN, node)
                handle.role, handle.module = Role.INPLACE_MODULE, qualified
                return Value(frozenset({handle}))
            return self._fresh_value(node)
        name = qualified[len("torch.") :] if qualified.count(".") == 1 else None
        if name is None:
            return self._fresh_value(node)
        if name.startswith(k.foreach_prefix) and name.endswith("_"):
            self._write(first, node, qualified, state)
            return EMPTY
        if "out" in keywords and name in k.out_functions:
            self._write(keywords["out"], node, "out=", state)
            self._note_filled_parameter(node, keyword(node, "out"), state)
            inputs = [(arg.value, value) for arg, value in zip(node.args, args) if arg.keyword is None]
            self._check_overlap(node, keywords["out"], inputs)
            return keywords["out"]
        if name in k.inplace_functions:
            self._write(first, node, qualified, state)
            return first
        if name in k.expand_functions or name in k.shape_dependent_expands:
            kind = AliasKind.EXPAND if name in k.expand_functions else AliasKind.VIEW
            return self._alias(Value(frozenset().union(*(a.handles for a in positional))), node, kind, tensor=True)
        if name in k.multi_view_functions:
            return self._alias(first, node, AliasKind.MULTI_VIEW, tensor=True)
        if name in k.view_functions:
            return self._alias(first, node, AliasKind.VIEW, partial=name in self.k.partial_views, tensor=True)
        return self._fresh_value(
            node, tensor=name in k.tensor_functions or not name.startswith(k.not_tensor_function_prefixes)
        )

    def _mark_blank(self, node: cst.Call, qualified: str | None, result: Value) -> None:
        """`torch.empty(n)`, `x.new_empty(n)`, `np.empty(n)`: memory allocated without values."""
        if qualified is not None and not qualified.startswith(("torch.", "numpy.")):
            return
        if called_name(node) in self.k.uninitialised_makers:
            for handle in result.handles:
                if handle.node is node and handle.kind is AliasKind.OWN and handle.storage.origin == "fresh":
                    handle.storage.blank = True
                    self._filled.discard(handle.storage)  # run again by a loop: new memory

    def _mark_host(self, node: cst.Call, qualified: str | None, result: Value) -> None:
        """`x.cpu()`, `torch.load(f, map_location="cpu")`, `AutoModel.from_pretrained(name)`: host memory,
        which the CUDA allocator never holds (F49, F50)."""
        api = memory_api()
        method = node.func.attr.value if isinstance(node.func, cst.Attribute) else None
        if qualified in api.host_load_functions:
            if not self._names_location(argument(node, "map_location", 1), api.host_locations):
                return
        elif method in api.host_loader_methods and (qualified or "").startswith(api.host_loader_packages):
            if any(arg.star == "**" or _keyword_in(arg, api.placement_keywords) for arg in node.args):
                return  # placed by a keyword, or by keywords passed on
        elif not (method in api.host_methods and not node.args):
            return
        for handle in result.handles:
            if handle.node is node and handle.kind is AliasKind.OWN and handle.storage.origin == "fresh":
                handle.storage.host = True

    def _move_off_host(self, node: cst.Call, receiver: Value | None) -> None:
        """`pipe.to("cuda")`: an object that is not a tensor (a module, a pipeline) moves itself, so
        what it holds is no longer host memory; a tensor's `.to` makes a copy and leaves it where it is."""
        if receiver is None or receiver.tensor or not isinstance(node.func, cst.Attribute):
            return
        if node.func.attr.value not in memory_api().moving_methods:
            return
        first = node.args[0].value if node.args else keyword(node, "device")
        if self._names_location(first, memory_api().host_locations):
            return
        for handle in receiver.handles:
            handle.storage.host = False

    def _names_location(self, node: cst.BaseExpression | None, locations: frozenset[str]) -> bool:
        """`"cpu"` or `torch.device("cpu")`."""
        if isinstance(node, cst.Call) and self.imports.qualify(node.func) == "torch.device" and len(node.args) == 1:
            node = node.args[0].value
        return isinstance(node, cst.SimpleString) and node.evaluated_value in locations

    def _write_mutated_arguments(
        self, mutator: Mutator, node: cst.Call, args: list[Value], state: State, skip: int = 0
    ) -> None:
        """`skip` leading parameters are bound already: a method's `self`."""
        for position, (arg, value) in enumerate(zip(node.args, args), start=skip):
            if arg.star:
                return
            name = (
                arg.keyword.value
                if arg.keyword is not None
                else (mutator.params[position] if position < len(mutator.params) else None)
            )
            # Only a named tensor, or a view of one, is known to be the caller's own: `f(x[mask])` passes a copy.
            written = name in mutator.mutated or (name in mutator.if_tensor and value.tensor)
            place, passed = _passed_memory(arg.value, value)
            if written and (place is not None or _made_by_call(arg.value, value)):
                read_before = place is not None and self._first_reads.get(place, passed) is not passed
                op = f"{mutator.name}()"
                self._write(value, node, op, state, callee=mutator.name, parameter=name, read_before=read_before)

    def _write_modules(self, values: list[Value], node: cst.CSTNode, state: State) -> None:
        """`train_one_epoch(model)`, `self.train_epoch()`: the modules they reach are trained. A
        `state_dict()` passed along (`fit(x, init=sd)`) is what the call reads, not a module it trains."""
        storages = {h.storage for value in values for h in value.handles if h.kind is not AliasKind.STATE_DICT}
        trained = {module for module in self.module_storages if any(module.related(s) for s in storages)}
        if trained:
            self._write_storages(trained, node, "training call", state)

    def _write_optimizer_targets(self, optimizer: Value, node: cst.CSTNode, state: State) -> None:
        targets = {storage for h in optimizer.handles for storage in h.targets}
        self._write_storages(targets, node, "step()", state)

    def _renormed_weight(
        self, func: cst.BaseExpression, name: str | None, callee: Value | None, state: State
    ) -> Value | None:
        """`emb(idx)` of an `nn.Embedding(n, d, max_norm=1.0)`, bound here or in `__init__`: its weight."""
        if name is None or callee is None:
            return None
        made = next((h.node for h in callee.handles if type(h.node) is cst.Call), None)
        if made is None and type(func) is cst.Attribute and (head := dotted_name(func.value)) is not None:
            fact = self._attribute_fact(head, func.attr.value, state.env.get(head, frozenset()))
            made = fact.source if fact is not None and fact.held is Held.MODULE else None
        if type(made) is not cst.Call:
            return None
        qualified = self.imports.qualify(made.func) or ""
        if not (
            qualified.startswith("torch.nn.")
            and qualified.rsplit(".", 1)[1] in self.k.renorming_modules
            and _renorms(made, self.k.renorming_keyword)
        ):
            return None
        return Value(self._place_value(f"{name}.weight", state), tensor=True)

    def _renorm(self, weight: Value, node: cst.Call, state: State) -> None:
        """`max_norm` rescales the looked-up rows in place under no-grad: the weight's version moves (F57)."""
        self._no_grad += 1
        try:
            self._write(weight, node, "max_norm", state, partial=True)
        finally:
            self._no_grad -= 1

    def _write_storages(self, storages, node: cst.CSTNode, op: str, state: State) -> None:
        writers = {self._handle(("step", id(node), id(storage)), storage, AliasKind.OWN, node) for storage in storages}
        self._write(Value(frozenset(writers)), node, op, state, module=True)

    def _check_backward(self, node: cst.Call, receiver: cst.BaseExpression, state: State, loss: Value) -> None:
        """`loss`: the value of `receiver` (`y.sum()` of `y.sum().backward()`), whose graph is what runs."""
        self.calls_backward = True
        places = _places_in(receiver)
        self._backward_of_hidden_saved(node, loss, state)
        self._backward_runs(places, state, retained=is_constant(keyword(node, "retain_graph"), "True"))
        for place in places:
            for handle in state.env.get(place, ()):
                for write in state.hidden.get(handle, ()):
                    self.backward_hits.setdefault((id(write), id(node)), (write, node))


def _shallow_copy(value: Value) -> Value:
    """`dict(sd)`, `list(xs)`, `copy.copy(c)`: a new container holding the same tensors."""
    return Value(value.handles, container=True)


def _places_in(node: cst.CSTNode) -> set[str]:
    """The names and attribute paths an expression reads: `scaler.scale(loss)` -> the loss."""
    collector = _PlaceCollector()
    collector.walk(node)
    return collector.found


class _PlaceCollector(Walker):
    def __init__(self) -> None:
        self.found: set[str] = set()

    def visit_Call(self, call: cst.Call) -> bool:
        if isinstance(call.func, cst.Attribute) and not isinstance(call.func.value, (cst.Name, cst.Attribute)):
            self.walk(call.func.value)
        for arg in call.args:
            self.walk(arg.value)
        return False

    def visit_Attribute(self, attribute: cst.Attribute) -> bool:
        place = dotted_name(attribute)
        if place is None:
            return True
        self.found.update(place_prefixes(place))
        return False

    def visit_Subscript(self, subscript: cst.Subscript) -> bool:
        self.walk(subscript.value)  # `grad[start:end]`: the indices are no part of the graph
        return False

    def visit_Name(self, name: cst.Name) -> None:
        self.found.add(name.value)


def _named_like_optimizer(node: cst.BaseExpression) -> bool:
    """`self.optim`, `state.optimizers[0]`: an optimizer we may not have seen built."""
    while isinstance(node, cst.Subscript):  # an item of `state.optimizers`
        node = node.value
    return bool(heuristics().optimizer_name.search(dotted_name(node) or ""))


def _is_training_call(name: str) -> bool:
    return heuristics().is_training_call(name)


def _keyword_in(arg: cst.Arg, names: frozenset[str]) -> bool:
    return arg.keyword is not None and arg.keyword.value in names


def _passed_memory(argument: cst.BaseExpression, value: Value) -> tuple[str | None, cst.CSTNode]:
    """The caller's place whose memory an argument hands over, and the node that reads it: `x` (itself),
    or `x` of `x[i, :n]` when basic indexing made the argument a view of it (`f(x[mask])` passes a copy)."""
    if type(argument) is cst.Subscript and value.handles and all(h.kind is AliasKind.VIEW for h in value.handles):
        return dotted_name(argument.value), argument.value
    return dotted_name(argument), argument


def _made_by_call(argument: cst.BaseExpression, value: Value) -> bool:
    """The argument is a call that makes a view (`f(x.view(-1))`): the memory it hands over is known.
    Other calls (`x.float()`, `x.to(d)`) may or may not copy; a new tensor (`f(torch.sigmoid(x))`) is
    no one else's, and what an op kept of it the callee is told (`Passed.saved`)."""
    return (
        type(argument) is cst.Call
        and bool(value.handles)
        and all(h.node is argument and h.kind is AliasKind.VIEW for h in value.handles)
    )


def _common_ndim(value: Value) -> int | None:
    """The number of dimensions every handle of `value` is known to have, else None."""
    ndims = {handle.ndim for handle in value.handles}
    return ndims.pop() if len(ndims) == 1 else None


def _renorms(call: cst.Call, keyword_name: str) -> bool:
    """`max_norm=1.0` given, and not as `None`."""
    given = keyword(call, keyword_name)
    return given is not None and not is_constant(given, "None")
