"""Indexing semantics: what `x[...]` is, by what indexes it and what `x` is.

Basic indexing (ints, slices, `None`, `...`) makes a view and advanced indexing (a mask, an index
tensor, array or list) a copy, in torch and numpy alike; but numpy's integer for every dimension
gives a scalar, a copy (docs/facts.md F4, F23). The shapes that tell how many dimensions an
array has come from the knowledge tables (`aliasing.toml` [indexing]).
"""

from __future__ import annotations

import re

import libcst as cst

from gpumem_lint.knowledge import Knowledge


def constructed_ndim(node: cst.Call, qualified: str, k: Knowledge) -> int | None:
    """`np.zeros(n)` -> 1, `np.zeros((a, b))` -> 2, `np.arange(10)` -> 1; None when unsaid."""
    if qualified in k.one_dimensional:
        return None if any(arg.keyword is not None and arg.keyword.value == "axis" for arg in node.args) else 1
    if qualified not in k.shape_constructors or not node.args or node.args[0].keyword is not None:
        return None
    shape = node.args[0].value
    if isinstance(shape, (cst.Tuple, cst.List)):
        if any(isinstance(element, cst.StarredElement) for element in shape.elements):
            return None
        return len(shape.elements)
    # A number of elements; a name holding a tuple would be more dimensions, and then its
    # rows are taken for copies: a missed alias, never a false one.
    return 1 if isinstance(shape, (cst.Integer, cst.Name, cst.Attribute)) else None


_NAME = re.compile(r"(?<![.\w])[A-Za-z_]\w*")


def index_names(index: str) -> frozenset[str]:
    """The variables an index's text (`_[i, j + 1]`, as `flow._index_extent` writes it) reads."""
    return frozenset(_NAME.findall(index[1:]))


def dimensions(index: str) -> list[str] | None:
    """`_[:, :-1]` -> [":", ":-1"]: the index text `flow._index_extent` keeps, split by dimension."""
    try:
        subscript = cst.parse_expression(index)
    except cst.ParserSyntaxError:
        return None
    if not isinstance(subscript, cst.Subscript):
        return None
    return [cst.Module([]).code_for_node(element.slice).strip() for element in subscript.slice]


def indexes_by(index: str, names: frozenset[str]) -> bool:
    """Whether some dimension of the index text is one of `names`, or one of them moved by an integer
    (`_[i, :n]`, `_[i + 1]` by `i`): two values of that name select elements apart, whatever the other
    dimensions take."""
    return bool(index_names(index) & names) and any(_offset_of(part) in names for part in dimensions(index) or ())


_OFFSET = re.compile(r"^\(?\s*(?:(\w+)\s*[-+]\s*\d+|\d+\s*\+\s*(\w+))\s*\)?$")


def _offset_of(part: str) -> str:
    """`i + 1`, `i - 2`, `1 + i` -> `i`: the name an integer offset moves; any other text as it is."""
    match = _OFFSET.match(part)
    return (match.group(1) or match.group(2)) if match else part


def integer_count(node: cst.Subscript) -> int | None:
    """How many integers index `x[...]` when nothing else does (`a[i]`, `a[0, j]`); None otherwise.
    Evaluated names that are arrays make advanced indexing, which the caller has ruled out."""
    count = 0
    for element in node.slice:
        index = element.slice
        if not isinstance(index, cst.Index) or isinstance(index.value, (cst.Ellipsis, cst.List, cst.Tuple)):
            return None
        if isinstance(index.value, cst.Name) and index.value.value == "None":
            return None
        count += 1
    return count


def gives_scalar(base_ndims: set[int | None], integers: int | None) -> bool:
    """numpy's `a[i]` on a 1-D array (an integer for every dimension) is a scalar copy."""
    return integers is not None and base_ndims == {integers}


