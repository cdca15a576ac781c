"""Tensors autograd saved for backward, and in-place writes that overwrite them.

An op applied outside no-grad to tensors that (may) require grad keeps some of its inputs or
its output for its backward (`knowledge/saved_for_backward.json`, measured from torch): what
it keeps depends on which inputs require grad (`a * w` keeps `a` for `w`'s gradient). The
state maps each kept storage to the ops that kept it, until a `backward()` frees the graph;
an in-place write to a kept storage, before that, is a `SavedWrite`: the later backward
raises "one of the variables needed for gradient computation has been modified by an inplace
operation". Mixed into `ScopeAnalyzer`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from gpumem_lint.knowledge.autograd import SavedTensors, saved_for_backward
from gpumem_lint.semantic.imports import dotted_name
from gpumem_lint.semantic.values import AliasKind, Grad, Role, Serial, State, Storage, Value, Write, next_serial

#: Operators by libcst node type, as the table names them.
_OPERATORS = {
    cst.Multiply: "*",
    cst.Divide: "/",
    cst.MatrixMultiply: "@",
    cst.Power: "**",
    cst.Add: "+",
    cst.Subtract: "-",
    cst.MultiplyAssign: "*=",
    cst.DivideAssign: "/=",
    cst.MatrixMultiplyAssign: "@=",
    cst.PowerAssign: "**=",
    cst.AddAssign: "+=",
    cst.SubtractAssign: "-=",
}
_NUMBERS = (cst.Integer, cst.Float)


@dataclass(frozen=True, eq=False)
class Saving(Serial):
    """An op that kept a tensor for its backward."""

    node: cst.CSTNode
    op: str  # as the user wrote it: `torch.sigmoid`, `*`, `nn.Linear`
    item: str  # what it kept: "output", or the argument's name
    serial: int = field(default_factory=next_serial, init=False, repr=False)


@dataclass(frozen=True, eq=False)
class SavedWrite:
    write: Write
    saving: Saving
    layers: bool = False  # one layer of an `nn.Sequential` overwrites what the layer before it kept


class SavedSemantics:
    def _init_saved(self) -> None:
        self.saved_writes: dict[tuple[int, int], SavedWrite] = {}
        self._savings: dict[tuple[int, str], Saving] = {}
        self._saved_now: dict[Storage, set[Saving]] = {}  # kept by the statement being analysed
        self._kept: list[tuple[Storage, Saving]] = []  # the same, in the order its ops kept them
        self._backwards = 0  # `backward()` calls analysed so far
        self._keeps: dict[Saving, tuple[int, int]] = {}  # how often an op kept its tensor, and at which backward
        #: Writes to what a graph kept that raise only if a later backward runs that graph: an optimizer
        #: step, or a write after `backward(retain_graph=True)`. With what the graph's op had kept then.
        self._pending: dict[tuple[int, int], tuple[SavedWrite, tuple[int, int]]] = {}
        #: Writes through `.data` to what an op kept, with what the op had kept then (`_note_hidden_saved`).
        self._hidden_saved: dict[tuple[int, int], tuple[Write, Saving, tuple[int, int] | None]] = {}

    # ---------------------------------------------------------- recording

    def _save_call(
        self,
        node: cst.Call,
        qualified: str | None,
        receiver: Value | None,
        args: list[Value],
        callee: Value | None,
        result: Value,
        state: State,
    ) -> None:
        """Record what a call keeps: a torch function or Tensor method, or a module call."""
        if self._no_grad:
            return
        if qualified == "torch.nn.Sequential":
            self._check_layers(node, args)
            return
        table = saved_for_backward()
        positional = [value for arg, value in zip(node.args, args) if arg.keyword is None]
        keywords = {arg.keyword.value: value for arg, value in zip(node.args, args) if arg.keyword is not None}
        module = callee.module if callee is not None else None
        if module is not None and module.startswith("torch.nn.") and module not in self.k.container_modules:
            saved = table.modules.get(module.rsplit(".", 1)[-1])
            if saved is not None:
                inputs = dict(zip(saved.arguments, positional))
                self._keep(node, module.removeprefix("torch."), saved, inputs, result, state, owner=callee)
            return
        if module is not None:
            trains = self._has_parameters(callee)
            if trains:  # `D(x)` of an `nn.Sequential` or a model: its layers keep weights
                self._keep_parameters(node, module, callee, result, state)
            if trains or any(_requires_grad(value) for value in positional):
                self._keep_last_output(node, callee, result, state)
                self._keep_forward_output(node, module, result, state)
            return
        name = _op_name(node, qualified, receiver, self.k.tensor_only_methods)
        if name is None:
            return
        literal = any(isinstance(arg.value, _NUMBERS) for arg in node.args if arg.keyword is None)
        inplace = "inplace" in keywords
        # `x.max(dim=1)`, `torch.max(x, 1)`: the reduction along a dimension, which keeps only its indices.
        along = "dim" in keywords or (receiver is not None and bool(positional)) or len(positional) > 1
        saved = (
            (inplace and table.ops.get(name + ".inplace"))
            or (along and table.ops.get(name + ".dim"))
            or (literal and table.ops.get(name + ".Scalar"))
            or table.ops.get(name)
        )
        if saved is None:
            return
        inputs = dict(zip(saved.arguments, positional))
        inputs.update((key, value) for key, value in keywords.items() if key in saved.differentiable)
        if receiver is not None and name.startswith("torch.Tensor."):  # not `F` of `F.relu(x)`
            inputs["self"] = receiver
        self._keep(node, name, saved, inputs, result, state)

    def _savings_of(self, value: Value, state: State) -> frozenset[Saving]:
        """The ops that kept (part of) `value`'s memory for backward."""
        return frozenset(
            saving
            for storage, kept in state.saved.items()
            if any(storage.related(h.storage) for h in value.handles)
            for saving in kept
        )

    def _keep_forward_output(self, node: cst.Call, module: str, result: Value, state: State) -> None:
        """`self.block(x)` of a class of this file whose `forward` returns what an op kept as its output."""
        classes = self.scope.classes
        method = classes.called_method(module) if classes is not None and classes.defines(module) else None
        summary = self.returns.get((module, method)) if method is not None else None
        if summary is not None and summary.saved_output is not None:
            self._keep_returned_output(node, summary.saved_output, result, state)

    def _keep_returned_output(self, node: cst.Call, op: str, result: Value, state: State) -> None:
        """The call's result is what `op`, inside the function it runs, kept as its output: a tensor."""
        for handle in result.handles:
            handle.tensor = True
        self._record_saving(Saving(node, op, "output"), result, result, state)

    def _keep_last_output(self, node: cst.Call, callee: Value, result: Value, state: State) -> None:
        """`self.left(x)` of `nn.Sequential(nn.Conv2d(...), nn.ReLU())`: what it returns is its last layer's
        output, which that layer keeps when its backward needs it (ReLU, Sigmoid, Tanh)."""
        lasts = {handle.layers[-1] for handle in callee.handles if handle.layers}
        last = lasts.pop() if len(lasts) == 1 else None
        if last is None or not last.startswith("torch.nn."):
            return
        name = last.rsplit(".", 1)[-1]
        if "output" in saved_for_backward().module_saves(name):
            self._record_saving(Saving(node, last.removeprefix("torch."), "output"), result, result, state)

    def _save_inplace_layer(self, node: cst.Call, module: str | None, written: Value, state: State) -> None:
        """`self.relu(out)` of an `nn.ReLU(inplace=True)`: what the layer keeps, often the memory it wrote."""
        saved = saved_for_backward().modules.get(f"{module.rsplit('.', 1)[-1]}.inplace") if module else None
        if saved is not None and not self._no_grad:
            self._keep(
                node, module.removeprefix("torch."), saved, dict(zip(saved.arguments, [written])), written, state
            )

    def _save_operation(
        self, node: cst.CSTNode, operator: cst.CSTNode, left: Value, right: Value, result: Value, state: State
    ) -> None:
        """`a * b`, `a @ b`, `x **= 2`: the operator's entry, `.Scalar` with a number operand."""
        if self._no_grad:
            return
        symbol = _OPERATORS.get(type(operator))
        if symbol is None:
            return
        table = saved_for_backward()
        scalar = not right.tensor and isinstance(_right_operand(node), _NUMBERS)
        saved = (scalar and table.ops.get(symbol + ".Scalar")) or table.ops.get(symbol)
        if saved is not None:
            self._keep(node, symbol, saved, {"self": left, "other": right}, result, state)

    def _keep(
        self,
        node: cst.CSTNode,
        op: str,
        saved: SavedTensors,
        inputs: dict[str, Value],
        result: Value,
        state: State,
        owner: Value | None = None,
    ) -> None:
        """`owner`: the module whose call this is; its own weights require grad unless it was frozen."""
        needing = {name for name, value in inputs.items() if _requires_grad(value)}
        if owner is not None:
            needing |= set(saved.differentiable) - set(saved.arguments)
        if not needing:
            return  # nothing requires grad: no graph, nothing kept
        for item in saved.items(needing):
            if item == "output":
                kept = result
            elif item in inputs:
                # `x = layer(x)` in a loop: the input a pass gives is an earlier pass's result, another tensor
                # than this pass makes, though one storage stands for both; which one a write reaches is unknown.
                made = {handle.storage for handle in result.handles}
                kept = inputs[item].with_handles(frozenset(h for h in inputs[item].handles if h.storage not in made))
            elif owner is not None and item in saved.differentiable:
                kept = owner  # the module's weight: memory of the module
            else:
                continue  # an internal buffer, a second output
            self._record_saving(Saving(node, op, item), kept, result, state)

    def _keep_parameters(self, node: cst.Call, module: str, callee: Value, result: Value, state: State) -> None:
        """A module of layers (`nn.Sequential`, a model of this file) called where grad is recorded: its
        layers after the first receive an input that requires grad, and keep their weights for it."""
        self._record_saving(Saving(node, module.removeprefix("torch."), "parameters"), callee, result, state)

    def _record_saving(self, made: Saving, kept: Value, result: Value, state: State) -> None:
        """`result`: what the op made, whose graph now holds what it kept."""
        saving = self._savings.setdefault((id(made.node), made.item), made)  # one per loop pass
        for loop in self._loops:
            loop.savings.add(saving)
        for handle in result.handles:
            handle.graph |= {saving}
        count, _ = self._keeps.get(saving, (0, 0))
        self._keeps[saving] = (count + 1, self._backwards)
        for handle in kept.handles:
            if handle.role is None:
                state.saved[handle.storage] = state.saved.get(handle.storage, frozenset()) | {saving}
                self._saved_now.setdefault(handle.storage, set()).add(saving)
                self._kept.append((handle.storage, saving))

    def _check_layers(self, node: cst.Call, args: list[Value]) -> None:
        """`nn.Sequential(nn.ReLU(), nn.Dropout(p, inplace=True))`: each layer's input is the output
        of the one before, so an in-place layer overwrites what an activation kept for backward."""
        modules = self.k.module_parameters
        table = saved_for_backward()
        previous: tuple[cst.CSTNode, str] | None = None
        for arg, value in zip(node.args, args):
            if arg.keyword is not None or arg.star:
                return
            layer = arg.value
            inplace = [h for h in value.handles if h.role is Role.INPLACE_MODULE]
            if previous is not None and inplace:
                kept_by, kept_class = previous
                if "output" in table.module_saves(kept_class):
                    saving = Saving(kept_by, "torch.nn." + kept_class, "output")
                    write = Write(layer, inplace[0], "inplace module")
                    self.saved_writes[(id(write), id(saving))] = SavedWrite(write, saving, layers=True)
            name = dotted_name(layer.func) if isinstance(layer, cst.Call) else None
            qualified = self.imports.qualify_name(name) if name is not None else None
            module = (
                "torch.nn." + qualified.rsplit(".", 1)[-1] if qualified and qualified.startswith("torch.nn.") else None
            )
            previous = (layer, module.removeprefix("torch.nn.")) if module in modules else None

    def _forget_compared(self, node: cst.Comparison, since: int, state: State) -> None:
        """`x[x.abs() < eps] = eps`: a comparison's result never requires grad (F26), so the graph of
        an operand that torch ops alone computed ends there, and is freed with the temporaries of the
        statement: no backward needs what those ops kept (`self._kept[since:]`), and writing it later
        raises nothing. An operand that names what it computes (`(y := x.abs())`), calls other code or
        writes in place may keep the graph alive, and keeps what it saved."""
        if since == len(self._kept) or not all(self._torch_only(operand) for operand in _compared(node)):
            return
        for storage, saving in self._kept[since:]:
            remaining = state.saved.get(storage, frozenset()) - {saving}
            if remaining:
                state.saved[storage] = remaining
            else:
                state.saved.pop(storage, None)
            self._saved_now.get(storage, set()).discard(saving)
        del self._kept[since:]

    def _torch_only(self, node: cst.BaseExpression) -> bool:
        """Computed from names and literals by torch functions, Tensor methods and operators, none in place."""
        kind = type(node)
        if kind in (cst.Name, cst.Integer, cst.Float):
            return True
        if kind is cst.Attribute or kind is cst.Subscript:
            return self._torch_only(node.value) and (kind is cst.Attribute or _plain_index(node))
        if kind is cst.BinaryOperation:
            return self._torch_only(node.left) and self._torch_only(node.right)
        if kind is cst.UnaryOperation:
            return self._torch_only(node.expression)
        if kind is not cst.Call or any(arg.star or (arg.keyword and arg.keyword.value == "out") for arg in node.args):
            return False
        if not all(self._torch_only(arg.value) for arg in node.args):
            return False
        func = node.func
        if isinstance(func, cst.Attribute) and self._tensor_method(func.attr.value):
            return self._torch_only(func.value)
        name = dotted_name(func)
        qualified = self.imports.qualify_name(name) if name is not None else None
        return qualified is not None and qualified in saved_for_backward().ops and not qualified.endswith("_")

    def _tensor_method(self, method: str) -> bool:
        return not method.endswith("_") and (
            method in self.k.tensor_only_methods or f"torch.Tensor.{method}" in saved_for_backward().ops
        )

    # ------------------------------------------------------------ checking

    def _check_saved(self, write: Write, state: State, renewed: bool = False) -> None:
        """A write through an alias autograd tracks, to memory an op kept: backward will raise.
        Memory this very statement allocated (`x.var(d).add_(eps)` in a loop's next pass) is
        not what an earlier pass kept: only this statement's own ops count then. An optimizer step
        (a write of whole modules: training calls and loads are not checked) and a write after
        `backward(retain_graph=True)` wait for a later backward of a loss whose graph holds the op."""
        if not state.saved or write.rebinds:
            return
        if write.writer.kind is AliasKind.DATA:
            self._note_hidden_saved(write, state)
            return
        if write.module and write.op != "step()":
            return
        for storage, savings in state.saved.items():
            if storage.related(write.storage):
                if renewed:
                    savings = self._saved_now.get(storage, ())
                for saving in savings:
                    if saving.node is write.node:
                        continue  # `x.relu_()` keeps what it wrote
                    found = SavedWrite(write, saving)
                    keeps = self._keeps.get(saving, (0, 0))
                    if write.module or keeps[1] < self._backwards:
                        self._pending.setdefault((id(write), id(saving)), (found, keeps))
                    else:
                        self.saved_writes.setdefault((id(write), id(saving)), found)

    def _note_hidden_saved(self, write: Write, state: State) -> None:
        """A write through `.data` to memory an op kept: no version counter sees it (F1, F2), so a later
        backward through that op computes its gradient from the new values without an error (GML101)."""
        for storage, savings in state.saved.items():
            if storage.related(write.storage):
                for saving in savings:
                    if saving.node is not write.node:
                        self._hidden_saved.setdefault((id(write), id(saving)), (write, saving, self._keeps.get(saving)))

    def _backward_of_hidden_saved(self, node: cst.Call, loss: Value, state: State) -> None:
        """`loss.backward()` through an op whose kept memory was written through `.data` since it kept it."""
        graph = frozenset().union(*(h.graph for h in loss.handles))
        for key, (write, saving, keeps) in list(self._hidden_saved.items()):
            if self._keeps.get(saving) != keeps:
                del self._hidden_saved[key]  # run again since: it kept the new values
            elif saving in graph:
                self.backward_hits.setdefault((id(write), id(node)), (write, node))
                self._after_forward.add(write)

    def _backward_runs(self, losses: set[str], state: State, retained: bool) -> None:
        """`loss.backward()`: pending writes to what a graph kept raise now when `loss` was computed
        through the op that kept it (before the write, or after it from a tensor computed before:
        `loss = f(d_z)`; Handle.graph) and that op has not run again since (a new pass keeps new
        tensors). The graph is freed, unless retained."""
        graph = frozenset().union(*(h.graph for place in losses for h in state.env.get(place, ())))
        for key, (found, keeps) in list(self._pending.items()):
            if self._keeps.get(found.saving) != keeps:
                del self._pending[key]  # run again since: a new graph holds the new values
            elif found.saving in graph:
                self.saved_writes.setdefault(key, found)
                del self._pending[key]
        self._backwards += 1
        if not retained:
            self._free_graph(state)

    def _forget_savings(self, storage: Storage, state: State) -> None:
        """Memory allocated anew (a loop's next pass): only what this statement kept keeps it."""
        now = self._saved_now.get(storage)
        if now:
            state.saved[storage] = frozenset(now)
        else:
            state.saved.pop(storage, None)

    def _free_graph(self, state: State) -> None:
        """`backward()` frees the graph: what it kept no longer matters."""
        state.saved = {}


def _requires_grad(value: Value) -> bool:
    return any(handle.grad >= Grad.MAY for handle in value.handles)


def _op_name(node: cst.Call, qualified: str | None, receiver: Value | None, tensor_methods) -> str | None:
    if qualified is not None and qualified.startswith("torch."):
        return qualified
    if receiver is None or receiver.ndarray or not isinstance(node.func, cst.Attribute):
        return None
    method = node.func.attr.value
    # A method only tensors have is evidence enough: `self.encoder(x).exp()`.
    return "torch.Tensor." + method if receiver.tensor or method in tensor_methods else None


def _compared(node: cst.Comparison) -> list[cst.BaseExpression]:
    return [node.left, *(target.comparator for target in node.comparisons)]


def _plain_index(node: cst.Subscript) -> bool:
    """`x[0]`, `x[:, 1:]`: integers and slices, nothing computed."""
    return all(
        isinstance(element.slice, cst.Slice) or type(element.slice.value) in (cst.Integer, cst.Name)
        for element in node.slice
    )


def _right_operand(node: cst.CSTNode) -> cst.CSTNode | None:
    if isinstance(node, cst.BinaryOperation):
        return node.right
    if isinstance(node, cst.AugAssign):
        return node.value
    return None
