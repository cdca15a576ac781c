"""The intra-procedural, flow-sensitive alias analysis of one scope.

It walks a function (or the module body) statement by statement, keeping a `State`
of which places hold which handles and which writes each handle has seen. Branches
are joined, loops iterated to a fixed point, `return`/`raise`/`break`/`continue`
end their path. Nested functions, lambdas and classes are their own scopes;
comprehensions see the enclosing state but bind their own targets. Parameters are
caller-owned storages.

The result is facts, not findings: every write, every read of a handle that saw a
write by another handle, every `backward()` reached after a write autograd cannot
see. Rules decide which facts are hazards.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import libcst as cst

from gpumem_lint.knowledge import Knowledge, knowledge
from gpumem_lint.semantic.attribute_places import AttributePlaces
from gpumem_lint.semantic.calls import CallSemantics, Mutator
from gpumem_lint.semantic.class_facts import Held, is_list_display
from gpumem_lint.semantic.conditions import last_pass_tests, spaceless, test_key
from gpumem_lint.semantic.elements import Elements
from gpumem_lint.semantic.grad import GradSemantics, output_grad
from gpumem_lint.semantic.imports import ImportTable, dotted_name, place_prefixes
from gpumem_lint.semantic.indexing import gives_scalar, index_names, indexes_by, integer_count, keyed_by_string
from gpumem_lint.semantic.literals import is_constant, is_literal
from gpumem_lint.semantic.name_values import value_bindings
from gpumem_lint.semantic.overlap import Overlap, OverlapSemantics
from gpumem_lint.semantic.processes import ProcessFacts, ProcessSemantics
from gpumem_lint.semantic.releases import ReleaseSemantics, Retained
from gpumem_lint.semantic.saved import SavedSemantics, SavedWrite
from gpumem_lint.semantic.scopes import Scope
from gpumem_lint.semantic.summaries import Returns, SummaryKey, summarise
from gpumem_lint.semantic.values import (
    EMPTY,
    REBINDING_OPS,
    UNREACHABLE,
    AliasKind,
    Grad,
    Handle,
    Passed,
    Read,
    Role,
    State,
    Storage,
    Value,
    Write,
)
from gpumem_lint.semantic.walk import Walker

#: Loops converge in two or three passes; the cap guards against pathological code.
_MAX_LOOP_PASSES = 6
#: Keyed items nest this deep at most (`d["a"]["b"]`); deeper ones share their container's memory, so
#: that items stored back into the mapping they came from, pass after pass, reach a fixpoint.
_ITEM_DEPTH = 2
#: Writes that bypass autograd on purpose, or that fail before mutating anything.
_DELIBERATE_OR_ERROR = frozenset({AliasKind.DATA, AliasKind.DETACH, AliasKind.EXPAND, AliasKind.MULTI_VIEW})
#: Aliases of a state_dict entry or a numpy bridge are still that: `sd[k].detach()`.
_PASS_THROUGH = frozenset({AliasKind.VIEW, AliasKind.DETACH, AliasKind.DATA})

#: Names that are constants: `None` is one object, never a tensor's memory.
_CONSTANTS = frozenset({"None", "True", "False"})
_OPERATIONS = frozenset({cst.BinaryOperation, cst.UnaryOperation, cst.Comparison, cst.BooleanOperation})
_COLLECTIONS = frozenset({cst.Tuple, cst.List, cst.Set})
_COMPREHENSIONS = frozenset({cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp})
_MAPPING_ITERATORS = frozenset({"items", "keys"})  # neither `torch.Tensor` nor `numpy.ndarray` has them


@dataclass
class _Loop:
    breaks: list[State] = field(default_factory=list)
    continues: list[State] = field(default_factory=list)
    savings: set = field(default_factory=set)  # what ops in its body kept for backward (saved.py `Saving`)


@dataclass
class ScopeFacts:
    scope: Scope
    writes: list[Write]
    reads: list[Read]
    own_reads: dict[Write, cst.CSTNode]  # writes whose writer was read again afterwards, and where
    written_handles: set[Handle]  # written through, directly or via a view made from them
    backward_after_hidden: list[tuple[Write, cst.CSTNode]]
    calls_backward: bool
    processes: ProcessFacts = field(default_factory=ProcessFacts)
    saved_writes: list[SavedWrite] = field(default_factory=list)  # in-place writes to what backward needs
    layout_writes: list[Write] = field(default_factory=list)  # `x.t_()`: new shape and strides, same values
    overlaps: list[Overlap] = field(default_factory=list)  # writes reading memory they write
    retained: list[Retained] = field(default_factory=list)  # deleted, still referenced, at empty_cache()
    outgoing: dict[str, list[tuple[int | str, Value]]] = field(default_factory=dict)  # calls to bare names
    outgoing_saved: dict[int, frozenset] = field(default_factory=dict)  # by id of an outgoing value: ops that kept it
    object_calls: set[str] = field(default_factory=set)  # `Normalize.__call__`, `Block.forward`: run by calls
    differentiated: set[str] = field(default_factory=set)  # handed to `jacobian(f, x)`: run and differentiated
    called_by_training: bool = False  # a caller that calls backward() passes it a tensor requiring grad
    returned: frozenset[Storage] = frozenset()  # the memory of what the function returns
    dropped: frozenset[int] = frozenset()  # ids of the calls made for their effect: `f(x)` alone, result unused
    handed_back: frozenset[int] = frozenset()  # ids of names returned as they are (`return y, x`): no value read
    filled_params: frozenset[str] = frozenset()  # parameters overwritten whole before their values are read
    #: `self.best = model.state_dict()`: what the object keeps when the method returns, as (attribute place,
    #: the aliasing handle, a write that changed it since, or None).
    kept_state_dicts: tuple[tuple[str, Handle, Write | None], ...] = ()
    #: `m.load_state_dict(d)` calls where `d` is not what the function itself took from `m`.
    loads: tuple[cst.Call, ...] = ()
    #: Parameters of a type the function does not show that `+=` (or `*=`, ...) writes: in place when the caller
    #: passes a tensor, a rebinding otherwise.
    written_if_tensor: frozenset[str] = frozenset()
    first_reads: dict[str, cst.CSTNode] = field(default_factory=dict)  # place -> where its values were first read
    returns_value: bool = False  # some `return` gives a value other than a constant (`None`, `False`, `0`)
    returns: Returns | None = None  # what every `return` gives back, for its callers (summaries.py)
    returns_grad: Grad = Grad.UNKNOWN  # the most any returned tensor requires (NO: only indices, masks)

    @property
    def autograd_writes(self) -> list[Write]:
        """Every write autograd counts as in place: to the values, or to the layout (F25)."""
        return self.writes + self.layout_writes

    def is_output_buffer(self, write: Write) -> bool:
        """`def f(x, out=None): out[...] = ...; return out`: an optional parameter the function
        fills and returns is its output, which the caller passed to be filled. So is a parameter whose
        values the function overwrites whole before it reads them (`torch.mean(..., out=buf)`,
        `buf.copy_(x)`): it never looks at what the caller had there."""
        storage = write.storage
        if storage.origin != "param":
            return False
        return storage.label in self.filled_params or (
            storage.label in self.scope.optional_params and storage in self.returned
        )

    def argument_writes(self, evidence_needed: bool = True) -> list[Write]:
        """In-place writes to tensors the caller passed in, other than on purpose. `+=` and `[i] =`
        also work on ints and lists: they count only with evidence of a tensor, unless the caller
        asks what the function writes *if* its argument is a tensor (`evidence_needed=False`)."""
        found = []
        for write in self.writes:
            name = write.storage.label
            if write.storage.origin != "param" or write.no_grad or write.init or write.module or write.rebinds:
                continue
            if write.writer.kind in _DELIBERATE_OR_ERROR or any(h.element for h in write.writer.chain()):
                continue  # items of a caller's list of tensors: the functional-optimizer idiom
            evidence = self.scope.params.get(name) is True and name != self.scope.assumed_tensor
            if write.certain or evidence or not evidence_needed:
                found.append(write)
        # One statement may write several parameters' memory (`x = a if c else b`): name them in the
        # order of the signature, not of the handles' hashes, so that a report is the same in every run.
        order = {name: index for index, name in enumerate(self.scope.all_params)}
        return sorted(found, key=lambda write: order.get(write.storage.label, len(order)))

    def mutated_params(self, evidence_needed: bool = True) -> frozenset[str]:
        return frozenset(write.storage.label for write in self.argument_writes(evidence_needed))


class ScopeAnalyzer(CallSemantics, ProcessSemantics, GradSemantics, SavedSemantics, OverlapSemantics, ReleaseSemantics):
    def __init__(
        self,
        scope: Scope,
        imports: ImportTable,
        mutators: dict[str, Mutator] | None = None,
        passed: dict[str, Passed] | None = None,
        returns: dict[SummaryKey, Returns] | None = None,
        assumed: dict[str, bool] | None = None,
    ) -> None:
        self.scope = scope
        self.assumed = assumed or {}  # tests (conditions.test_key) taken to have this value throughout
        self.imports = imports
        self.mutators = mutators or {}
        self.passed = passed or {}  # what this file's callers pass for each parameter
        self.returns = returns or {}  # what this file's functions return (summaries.py)
        self.outgoing: dict[str, list[tuple[int | str, Value]]] = {}  # arguments of calls to bare names
        self.outgoing_saved: dict[int, frozenset] = {}  # by id of an outgoing value: the ops that kept its memory
        self.object_calls: set[str] = set()  # `Normalize.__call__`: methods run by calling an object
        self.differentiated: set[str] = set()  # functions handed to `jacobian(f, x)` (calls.py)
        self.k: Knowledge = knowledge()
        self.writes: dict[tuple[int, int], Write] = {}
        self.layout_writes: dict[tuple[int, int], Write] = {}
        self.reads: dict[tuple[int, int, int], Read] = {}
        self.own_reads: dict[Write, cst.CSTNode] = {}
        self._first_reads: dict[str, cst.CSTNode] = {}  # place -> where its values were first read
        self.backward_hits: dict[tuple[int, int], tuple[Write, cst.CSTNode]] = {}
        self.module_storages: set[Storage] = set()
        self._loads: dict[int, cst.Call] = {}  # by id: a loop's body is analysed more than once
        self._written_if_tensor: set[str] = set()  # parameters of unknown type written by `+=`
        self.calls_backward = False
        self.graph_storages: set[Storage] = set()  # used to compute something autograd records
        self._after_forward: set[Write] = set()  # hidden writes to memory a forward had already used
        self._handles: dict[tuple, Handle] = {}
        self._elements = Elements()  # `x[0]`, `x[1]`: handles whose memory is apart
        self._attribute_places = AttributePlaces()
        self._storages: dict[tuple, Storage] = {}
        self._loops: list[_Loop] = []
        self._last_pass: dict[str, bool] = {}  # a loop's index tests on its last pass, while it is analysed
        self._born: set[Handle] = set()  # handles (re)made by the current statement
        self._zip_parts: dict[int, list[Value]] = {}
        # Kept by node: a loop's body is analysed more than once.
        self._extents: dict[int, tuple[bool, str | None]] = {}
        self._codes: dict[int, str] = {}
        self._aliased: set[Storage] = set()  # storages some alias or container refers to
        self._other_bases: dict[Handle, set[Handle]] = {}  # one alias made from several handles
        self._no_grad = 1 if scope.no_grad else 0
        self._init_processes()
        self._init_saved()
        self._init_overlaps()
        self._init_releases()
        self._init_grad()
        self._filled: set[Storage] = set()  # blank memory some write has filled (in analysis order)
        self._filled_params: set[str] = set()  # parameters whose first use overwrote them whole
        self._parameter_reads: dict[str, cst.CSTNode] = {}  # where each parameter's own memory was first read
        self._item_depths: dict[Storage, int] = {}  # `d["a"]["b"]`: how many keyed items deep a storage is
        self._returned: set[Storage] = set()
        self._handed_back: set[int] = set()
        self._dropped: set[int] = set()
        self._rebinding: dict[int, str] = {}  # id of a call -> the name bound to its result: `g = f(g)`
        self._return_values: list[Value] = []
        #: Per `return`: the ops that kept what it gives as their output.
        self._returned_outputs: list[frozenset[str]] = []
        self._containers: list[str] = []  # places an enclosing `isinstance(x, dict)` test shows to be containers
        self._lists: frozenset[str] | None = None  # `idx = []`: indexing a tensor by it copies (made when asked)
        self._call_results: dict[int, Value] = {}  # calls in a tuple's elements, by id, until a target takes them
        self._element_read: str | None = None  # the index of `x[...]` while `x` is read for it, once a loop moved on
        self._item_keys: dict[Handle, str | None] = {}  # a container's item -> the literal key it is stored under
        #: The memory of `d["k"]` inside `d`'s (`_item`) -> d's storage and the key.
        self._item_storage_keys: dict[Storage, tuple[Storage, str]] = {}
        self._loop_keys: dict[str, frozenset[str]] = {}  # names a loop over literal keys binds

    # ----------------------------------------------------------------- entry

    def run(self) -> ScopeFacts:
        state = State()
        for name, tensor in self.scope.params.items():
            storage = self._storage(("param", name), name, "param")
            array = name in self.scope.array_places and tensor is False
            handle = self._handle(("param", name), storage, AliasKind.OWN, None, tensor=bool(tensor), ndarray=array)
            handle.ndim = self.scope.array_params.get(name)
            if tensor and self.scope.is_forward:
                handle.grad = Grad.MAY  # a module's input: the previous layer's activations
            passed = self.passed.get(name)
            if passed is not None and passed.module is not None:  # `train(netD, Generator())`: a module
                handle.module = passed.module
            elif passed is not None:  # `sinusoidal(embedding.weight)`: the caller's grad leaf
                handle.grad, handle.leaf, handle.tensor = passed.grad, passed.leaf, True
            if passed is not None and passed.saved:  # `loss_fn(torch.sigmoid(x))`: an op kept it for backward
                state.saved[storage] = passed.saved
            if name in self.scope.integer_places:  # class labels: an integer tensor never requires grad
                handle.grad, handle.leaf, handle.tensor = Grad.NO, False, True
            state.env[name] = frozenset({handle})
        for place, module in self.scope.inplace_modules.items():
            storage = self._storage(("module", place), place, "external")
            role_handle = self._handle(
                ("module", place), storage, AliasKind.OWN, None, role=Role.INPLACE_MODULE, module=module
            )
            state.env[place] = frozenset({role_handle})
        end = self._block(self.scope.body, state)
        writes = list(self.writes.values())
        return ScopeFacts(
            scope=self.scope,
            writes=writes,
            reads=list(self.reads.values()),
            own_reads=self.own_reads,
            written_handles=self._written_through(writes),
            backward_after_hidden=[
                (write, node) for write, node in self.backward_hits.values() if write in self._after_forward
            ],
            calls_backward=self.calls_backward,
            processes=self._processes_result(),
            saved_writes=list(self.saved_writes.values()),
            layout_writes=list(self.layout_writes.values()),
            overlaps=list(self.overlaps.values()),
            retained=list(self.retained.values()),
            returned=frozenset(self._returned),
            dropped=frozenset(self._dropped),
            handed_back=frozenset(self._handed_back),
            kept_state_dicts=_kept_state_dicts(end, writes) if self.scope.is_method else (),
            loads=tuple(self._loads.values()),
            written_if_tensor=frozenset(self._written_if_tensor),
            first_reads=self._first_reads,
            filled_params=frozenset(self._filled_params | self._written_unread(writes)),
            returns_value=bool(self._return_values),
            returns=summarise(self._return_values, self.scope.all_params, self._returned_outputs)
            if self.scope.is_function
            else None,
            returns_grad=max(
                (handle.grad for value in self._return_values for handle in value.handles), default=Grad.UNKNOWN
            ),
            outgoing=self.outgoing,
            outgoing_saved=self.outgoing_saved,
            object_calls=self.object_calls,
            differentiated=self.differentiated,
            called_by_training=any(passed.training for passed in self.passed.values()),
        )

    # ---------------------------------------------------------- statements

    def _block(self, body, state: State) -> State:
        asserted = len(self._containers)  # `assert isinstance(x, list)` narrows to the block's end
        for position, statement in enumerate(body):
            if not state.reachable:
                break
            if type(statement) is cst.If and _none_paths_end(statement, body[position + 1 :]):
                state = self._taken(statement, state)
                continue
            state = self._statement(statement, state)
        del self._containers[asserted:]
        return state

    def _taken(self, node: cst.If, state: State) -> State:
        """`if mask is not None:` whose skipping path dies at the next use of `mask` (`mask.squeeze(-1)`
        raises on None): every path that goes on took the branch."""
        self._eval(node.test, state)
        if self._assumption(node.test) is False:
            return UNREACHABLE
        return self._block(node.body.body, self._narrowed(node.test, state, True))

    def _join_arms(self, before: State, then: State, other: State) -> State:
        """The paths of both arms. An attribute one arm first looked at and rebound (`if freeze:
        self.emb.weight.requires_grad = False`) still holds, on the other, what it held as the function
        began: that arm is given it before the join, or the rebinding would hold on both."""
        for first, second in ((then, other), (other, then)):
            if not (first.reachable and second.reachable):
                continue
            for place in first.env.keys() - before.env.keys() - second.env.keys():
                if "." in place:
                    second.env[place] = frozenset({self._external(place, second)})
        return then.join(other)

    def _note_tested_elements(self, test: cst.BaseExpression, state: State) -> None:
        """`if a[2] < a[0]:` truth-tests single elements: a numpy array of unknown rank indexed there by one
        integer is 1-D (a comparison of rows raises "truth value of an array ... is ambiguous"), so its
        `a[i]` is a scalar copy (a tensor's is a 0-d view either way)."""
        if type(test) is cst.BooleanOperation:
            self._note_tested_elements(test.left, state)
            self._note_tested_elements(test.right, state)
            return
        if type(test) is not cst.Comparison:
            return
        for operand in (test.left, *(target.comparator for target in test.comparisons)):
            if type(operand) is not cst.Subscript or integer_count(operand) != 1:
                continue
            place = dotted_name(operand.value)
            handles = state.env.get(place, frozenset()) if place is not None else frozenset()
            if handles and all(h.ndarray and not h.tensor and h.ndim is None for h in handles):
                for handle in handles:
                    handle.ndim = 1

    def _assumption(self, test: cst.BaseExpression) -> bool | None:
        """The value this analysis assumes the test has (see `conditions`), or None."""
        if self._last_pass and (last := self._last_pass.get(spaceless(test))) is not None:
            return last
        if not self.assumed:
            return None
        key = test_key(test)
        if key is None or key[0] not in self.assumed:
            return None
        return self.assumed[key[0]] == key[1]

    def _statement(self, node: cst.CSTNode, state: State) -> State:
        if isinstance(node, cst.SimpleStatementLine):
            for small in node.body:
                state = self._small(small, state)
                if not state.reachable:
                    break
            return state
        if isinstance(node, cst.If):
            self._eval(node.test, state)
            self._note_tested_elements(node.test, state)
            holds = self._assumption(node.test)
            narrowed = _container_checks(node.test)  # `if isinstance(obj, dict):` obj holds items there
            self._containers.extend(narrowed)
            then = UNREACHABLE
            if holds is not False:
                then = self._block(node.body.body, self._narrowed(node.test, state.copy(), True))
            del self._containers[len(self._containers) - len(narrowed) :]
            if holds is True:
                return then
            skipped = self._narrowed(node.test, state.copy(), False)
            if node.orelse is None:
                return self._join_arms(state, then, skipped)
            if isinstance(node.orelse, cst.If):
                other = self._statement(node.orelse, skipped)
            else:
                other = self._block(node.orelse.body.body, skipped)
            return self._join_arms(state, then, other)
        if isinstance(node, (cst.For, cst.While)):
            return self._loop(node, state)
        if isinstance(node, cst.With):
            return self._with(node, state)
        if isinstance(node, (cst.Try, cst.TryStar)):
            return self._try(node, state)
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            self._bind_fresh_name(node.name.value, node, state)
            return state
        if isinstance(node, cst.Match):
            self._eval(node.subject, state)
            result = UNREACHABLE
            for case in node.cases:
                result = result.join(self._block(case.body.body, state.copy()))
            return result.join(state)
        return state

    def _small(self, node: cst.BaseSmallStatement, state: State) -> State:
        self._born.clear()
        self._saved_now.clear()
        self._kept.clear()
        self._note_statement(node)
        if isinstance(node, cst.Assign):
            bound = _result_name(node)
            if bound is not None:
                name, calls = bound
                self._rebinding.update((id(call), name) for call in calls)
            value = self._eval(node.value, state)
            for target in node.targets:
                self._bind(target.target, value, node.value, state)
        elif isinstance(node, cst.AnnAssign):
            if node.value is not None:
                self._bind(node.target, self._eval(node.value, state), node.value, state)
        elif isinstance(node, cst.AugAssign):
            self._aug_assign(node, state)
        elif isinstance(node, cst.Expr):
            if type(node.value) is cst.Call:
                self._dropped.add(id(node.value))
            self._eval(node.value, state)
        elif isinstance(node, cst.Return):
            # `return False`, a status flag, gives the caller no value of its data: still a procedure
            if node.value is not None and not is_literal(node.value):
                value = self._eval(node.value, state)
                self._returned.update(handle.storage for handle in value.handles)
                items = [e.value for e in node.value.elements] if isinstance(node.value, cst.Tuple) else [node.value]
                self._handed_back.update(id(item) for item in items if isinstance(item, cst.Name))
                self._return_values.append(value)
                self._returned_outputs.append(self._outputs_kept(value, state))
            return UNREACHABLE
        elif isinstance(node, cst.Raise):
            if node.exc is not None:
                self._eval(node.exc, state)
            return UNREACHABLE
        elif isinstance(node, cst.Break):
            if self._loops:
                self._loops[-1].breaks.append(state.copy())
            return UNREACHABLE
        elif isinstance(node, cst.Continue):
            if self._loops:
                self._loops[-1].continues.append(state.copy())
            return UNREACHABLE
        elif isinstance(node, cst.Del):
            self._delete(node.target, state)
        elif isinstance(node, cst.Assert):
            self._eval(node.test, state)
            self._containers.extend(_container_checks(node.test))
        return state

    def _loop(self, node: cst.For | cst.While, state: State) -> State:
        mapping, iterable = [], None
        if isinstance(node, cst.For):
            iterable = self._eval(node.iter, state)
            mapping = _iterated_mapping(node.iter)
        self._containers.extend(mapping)  # `for k, v in batch.items():` batch is a mapping in the body
        head = state.copy()
        self._loops.append(_Loop())
        exit_state = UNREACHABLE
        for _ in range(_MAX_LOOP_PASSES):
            loop = self._loops[-1]
            loop.breaks.clear()
            end = self._loop_pass(node, iterable, head)
            new_head = head.join(end)
            # A `for` loop is taken to run at least once (`for layer in self.layers: h = layer(h)`):
            # what the body always rebinds is not what it held before the loop. A `while` loop's
            # test may be false at once.
            exit_state = end.copy() if isinstance(node, cst.For) and end.reachable else new_head
            for broke in loop.breaks:
                exit_state = exit_state.join(broke)
            if new_head.same_as(head):
                break
            head = new_head
        last = last_pass_tests(node) if isinstance(node, cst.For) and end.reachable and not self._last_pass else {}
        if last:
            # The loop exits from its last pass, where its index tests take their last values.
            self._last_pass = last
            try:
                exit_state = self._loop_pass(node, iterable, head)
            finally:
                self._last_pass = {}
            for broke in loop.breaks:
                exit_state = exit_state.join(broke)
        self._loops.pop()
        del self._containers[len(self._containers) - len(mapping) :]
        if node.orelse is not None:
            exit_state = self._block(node.orelse.body.body, exit_state)
        return exit_state

    def _loop_pass(self, node: cst.For | cst.While, iterable, head: State) -> State:
        """One pass of the loop's body from `head`: the state at its end, or at a `continue`."""
        loop = self._loops[-1]
        loop.continues.clear()
        body_state = head.copy()
        self._born.clear()
        if isinstance(node, cst.For):
            self._bind_iteration(node.target, iterable, node.iter, body_state)
            self._move_indices(node.target, body_state)
            self._next_elements(node.target, body_state)
        else:
            self._eval(node.test, body_state)
        end = self._block(node.body.body, body_state)
        for continued in loop.continues:
            end = end.join(continued)
        return end

    def _with(self, node: cst.With, state: State) -> State:
        no_grad = False
        values = []
        for item in node.items:
            value = self._eval(item.item, state)
            values.append(value)
            if self._is_no_grad(item.item):
                no_grad = True
            if item.asname is not None:
                self._bind(item.asname.name, value if value.handles else EMPTY, item.item, state)
        self._no_grad += no_grad
        try:
            after = self._block(node.body.body, state)
            self._leave_process_block(values, after)
            return after
        finally:
            self._no_grad -= no_grad

    def _try(self, node: cst.Try | cst.TryStar, state: State) -> State:
        entry = state.copy()
        after_body = self._block(node.body.body, state)
        handler_entry = entry.join(after_body)
        result = after_body
        for handler in node.handlers:
            result = result.join(self._block(handler.body.body, handler_entry.copy()))
        if node.orelse is not None:
            result = result.join(self._block(node.orelse.body.body, after_body.copy()))
        if node.finalbody is not None:
            final_entry = result if result.reachable else handler_entry
            final = self._block(node.finalbody.body.body, final_entry.copy())
            return final if result.reachable else UNREACHABLE
        return result

    # -------------------------------------------------------------- binding

    def _bind(self, target: cst.BaseExpression, value: Value, made_by: cst.CSTNode, state: State) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            self._bind_sequence(target, value, made_by, state)
            return
        if isinstance(target, cst.StarredElement):
            self._bind(target.value, value, made_by, state)
            return
        if isinstance(target, cst.Subscript):
            self._store_item(target, value, state, made_by)
            return
        if isinstance(target, cst.Attribute) and target.attr.value == "requires_grad":
            self._set_requires_grad(target, made_by, state)
            return
        if isinstance(target, cst.Attribute) and target.attr.value == "data":
            owner = self._eval(target.value, state)
            self._write(owner, target, ".data =", state, partial=False)
            owner_place = dotted_name(target.value)
            if owner_place is not None:  # the tensor now uses new memory
                self._assign_place(owner_place, frozenset({self._fresh(target, owner_place, value)}), state)
            return
        place = dotted_name(target)
        if place is None:
            self._eval(target, state)
            return
        self._loop_keys.pop(place, None)
        if state.replaced:  # another object now: none of its items replaced yet
            state.replaced = frozenset(entry for entry in state.replaced if entry[0] != place)
        if value.container:
            self._assign_place(place, frozenset(), state, held=value.handles)
            return
        handles = value.handles or frozenset({self._fresh(made_by, place, value)})
        self._assign_place(place, handles, state)

    def _bind_sequence(self, target: cst.Tuple | cst.List, value: Value, made_by: cst.CSTNode, state: State) -> None:
        elements = target.elements
        sources = _positional_sources(made_by, len(elements))
        if sources is not None and not any(isinstance(e, cst.StarredElement) for e in elements):
            self._bind_pairwise(elements, sources, state)
            return
        for position, element in enumerate(elements):
            if AliasKind.MULTI_VIEW in value.kinds and not value.container:
                # `q, k, v = qkv.split(d, -1)`: disjoint parts of one tensor; a write to one
                # does not change the others.
                part = self._alias(value, element.value, AliasKind.MULTI_VIEW, partial=True, index=f"<{position}>")
                self._bind(element.value, part, made_by, state)
            elif value.container or value.kinds - {AliasKind.OWN}:
                self._bind(element.value, value.elements(), made_by, state)
            elif value.tensor and not isinstance(made_by, cst.Call) and not self._only_assumed(value):
                # a tensor unpacks as `unbind` does
                self._bind(
                    element.value, self._alias(value, made_by, AliasKind.MULTI_VIEW, partial=True), made_by, state
                )
            else:  # `values, indices = x.sort()`: separate new tensors; `a, b = pair`: a forward's tuple input
                handle = self._fresh((made_by, position), dotted_name(element.value) or "", value)
                handle.graph = frozenset().union(*(h.graph for h in value.handles))  # outputs of one graph
                if self._one_dimensional_parts(made_by):
                    handle.ndim, handle.ndarray = 1, True
                if self._tensor_op(made_by):  # `scores, indices = x.topk(k)`; not `model, loader = prepare(...)`
                    handle.grad = output_grad(made_by, position, value, self.k.index_outputs)
                self._bind(element.value, value.with_handles({handle}), made_by, state)

    def _one_dimensional_parts(self, made_by: cst.CSTNode) -> bool:
        """`_, counts = np.unique(x, return_counts=True)`: each part is a 1-D array (aliasing.toml [indexing])."""
        if not isinstance(made_by, cst.Call):
            return False
        qualified = self.imports.qualify(made_by.func)
        return qualified in self.k.one_dimensional_tuples and any(
            arg.keyword is not None and arg.keyword.value.startswith("return_") and is_constant(arg.value, "True")
            for arg in made_by.args
        )

    def _bind_pairwise(self, elements, sources: list[list[cst.BaseExpression]], state: State) -> None:
        """`a, b = b, a`: every source is evaluated before any target is bound, so a
        later target reads its source after the earlier targets were written
        (`x[0], x[1] = x[1], x[0]` does not swap two rows of a tensor)."""
        pending = []
        for alternatives in sources:  # one expression, or one per branch of `p if c else q`
            # Already evaluated with the whole right-hand side: only their values are needed here (a call
            # is not made again: it would read its arguments after its own writes to them).
            values = [
                self._call_results.pop(id(source), None) or self._eval(source, state, record=False)
                for source in alternatives
            ]
            value = Value(
                frozenset().union(*(v.handles for v in values)),
                any(v.tensor for v in values),
                any(v.ndarray for v in values),
                any(v.container for v in values),
            )
            place = " if ".join(map(self._code, alternatives))  # never dotted
            self._forget_history(value.handles, state)  # made by this pass: an earlier pass's writes are not seen
            state.env[place] = value.handles  # live until bound, so earlier targets' writes reach it
            pending.append((place, alternatives[0], value))
        for element, (place, source, value) in zip(elements, pending):
            self._record_reads(place, source, state)
            self._bind(element.value, value, source, state)
        for place, _, _ in pending:
            state.env.pop(place, None)

    def _hold(self, place: str, handles: frozenset[Handle], node: cst.CSTNode, state: State) -> frozenset[Handle]:
        stored = frozenset(self._stored(handle, node) for handle in handles)
        already = state.held.get(place, frozenset())
        state.held[place] = already | stored
        # A handle stored again in a loop: the container still holds the earlier
        # instances, which keep what they have seen.
        self._forget_history(stored - already, state)
        state.retired -= stored
        return stored

    def _stored(self, handle: Handle, node: cst.CSTNode) -> Handle:
        """What a container holds: the tensor as it is now, as far as its reader can tell."""
        if handle.role is not None or handle.stored:
            return handle
        stored = self._held_copy(("stored", id(node), id(handle.storage), handle.kind), handle, node)
        self._born.add(stored)
        self._aliased.add(stored.storage)
        return stored

    def _held_copy(self, key: tuple, handle: Handle, node: cst.CSTNode) -> Handle:
        """`handle` as something else holds it (a container, another process), made at `node`."""
        return self._handle(
            key,
            handle.storage,
            handle.kind,
            node,
            partial=handle.partial,
            index=handle.index,
            tensor=handle.tensor,
            ndarray=handle.ndarray,
            base=handle,
            stored=True,
        )

    def _assign_place(
        self, place: str, handles: frozenset[Handle], state: State, held: frozenset[Handle] = frozenset()
    ) -> None:
        for table in (state.env, state.held):
            for key in self._attribute_places.under(place, table):
                del table[key]
        previous = state.handles_of(place)
        state.env[place] = handles
        if held:
            state.held[place] = held
        else:
            state.held.pop(place, None)
        self._forget_history(handles | held, state)
        self._retire_older_aliases(handles | held, state)
        self._forget_unreachable(previous - handles - held, state)

    def _forget_unreachable(self, handles: frozenset[Handle], state: State) -> None:
        """Drop what a handle no place holds any more has seen, so that a join with
        another path (where it is still bound) does not inherit this path's writes; and what
        autograd kept of memory no place reaches any more (`rst = rst * norm` kept the old
        `rst`, which nothing can write now), so that a join does not tie it to a later write."""
        kept = [h for h in handles if h.storage in state.saved] if state.saved else []
        handles = frozenset(h for h in handles if h in state.stale or h in state.hidden)
        if not handles and not kept:
            return
        live = state.live_handles()
        for handle in handles - live:
            state.stale.pop(handle, None)
            state.hidden.pop(handle, None)
        for dropped in kept:
            if dropped not in live and not any(_reaches(h, dropped) for h in live):
                state.saved.pop(dropped.storage, None)

    def _retire_older_aliases(self, handles: frozenset[Handle], state: State) -> None:
        """`buf = torch.empty(n)` run again by a loop is new memory: the views and stored
        tensors of the previous iteration's buffer no longer see writes to `buf`."""
        state.retired -= handles
        for handle in handles & self._born:
            if handle.kind is AliasKind.OWN and handle.storage.origin == "fresh" and handle.storage in self._aliased:
                older = {h for h in state.live_handles() if h.storage is handle.storage and h not in handles}
                state.retired |= older

    def _forget_history(self, handles: frozenset[Handle], state: State) -> None:
        """A handle made again by this statement has seen no write yet, and new memory was kept by
        no op (a loop allocates it anew in every pass)."""
        for handle in handles & self._born:
            state.stale.pop(handle, None)
            state.hidden.pop(handle, None)
            self._bound_again(handle)
            if state.saved and handle.kind is AliasKind.OWN and handle.storage.origin == "fresh":
                self._forget_savings(handle.storage, state)

    def _bind_fresh_name(self, name: str, node: cst.CSTNode, state: State) -> None:
        self._assign_place(name, frozenset({self._fresh(node, name, EMPTY)}), state)

    def _delete(self, target: cst.BaseExpression, state: State) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._delete(element.value, state)
            return
        place = dotted_name(target)
        if place is not None:
            self._note_delete(place, target, state)
            state.env.pop(place, None)
            state.held.pop(place, None)
        else:
            self._eval(target, state)

    def _store_item(self, target: cst.Subscript, value: Value, state: State, source: cst.CSTNode) -> None:
        # Storing an item reads none of a container's items (`d[k] = t` after `t.zero_()`).
        container = self._eval(target.value, state, record=False)
        advanced, _ = self._eval_slices(target, state)
        place = dotted_name(target.value)
        array = (self._is_array(container) or _indexes_dimensions(target)) and not _holds_tensors_listed(source, value)
        if array and not keyed_by_string(target) and place not in self._containers:
            if place is not None:
                self._record_reads(place, target.value, state)
            partial, index = self._index_extent(target)
            if not advanced and _views_of(value, container, index):
                return  # `row = a[:, i]`, masked in place, then `a[:, i] = row`: the memory copied onto itself
            self._write(
                container, target, "[] =", state, partial=partial, index=index, certain=False, advanced=advanced
            )
            self._check_overlap(target, container, [(source, value)], index)
            self._check_self_index(target, container, self._index_values(target, state))
            return
        place = dotted_name(target.value)
        if place is not None and self._unknown_parameter(place, container) and not keyed_by_string(target):
            # `x[mask] = v` on what the caller passed: in place if it is a tensor (a caller that passes one says so)
            self._written_if_tensor.add(place)
            partial, index = self._index_extent(target)
            self._write(
                container, target, "[] =", state, partial=partial, index=index, certain=False, advanced=advanced
            )
        if place is not None and value.handles:
            key = _literal_key(target)
            if key is not None and keyed_by_string(target):
                self._replace_item(place, key, state)
                state.replaced |= {(place, key)}
            for stored in self._hold(place, value.handles, target, state):
                self._item_keys[stored] = key

    def _replaced_item(self, handle: Handle, storage: Storage, state: State) -> bool:
        """`storage` is the item `handle`'s own container held under a key this path replaced."""
        item = self._item_storage_keys.get(storage)
        if item is None or not state.replaced:
            return False
        container, key = item
        return handle.storage is container and any(
            handle in state.env.get(place, ()) for place, replaced in state.replaced if replaced == key
        )

    def _replace_item(self, place: str, key: str, state: State) -> None:
        """`d["k"] = t` replaces what `d["k"]` held: on this path the old item is gone, and so is
        what it had seen (`d["k"] = t; t.zero_(); d["k"] = t` leaves nothing stale)."""
        held = state.held.get(place, frozenset())
        replaced = {handle for handle in held if self._item_keys.get(handle) == key}
        if replaced:
            state.held[place] = held - replaced
            for handle in replaced:
                state.stale.pop(handle, None)

    def _aug_assign(self, node: cst.AugAssign, state: State) -> None:
        value = self._eval(node.value, state)
        if isinstance(node.target, cst.Subscript):
            container = self._eval(node.target.value, state)
            advanced, _ = self._eval_slices(node.target, state)
            narrowed = dotted_name(node.target.value) in self._containers
            if self._is_array(container) and not keyed_by_string(node.target) and not narrowed:
                partial, index = self._index_extent(node.target)
                op = "[] " + _operator(node)
                self._write(container, node, op, state, partial=partial, index=index, certain=False, advanced=advanced)
                self._check_overlap(node, container, [(node.value, value)], index)
            elif container.container and any(h.tensor for h in container.handles):
                # `laterals[i] += up`: `+=` on a list's tensor item is that tensor's in-place add; of the
                # item under the key, where the keys are known (`d["mask"] *= m`, `for k in ["mask"]:`)
                item = self._elements_of(self._under_keys(container, node.target), node.target)
                self._write(item, node, _operator(node), state, certain=False)
                self._save_operation(node, node.operator, item, value, item, state)
            return
        target = self._eval(node.target, state)
        rebinds = target.tensor and not target.ndarray and _operator(node) not in self.k.inplace_operators
        if self._is_array(target) and not rebinds:
            self._write(target, node, _operator(node), state, certain=False)
            self._save_operation(node, node.operator, target, value, target, state)
            return
        place = dotted_name(node.target)
        if place is None:
            return
        if self._unknown_parameter(place, target) and _operator(node) in self.k.inplace_operators:
            # `x /= 255` on what the caller passed: in place if it is a tensor (a caller that passes one says so)
            self._written_if_tensor.add(place)
            self._write(target, node, _operator(node), state, certain=False)
        result = self._fresh(node, place, value, tensor=target.tensor or value.tensor)
        if rebinds:  # `x @= w` is `x = x @ w`
            self._operation_grad(result, [target, value])
            self._save_operation(node, node.operator, target, value, Value(frozenset({result})), state)
        self._assign_place(place, frozenset({result}), state)

    # ---------------------------------------------------------- expressions

    def _eval(self, node: cst.BaseExpression, state: State, record: bool = True) -> Value:
        # Compared by exact type: libcst's expression classes have no subclasses, and isinstance
        # against them (abstract-class machinery) was a tenth of the analysis.
        kind = type(node)
        if kind is cst.Name or kind is cst.Attribute:
            return self._load(node, state, record)
        if kind is cst.Call:
            return self._call(node, state)
        if kind is cst.Subscript:
            return self._subscript(node, state)
        if kind in _OPERATIONS:
            kept_before = len(self._kept)
            # `x is None` tests the binding, not the memory: no read of x's values, nothing autograd records
            identity = kind is cst.Comparison and _identity_test(node)
            operands = [self._eval(child, state, record and not identity) for child in _operands(node)]
            tensor = False
            for operand in operands:
                tensor |= operand.tensor
                if not identity:
                    self._in_graph(operand)
            result = self._fresh(node, "", EMPTY, tensor=tensor)
            # `a.sum(-1) > 0` of numpy arrays is an array (a mask that indexes by copying)
            result.ndarray = ndarray = not tensor and any(operand.ndarray for operand in operands)
            self._operation_grad(result, operands)
            if kind is cst.Comparison:  # `x > 0`: a boolean tensor never requires grad (F26)
                result.grad = Grad.NO
                self._forget_compared(node, kept_before, state)
            value = Value(frozenset({result}), tensor=tensor, ndarray=ndarray)
            if kind is cst.BinaryOperation:
                self._save_operation(node, node.operator, operands[0], operands[1], value, state)
            return value
        if kind in _COLLECTIONS:
            handles: set[Handle] = set()
            for element in node.elements:
                value = self._eval(element.value, state)
                if type(element.value) is cst.Call:  # kept for `a, b = f(x), g(y)`, which binds them one by one
                    self._call_results[id(element.value)] = value
                handles |= value.handles
            return Value(frozenset(handles), container=True)
        if kind is cst.Dict:
            handles = set()
            for element in node.elements:
                if isinstance(element, cst.DictElement):
                    self._eval(element.key, state)
                handles |= self._eval(element.value, state).handles
            return Value(frozenset(handles), container=True)
        if kind in _COMPREHENSIONS:
            return self._comprehension(node, state)
        if kind is cst.IfExp:
            self._eval(node.test, state)
            holds = self._assumption(node.test)
            if holds is not None:
                return self._eval_narrowed(node.body if holds else node.orelse, node.test, holds, state)
            skipped = state.copy()  # the arms are exclusive: `orelse` never sees what `body` wrote
            body = self._eval_narrowed(node.body, node.test, True, state)
            orelse = self._eval_narrowed(node.orelse, node.test, False, skipped)
            orelse = self._unwritten_on_its_path(orelse, node, state, skipped)
            state.absorb(skipped)
            return Value(
                body.handles | orelse.handles,
                body.tensor or orelse.tensor,
                body.ndarray or orelse.ndarray,
                body.container or orelse.container,
            )
        if kind is cst.NamedExpr:
            value = self._eval(node.value, state)
            self._bind(node.target, value, node.value, state)
            return value
        if kind is cst.Await:
            return self._eval(node.expression, state)
        if kind is cst.Yield:
            self._return_values.append(EMPTY)  # a generator: calling it returns no tensor
        if kind is cst.Yield or kind is cst.StarredElement:
            inner = node.value.item if isinstance(node.value, cst.From) else node.value
            return self._eval(inner, state) if isinstance(inner, cst.BaseExpression) else EMPTY
        if kind is cst.FormattedString or kind is cst.ConcatenatedString:
            for child in _formatted_expressions(node):
                self._eval(child, state)
            return EMPTY
        return EMPTY

    def _load(self, node: cst.Name | cst.Attribute, state: State, record: bool) -> Value:
        if type(node) is cst.Name:
            place = node.value
            if place in _CONSTANTS:
                return EMPTY  # `a = None; b = None`: no memory, so nothing `a` and `b` could share
        else:
            special = self._attribute(node, state, record)
            if special is not None:
                return special
            place = dotted_name(node)
            if place is None:  # an attribute of a call or subscript result: `model[0].weight`
                return self._member(node, self._eval(node.value, state, record))
        if record:
            self._record_reads(place, node, state)
        handles = state.env.get(place)
        if handles is None:
            handles = frozenset({self._external(place, state)})
            state.env[place] = handles
        if len(handles) == 1:  # most places hold one thing
            (handle,) = handles
            tensor, ndarray = handle.tensor, handle.ndarray
            if record and handle.storage.origin == "param":
                self._parameter_reads.setdefault(place, node)
        else:
            tensor, ndarray = any(h.tensor for h in handles), any(h.ndarray for h in handles)
            if record and any(h.storage.origin == "param" for h in handles):
                self._parameter_reads.setdefault(place, node)
        held = state.held.get(place)
        if held is None:
            return Value(handles, tensor, ndarray)
        return Value(handles | held, tensor, ndarray, container=bool(held) and not (tensor or ndarray))

    def _attribute(self, node: cst.Attribute, state: State, record: bool) -> Value | None:
        name = node.attr.value
        if name == "requires_grad":
            return self._grad_flag(node, state)
        if name in self.k.metadata_attributes:
            self._eval(node.value, state, record=False)  # `prev.shape` does not read prev's values
            return EMPTY
        if name in self.k.object_dict_attributes:  # `model.config.__dict__`: a dict of its own
            self._eval(node.value, state, record=False)
            return self._fresh_value(node)
        if name in self.k.detach_properties:
            base = self._eval(node.value, state, record)
            return self._alias(base, node, AliasKind.DATA, tensor=True)
        if name in self.k.view_properties:
            base = self._eval(node.value, state, record)
            if not base.tensor:
                return EMPTY
            return self._alias(base, node, AliasKind.VIEW, partial=name in self.k.partial_views)
        return None

    def _record_reads(self, place: str, node: cst.CSTNode, state: State) -> None:
        self._first_reads.setdefault(place, node)
        if self._left_behind:
            self._note_left_behind_use(place, node, state)
        if not state.stale:
            return  # no write yet that a read could see
        for prefix in place_prefixes(place):
            handles = state.handles_of(prefix)
            for handle in handles:
                for write in state.stale.get(handle, ()):
                    if self._rebinding.get(id(write.node)) == prefix:
                        continue  # `g = f(g)` wrote what `g` held and bound `g` to the result: not this
                    if prefix == place and write.index == self._element_read and write in state.passed:
                        continue  # `x[i]` of this pass; the write was to the `x[i]` of a pass before
                    if prefix != place and _sibling_attribute(write.storage.label, prefix, place):
                        continue
                    # Paths joined: `x` may hold the writer itself, so this is x reading x.
                    if handle is write.writer or write.writer in handles:
                        self.own_reads.setdefault(write, node)
                    else:
                        self.reads.setdefault((id(write), id(handle), id(node)), Read(write, handle, node, prefix))

    def _subscript(self, node: cst.Subscript, state: State) -> Value:
        outer, self._element_read = self._element_read, self._index_extent(node)[1] if state.passed else None
        try:
            base = self._eval(node.value, state)
        finally:
            self._element_read = outer
        advanced, index = self._eval_slices(node, state)
        layer = self._layer(base, node)
        if layer is not None:  # `model[0]` of an `nn.Sequential` whose layers the constructor shows
            return layer
        if self._is_array(base) or _requires_grad(base) or _indexes_dimensions(node):
            self._index_grad(node, state)  # what indexes an array is an integer, never requiring grad
        if not self._is_array(base) and _indexes_dimensions(node) and _requires_grad(base):
            # `outputs[0][:, -1, :]` of a model's output: only a tensor both requires grad and takes a slice
            # among several dimensions (a list or dict takes neither)
            for handle in base.handles:
                handle.tensor = True
            base = Value(base.handles, tensor=True)
        if self._is_array(base):
            if advanced:  # `x[mask]`, `x[idx_tensor]`, `x[[0, 2]]`: a copy
                copy = self._fresh_value(node, tensor=base.tensor, ndarray=base.ndarray)
                for handle in copy.handles:
                    handle.ndim = _gathered_ndim(base, index)
                return copy
            if base.ndarray and not base.tensor and gives_scalar({h.ndim for h in base.handles}, integer_count(node)):
                return self._fresh_value(node)  # numpy's `a[i]` on a 1-D array: a scalar
            if base.handles and all(h.kind is AliasKind.MULTI_VIEW and not h.partial for h in base.handles):
                # `x.unbind()[0]`: the tuple of outputs indexed gives one of them, not a view of it
                partial, index = self._index_extent(node)
                return self._alias(base, node, AliasKind.MULTI_VIEW, partial=True, index=index)
            partial, index = self._index_extent(node)
            view = self._alias(base, node, AliasKind.VIEW, partial=partial, index=index)
            _drop_dimensions(view, integer_count(node))
            if state.moved:
                state.moved -= view.handles  # made again: of the element the names index now
            return view
        key = _literal_key(node)
        place = dotted_name(node.value)
        if key is not None and keyed_by_string(node) and (place, key) in state.replaced:
            stored = frozenset(h for h in state.held.get(place, ()) if self._item_keys.get(h) == key)
            return Value(stored, any(h.tensor for h in stored), any(h.ndarray for h in stored))  # what was put there
        if key is not None and keyed_by_string(node) and base.handles and base.container and place is not None:
            # `d["k"]` of a mapping this scope stored other keys of: those items are not it; what it stored
            # under "k" on some path, or under keys unknown, may be, as may the item `d` had
            own = frozenset(h for h in state.env.get(place, ()) if h.role is None)
            held = frozenset(h for h in state.held.get(place, ()) if self._item_keys.get(h) in (None, key))
            if own:
                item = self._item(Value(own), node, key)
                return Value(item.handles | held, item.tensor or any(h.tensor for h in held))
        if key is not None and keyed_by_string(node) and base.handles and not base.container:
            return self._item(base, node, key)
        return self._elements_of(base, node)  # `batch["x"]`, `items[i]`: one of what it holds

    def _item(self, container: Value, node: cst.Subscript, key: str) -> Value:
        """`graph.dstdata["deg"]` of a mapping this scope did not fill: the tensor under that key, its own
        memory inside the container's (another key's tensor is other memory)."""
        handles = set()
        for h in container.handles:
            if h.role is not None:
                continue
            depth = self._item_depths.get(h.storage, 0)
            if depth < _ITEM_DEPTH:
                storage = self._storage(("item", id(h.storage), key), h.storage.label, h.storage.origin, h.storage)
                self._item_depths.setdefault(storage, depth + 1)
                self._item_storage_keys[storage] = (h.storage, key)
            else:  # `shared[p]["copy"]` stored back into what it came from, pass after pass: one memory
                storage = h.storage
            handles.add(
                self._handle(
                    ("item", id(storage), id(node)), storage, AliasKind.OWN, node, tensor=h.tensor, base=h, element=True
                )
            )
        self._born.update(handles)
        return Value(frozenset(handles), any(h.tensor for h in handles))

    def _index_values(self, node: cst.Subscript, state: State) -> list[tuple[cst.CSTNode, Value]]:
        """The values indexing `x[...]`, evaluated again without recording reads."""
        return [
            (element.slice.value, self._eval(element.slice.value, state, record=False))
            for element in node.slice
            if isinstance(element.slice, cst.Index) and type(element.slice.value) in (cst.Name, cst.Attribute)
        ]

    def _eval_slices(self, node: cst.Subscript, state: State) -> tuple[bool, Value | None]:
        """Evaluate the index: whether it is advanced indexing (a tensor, array or list), and the value
        of the index when it is the only one (`counts[order]`)."""
        advanced, value = False, None
        for element in node.slice:
            index = element.slice
            if isinstance(index, cst.Index):
                value = self._eval(index.value, state)
                advanced |= value.tensor or value.ndarray or isinstance(index.value, (cst.List, cst.ListComp))
                advanced |= type(index.value) is cst.Name and self._list_valued(index.value.value)
                advanced |= type(index.value) is cst.Attribute and self._list_attribute(index.value, state)
            elif isinstance(index, cst.Slice):
                for part in (index.lower, index.upper, index.step):
                    if part is not None:
                        self._eval(part, state)
        return advanced, value if len(node.slice) == 1 else None

    def _list_valued(self, name: str) -> bool:
        if self._lists is None:
            self._lists = _list_names(self.scope.node)
        return name in self._lists

    def _list_attribute(self, node: cst.Attribute, state: State) -> bool:
        """`self.finger_ids`, which every method of the class that binds it binds to a list."""
        head = dotted_name(node.value)
        fact = self._attribute_fact(head, node.attr.value, state.env.get(head, frozenset())) if head else None
        return fact is not None and fact.held is Held.LIST

    def _comprehension(self, node, state: State) -> Value:
        inner = state.copy()
        clause = node.for_in
        while clause is not None:
            iterable = self._eval(clause.iter, inner)
            self._bind_iteration(clause.target, iterable, clause.iter, inner)
            for condition in clause.ifs:
                self._eval(condition.test, inner)
            clause = clause.inner_for_in
        if isinstance(node, cst.DictComp):
            self._eval(node.key, inner)
            element = self._eval(node.value, inner)
        else:
            element = self._eval(node.elt, inner)
        self._keep_open_crossings(inner, state)  # `[pool.submit(f, t) for t in ts]`
        for storage, savings in inner.saved.items():  # `[F.relu(conv(f)) for ...]` keeps each output
            state.saved[storage] = state.saved.get(storage, frozenset()) | savings
        return Value(element.handles, container=True)

    def _elements_of(self, container: Value, node: cst.CSTNode) -> Value:
        """Iterating a list of tensors yields one of them at a time: a part of what the list holds."""
        handles = {
            self._handle(
                ("element", id(node), id(h.storage), h.kind),
                h.storage,
                h.kind,
                node,
                partial=True,
                tensor=h.tensor,
                ndarray=h.ndarray,
                base=h,
                element=True,
                grad=h.grad,
                module=h.elements,  # `for block in self.blocks` of a module list of one class
                ndim=h.ndim,
            )
            for h in container.handles
            if h.role is None
        }
        self._born.update(handles)
        return Value(frozenset(handles), any(h.tensor for h in handles), any(h.ndarray for h in handles))

    def _bind_iteration(self, target, iterable: Value, node: cst.BaseExpression, state: State) -> None:
        self._bind_elements(target, iterable, node, state)
        self._note_loop_keys(target, node)

    def _bind_elements(self, target, iterable: Value, node: cst.BaseExpression, state: State) -> None:
        element = self._element(iterable, node)
        parts = self._zip_parts.get(id(node))
        if isinstance(target, (cst.Tuple, cst.List)) and parts and len(parts) == len(target.elements):
            for part_target, part in zip(target.elements, parts):
                self._bind(part_target.value, part, node, state)
            return
        if isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2 and _yields_key_first(node):
            key, value = target.elements
            self._bind(key.value, EMPTY, node, state)
            self._bind(value.value, element, node, state)
            return
        self._bind(target, element, node, state)

    def _note_loop_keys(self, target: cst.BaseExpression, iterable: cst.BaseExpression) -> None:
        """`for k in ["mask", "exists"]:` binds `k` to one of those keys (until bound otherwise)."""
        if type(target) is not cst.Name:
            return
        elements = iterable.elements if isinstance(iterable, (cst.List, cst.Tuple)) else ()
        keys = [e.value.value for e in elements if isinstance(e.value, (cst.SimpleString, cst.Integer))]
        if keys and len(keys) == len(elements):
            self._loop_keys[target.value] = frozenset(keys)
        else:
            self._loop_keys.pop(target.value, None)

    def _move_indices(self, target: cst.BaseExpression, state: State) -> None:
        """A new pass binds the loop's names anew: `last = returns[i]` of the pass before is another
        element than the `returns[i]` this pass writes, and the row the pass before wrote through
        `row = x[i]` is another than the `x[i]` this pass reads."""
        bound = frozenset(name.value for name in _names_in(target))
        moved = {h for h in state.live_handles() if h.index is not None and index_names(h.index) & bound}
        if moved:
            state.moved |= moved
        passed = {w for writes in state.stale.values() for w in writes if w.index and indexes_by(w.index, bound)}
        if passed:
            state.passed |= passed

    def _next_elements(self, target: cst.BaseExpression, state: State) -> None:
        """A pass binds the loop's names to the next items of a container: another tensor than the
        pass before kept for backward (`for out in outputs: loss += F.mse_loss(out, y); out[..., 4] *= m`).
        Rows of one tensor (`unbind`) share its version counter, and stay kept."""
        savings = self._loops[-1].savings
        if not savings:
            return
        for name in _names_in(target):
            for handle in state.env.get(name.value, ()):
                kept = state.saved.get(handle.storage)
                if handle.element and handle.kind is not AliasKind.MULTI_VIEW and kept:
                    if kept - savings:
                        state.saved[handle.storage] = kept - savings
                    else:
                        del state.saved[handle.storage]

    def _under_keys(self, container: Value, target: cst.Subscript) -> Value:
        """What `d[key]` may be among what `d` holds: the items stored under that key, or under keys
        unknown, when the key is a literal or a name a loop over literals binds; else all of them."""
        literal = _literal_key(target)
        index = target.slice[0].slice if len(target.slice) == 1 else None
        keys = frozenset({literal}) if literal is not None else None
        if keys is None and isinstance(index, cst.Index) and type(index.value) is cst.Name:
            keys = self._loop_keys.get(index.value.value)
        if keys is None:
            return container
        held = frozenset(h for h in container.handles if self._item_keys.get(h) in keys | {None})
        return Value(held, container.tensor, container.ndarray, container.container)

    def _element(self, iterable: Value, node: cst.BaseExpression) -> Value:
        """What one iteration over `iterable` yields."""
        if (
            iterable.tensor
            and not iterable.container
            and not (iterable.kinds & {AliasKind.MULTI_VIEW, AliasKind.PARAMETERS})
            and not self._only_assumed(iterable)  # a forward iterating its input: a list (a detector's scales)
        ):
            # Iterating a tensor is `unbind(0)`: its rows are several views of one output.
            rows = self._alias(iterable, node, AliasKind.MULTI_VIEW, partial=True, index=None)
            _drop_dimensions(rows, 1)
            return rows
        elements = self._elements_of(iterable, node)
        if iterable.ndarray and not iterable.container:
            _drop_dimensions(elements, 1)  # an array's rows
        return elements

    # ---------------------------------------------------------------- calls

    # --------------------------------------------------------------- writes

    def _write(
        self,
        target: Value,
        node: cst.CSTNode,
        op: str,
        state: State,
        *,
        partial: bool = False,
        index: str | None = None,
        init: bool = False,
        callee: str | None = None,
        parameter: str | None = None,
        certain: bool = True,
        module: bool = False,
        read_before: bool = False,
        advanced: bool = False,
    ) -> None:
        live = state.live_handles()
        fresh = {
            h.storage for h in self._born if h.kind is AliasKind.OWN and h.storage.origin == "fresh" and h.base is None
        }  # allocated by this statement, not taken from a container (`laterals[0] += up`)
        for writer in target.handles:
            if writer.role is not None:
                continue
            write = self.writes.get((id(node), id(writer)))
            if write is None:
                write = Write(
                    node,
                    writer,
                    op,
                    partial or writer.partial,
                    index or writer.index,
                    self._no_grad > 0,
                    init,
                    callee,
                    parameter,
                    certain,
                    module,
                    read_before,
                    advanced,
                )
                self.writes[(id(node), id(writer))] = write
            if write in state.passed:
                state.passed -= {write}  # made again, of the element the names index now
            if (
                callee is None
            ):  # a same-file function's write is checked in it: it is told what was kept (`Passed.saved`)
                self._check_saved(write, state, renewed=writer.storage in fresh)
            # Rebinding `.data` swaps the storage: old aliases keep the old memory. Memory
            # allocated by this very statement (`p.new(n).zero_()`) has no older aliases.
            seen_by = () if op in REBINDING_OPS or writer.storage in fresh else self._elements.seen_by(write, live)
            for handle in seen_by:
                if handle in state.moved and write.index is not None:
                    continue  # `x[i]` again, but of another `i`
                if handle.blank:
                    continue  # a view of `torch.empty(n)` made before it was filled: the write is its first value
                if handle.storage.related(writer.storage) and handle not in state.retired:
                    if self._replaced_item(handle, writer.storage, state):
                        continue  # `d["k"]` was replaced: `d` no longer reaches the memory it held there
                    state.stale[handle] = state.stale.get(handle, frozenset()) | {write}
                    self._note_crossed_write(write, handle)
            if write.hidden:
                for handle in live:
                    state.hidden[handle] = state.hidden.get(handle, frozenset()) | {write}
                if any(writer.storage.related(storage) for storage in self.graph_storages):
                    self._after_forward.add(write)  # some forward computed with it already
            if writer.storage.blank:
                self._filled.add(writer.storage)

    def _written_unread(self, writes: list[Write]) -> set[str]:
        """Parameters the function writes into (`out[:, i] = ids`) and never reads: it fills them."""
        return {
            write.storage.label
            for write in writes
            if write.storage.origin == "param" and write.storage.label not in self._parameter_reads
        }

    def _note_filled_parameter(self, node: cst.Call, target: cst.BaseExpression | None, state: State) -> None:
        """`buf.copy_(x)`, `torch.mean(x, out=buf)` as the first use of parameter `buf`: the function
        overwrites the caller's memory whole before reading it, so that memory is its output buffer.
        Not when the call also reads it (`buf.copy_(buf * 2)`) or `buf` no longer names the parameter."""
        if type(target) is not cst.Name or self._parameter_reads.get(target.value) is not target:
            return
        name = target.value
        if any(h.storage.origin != "param" or h.storage.label != name for h in state.env[name]):
            return
        pattern = re.compile(rf"\b{re.escape(name)}\b")
        if any(arg.value is not target and pattern.search(self._code(arg.value)) for arg in node.args):
            return
        self._filled_params.add(name)

    def _layout_write(self, target: Value, node: cst.CSTNode, op: str, state: State) -> None:
        """`x.t_()`, `x.squeeze_()`: no alias sees other values, but autograd sees an in-place
        op (a leaf, a multi-output view, a saved tensor all raise)."""
        for writer in target.handles:
            if writer.role is None:
                key = (id(node), id(writer))
                write = self.layout_writes.get(key)
                if write is None:
                    write = Write(node, writer, op, writer.partial, writer.index, self._no_grad > 0)
                    self.layout_writes[key] = write
                self._check_saved(write, state)

    # -------------------------------------------------------------- helpers

    def _alias(
        self,
        base: Value,
        node: cst.CSTNode,
        kind: AliasKind,
        *,
        partial: bool = False,
        index: str | None = None,
        tensor: bool | None = None,
        ndarray: bool | None = None,
    ) -> Value:
        handles = set()
        for source in base.handles:
            if source.role is not None:
                continue
            if kind in _PASS_THROUGH and self._is_temporary(source):
                # `torch.clone(g).detach()`: nothing else holds the memory. `batch["ids"].view(-1)`:
                # a tensor method's receiver is a tensor, which indexes by advanced indexing.
                source.tensor = source.tensor or bool(tensor)
                handles.add(source)
                continue
            inherited = kind
            if (
                source.kind in (AliasKind.STATE_DICT, AliasKind.NUMPY)
                and kind in _PASS_THROUGH
                or kind is AliasKind.VIEW
                and source.kind in (AliasKind.DETACH, AliasKind.DATA)
            ):
                inherited = source.kind
            key = ("alias", id(node), id(source.storage), inherited)
            new = key not in self._handles
            if not new and self._handles[key].base is not source:
                self._other_bases.setdefault(self._handles[key], set()).add(source)
            handle = self._handle(
                key,
                source.storage,
                inherited,
                node,
                partial=partial or source.partial,
                index=index,
                tensor=base.tensor if tensor is None else tensor,
                ndarray=base.ndarray if ndarray is None else ndarray,
                base=source,
            )
            # Made again after a write (a loop's next pass), it holds values from then on.
            blank = source.storage.blank and source.storage not in self._filled
            handle.blank = blank and (new or handle.blank)
            self._alias_grad(handle, source)
            handles.add(handle)
            self._aliased.add(handle.storage)
        self._born.update(handles)
        return Value(
            frozenset(handles),
            base.tensor if tensor is None else tensor,
            base.ndarray if ndarray is None else ndarray,
        )

    def _external(self, place: str, state: State) -> Handle:
        parent = None
        owner: frozenset[Handle] = frozenset()
        head, _, attribute = place.rpartition(".")
        if head and attribute not in self.k.other_tensor_attributes:
            owner = self._place_value(head, state)
            # A container's attributes are not its elements' memory: no parent then. Nor is what a
            # module keeps in an attribute that is no Parameter of it (`m.h = m.h.detach()`, F51).
            parent = next(iter(owner)).storage if owner and place not in self.scope.plain_attributes else None
        storage = self._storage(("external", place, id(parent)), place, "external", parent)
        tensor = place in self.scope.tensor_places
        handle = self._handle(("external", place, id(parent)), storage, AliasKind.OWN, None, tensor=tensor)
        if owner:
            fact = self._attribute_grad(handle, head, attribute, owner)
            if fact is not None and fact.steps and head == "self":  # `self.optim = Adam(self.vae.parameters())`
                handle.targets = frozenset(h.storage for place in fact.steps for h in self._place_value(place, state))
        elif not head:
            handle.module = self._self_module(place)
        return handle

    def _place_value(self, place: str, state: State) -> frozenset[Handle]:
        """What `place` (`self.vae`) holds here: its binding, or what it held when the function began."""
        handles = state.env.get(place)
        if handles is None:
            handles = state.env[place] = frozenset({self._external(place, state)})
        return handles

    def _fresh(self, node, place: str, value: Value, tensor: bool | None = None) -> Handle:
        key = ("fresh", place, id(node) if not isinstance(node, tuple) else (id(node[0]), node[1]))
        storage = self._storage(key, place, "fresh")
        is_tensor = value.tensor if tensor is None else tensor
        return self._born_handle(
            key,
            storage,
            AliasKind.OWN,
            node if not isinstance(node, tuple) else node[0],
            tensor=is_tensor,
            ndarray=value.ndarray,
        )

    def _born_handle(self, *args, **fields) -> Handle:
        handle = self._handle(*args, **fields)
        self._born.add(handle)
        return handle

    def _fresh_value(self, node: cst.CSTNode, tensor: bool = False, ndarray: bool = False) -> Value:
        handle = self._fresh(node, "", EMPTY, tensor=tensor)
        handle.ndarray = ndarray
        return Value(frozenset({handle}), tensor, ndarray)

    def _python_value(self, node: cst.CSTNode) -> Value:
        """Numbers, or a list of them (`x.tolist()`): a copy of the values, holding no tensor's memory."""
        key = ("value", id(node))
        return Value(frozenset({self._born_handle(key, self._storage(key, "", "value"), AliasKind.OWN, node)}))

    def _storage(self, key: tuple, label: str, origin: str, parent: Storage | None = None) -> Storage:
        storage = self._storages.get(key)
        if storage is None:
            storage = self._storages[key] = Storage(label, origin, parent)
        return storage

    def _handle(self, key: tuple, storage: Storage, kind: AliasKind, node, **fields) -> Handle:
        handle = self._handles.get(key)
        if handle is None:
            handle = self._handles[key] = Handle(storage, kind, node, **fields)
            self._elements.note(handle)
        return handle

    def _written_through(self, writes: list[Write]) -> set[Handle]:
        """Every handle a write went through, directly or via an alias made from it."""
        seen: set[Handle] = set()
        pending = [write.writer for write in writes]
        while pending:
            handle = pending.pop()
            if handle in seen:
                continue
            seen.add(handle)
            if handle.base is not None:
                pending.append(handle.base)
            pending.extend(self._other_bases.get(handle, ()))
        return seen

    def _is_temporary(self, handle: Handle) -> bool:
        """Memory allocated by this statement and not yet bound to any name."""
        return handle.kind is AliasKind.OWN and handle.storage.origin == "fresh" and handle in self._born

    def _in_graph(self, value: Value) -> None:
        if not self._no_grad:
            self.graph_storages.update(handle.storage for handle in value.handles)

    def _narrowed(self, test: cst.BaseExpression, state: State, holds: bool) -> State:
        """`state` where `test` is `holds`: `x is None` there binds x to None, `x is not None`
        leaves out the None it may hold (`if img is not None: img = up(img)` ... `img.add_(y) if
        img is not None else y` never writes the caller's `img`)."""
        check = _none_check(test)
        if check is not None and check[0] in state.env:
            self._narrow(check[0], check[1] == holds, state)
        self._narrow_grad(test, holds, state)
        return state

    def _unwritten_on_its_path(self, value: Value, node: cst.IfExp, written: State, skipped: State) -> Value:
        """`f(x) if c else x`, where `f` writes `x`: on the path that gives `x` nothing wrote it, so what the
        expression gives there is `x` as it was, an alias made after the write, not `x` read again."""
        fresh = {
            handle
            for handle in value.handles
            if written.stale.get(handle, frozenset()) - skipped.stale.get(handle, frozenset())
        }
        if not fresh:
            return value
        realiased = self._alias(Value(frozenset(fresh), value.tensor, value.ndarray), node, AliasKind.VIEW)
        return value.with_handles((value.handles - fresh) | realiased.handles)

    def _eval_narrowed(self, node: cst.BaseExpression, test: cst.BaseExpression, holds: bool, state: State) -> Value:
        """One arm of `a if test else b`, evaluated in `state` (the arm's own path, joined with the other's
        after the expression) with the tested name narrowed while it runs."""
        check = _none_check(test)
        if check is None or check[0] not in state.env:
            return self._eval(node, state)
        place = check[0]
        before = state.env[place]
        self._narrow(place, check[1] == holds, state)
        try:
            return self._eval(node, state)
        finally:
            state.env[place] = before

    def _narrow(self, place: str, is_none: bool, state: State) -> None:
        if is_none:
            state.env[place] = frozenset({self._none(place)})
        else:
            state.env[place] = frozenset(h for h in state.env[place] if h.storage.origin != "none")

    def _none(self, place: str) -> Handle:
        return self._handle(("none", place), self._storage(("none", place), place, "none"), AliasKind.OWN, None)

    def _tensor_op(self, node: cst.CSTNode) -> bool:
        """A torch function or a tensor method: its outputs are tensors computed from its inputs."""
        if not isinstance(node, cst.Call):
            return False
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in self.k.tensor_only_methods:
            return True
        return (self.imports.qualify(func) or "").startswith("torch.")

    def _only_assumed(self, value: Value) -> bool:
        """`forward(self, x)`'s `x` as passed, taken for a tensor without evidence: unpacking it
        (`a, b = x`) or iterating it (`for out in x`) shows a tuple or list rather than a tensor being
        unbound."""
        assumed = self.scope.assumed_tensor
        return assumed is not None and all(
            h.storage.origin == "param" and h.storage.label == assumed and h.base is None for h in value.handles
        )

    def _outputs_kept(self, value: Value, state: State) -> frozenset[str]:
        """The ops that kept `value`'s memory as their output for backward (`return self.act(x)` of a ReLU)."""
        return frozenset(saving.op for saving in self._savings_of(value, state) if saving.item == "output")

    def _is_array(self, value: Value) -> bool:
        return value.tensor or value.ndarray

    def _unknown_parameter(self, place: str, value: Value) -> bool:
        """`place` still holds its parameter's own value, of a type nothing in the function shows."""
        return (
            place in self.scope.params
            and self.scope.params[place] is None
            and bool(value.handles)
            and all(
                h.kind is AliasKind.OWN and h.storage.origin == "param" and h.storage.label == place
                for h in value.handles
            )
        )

    def _index_extent(self, node: cst.Subscript) -> tuple[bool, str | None]:
        """Whether `x[...]` reaches all of x (`x[:]`, `x[...]`), and the index text."""
        found = self._extents.get(id(node))
        if found is None:
            found = self._extents[id(node)] = _index_extent(node)
        return found

    def _code(self, node: cst.CSTNode) -> str:
        found = self._codes.get(id(node))
        if found is None:
            found = self._codes[id(node)] = cst.Module([]).code_for_node(node)
        return found

    def _is_no_grad(self, node: cst.BaseExpression) -> bool:
        target = node.func if isinstance(node, cst.Call) else node
        qualified = self.imports.qualify(target)
        if qualified in self.k.grad_mode_setters:  # `with torch.set_grad_enabled(False):`
            return isinstance(node, cst.Call) and bool(node.args) and is_constant(node.args[0].value, "False")
        return qualified in self.k.no_grad_contexts

    # -------------------------------------------------------------- backward


def _positional_sources(node: cst.CSTNode, arity: int) -> list[list[cst.BaseExpression]] | None:
    """The expression(s) each target of `a, b = <node>` receives, when the syntax says."""
    if isinstance(node, (cst.Tuple, cst.List)):
        if len(node.elements) != arity or any(isinstance(e, cst.StarredElement) for e in node.elements):
            return None
        return [[element.value] for element in node.elements]
    if isinstance(node, cst.IfExp):
        body, orelse = _positional_sources(node.body, arity), _positional_sources(node.orelse, arity)
        if body is None or orelse is None:
            return None
        return [b + o for b, o in zip(body, orelse)]
    return None


def _reaches(handle: Handle, dropped: Handle) -> bool:
    """`handle` can still write the memory `dropped` held. An item taken from a container
    (`rst = graph.dstdata["h"]`) is not reached through the container or its owners, only by
    taking the item anew."""
    if not handle.storage.related(dropped.storage):
        return False
    if dropped.element and (handle in dropped.chain() or handle.storage in dropped.storage.lineage()):
        return handle.storage is dropped.storage and handle not in dropped.chain()
    return True


def _names_in(target: cst.BaseExpression) -> list[cst.Name]:
    """The names a `for` target binds: `i`, `(i, (a, b))`, `*rest`."""
    if isinstance(target, cst.Name):
        return [target]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [name for element in target.elements for name in _names_in(element.value)]
    if isinstance(target, cst.StarredElement):
        return _names_in(target.value)
    return []


def _drop_dimensions(view: Value, integers: int | None) -> None:
    """`a[i]` and a row of `for row in a` have the base's dimensions less those its integers index."""
    if not integers:
        return
    for handle in view.handles:
        if handle.base is not None and handle.base.ndim is not None:
            handle.ndim = max(handle.base.ndim - integers, 0)


def _index_extent(node: cst.Subscript) -> tuple[bool, str | None]:
    elements = node.slice
    whole = all(
        (isinstance(e.slice, cst.Slice) and e.slice.lower is None and e.slice.upper is None and e.slice.step is None)
        or (isinstance(e.slice, cst.Index) and isinstance(e.slice.value, cst.Ellipsis))
        for e in elements
    )
    return (not whole, None if whole else cst.Module([]).code_for_node(cst.Subscript(cst.Name("_"), elements)))


def _operator(node: cst.AugAssign) -> str:
    return cst.Module([]).code_for_node(node.operator).strip()


def _operands(node) -> list[cst.BaseExpression]:
    if isinstance(node, cst.BinaryOperation):
        return [node.left, node.right]
    if isinstance(node, cst.UnaryOperation):
        return [node.expression]
    if isinstance(node, cst.BooleanOperation):
        return [node.left, node.right]
    return [node.left, *(target.comparator for target in node.comparisons)]


def _kept_state_dicts(end: State, writes: list[Write]) -> tuple[tuple[str, Handle, Write | None], ...]:
    """`state_dict()` aliases the method leaves on its object's attributes, each with the first write (in
    analysis order) that changed it since, if any."""
    if not end.reachable:
        return ()
    order = {id(write): position for position, write in enumerate(writes)}
    kept = []
    for place, handles in end.env.items():
        if not place.startswith("self."):
            continue
        for handle in handles:
            if handle.kind is AliasKind.STATE_DICT and handle.node is not None:
                changed = end.stale.get(handle)
                first = min(changed, key=lambda write: order.get(id(write), len(order))) if changed else None
                kept.append((place, handle, first))
    return tuple(kept)


def _none_paths_end(node: cst.If, rest: Sequence[cst.CSTNode]) -> bool:
    """`if x is not None:` without `else`, after which the first statement naming `x` reads one of
    its attributes first (`x = x.squeeze(-1)`): on None that raises, so no path skips the branch."""
    check = _none_check(node.test)
    if node.orelse is not None or check is None or check[1] or "." in check[0]:
        return False
    name = check[0]
    for statement in rest:
        if type(statement) is not cst.SimpleStatementLine:
            names = _Names()
            names.walk(statement)
            if name in names.found or names.leaves:
                return False  # a loop or a branch may not run what it holds, nor go on after it
            continue
        first = _FirstUse(name)
        first.walk(statement)
        if first.found is not None:
            return first.found
    return False


class _FirstUse(Walker):
    """Whether the first use of `name` in a statement, in evaluation order, reads an attribute of it
    unconditionally (`name.attr`, not under `and`/`or`, `if`-expressions, lambdas or comprehensions)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.found: bool | None = None

    def visit_Assign(self, node: cst.Assign) -> bool:
        self.walk(node.value)  # the value runs before the targets are bound
        for target in node.targets:
            self.walk(target.target)
        return False

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        if self.found is None and type(node.value) is cst.Name and node.value.value == self.name:
            self.found = True
        return self.found is None

    def visit_Name(self, node: cst.Name) -> None:
        if self.found is None and node.value == self.name:
            self.found = False

    def _conditional(self, node: cst.CSTNode) -> bool:
        if self.found is None and _mentions(node, self.name):
            self.found = False
        return False

    visit_BooleanOperation = visit_IfExp = visit_Lambda = _conditional
    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _conditional


def _mentions(node: cst.CSTNode, name: str) -> bool:
    names = _Names()
    names.walk(node)
    return name in names.found


class _Names(Walker):
    """The names a statement mentions, and whether it can leave the block (`return`, `raise`, ...)."""

    def __init__(self) -> None:
        self.found: set[str] = set()
        self.leaves = False

    def visit_Name(self, node: cst.Name) -> None:
        self.found.add(node.value)

    def _leave(self, node: cst.CSTNode) -> None:
        self.leaves = True

    visit_Return = visit_Raise = visit_Break = visit_Continue = visit_Yield = _leave


def _identity_test(node: cst.Comparison) -> bool:
    return all(type(target.operator) is cst.Is or type(target.operator) is cst.IsNot for target in node.comparisons)


def _formatted_expressions(node) -> list[cst.BaseExpression]:
    if isinstance(node, cst.ConcatenatedString):
        return [*_formatted_expressions(node.left), *_formatted_expressions(node.right)]
    if isinstance(node, cst.FormattedString):
        return [part.expression for part in node.parts if isinstance(part, cst.FormattedStringExpression)]
    return []


#: Types whose instances hold items and are never tensors: `isinstance(x, dict)` narrows x.
_CONTAINER_TYPES = frozenset(
    {
        "dict",
        "list",
        "tuple",
        "set",
        "Mapping",
        "MutableMapping",
        "Sequence",
        "MutableSequence",
        "OrderedDict",
        "defaultdict",
        "UserDict",
        "UserList",
        "namedtuple",
    }
)


def _sibling_attribute(written: str, prefix: str, place: str) -> bool:
    """`biomol.restype` written and `biomol.atom_mask` read: two attributes of one object are two
    objects, and reading one reads nothing of the other (the object `biomol` itself they share)."""
    if not written.startswith(prefix + "."):
        return False
    return not (written == place or written.startswith(place + ".") or place.startswith(written + "."))


def _result_name(node: cst.Assign) -> tuple[str, list[cst.Call]] | None:
    """`g = step(g)`, `a = net(x)`, `s = mask(s, m) if m is not None else s * k`: the name a statement binds to
    the result of its calls. A read of that name afterwards reads the result, never what the call wrote
    (through `g`, or into `x` when `net` returns `x`)."""
    if len(node.targets) != 1 or type(node.targets[0].target) is not cst.Name:
        return None
    calls, pending = [], [node.value]
    while pending:
        value = pending.pop()
        if type(value) is cst.Call:
            calls.append(value)
        elif type(value) is cst.IfExp:
            pending += [value.body, value.orelse]
    return (node.targets[0].target.value, calls) if calls else None


def _holds_tensors_listed(source: cst.CSTNode, value: Value) -> bool:
    """`feats[1:] = [conv(f) for f in feats[1:]]`: a list of tensors stored into a slice is a list's store (a
    tensor's would convert the list, and raises for tensors of more than one element)."""
    return type(source) in (cst.List, cst.ListComp) and any(handle.tensor for handle in value.handles)


def _list_names(scope: cst.Module | cst.FunctionDef) -> frozenset[str]:
    """Names the scope binds only to lists (`[]`, `[a, b]`, a list comprehension), never otherwise: a
    tensor indexed by one is indexed by a sequence of ints, advanced indexing, a copy."""
    return frozenset(
        name for name, values in value_bindings(scope).items() if all(is_list_display(value) for value in values)
    )


def _iterated_mapping(iterable: cst.BaseExpression) -> list[str]:
    """`batch` of `for k, v in batch.items():` (or `.keys()`): methods a tensor or an array lacks."""
    if not (isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Attribute)):
        return []
    place = dotted_name(iterable.func.value)
    return [place] if place is not None and iterable.func.attr.value in _MAPPING_ITERATORS else []