def expanded_dims(expand: cst.CSTNode) -> frozenset[int]:
    """The dimensions an `expand` call repeats, where the syntax shows the size-1 dimension it
    stretches: `x.unsqueeze(0).expand(n, d)` -> {0}, `x.view(k, 1).expand(k, k)` -> {1},
    `x[None].expand(n, d)` -> {0}; empty when unsaid. `x[:, None].expand_as(y)` stretches its
    source's size-1 dimensions to `y`'s sizes, taken for more than one (why else expand)."""
    sizes = _expand_sizes(expand)
    if sizes is None:
        ndim = _expanded_as_ndim(expand)
        return frozenset() if ndim is None else frozenset(_size_one_dims(expand.func.value, ndim))
    return frozenset(d for d in _size_one_dims(expand.func.value, len(sizes)) if not _is_one_or_keep(sizes[d]))


def expanded_ndim(expand: cst.CSTNode) -> int | None:
    """How many dimensions `x.expand(a, b, c)` has (3), when its sizes are written out; of
    `x.expand_as(y)`, as many as the syntax shows its source has (`w[:, None, None]`: 3), `y`
    having as many (more would add leading repeated dimensions)."""
    sizes = _expand_sizes(expand)
    return _expanded_as_ndim(expand) if sizes is None else len(sizes)


def _expanded_as_ndim(expand: cst.CSTNode) -> int | None:
    if not (isinstance(expand, cst.Call) and isinstance(expand.func, cst.Attribute)):
        return None
    if expand.func.attr.value != "expand_as" or len(expand.args) != 1:
        return None
    return _shown_ndim(expand.func.value)


def _shown_ndim(base: cst.BaseExpression) -> int | None:
    """How many dimensions the syntax shows a tensor has: `x.view(k, 1)` 2, `torch.ones(4, 1)` 2,
    `x[:, None, None, None]` 4 (the dimensions of `x` it does not index come after, none of size 1)."""
    if isinstance(base, cst.Subscript):
        indexes = [element.slice for element in base.slice]
        return len(indexes) if all(_is_none(i) or _is_full_slice(i) for i in indexes) else None
    if not (isinstance(base, cst.Call) and isinstance(base.func, cst.Attribute) and base.args):
        return None
    if any(arg.keyword or arg.star for arg in base.args):
        return None
    method = base.func.attr.value
    shaped = method in ("view", "reshape") or (
        method in _TORCH_FACTORIES and isinstance(base.func.value, cst.Name) and base.func.value.value == "torch"
    )
    if not shaped:
        return None
    if len(base.args) == 1 and isinstance(base.args[0].value, (cst.Tuple, cst.List)):
        return len(base.args[0].value.elements)
    return len(base.args)


def _expand_sizes(expand: cst.CSTNode) -> list[cst.BaseExpression] | None:
    if not (isinstance(expand, cst.Call) and isinstance(expand.func, cst.Attribute)):
        return None
    if expand.func.attr.value != "expand" or any(arg.keyword or arg.star for arg in expand.args):
        return None
    sizes = [arg.value for arg in expand.args]
    if len(sizes) == 1 and isinstance(sizes[0], (cst.Tuple, cst.List)):
        sizes = [element.value for element in sizes[0].elements]
    return sizes


def _size_one_dims(base: cst.BaseExpression, ndim: int) -> set[int]:
    if isinstance(base, cst.Call) and isinstance(base.func, cst.Attribute) and base.args:
        method, args = base.func.attr.value, [arg.value for arg in base.args]
        if method == "unsqueeze" and len(args) == 1 and _integer(args[0]) is not None:
            position = _integer(args[0])
            position = position + ndim if position < 0 else position
            return {position} if 0 <= position < ndim else set()
        shaped = method in ("view", "reshape") or (
            method in _TORCH_FACTORIES and isinstance(base.func.value, cst.Name) and base.func.value.value == "torch"
        )
        if shaped and len(args) == ndim:  # `x.view(k, 1)`, `torch.rand(3, 1)`
            return {d for d, size in enumerate(args) if _integer(size) == 1}
    if isinstance(base, cst.Subscript) and len(base.slice) <= ndim:
        indexes = [element.slice for element in base.slice]
        if all(_is_none(i) or _is_full_slice(i) for i in indexes):
            return {d for d, index in enumerate(indexes) if _is_none(index)}
    return set()


