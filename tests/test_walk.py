"""The walk reads only the fields whose annotations can hold a node to enter (walk.py `_shapes`):
it must find exactly the children that reading every field and checking every value finds."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import hypothesmith
import libcst as cst
import pytest
from hypothesis import HealthCheck, assume, given, settings

from gpumem_lint.semantic.walk import _is_syntax, child_nodes

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(
    path
    for path in [*ROOT.joinpath("gpumem_lint").rglob("*.py"), *ROOT.joinpath("fixtures").rglob("*.py")]
    if path.stat().st_size
)
# Syntax the project's own code does not use.
SNIPPETS = [
    "match p:\n    case [1, *rest] if rest: pass\n    case {'k': v, **kw}: pass\n    case C(x=1) | None: pass\n",
    "def f[T: int, *Ts, **P](x: T, /, *a, k=1, **kw) -> T: ...\ntype Alias[T] = list[T]\n",
    "async def g():\n    async with a as (b, c[0]):\n        async for x in y: await z\n    return [i async for i in q]\n",
    "try: pass\nexcept* (A, B) as e: pass\nelse: pass\nfinally: pass\n",
    "x = f'{a!r:>{width}} {b=}' 'tail'\ny = rb'\\x00'\nglobal g; n = lambda *, k=1: k\n",
    "@d(1)\nclass K(B, metaclass=M):\n    x: int = 1\n    del y[0], z.w\n    assert x, 'm'\n",
    "print(*a, **k, sep='')\nw = (yield)\nv = [*a] or {**b} or {1, 2} and not c < d <= e is not f\n",
]


def every_syntax_child(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The reference: every field but whitespace, every value checked."""
    children: list[cst.CSTNode] = []
    for item in fields(node):
        if "whitespace" in item.name:
            continue
        value = getattr(node, item.name)
        if isinstance(value, (list, tuple)):
            children.extend(element for element in value if _is_syntax(element))
        elif _is_syntax(value):
            children.append(value)
    return children


def assert_same_children(module: cst.Module) -> int:
    pending: list[cst.CSTNode] = [module]
    seen = 0
    while pending:
        node = pending.pop()
        expected = every_syntax_child(node)
        found = child_nodes(node)
        assert [id(child) for child in found] == [id(child) for child in expected], type(node).__name__
        pending.extend(expected)
        seen += 1
    return seen


@pytest.mark.parametrize("path", SOURCES, ids=lambda path: str(path.relative_to(ROOT)))
def test_walk_finds_every_child_in_real_code(path):
    assert assert_same_children(cst.parse_module(path.read_bytes())) > 1


@pytest.mark.parametrize("source", SNIPPETS)
def test_walk_finds_every_child_in_rare_syntax(source):
    module = cst.parse_module(source, config=cst.PartialParserConfig(python_version="3.12"))
    assert assert_same_children(module) > 10


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(hypothesmith.from_node())
def test_walk_finds_every_child_in_any_syntax_tree(source):
    try:
        module = cst.parse_module(source)
    except (cst.ParserSyntaxError, cst.CSTValidationError):
        assume(False)  # libcst refuses some sources CPython accepts (`if 0. is.0: pass`): its limit, not the walk's
    assert_same_children(module)
