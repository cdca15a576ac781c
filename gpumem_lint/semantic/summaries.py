"""What a function of this file returns, summarised for its callers.

`mask = make_mask(n)` is an `expand` view when `make_mask` returns one; `q, k, v =
split_heads(x)` are the outputs of one `chunk` of the caller's `x`; `w = new_weight()` is a
leaf that requires grad when the function returns an `nn.Parameter`. The analysis of the
caller composes the summary at the call (calls.py), so the rules that judge the write see
the value it reaches.

Summarised: an `expand` view, the several outputs of one split, a plain view of a parameter
(`return x.view(b, nh, -1, h, w)`: the caller's result is a view of what it passed, a split's output
still if it passed one), what an op kept as its output for backward (every `return` gives it:
`return self.body(x)` of a Sequential ending in a ReLU, `return torch.sigmoid(x)`: the caller's in-place
write to it makes backward raise), a fresh leaf that requires grad, host memory (every `return`
gives a `.cpu()` copy, its `.numpy()` or a CPU load: F49, nothing of it is the CUDA cache's), a numpy
array of its own (every `return` gives what numpy made: `box.astype(np.float32)`), and the argument
itself (`x[2:5] += 1; return x`: the caller's result is the tensor it passed, so a second call's write
changes the first call's result).
"""

from __future__ import annotations

from typing import NamedTuple

import libcst as cst

from gpumem_lint.knowledge import knowledge
from gpumem_lint.semantic.values import AliasKind, Grad, Handle, Value

#: Kinds a summary carries: what the caller's writes are judged by.
_SUMMARISED = frozenset({AliasKind.EXPAND, AliasKind.MULTI_VIEW, AliasKind.VIEW})


class Returns(NamedTuple):
    """What every `return` of a function gives back."""

    #: EXPAND, MULTI_VIEW, VIEW (of a parameter), or OWN (a new leaf, host memory, a kept output, the argument)
    kind: AliasKind
    param: str | None = None  # the parameter whose memory it is (OWN: the argument itself); None for fresh memory
    position: int | None = None  # that parameter's position, `self` included
    host: bool = False  # host memory (`return t.cpu().numpy()`), which the CUDA allocator never holds (F49)
    array: bool = False  # a numpy array of its own (`return box.astype(np.float32)`), no tensor's memory
    #: The op that kept what every `return` gives as its output for backward (`return self.act(out)`, a ReLU):
    #: a caller's in-place write to the result makes backward raise.
    saved_output: str | None = None

    @property
    def is_argument(self) -> bool:
        """Every `return` gives back the argument itself, no alias of it."""
        return self.kind is AliasKind.OWN and self.param is not None

    def argument(self, node: cst.Call, args: list[Value], skip: int) -> Value | None:
        """What the call passes for the parameter (`skip` leading parameters are bound already:
        `self`), or None when it passes it by `*args` / `**kwargs` or not at all."""
        for position, (arg, value) in enumerate(zip(node.args, args)):
            if arg.star:
                return None
            if arg.keyword is not None and arg.keyword.value == self.param:
                return value
            if arg.keyword is None and self.position is not None and position + skip == self.position:
                return value
        return None


#: Where a summary is found: (class name, function name), the class None for module-level functions.
SummaryKey = tuple[str | None, str]


def summarise(returned: list[Value], params: tuple[str, ...], outputs: list[frozenset[str]]) -> Returns | None:
    """The one thing all `returned` values are, or None when they differ or are not summarised.
    `outputs`: for each, the ops that kept it as their output."""
    kept = set().union(*outputs) if outputs and all(outputs) else set()
    if len(kept) == 1 and all(value.handles and not value.container for value in returned):
        return Returns(AliasKind.OWN, saved_output=kept.pop())
    if returned and all(value.handles and all(h.storage.on_host() for h in value.handles) for value in returned):
        return Returns(AliasKind.OWN, host=True)
    if returned and all(value.handles and all(h.own_array() for h in value.handles) for value in returned):
        return Returns(AliasKind.OWN, array=True)
    found: set[Returns] = set()
    for value in returned:
        if value.container or not value.handles:
            return None
        for handle in value.handles:
            summary = _summary(handle, params)
            if summary is None:
                return None
            found.add(summary)
    return found.pop() if len(found) == 1 else None


def _summary(handle: Handle, params: tuple[str, ...]) -> Returns | None:
    storage = handle.storage
    if handle.kind is AliasKind.OWN and storage.origin == "param" and storage.label in params and handle.base is None:
        return Returns(AliasKind.OWN, storage.label, params.index(storage.label))  # the argument itself
    if handle.kind in (AliasKind.OWN, AliasKind.WRAPPER):  # `torch.randn(n, requires_grad=True)`, `nn.Parameter(t)`
        fresh_leaf = handle.storage.origin == "fresh" and handle.leaf and handle.grad is Grad.YES
        return Returns(AliasKind.OWN, None) if fresh_leaf else None
    if handle.kind not in _SUMMARISED or handle.base is None:
        return None
    if storage.origin == "fresh" and storage.parent is None:
        return Returns(handle.kind, None) if handle.kind is not AliasKind.VIEW else None  # a new tensor, to the caller
    if handle.kind is AliasKind.VIEW and not made_by_view_call(handle.node):
        return None  # `x[:, 1:]`, `x.T`: what the fast path cannot tell from other code (fast_path.py SUMMARY_LINKS)
    if storage.origin == "param" and storage.label in params and handle.base.kind is AliasKind.OWN:
        return Returns(handle.kind, storage.label, params.index(storage.label))
    return None


def view_call_names() -> frozenset[str]:
    """The methods and functions whose call a returned view is summarised from (`x.view(...)`, `torch.narrow(x, ...)`)."""
    k = knowledge()
    return k.view_methods | k.view_functions


def made_by_view_call(node: cst.CSTNode | None) -> bool:
    if type(node) is not cst.Call:
        return False
    func = node.func
    name = func.attr.value if type(func) is cst.Attribute else func.value if type(func) is cst.Name else None
    return name in view_call_names()
