"""Requires-grad provenance: which tensors require grad, and which are autograd's leaves.

Flow-sensitive and three-valued (`Grad`): a Parameter (made here, held by a module as its
class or `torch.nn`'s table says, or yielded by `parameters()`), a `requires_grad=True`
factory and `requires_grad_()` make leaves that require grad; an op or a module applied to
such a tensor outside no-grad makes a non-leaf that does; `.detach()`, `.data`, buffers,
no-grad code and `requires_grad_(False)` make tensors that do not. Mixed into
`ScopeAnalyzer`, whose helpers (`_handle`, `_assign_place`, ...) it uses.
"""

from __future__ import annotations

import libcst as cst

from gpumem_lint.semantic.class_facts import AttributeFact, Held
from gpumem_lint.semantic.imports import dotted_name
from gpumem_lint.semantic.literals import called_name, is_constant, keyword
from gpumem_lint.semantic.values import EMPTY, AliasKind, Grad, Handle, Role, State, Value

#: Aliases autograd does not track back to their source.
_UNTRACKED = frozenset({AliasKind.DETACH, AliasKind.DATA, AliasKind.NUMPY, AliasKind.STATE_DICT})


class GradSemantics:
    def _init_grad(self) -> None:
        self._grad_flags: dict[Handle, frozenset[Handle]] = {}  # `f = t.requires_grad` -> t's handles then

    # ------------------------------------------------------------ sources

    def _attribute_grad(
        self, handle: Handle, head: str, attribute: str, owner: frozenset[Handle]
    ) -> AttributeFact | None:
        """`self.weight`, `self.fc.weight`, `model.fc`: what the class facts say the attribute holds."""
        fact = self._attribute_fact(head, attribute, owner)
        if fact is None or fact.held is Held.LIST:
            return None
        if fact.held is Held.MODULE:
            handle.module, handle.elements, handle.layers = fact.module, fact.elements, fact.layers
            return fact
        if fact.held is Held.OPTIMIZER:
            handle.role = Role.OPTIMIZER  # what it steps: `_external`, which sees this method's `self.*`
            return fact
        handle.tensor = True
        if fact.held is Held.EXPANDED:  # `self.pos = self.table.expand(n, -1)` in `__init__`
            handle.kind, handle.node = AliasKind.EXPAND, fact.source
            return fact
        if fact.held is Held.BUFFER or any(h.grad is Grad.NO for h in owner):
            handle.grad = Grad.NO  # a buffer, or a parameter of a frozen module
        elif not self.scope.freezes_parameters:
            handle.grad, handle.leaf = Grad.YES, True
        return fact

    def _holds_module(self, func: cst.Attribute, state: State) -> bool:
        """The class facts say `owner.attr` is a submodule, whatever the name (`self.norm`, `self.view`)."""
        head = dotted_name(func.value)
        if head is None:
            return False
        fact = self._attribute_fact(head, func.attr.value, state.env.get(head, frozenset()))
        return fact is not None and fact.held is Held.MODULE

    def _attribute_fact(self, head: str, attribute: str, owner: frozenset[Handle]) -> AttributeFact | None:
        classes = self.scope.classes
        if classes is None:
            return None
        if head == "self" and self.scope.is_method:
            return classes.attribute(self.scope.class_name, attribute)
        module = Value(owner).module
        return None if module is None else classes.attribute(module, attribute)

    def _self_module(self, place: str) -> str | None:
        """`self` in a method of an nn.Module subclass of this file is that module."""
        scope = self.scope
        if (
            place == "self"
            and scope.is_method
            and scope.classes is not None
            and scope.classes.is_module_class(scope.class_name)
        ):
            return scope.class_name
        return None

    def _parameter_grad(self, receiver: Value, parameters: Value) -> None:
        """Items of `model.parameters()`: leaves that require grad, when the model is known to
        be a module that is not frozen, or this function trains it (calls `backward()`)."""
        known = bool(receiver.handles) and all(h.module is not None and h.grad is not Grad.NO for h in receiver.handles)
        if (known or self.scope.trains) and not self.scope.freezes_parameters and not self._no_grad:
            for handle in parameters.handles:
                handle.grad, handle.leaf = Grad.YES, True

    def _requires_grad_(self, node: cst.Call, receiver: Value, state: State) -> Value:
        """`x.requires_grad_()` makes x a leaf that requires grad; `(False)` one that does not."""
        flag = node.args[0].value if node.args else None
        off = isinstance(flag, cst.Name) and flag.value == "False"
        return self._regrad(node, receiver, Grad.NO if off else Grad.YES, dotted_name(node.func.value), state)

    def _set_requires_grad(self, target: cst.Attribute, value_node: cst.BaseExpression, state: State) -> None:
        """`p.requires_grad = False`."""
        owner = self._eval(target.value, state, record=False)
        off = isinstance(value_node, cst.Name) and value_node.value == "False"
        self._regrad(target, owner, Grad.NO if off else Grad.YES, dotted_name(target.value), state)

    def _index_grad(self, node: cst.Subscript, state: State) -> None:
        """`s_pts[idx, :]` of a tensor: a tensor that indexes one is of an integer or bool dtype (torch
        takes no other, F58), and such a tensor never requires grad."""
        for element in node.slice:
            index = element.slice
            if not (isinstance(index, cst.Index) and type(index.value) is cst.Name):
                continue
            name = index.value.value
            handles = state.env.get(name, frozenset())
            if any(h.grad >= Grad.MAY for h in handles) and all(h.role is None for h in handles):
                self._regrad(index.value, Value(handles, tensor=True), Grad.NO, name, state)

    def _regrad(self, node: cst.CSTNode, value: Value, grad: Grad, place: str | None, state: State) -> Value:
        handles = set()
        for source in value.handles:
            if source.role is not None:
                continue
            handle = self._handle(
                ("regrad", id(node), id(source)),
                source.storage,
                source.kind,
                source.node,
                partial=source.partial,
                index=source.index,
                tensor=source.tensor,
                ndarray=source.ndarray,
                base=source.base,
            )
            handle.grad, handle.leaf, handle.module = grad, grad is Grad.YES, source.module
            handles.add(handle)
        regraded = value.with_handles(handles)
        if place is not None and handles:
            state.env[place] = frozenset(handles)
        return regraded

    # ------------------------------------------------------------ tests

    def _grad_flag(self, node: cst.Attribute, state: State) -> Value:
        """`t.requires_grad`: a bool that says whether t, as it is now, requires grad."""
        tested = self._eval(node.value, state, record=False)
        flag = self._fresh(node, "", EMPTY, tensor=False)
        self._grad_flags[flag] = tested.handles
        return Value(frozenset({flag}))

    def _narrow_grad(self, test: cst.BaseExpression, holds: bool, state: State) -> None:
        """Where `test` says a tensor does not require grad (`if not t.requires_grad:`, the false
        branch of `elif flag:` with `flag = t.requires_grad` and t not rebound since), it does not."""
        tested = self._grad_test(test, state)
        if tested is None or tested[1] == holds:
            return
        for place, held in list(state.env.items()):
            if held and held <= tested[0]:
                self._regrad(test, Value(held), Grad.NO, place, state)

    def _grad_test(self, test: cst.BaseExpression, state: State) -> tuple[frozenset[Handle], bool] | None:
        """The handles `test` tells about, and whether it holds when they require grad."""
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            inner = self._grad_test(test.expression, state)
            return None if inner is None else (inner[0], not inner[1])
        if isinstance(test, cst.Attribute) and test.attr.value == "requires_grad":
            return self._eval(test.value, state, record=False).handles, True
        if isinstance(test, cst.Name):
            flags = state.env.get(test.value, frozenset())
            if flags and all(flag in self._grad_flags for flag in flags):
                return frozenset().union(*(self._grad_flags[flag] for flag in flags)), True
        return None

    # ------------------------------------------------------- propagation

    def _layer(self, container: Value, node: cst.Subscript) -> Value | None:
        """`seq[0]` of `seq = nn.Sequential(nn.Linear(4, 4), ...)`: that layer, a module of its class."""
        if len(container.handles) != 1 or len(node.slice) != 1:
            return None
        (sequence,) = container.handles
        index = node.slice[0].slice
        if sequence.elements is not None and isinstance(index, cst.Index):  # `self.layers[i]`: any of them
            handle = self._handle(("layers", id(sequence.storage)), sequence.storage, AliasKind.OWN, node)
            handle.module = sequence.elements
            return Value(frozenset({handle}))
        if not sequence.layers or not isinstance(index, cst.Index) or not isinstance(index.value, cst.Integer):
            return None
        position = index.value.evaluated_value
        if position >= len(sequence.layers) or sequence.layers[position] is None:
            return None
        storage = self._storage(
            ("layer", id(sequence.storage), position), f"[{position}]", "external", sequence.storage
        )
        handle = self._handle(("layer", id(sequence.storage), position), storage, AliasKind.OWN, node)
        handle.module = sequence.layers[position]
        return Value(frozenset({handle}))

    def _member(self, node: cst.Attribute, owner: Value) -> Value:
        """`model[0].weight`: a parameter or buffer of a module reached through an expression."""
        if len(owner.handles) != 1:
            return EMPTY
        (module,) = owner.handles
        key = ("member", id(module.storage), node.attr.value)
        storage = self._storage(key, node.attr.value, "external", module.storage)
        handle = self._handle(key, storage, AliasKind.OWN, None)
        self._attribute_grad(handle, "", node.attr.value, owner.handles)
        return Value(frozenset({handle}), handle.tensor) if handle.tensor or handle.module else EMPTY

    def _alias_grad(self, handle: Handle, source: Handle) -> None:
        """A view requires grad as its source does, and is in its graph; `.detach()` and `.data` are not."""
        if handle.kind in _UNTRACKED:
            handle.grad = Grad.NO
            return
        if source.grad > handle.grad or handle.grad is Grad.UNKNOWN:
            handle.grad = source.grad
        handle.graph = source.graph

    def _call_grad(
        self, node: cst.Call, result: Value, callee: Value | None, inputs: list[Value], qualified: str | None
    ) -> None:
        """What a call's fresh result requires: grad flows from its tensor inputs, a module with
        parameters makes it, `requires_grad=True` makes a leaf, no-grad code clears it."""
        fresh = [h for h in result.handles if h.node is node and h.kind is AliasKind.OWN and not h.leaf]
        module = self._constructed_module(node, qualified)
        if module == "torch.nn.Sequential" and not any(arg.keyword or arg.star for arg in node.args):
            layers = tuple(value.module for value in inputs[len(inputs) - len(node.args) :])
            for handle in fresh:
                handle.layers = layers
        applied = callee.module if callee is not None else None
        # `self.conv(x)`: a torch.nn module returns one tensor (but LSTM and a few return tuples).
        tensor = (
            applied is not None and applied in self.k.module_parameters and applied not in self.k.tuple_output_modules
        )
        for handle in fresh:
            if module is not None:
                handle.module = module
            handle.tensor |= tensor
        if not fresh:
            return
        if self._no_grad:
            grad = Grad.NO
        elif is_constant(keyword(node, "requires_grad"), "True") and (qualified or "").startswith("torch."):
            for handle in fresh:
                handle.grad, handle.leaf, handle.tensor = Grad.YES, True, True
            return
        elif called_name(node) in self.k.non_differentiable:  # `x.argmax()`, `x.long()` (F26)
            grad = Grad.NO
        else:
            grad = max((h.grad for value in inputs for h in value.handles), default=Grad.UNKNOWN)
            if callee is not None and self._has_parameters(callee):
                grad = Grad.YES
            elif self.scope.trains and grad < Grad.MAY and _is_parameter(callee):
                grad = Grad.MAY  # `model(x)` in a function that trains the model it was passed
        graph = _graph_of(inputs) if grad is not Grad.NO else frozenset()
        for handle in fresh:
            handle.grad = max(handle.grad, grad) if handle.grad is not Grad.UNKNOWN else grad
            handle.graph = graph

    def _operation_grad(self, handle: Handle, operands: list[Value]) -> None:
        if self._no_grad:
            handle.grad = Grad.NO
            return
        grad = max((h.grad for value in operands for h in value.handles), default=Grad.UNKNOWN)
        handle.grad = max(handle.grad, grad) if handle.grad is not Grad.UNKNOWN else grad
        handle.graph = _graph_of(operands)

    def _has_parameters(self, callee: Value) -> bool:
        """Calling it runs a module that holds parameters: `self.fc(x)`, `model(x)` for a known model,
        an `nn.Sequential` unless every layer it is known to hold has none."""
        k = self.k
        for handle in callee.handles:
            if handle.module is None or handle.grad is Grad.NO:
                continue
            if handle.module in k.container_modules:
                layers = handle.layers or (handle.elements,)
                if any(
                    layer is None or layer not in k.module_parameters or k.module_parameters[layer] for layer in layers
                ):
                    return True
            elif handle.module not in k.module_parameters or k.module_parameters[handle.module]:
                return True
        return False

    def _constructed_module(self, node: cst.Call, qualified: str | None) -> str | None:
        """`nn.Linear(4, 4)` -> "torch.nn.Linear"; `Net()` for an nn.Module class of this file -> "Net"."""
        if qualified is not None:
            candidate = "torch.nn." + qualified.rsplit(".", 1)[-1]
            if qualified.startswith("torch.nn.") and candidate in self.k.module_parameters:
                return candidate
            return None
        name = dotted_name(node.func)
        classes = self.scope.classes
        if name is not None and "." not in name and classes is not None and classes.is_module_class(name):
            return name
        return None


def _graph_of(values: list[Value]) -> frozenset:
    """The graph a result computed from `values` extends: all of theirs."""
    graphs = [h.graph for value in values for h in value.handles if h.graph and h.grad is not Grad.NO]
    return frozenset().union(*graphs) if graphs else frozenset()


def output_grad(node: cst.CSTNode, position: int, value: Value, index_outputs: dict[str, int]) -> Grad:
    """What output `position` of a call's tuple requires: its indices nothing (`x.topk(k)[1]`, F26),
    the others what the call's result does."""
    if isinstance(node, cst.Call) and index_outputs.get(called_name(node) or "") == position:
        return Grad.NO
    return max((h.grad for h in value.handles), default=Grad.UNKNOWN)


def _is_parameter(callee: Value | None) -> bool:
    """The callee is one of the function's parameters, itself (not an attribute or a method of one)."""
    return (
        callee is not None
        and bool(callee.handles)
        and all(h.storage.origin == "param" and h.kind is AliasKind.OWN and h.base is None for h in callee.handles)
    )
