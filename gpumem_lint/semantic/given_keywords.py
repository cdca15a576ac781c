"""The keyword arguments a call is given, its `**` spreads followed.

`spread_keywords(call, scope)`: what a dict written out in the call gives (`**{"k": v}`), and what `**name`
gives when the function last bound `name`, before the call, to one (`kwargs = dict(train=True)`,
`{"transform": t}`), with the string keys it stored into it since (`kwargs["collate_fn"] = collate`).
`GivenKeywords(module).of(call)`: every keyword the call is given, each with the function its value is
written in: its own keywords, those spreads, and, for a `**kwargs` parameter of the function around it,
what the module's calls of that function put in it (`tally(data, collate_fn=f)` for
`def tally(data, **kwargs): return DataLoader(data, **kwargs)`), a few calls up.
"""

from __future__ import annotations

import libcst as cst

from gpumem_lint.semantic.imports import dotted_name
from gpumem_lint.semantic.pickling import enclosing_functions
from gpumem_lint.semantic.walk import Walker

#: How many functions up the search follows a `**kwargs` parameter to the calls that fill it.
_DEPTH = 3

Given = tuple[str, cst.BaseExpression, "cst.FunctionDef | None"]


def spread_keywords(call: cst.Call, scope: cst.CSTNode) -> list[tuple[str, cst.BaseExpression]]:
    """The keyword arguments `**` spreads give `call`: a dict written out in the call (`**{"k": v}`,
    `**dict(k=v)`), or for `**name`, where the last binding of `name` before the call in `scope` (a function,
    or the module) is one, that dict and what it stored under a string key since; a binding after the call
    (`kwargs = {...}` for the next call) is not this one."""
    spreads = [arg.value for arg in call.args if arg.star == "**"]
    found = [item for value in spreads for item in _written_keywords(value) or ()]
    names = list(dict.fromkeys(value.value for value in spreads if isinstance(value, cst.Name)))  # in order
    if not names:
        return found
    bindings = _BindingsBefore(call, set(names))
    bindings.walk(scope)
    for name in names:
        written = _written_keywords(bindings.last.get(name))
        if written is not None:
            found += written + bindings.stores.get(name, [])
    return found


def _written_keywords(value: cst.BaseExpression | None) -> list[tuple[str, cst.BaseExpression]] | None:
    """The string keys of a dict written out, `dict(train=True, transform=t)` or `{"transform": t}`, with
    their values; None for any other value."""
    if isinstance(value, cst.Call) and dotted_name(value.func) == "dict":
        return [(arg.keyword.value, arg.value) for arg in value.args if arg.keyword is not None]
    if isinstance(value, cst.Dict):
        return [
            (element.key.evaluated_value, element.value)
            for element in value.elements
            if isinstance(element, cst.DictElement) and isinstance(element.key, cst.SimpleString)
        ]
    return None


class _BindingsBefore(Walker):
    """The value last assigned to each of `names` before `call`, in source order, and the items stored
    into it since (`kwargs["key"] = value`)."""

    def __init__(self, call: cst.Call, names: set[str]) -> None:
        self.call, self.names = call, names
        self.last: dict[str, cst.BaseExpression] = {}
        self.stores: dict[str, list[tuple[str, cst.BaseExpression]]] = {}
        self.reached = False

    def visit_Assign(self, node: cst.Assign) -> bool:
        if not self.reached:
            for target in node.targets:
                bound = target.target
                if isinstance(bound, cst.Name) and bound.value in self.names:
                    self.last[bound.value] = node.value
                    self.stores[bound.value] = []
                elif (key := _stored_key(bound, self.names)) is not None:
                    self.stores.setdefault(bound.value.value, []).append((key, node.value))
        return not self.reached

    def visit_Call(self, node: cst.Call) -> bool:
        if node is self.call:
            self.reached = True
        return not self.reached


def _stored_key(target: cst.BaseExpression, names: set[str]) -> str | None:
    """`"collate_fn"` of `kwargs["collate_fn"] = ...` for `kwargs` one of `names`."""
    if not (isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name) and target.value.value in names):
        return None
    if len(target.slice) != 1 or not isinstance(target.slice[0].slice, cst.Index):
        return None
    key = target.slice[0].slice.value
    return key.evaluated_value if isinstance(key, cst.SimpleString) else None


class GivenKeywords:
    """The module's calls, by the name they call and by the function around them."""

    def __init__(self, module: cst.Module) -> None:
        walker = _Callers()
        walker.walk(module)
        self.module = module
        self.enclosing = enclosing_functions(module)
        self.callers = walker.callers

    def of(self, call: cst.Call, depth: int = _DEPTH) -> list[Given]:
        scope = self.enclosing.get(id(call))
        given: list[Given] = [(arg.keyword.value, arg.value, scope) for arg in call.args if arg.keyword is not None]
        given += [(key, value, scope) for key, value in spread_keywords(call, scope or self.module)]
        rest = scope.params.star_kwarg if scope is not None else None
        if depth == 0 or not isinstance(rest, cst.Param):
            return given
        if not any(arg.star == "**" and dotted_name(arg.value) == rest.name.value for arg in call.args):
            return given
        named = {param.name.value for param in (*scope.params.params, *scope.params.kwonly_params)}
        for caller in self.callers.get(scope.name.value, ()):
            given += [item for item in self.of(caller, depth - 1) if item[0] not in named]
        return given


class _Callers(Walker):
    def __init__(self) -> None:
        #: `f` -> the calls `f(...)` and `self.f(...)`: what may run a function or method named `f`.
        self.callers: dict[str, list[cst.Call]] = {}

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Name):
            self.callers.setdefault(func.value, []).append(node)
        elif isinstance(func, cst.Attribute) and dotted_name(func.value) == "self":
            self.callers.setdefault(func.attr.value, []).append(node)
