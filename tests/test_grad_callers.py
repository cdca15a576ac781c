"""Functions whose every call runs with autograd off (semantic/grad_callers.py), in the file and in the
modules that import it, and GML108's silence on them."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpumem_lint.engine import lint_path
from gpumem_lint.rules.gml108_inplace_write_on_grad_leaf import InplaceWriteOnGradLeaf
from gpumem_lint.semantic.grad_callers import called_only_without_grad

BLOCKS = """
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = nn.GroupNorm(2, width)

    def load_from(self, weights):
        self.norm.weight.copy_(weights["scale"])
"""

UNDER_NO_GRAD = """
import torch
from blocks import Block


class Model(torch.nn.Module):
    def load_from(self, weights):
        with torch.no_grad():
            for block in self.blocks:
                block.load_from(weights)
"""


def _project(tmp_path: Path, files: dict[str, str]) -> Path:
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    (tmp_path / "blocks.py").write_text(BLOCKS, encoding="utf-8")
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return (tmp_path / "blocks.py").resolve()


def _gml108(source: Path) -> list[int]:
    return [d.start.row for d in lint_path(source, str(source), [InplaceWriteOnGradLeaf])]


def test_called_only_under_an_importers_no_grad(tmp_path: Path):
    source = _project(tmp_path, {"model.py": UNDER_NO_GRAD})
    dependencies: set[Path] = set()
    assert called_only_without_grad("load_from", source.read_text(), source, dependencies)
    assert dependencies == {(tmp_path / "model.py").resolve()}
    assert _gml108(source) == []


@pytest.mark.parametrize(
    ("name", "text"),
    [
        # one call with grad on
        ("reset.py", "from blocks import Block\n\ndef reset(block, w):\n    block.load_from(w)\n"),
        # the name used other than by calling it: called from anywhere
        ("hooks.py", "from blocks import Block\n\nHOOKS = [Block.load_from]\n"),
        # a `no_grad` that ends before the call
        (
            "after.py",
            (
                "import torch\nfrom blocks import Block\n\ndef f(b, w):\n    with torch.no_grad():\n"
                "        pass\n    b.load_from(w)\n"
            ),
        ),
    ],
)
def test_a_call_with_grad_on_keeps_the_finding(tmp_path: Path, name: str, text: str):
    source = _project(tmp_path, {"model.py": UNDER_NO_GRAD, name: text})
    assert not called_only_without_grad("load_from", source.read_text(), source, set())
    assert _gml108(source) == [11]


def test_no_call_in_the_project_keeps_the_finding(tmp_path: Path):
    source = _project(tmp_path, {})
    assert _gml108(source) == [11]


def test_calls_two_imports_away_are_not_read(tmp_path: Path):
    """`train.py` imports the model's module, not the blocks': its `net.load_from(...)` is the model's."""
    source = _project(
        tmp_path, {"model.py": UNDER_NO_GRAD, "train.py": "from model import Model\n\nModel().load_from({})\n"}
    )
    assert _gml108(source) == []


def test_a_decorated_caller_and_set_grad_enabled(tmp_path: Path):
    decorated = "import torch\nfrom blocks import Block\n\n@torch.no_grad()\ndef load(b, w):\n    b.load_from(w)\n"
    setter = (
        "import torch\nfrom blocks import Block\n\ndef load(b, w):\n    with torch.set_grad_enabled(False):\n"
        "        b.load_from(w)\n"
    )
    source = _project(tmp_path, {"a.py": decorated, "b.py": setter})
    assert _gml108(source) == []
