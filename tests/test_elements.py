"""Which handles a write reaches: elements of one tensor named by constants are apart
(gpumem_lint/semantic/elements.py), and binding a place anew forgets its attributes'
(gpumem_lint/semantic/attribute_places.py)."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from gpumem_lint.semantic.attribute_places import AttributePlaces
from gpumem_lint.semantic.model import SemanticModel


def _read_places(source: str) -> set[tuple[str, str]]:
    """(the read place, the written alias's code) of every read of a written alias in `f`."""
    module = cst.parse_module("import torch\n\n" + textwrap.dedent(source))
    model = SemanticModel.build(module)
    (facts,) = [facts for facts in model.facts if facts.scope.name == "f"]
    return {(read.place, model.code(read.write.writer.node)) for read in facts.reads}


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # Another row of the same tensor is other memory; the tensor itself sees the write.
        ("def f(x: torch.Tensor):\n    a = x[0]\n    b = x[1]\n    a.add_(1)\n    return b, x\n", {("x", "x[0]")}),
        # A store into one row, read through another.
        ("def f(x: torch.Tensor):\n    b = x[1]\n    x[0] = 0\n    return b\n", set()),
        # The same row, or a row named by a variable, may be the written one.
        ("def f(x: torch.Tensor):\n    a = x[0]\n    b = x[0]\n    a.add_(1)\n    return b\n", {("b", "x[0]")}),
        ("def f(x: torch.Tensor, i):\n    a = x[0]\n    b = x[i]\n    a.add_(1)\n    return b\n", {("b", "x[0]")}),
        # Rows of an expanded tensor share memory.
        (
            "def f(x: torch.Tensor):\n    e = x.expand(4, 3)\n    a = e[0]\n    b = e[1]\n    a.add_(1)\n    return b\n",
            {("b", "e[0]")},
        ),
        # Outputs of one split are apart, also when taken by index and by unpacking.
        (
            (
                "def f(x: torch.Tensor):\n    parts = x.split(2)\n    q, k = parts\n    first = parts[0]\n"
                "    q.add_(1)\n    return k, first\n"
            ),
            {("first", "q")},
        ),
        # Rows of a row are apart from each other, not from another row of the tensor.
        (
            "def f(x: torch.Tensor):\n    r = x[1]\n    a = r[0]\n    b = x[0]\n    a.add_(1)\n    return b\n",
            {("b", "r[0]")},
        ),
    ],
)
def test_write_reaches_only_what_shares_its_memory(source: str, expected: set[tuple[str, str]]) -> None:
    assert _read_places(source) == expected


def test_attribute_places_under_a_place() -> None:
    places = AttributePlaces()
    table = {"self": 1, "self.fc": 2, "self.fc.weight": 3, "selfish": 4, "other.fc": 5}
    assert sorted(places.under("self", table)) == ["self.fc", "self.fc.weight"]
    assert places.under("self.fc", table) == ["self.fc.weight"]
    del table["self.fc.weight"]
    table["self.bn"] = 6  # a key the table gained since
    assert sorted(places.under("self", table)) == ["self.bn", "self.fc"]
    assert places.under("other", {"x": 1}) == []  # seen in another table, not in this one