def _container_checks(test: cst.BaseExpression) -> list[str]:
    """The places `isinstance(x, dict)`, `isinstance(x, (list, tuple))`, `type(x) == dict`, `type(x) is list`
    or `type(x) in (list, tuple)` (alone or joined by `and`) shows to hold a container."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _container_checks(test.left) + _container_checks(test.right)
    tested = _isinstance_test(test) or _type_test(test)
    if tested is None:
        return []
    place, types = tested
    names = [element.value for element in types.elements] if isinstance(types, (cst.Tuple, cst.List)) else [types]
    kinds = [dotted_name(name) for name in names]
    if place is None or not kinds or not all(k is not None and k.rsplit(".", 1)[-1] in _CONTAINER_TYPES for k in kinds):
        return []
    return [place]


def _isinstance_test(test: cst.BaseExpression) -> tuple[str | None, cst.BaseExpression] | None:
    if not (isinstance(test, cst.Call) and isinstance(test.func, cst.Name) and test.func.value == "isinstance"):
        return None
    if len(test.args) != 2:
        return None
    return dotted_name(test.args[0].value), test.args[1].value


def _type_test(test: cst.BaseExpression) -> tuple[str | None, cst.BaseExpression] | None:
    """`type(x) == dict`, `type(x) is dict`: the exact class; `type(x) in (list, tuple)`: one of them."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return None
    call, target = test.left, test.comparisons[0]
    if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value == "type"):
        return None
    if len(call.args) != 1 or call.args[0].keyword is not None or call.args[0].star:
        return None
    one = isinstance(target.operator, (cst.Equal, cst.Is))
    several = isinstance(target.operator, cst.In) and isinstance(target.comparator, (cst.Tuple, cst.List))
    return (dotted_name(call.args[0].value), target.comparator) if one or several else None


