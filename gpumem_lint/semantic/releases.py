"""Memory a `del` does not release: at `torch.cuda.empty_cache()` right after `del x` (nothing but other
`del`s, `gc.collect()` and `name = None` between), the deleted names whose memory something else still
refers to, so the allocator has nothing of theirs to return.

What still refers to it: another place bound to the same object or an alias of it (`self.last = x`,
`y = x`, a view `x[0]`, `x.detach()`, `x.numpy()`, `x.state_dict()`), a list or dict made in this
function that holds it (`outputs.append(x)`, `{"model": x}`; one holding an item of it, `{k: sd[k]}`,
keeps only that item), or an optimizer built directly from its `parameters()` (it keeps them in
`param_groups`). A parameter of the function is not judged by itself: the caller may hold it, or may
have passed a temporary, which CPython 3.11+ moves into the callee's frame (so `del` there does free
it), nor is host memory (`t.cpu()`, `torch.load(f, map_location="cpu")`),
which the CUDA cache never holds (F49). Mixed into `ScopeAnalyzer`, which calls `_note_statement` at
each small statement, `_note_delete` at each `del` target and `_note_release_call` at each call.
Measured in tests/test_release_facts.py (docs/facts.md F32).
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from gpumem_lint.knowledge.memory_api import memory_api
from gpumem_lint.semantic.imports import dotted_name
from gpumem_lint.semantic.literals import is_constant
from gpumem_lint.semantic.values import AliasKind, Handle, Role, State

#: Calls that may stand between the `del` and `empty_cache()` without ending the release.
_RELEASE_STEPS = frozenset({"gc.collect"})


@dataclass(frozen=True, eq=False)
class Retained:
    call: cst.Call  # the empty_cache() call
    deleted: cst.CSTNode  # the target in the `del` statement
    name: str  # the place it deleted
    holder: str  # the place that still refers to the memory
    holder_node: cst.CSTNode | None  # the expression that made the holder's alias (None: the same object)


class ReleaseSemantics:
    def _init_releases(self) -> None:
        self.retained: dict[tuple[int, int], Retained] = {}  # by (call, deleted): loops evaluate twice
        self._deleted: dict[str, tuple[cst.CSTNode, frozenset[Handle]]] = {}

    def _note_statement(self, node: cst.BaseSmallStatement) -> None:
        """Anything else between the `del` and the call ends the release it began."""
        if self._deleted and not self._is_release_step(node):
            self._deleted.clear()

    def _is_release_step(self, node: cst.BaseSmallStatement) -> bool:
        if isinstance(node, (cst.Del, cst.Pass)):
            return True
        if isinstance(node, cst.Assign):
            return is_constant(node.value, "None")
        if isinstance(node, cst.Expr) and isinstance(node.value, cst.Call):
            qualified = self.imports.qualify(node.value.func)
            return qualified in _RELEASE_STEPS or qualified in memory_api().empty_cache_functions
        return False

    def _note_delete(self, place: str, target: cst.CSTNode, state: State) -> None:
        handles = frozenset(h for h in state.env.get(place, ()) if h.storage.origin != "value")
        if handles and all(h.storage.on_host() for h in handles):
            return  # `ckpt = torch.load(f, map_location="cpu")`: host memory, none of it the cache's to return
        if handles:  # `x = None; del x` deletes no memory, nor `x = t.tolist(); del x`
            self._deleted[place] = (target, handles)

    def _note_release_call(self, node: cst.Call, qualified: str | None, state: State) -> None:
        if qualified not in memory_api().empty_cache_functions:
            return
        for place, (target, handles) in self._deleted.items():
            # One object on every path: where `if` arms (or loop passes) bind others, the one a holder
            # keeps may not be the one deleted on the path taken, and flags like `train_encoder` decide.
            if len(handles) != 1:
                continue
            (handle,) = handles
            if handle.element or handle.role is not None:
                continue  # an item of a loop, held by what it iterates; an optimizer, whose state is not followed
            found = _holder(handle, state, self._deleted.keys())
            if found is not None:
                holder, alias = found
                made = None if alias is handle else alias.node
                self.retained.setdefault((id(node), id(target)), Retained(node, target, place, holder, made))


def _holder(deleted_handle: Handle, state: State, deleted) -> tuple[str, Handle] | None:
    """A place that still refers to the memory of `deleted_handle`, and the handle it refers to it by
    (`deleted`: the places deleted, whose attributes went with them)."""
    storages = {deleted_handle.storage}
    for place, held in state.env.items():
        if place in deleted or any(head in deleted for head in _heads(place)):
            continue  # `out.past_key_values` after `del out`; `out` itself, deleted under an `if`
        for handle in held:
            if handle.role is Role.OPTIMIZER and handle.targets & storages and _built_directly(handle.node):
                return place, handle
            # `loss = out["loss"]` is one item of what `out` held: the rest is freed. A view keeps all
            # of a tensor's storage.
            if handle.role is None and not _item(handle) and _refers(handle, storages):
                return place, handle
    for place, held in state.held.items():
        if state.env.get(place) and not any(handle.keeps for handle in state.env[place]):
            continue  # an object of unknown class (`meter.add(x)` may keep a sum, not x); a keeper keeps x
        for handle in held:
            if not _item(handle) and _refers(handle, storages):
                return place, handle
    return None


def _item(handle: Handle) -> bool:
    """One item of a container, or what holds one: `{k: state_dict[k]}` keeps the tensor under k,
    not the rest of `state_dict`."""
    return any(h.element for h in handle.chain())


def _refers(handle: Handle, storages: set) -> bool:
    """`model.parameters()` is a generator, which lets the module go once it is spent."""
    return handle.storage in storages and handle.kind is not AliasKind.PARAMETERS


def _heads(place: str) -> list[str]:
    """`a.b.c` -> `a`, `a.b`."""
    parts = place.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _built_directly(call: cst.CSTNode | None) -> bool:
    """`AdamW(model.parameters())`: not a list of groups filled on some path (`params_to_optimize`),
    which may hold another module's parameters on the path that deletes this one."""
    if not isinstance(call, cst.Call) or not call.args:
        return False
    first = call.args[0].value
    return isinstance(first, cst.Call) and dotted_name(first.func) is not None
