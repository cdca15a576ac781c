"""The fix of a write other tensors depend on: compute a new tensor instead (`x += y` -> `x = x + y`)."""

from __future__ import annotations

import ast
import json
from functools import cache

import libcst as cst

from gpumem_lint.context import FileContext
from gpumem_lint.fixes import Applicability, Fix, replace, source_line
from gpumem_lint.knowledge import data_text


def out_of_place(ctx: FileContext, node: cst.CSTNode, *, item: bool = False) -> Fix | None:
    """For a plain name `x`: `x += y` -> `x = x + y`; `x.mul_(y)` or `x.sub_(m).div_(s)` (a statement)
    -> `x = x.mul(y)`, `x = x.sub(m).div(s)` (returned: `return x.add(n).clamp(0, 1)`), `torch.sigmoid_(x)`
    -> `x = torch.sigmoid(x)`; `F.relu(x, inplace=True)` -> `F.relu(x)`, bound to `x`
    when it is a statement. With `item`, `xs[i] += y` on a container's item -> `xs[i] = xs[i] + y`."""
    if isinstance(node, cst.AugAssign) and (
        isinstance(node.target, cst.Name) or item and isinstance(node.target, cst.Subscript)
    ):
        operator = ctx.code(node.operator).strip().removesuffix("=")
        target = ctx.code(node.target)
        code = f"{target} = {target} {operator} {ctx.code(node.value)}"
    elif isinstance(node, cst.Call) and (chain := _out_of_place_chain(ctx, node)) is not None and _is_statement(
        ctx, node
    ):
        target, new = chain
        code = f"{target} = {_render(new)}"
    elif isinstance(node, cst.Call) and (chain := _out_of_place_chain(ctx, node)) is not None and _is_statement(
        ctx, node, "return "
    ):
        code = _render(chain[1])
    elif isinstance(node, cst.Call) and (function := _out_of_place_function(ctx, node)) is not None and (
        _is_statement(ctx, node) or _is_statement(ctx, node, "return ")
    ):
        target, new = function
        code = f"{target} = {_render(new)}" if _is_statement(ctx, node) else _render(new)
    elif isinstance(node, cst.Call) and (functional := _without_inplace(node)) is not None:
        target, new = functional
        code = f"{target} = {_render(new)}" if _is_statement(ctx, node) else _render(new)
    elif isinstance(node, cst.Call) and (value := _out_of_place_value(ctx, node)) is not None and not _is_statement(
        ctx, node
    ):
        code = _render(value)
    else:
        return None
    return Fix((replace(node, code),), Applicability.UNSAFE, f"Write out of place: `{code}`")


def _out_of_place_chain(ctx: FileContext, call: cst.Call) -> tuple[str, cst.Call] | None:
    """`x.a_(…).b_(…)`, every method in place with an out-of-place twin: (`x`, `x.a(…).b(…)`); not a
    module's function (`torch.clamp_(x)`: `torch` is imported)."""
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value not in _methods_with_twin():
        return None
    new_func = func.with_changes(attr=cst.Name(func.attr.value[:-1]))
    if isinstance(func.value, cst.Name):
        if ctx.semantic.imports.qualify(func.value) is not None:
            return None
        return func.value.value, call.with_changes(func=new_func)
    if isinstance(func.value, cst.Call) and (inner := _out_of_place_chain(ctx, func.value)) is not None:
        return inner[0], call.with_changes(func=new_func.with_changes(value=inner[1]))
    return None


def _out_of_place_value(ctx: FileContext, call: cst.Call) -> cst.Call | None:
    """`states[0].squeeze_(0)` whose result is used -> `states[0].squeeze(0)`: the same value, without
    writing the receiver; a module's function by its own twin (`torch.sigmoid_(q)` -> `torch.sigmoid(q)`)."""
    func = call.func
    if isinstance(func, cst.Attribute) and ctx.semantic.imports.qualify(func.value) is not None:
        function = _out_of_place_function(ctx, call)
        return None if function is None else function[1]
    if not isinstance(func, cst.Attribute) or func.attr.value not in _methods_with_twin():
        return None
    new_func = func.with_changes(attr=cst.Name(func.attr.value[:-1]))
    if isinstance(func.value, cst.Call) and (inner := _out_of_place_value(ctx, func.value)) is not None:
        return call.with_changes(func=new_func.with_changes(value=inner))
    return call.with_changes(func=new_func)


def _out_of_place_function(ctx: FileContext, call: cst.Call) -> tuple[str, cst.Call] | None:
    """`torch.sigmoid_(x, …)` or `F.relu_(x)` with `x` a plain name: (`x`, `torch.sigmoid(x, …)`)."""
    name = ctx.semantic.imports.qualify(call.func)
    if name is None or not isinstance(call.func, cst.Attribute) or not call.args or call.args[0].keyword:
        return None
    module, _, function = name.rpartition(".")
    if function not in _functions_with_twin().get(module, ()):
        return None
    first = call.args[0].value
    if not isinstance(first, cst.Name) or ctx.semantic.imports.qualify(first) is not None:
        return None
    return first.value, call.with_changes(func=call.func.with_changes(attr=cst.Name(function[:-1])))


def _without_inplace(call: cst.Call) -> tuple[str, cst.Call] | None:
    """`f(x, …, inplace=True)` with `x` a plain name: (`x`, `f(x, …)`)."""
    if not call.args or not isinstance(call.args[0].value, cst.Name) or call.args[0].keyword is not None:
        return None
    kept = [arg for arg in call.args if not is_inplace_true(arg)]
    if len(kept) == len(call.args):
        return None
    kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return call.args[0].value.value, call.with_changes(args=kept)


def is_inplace_true(arg: cst.Arg) -> bool:
    """The argument `inplace=True`."""
    return (
        arg.keyword is not None
        and arg.keyword.value == "inplace"
        and isinstance(arg.value, cst.Name)
        and arg.value.value == "True"
    )


def _render(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


@cache
def _methods_with_twin() -> frozenset[str]:
    """In-place methods whose out-of-place twin exists: of values (`mul_`) and of layout (`squeeze_`)."""
    return frozenset(_ops()["inplace_methods_with_twin"]) | frozenset(_ops()["inplace_view_methods_with_twin"])


@cache
def _functions_with_twin() -> dict[str, frozenset[str]]:
    """In-place functions by module whose out-of-place twin exists (`torch.sigmoid_` -> `torch.sigmoid`)."""
    ops = _ops()
    return {
        "torch": frozenset(ops["inplace_functions_with_twin"]),
        "torch.nn.functional": frozenset(ops["functional_inplace_underscore"]),
    }


@cache
def _ops() -> dict:
    return json.loads(data_text("ops.json"))


def _is_statement(ctx: FileContext, node: cst.Call, keyword: str = "") -> bool:
    """The call is the whole statement on its line (a comment may follow), so its result is not used
    (with `keyword` "return ": the statement returns it)."""
    return is_statement(ctx, node, ast.Return if keyword else ast.Expr)


def is_statement(ctx: FileContext, node: cst.CSTNode, kind: type[ast.stmt] = ast.Expr) -> bool:
    """`node` is the value of the one statement of kind `kind` on its line (`f(x)  # note`)."""
    span = ctx.positions[node]
    if span.start.line != span.end.line:
        return False
    line = source_line(ctx.text, span.start.line).strip()
    try:
        body = ast.parse(line).body
    except SyntaxError:
        return False
    if len(body) != 1 or not isinstance(body[0], kind) or body[0].value is None:
        return False
    return ast.get_source_segment(line, body[0].value) == ctx.code(node).strip()
