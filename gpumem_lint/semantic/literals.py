"""Reading a call's arguments and Python's constants off the syntax tree."""

from __future__ import annotations

import libcst as cst


def called_name(call: cst.Call) -> str | None:
    """`x.topk(k)` and `torch.topk(x, k)` -> "topk"; None for a call of an expression."""
    func = call.func
    return func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None


def keyword(call: cst.Call, name: str) -> cst.BaseExpression | None:
    """The expression passed as `name=` to `call`, if any."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    return None


def argument(call: cst.Call, name: str, position: int) -> cst.BaseExpression | None:
    """The expression passed as `name=`, or else as the positional argument at `position`, if any."""
    found = keyword(call, name)
    if found is None and len(call.args) > position and call.args[position].keyword is None:
        found = call.args[position].value
    return found


def is_constant(node: cst.BaseExpression | None, constant: str) -> bool:
    """`node` is the literal `True`, `False` or `None`."""
    return isinstance(node, cst.Name) and node.value == constant


def announces_inplace(name: str) -> bool:
    """`add_`, `quantize_`: torch's trailing underscore for an in-place op (a dunder says nothing)."""
    return name.endswith("_") and not name.endswith("__")


def is_literal(node: cst.BaseExpression) -> bool:
    """A constant of Python's own: `True`, `None`, `0`, `-1.5`, `"done"`. Never a tensor."""
    if isinstance(node, cst.UnaryOperation):
        node = node.expression
    if isinstance(node, cst.Name):
        return node.value in ("True", "False", "None")
    return isinstance(node, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString))


def split_like_tensor(node: cst.Call) -> bool:
    """`x.split(2)`, `x.split([1, 3], dim=1)`: tensor split, not `str.split(",")`."""
    if keyword(node, "dim") is not None:
        return True
    if not node.args:
        return False
    first = node.args[0].value
    return isinstance(first, (cst.Integer, cst.List, cst.Tuple)) or (
        isinstance(first, cst.UnaryOperation) and isinstance(first.expression, cst.Integer)
    )


def assigned_pairs(node: cst.Assign) -> list[tuple[cst.BaseExpression, cst.BaseExpression]]:
    """Each target of `node` with the value it gets: `self.n, self.transform = n, transform` pairs the
    elements of a tuple written out on both sides (no `*`); any other target gets the whole value."""
    pairs = []
    value = node.value
    for target in node.targets:
        bound = target.target
        if (
            isinstance(bound, (cst.Tuple, cst.List))
            and isinstance(value, (cst.Tuple, cst.List))
            and len(bound.elements) == len(value.elements)
            and not any(isinstance(e, cst.StarredElement) for e in (*bound.elements, *value.elements))
        ):
            pairs += [(t.value, v.value) for t, v in zip(bound.elements, value.elements)]
        else:
            pairs.append((bound, value))
    return pairs
