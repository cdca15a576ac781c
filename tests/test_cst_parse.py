"""cst_parse.parse_module skips the validation of the nodes libcst's parser builds: the tree must be
the one libcst builds, and every other node must still be validated."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from gpumem_lint.cst_parse import parse_module

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted([*ROOT.joinpath("gpumem_lint").rglob("*.py"), *ROOT.joinpath("fixtures").rglob("*.py")])


@pytest.mark.parametrize("path", SOURCES, ids=lambda path: str(path.relative_to(ROOT)))
def test_the_tree_is_the_one_libcst_builds(path):
    text = path.read_text()
    tree = parse_module(text)
    assert tree.deep_equals(cst.parse_module(text))
    assert tree.code == text


@pytest.mark.parametrize("text", ["x = 1\n", "def f(:\n"])
def test_nodes_built_outside_the_parse_are_validated(text):
    try:
        parse_module(text)
    except cst.ParserSyntaxError:
        pass  # validation comes back after a failed parse too
    with pytest.raises(cst.CSTValidationError):
        cst.SimpleWhitespace("not whitespace")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("x", lpar=[cst.LeftParen()])  # a parenthesis without its pair
