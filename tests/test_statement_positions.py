"""Positions found by rendering one top-level statement at a time must be libcst's own, node for node."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from gpumem_lint.context import FileContext
from gpumem_lint.semantic.walk import child_nodes
from gpumem_lint.statement_positions import StatementPositions

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted([*ROOT.joinpath("gpumem_lint").rglob("*.py"), *ROOT.joinpath("fixtures").rglob("*.py")])
SNIPPETS = {
    "header, semicolons, continuation": "# header\n\nimport os; import sys\nx = \\\n    1\n",
    "decorators over several lines": "@decorate(\n    1,\n)\n\n@other\nclass C:\n    def f(self): return 1\n",
    "comments between statements": "a = 1\n# about b\n\n\nb = [\n  2,  # two\n]\n# footer\n",
    "compound first lines": "if x:\n    pass\nelif y: z = 1\nelse:\n    for i in r:\n        try: pass\n        except E: pass\n",
    "windows line ends": "import torch\r\nx = torch.zeros(3)\r\nif x:\r\n    x.add_(1)\r\n",
    "tabs and no final newline": "def f():\n\tif a:\n\t\treturn (\n\t\t\t1)\n\treturn 2",
    "match and async": "match p:\n    case [1, *r]:\n        pass\nasync def g():\n    async with a as b:\n        await b\n",
}


def _every_node(module: cst.Module) -> list[cst.CSTNode]:
    found, pending = [], list(module.body)
    while pending:
        node = pending.pop()
        found.append(node)
        pending.extend(child_nodes(node))
    return found


def _check(text: str) -> None:
    module = cst.parse_module(text)
    positions = FileContext("example.py", text, module).positions
    assert isinstance(positions, StatementPositions)
    libcst_positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    for node in _every_node(module):
        assert positions[node] == libcst_positions[node], module.code_for_node(node)


@pytest.mark.parametrize("path", SOURCES, ids=lambda path: str(path.relative_to(ROOT)))
def test_positions_of_real_code(path):
    _check(path.read_text())


@pytest.mark.parametrize("name", SNIPPETS)
def test_positions_of_rare_layouts(name):
    _check(SNIPPETS[name])


def test_only_the_statements_holding_the_nodes_asked_for_are_rendered():
    text = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(50))
    module = cst.parse_module(text)
    ctx = FileContext("example.py", text, module)
    target = module.body[30].body.body[0].body[0]  # `return x + 30`
    assert ctx.positions[target].start.line == 92
    assert "_all_positions" not in ctx.__dict__
    assert list(ctx.positions._rendered) == [30]
