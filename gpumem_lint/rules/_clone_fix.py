"""The fix of a write that other code must not see: work on a copy (`.clone()`).

`clone_at` copies where an alias is made or a tensor is sent (`prev = h.detach()` ->
`prev = h.detach().clone()`, `q.put(t)` -> `q.put(t.clone())`); `clone_before` copies the
written tensor just before the statement that writes it (`x = x.clone()` above `x[i] = 0`).
Both are unsafe: the copy costs memory, and code that meant to share the tensor no longer does.
"""

from __future__ import annotations

import ast

import libcst as cst

from gpumem_lint.context import FileContext
from gpumem_lint.diagnostics import Position
from gpumem_lint.fixes import Applicability, Edit, Fix, insert_after, source_line
from gpumem_lint.rules._out_of_place_fix import is_inplace_true, out_of_place
from gpumem_lint.semantic.values import Write

#: Expressions that `.clone()` can follow without parentheses (`a + b.clone()` would copy only `b`).
_ATOMS = (cst.Name, cst.Attribute, cst.Call, cst.Subscript)


def clone_at(ctx: FileContext, node: cst.CSTNode | None, ndarray: bool = False) -> Fix | None:
    """`expr` -> `expr.clone()` for a name, attribute, call or subscript that is not already a copy;
    `expr.copy()` for a numpy array (`ndarray`), which has no `clone`."""
    if not isinstance(node, _ATOMS) or node.lpar or _is_clone(node):
        return None
    method = ".copy()" if ndarray else ".clone()"
    return Fix((insert_after(node, method),), Applicability.UNSAFE, f"Copy `{ctx.code(node)}` with `{method}`")


def clone_sent(ctx: FileContext, send: cst.CSTNode, write: Write) -> Fix | None:
    """`q.put(t)` -> `q.put(t.clone())`: the argument of the send (or an item of a tuple, list or dict
    passed to it, `args=(t,)`) spelled as the written tensor is named (`t`, `self.buf`), or as the
    name its write starts from (`t` of `t[0].fill_(0)`)."""
    if not isinstance(send, cst.Call):
        return None
    labels = {write.storage.label, _root(write.node)} - {"", None}
    pending: list[cst.CSTNode] = [arg.value for arg in send.args]
    while pending:
        expression = pending.pop(0)
        if isinstance(expression, (cst.Name, cst.Attribute)) and ctx.code(expression) in labels:
            return clone_at(ctx, expression)
        if isinstance(expression, (cst.Tuple, cst.List)):
            pending.extend(element.value for element in expression.elements)
        elif isinstance(expression, cst.Dict):
            pending.extend(element.value for element in expression.elements if isinstance(element, cst.DictElement))
    return None


def clone_before(ctx: FileContext, node: cst.CSTNode) -> Fix | None:
    """`x = x.clone()` above the one-line statement that `node` (a write to the plain name `x`) begins."""
    name = written_name(ctx, node)
    span = ctx.positions[node]
    row = span.start.line
    line = source_line(ctx.text, row)
    indent = line[: len(line) - len(line.lstrip())]
    if name is None or span.start.column != len(indent) or not _is_simple_statement(line.strip()):
        return None
    code = f"{name} = {name}.clone()"
    return Fix(
        (Edit(Position(row, 1), Position(row, 1), f"{indent}{code}\n"),),
        Applicability.UNSAFE,
        f"Write a copy: `{code}` first",
    )


def unshared_write(ctx: FileContext, write: Write) -> Fix | None:
    """The write made out of place where it can be (`x = x * s`, a list's item `xs[i] = xs[i] + y`),
    else on a copy made just before it (`x = x.clone()` above `x[i] = 0`)."""
    node = write.node
    if write.op == "inplace module" and not (isinstance(node, cst.Call) and any(map(is_inplace_true, node.args))):
        return _clone_layer_input(ctx, write)  # a call of the layer: its receiver is the layer, not what it writes
    if isinstance(node, cst.AugAssign) and isinstance(node.target, cst.Subscript):
        return clone_before(ctx, node) if write.op.startswith("[]") else out_of_place(ctx, node, item=True)
    return out_of_place(ctx, node) or clone_before(ctx, node)


def _clone_layer_input(ctx: FileContext, write: Write) -> Fix | None:
    """`self.act(x)` -> `self.act(x.clone())`: an in-place layer (`nn.ReLU(inplace=True)`) given the
    written tensor by its name; the layer keeps writing in place wherever else it is applied."""
    node = write.node
    if not isinstance(node, cst.Call) or not node.args or node.args[0].keyword or node.args[0].star:
        return None
    tensor = node.args[0].value
    return clone_at(ctx, tensor) if isinstance(tensor, cst.Name) or ctx.code(tensor) == write.storage.label else None


def written_name(ctx: FileContext, node: cst.CSTNode) -> str | None:
    """The plain name a write changes: `x` of `x += 1`, `x[i] = 0`, `x.add_(1).clamp_(0)`,
    `f(x, inplace=True)`; none for a name bound by an import (`torch.clamp_(x)` writes `x`)."""
    if isinstance(node, cst.AugAssign):
        node = node.target
    if isinstance(node, cst.Subscript):
        node = node.value
    if isinstance(node, cst.Call) and node.args and any(is_inplace_true(arg) for arg in node.args):
        node = node.args[0].value
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        node = node.func.value
    if not isinstance(node, cst.Name) or ctx.semantic.imports.qualify(node) is not None:
        return None
    return node.value


def _root(node: cst.CSTNode) -> str | None:
    """The name a write starts from: `t` of `t[0].fill_(0)`, `self.buf` of `self.buf.copy_(x)`."""
    if isinstance(node, cst.AugAssign):
        node = node.target
    while isinstance(node, (cst.Call, cst.Subscript)):
        if isinstance(node, cst.Subscript):
            node = node.value
        else:
            node = node.func.value if isinstance(node.func, cst.Attribute) else node.func
    return _dotted(node)


def _dotted(node: cst.CSTNode) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute) and (base := _dotted(node.value)) is not None:
        return f"{base}.{node.attr.value}"
    return None


def _is_clone(node: cst.CSTNode) -> bool:
    copies = ("clone", "copy")
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in copies


def _is_simple_statement(statement: str) -> bool:
    try:
        parsed = ast.parse(statement).body
    except SyntaxError:
        return False
    return len(parsed) == 1 and isinstance(parsed[0], (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign))