def keeps_dims(target: cst.Subscript, dims: frozenset[int], ndim: int | None = None) -> bool:
    """Whether basic indexing `x[...]` keeps one of `dims` with more than one element: a full slice
    or no index there (`J[:, i]` keeps dimension 0, `J[0]` does not; on a 3-D `J`, `J[..., 0, 2]`
    keeps dimension 0). False where unknown: `...` on a tensor of unknown `ndim`, `None`, or an
    index that may be a mask or an index tensor (`x[x < 0] = v` only warns)."""
    indexes: list[cst.BaseSlice | None] = [element.slice for element in target.slice]
    ellipses = [n for n, i in enumerate(indexes) if isinstance(i, cst.Index) and isinstance(i.value, cst.Ellipsis)]
    if len(ellipses) == 1 and ndim is not None and len(indexes) - 1 <= ndim:
        at = ellipses[0]
        indexes[at : at + 1] = [None] * (ndim - len(indexes) + 1)  # the dimensions `...` stands for, whole
    if not all(i is None or isinstance(i, cst.Slice) or _plain_integer(i) for i in indexes):
        return False
    return any(d >= len(indexes) or indexes[d] is None or _is_full_slice(indexes[d]) for d in dims)


def advanced_by_syntax(target: cst.Subscript) -> bool:
    """Whether the syntax shows a mask or an index tensor among `x[...]`'s indexes: a comparison
    (`x[x < 0]`, `x[(x < 0).data]`), a mask combined or inverted (`x[~m]`, `x[a & b]`), a list
    (`x[[0, 2]]`). A bare name may be either an integer or a tensor, so it is not taken for one."""
    return any(isinstance(element.slice, cst.Index) and _mask_or_list(element.slice.value) for element in target.slice)


def _mask_or_list(node: cst.BaseExpression) -> bool:
    while isinstance(node, (cst.Attribute, cst.Call)):  # `(x < 0).data`, `(x < 0).bool()`
        node = node.value if isinstance(node, cst.Attribute) else node.func
    if isinstance(node, cst.UnaryOperation):
        return isinstance(node.operator, cst.BitInvert)
    if isinstance(node, cst.BinaryOperation):
        return isinstance(node.operator, (cst.BitAnd, cst.BitOr, cst.BitXor))
    return isinstance(node, (cst.Comparison, cst.List))


#: `torch.<name>(*sizes)`: factories whose positional arguments are the shape.
_TORCH_FACTORIES = frozenset({"zeros", "ones", "empty", "rand", "randn"})


def _plain_integer(index: cst.BaseSlice) -> bool:
    """An integer literal or a name (taken for an integer: a loop index)."""
    if not isinstance(index, cst.Index):
        return False
    value = index.value
    if isinstance(value, cst.Name):
        return value.value != "None"
    return _integer(value) is not None


def _integer(node: cst.BaseExpression) -> int | None:
    if isinstance(node, cst.Integer):
        return node.evaluated_value
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = _integer(node.expression)
        return None if inner is None else -inner
    return None


def _is_one_or_keep(size: cst.BaseExpression) -> bool:
    return _integer(size) in (1, -1)


def _is_none(index: cst.BaseSlice) -> bool:
    return isinstance(index, cst.Index) and isinstance(index.value, cst.Name) and index.value.value == "None"


def _is_full_slice(index: cst.BaseSlice) -> bool:
    return isinstance(index, cst.Slice) and index.lower is None and index.upper is None


def keyed_by_string(node: cst.Subscript) -> bool:
    """`batch["image"]`, `td[("agents", "action")]`: an item of a mapping; tensors are never indexed by strings."""
    return any(isinstance(element.slice, cst.Index) and _is_key(element.slice.value) for element in node.slice)


def _is_key(index: cst.BaseExpression) -> bool:
    """A string, or a tuple of strings (a nested key)."""
    if isinstance(index, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)):
        return True
    return isinstance(index, cst.Tuple) and bool(index.elements) and all(_is_key(e.value) for e in index.elements)