def _none_check(test: cst.BaseExpression) -> tuple[str, bool] | None:
    """`x is None` -> (x, True); `x is not None` -> (x, False); anything else None."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return None
    target = test.comparisons[0]
    place = dotted_name(test.left)
    if place is None or not is_constant(target.comparator, "None"):
        return None
    if isinstance(target.operator, cst.Is):
        return place, True
    if isinstance(target.operator, cst.IsNot):
        return place, False
    return None


def _literal_key(node: cst.Subscript) -> str | None:
    """`d["image"]`, `d[0]`: the one literal key, as written; None for any other index."""
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return None
    key = node.slice[0].slice.value
    return key.value if isinstance(key, (cst.SimpleString, cst.Integer)) else None


def _views_of(value: Value, container: Value, index: str | None) -> bool:
    """Every handle of `value` is a view of `container` made by the same index text (`a[:, i]`)."""
    storages = {handle.storage for handle in container.handles}
    return bool(value.handles) and all(
        h.kind is AliasKind.VIEW and h.index == index and h.storage in storages for h in value.handles
    )


def _yields_key_first(node: cst.BaseExpression) -> bool:
    """`d.items()`, `enumerate(xs)`, `m.named_parameters()`: (key, value) pairs."""
    name = _callee_name(node) if isinstance(node, cst.Call) else None
    if name is None:
        return False
    last = name.rsplit(".", 1)[-1]
    return last in ("items", "enumerate") or last.startswith("named_")


def _callee_name(node: cst.Call) -> str | None:
    return dotted_name(node.func)


def _receiver(node: cst.Call) -> cst.BaseExpression | None:
    return node.func.value if isinstance(node.func, cst.Attribute) else (node.args[0].value if node.args else None)


def _requires_grad(value: Value) -> bool:
    return bool(value.handles) and all(handle.grad is Grad.YES for handle in value.handles)


def _indexes_dimensions(target: cst.Subscript) -> bool:
    """`c[:, 0] = v`, `c[..., i] = v`: an index of several dimensions, one a slice or `...`, which only an
    array takes (a list or dict does not): the store copies `v`'s values into `c`, holding none of `v`."""
    if len(target.slice) < 2:
        return False
    return any(
        isinstance(element.slice, cst.Slice)
        or isinstance(element.slice, cst.Index)
        and isinstance(element.slice.value, cst.Ellipsis)
        for element in target.slice
    )


def _gathered_ndim(base: Value, index: Value | None) -> int | None:
    """`counts[order]` of a 1-D numpy array and a 1-D index array: 1-D (the index's shape, F4)."""
    if index is None or not (base.ndarray and not base.tensor and index.ndarray):
        return None
    one = {handle.ndim for handle in base.handles} == {1} == {handle.ndim for handle in index.handles}
    return 1 if one else None
