"""Indexing semantics: what `x[...]` is, by what indexes it and what `x` is.

Basic indexing (ints, slices, `None`, `...`) makes a view and advanced indexing (a mask, an index
tensor, array or list) a copy, in torch and numpy alike; but numpy's integer for every dimension
gives a scalar, a copy (docs/facts.md F4, F23). The shapes that tell how many dimensions an
array has come from the knowledge tables (`aliasing.toml` [indexing]).
"""

from __future__ import annotations

import libcst as cst

from gpumem_lint.knowledge import Knowledge


def constructed_ndim(node: cst.Call, qualified: str, k: Knowledge) -> int | None:
    """`np.zeros(n)` -> 1, `np.zeros((a, b))` -> 2, `np.arange(10)` -> 1; None when unsaid."""
    if qualified in k.one_dimensional:
        return 1
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
