"""The processes of one run share module summaries through a directory."""

from __future__ import annotations

import ast

import libcst as cst
import pytest

from gpumem_lint.semantic import module_graph
from gpumem_lint.semantic.recent import Recent


@pytest.fixture
def shared(tmp_path, monkeypatch):
    directory = tmp_path / "shared"
    directory.mkdir()
    monkeypatch.setattr(module_graph, "_shared", None)
    module_graph.share_summaries(directory)
    return directory


def test_a_summary_is_computed_once_and_read_back(tmp_path, shared, monkeypatch):
    module = tmp_path / "utils.py"
    module.write_text("import torch\ntorch.cuda.init()\n")
    mtime = module.stat().st_mtime_ns
    first = module_graph._shared_summary(module, mtime, 1, None)
    assert first is not None and [site.event for site in first.sites] == ["import_torch", "torch_cuda_init"]
    assert len(list(shared.iterdir())) == 1

    def recompute(*arguments):
        raise AssertionError("another process of the run summarised this module already")

    monkeypatch.setattr(module_graph, "_summarise", recompute)
    assert module_graph._shared_summary(module, mtime, 1, None) == first


def test_a_changed_module_is_summarised_again(tmp_path, shared):
    module = tmp_path / "utils.py"
    module.write_text("import torch\n")
    before = module_graph._shared_summary(module, 1, 1, None)
    module.write_text("import torch\ntorch.cuda.init()\n")
    after = module_graph._shared_summary(module, 2, 1, None)
    assert len(before.sites) == 1 and len(after.sites) == 2


def test_a_module_is_read_once_for_its_import_and_each_function_at_every_depth(tmp_path, monkeypatch):
    module = tmp_path / "utils.py"
    module.write_text("import torch\n\ndef setup():\n    torch.cuda.init()\n\ndef other():\n    pass\n")
    mtime = module.stat().st_mtime_ns
    parsed, read = [], []
    monkeypatch.setattr(module_graph, "parse_module", lambda text: parsed.append(text) or cst.parse_module(text))
    monkeypatch.setattr(module_graph, "cpython_tree", lambda text: read.append(text) or ast.parse(text))
    for depth in (1, 2, 3):
        for function in (None, "setup"):
            summary = module_graph._summarise(module, mtime, depth, function)
            assert [site.event for site in summary.sites] == (
                ["import_torch"] if function is None else ["torch_cuda_init"]
            )
    # One tree of the file; libcst parses the text a call of `setup` reads (the import runs only its import statements).
    assert (len(read), len(parsed)) == (1, 1)


@pytest.mark.parametrize(
    ("sizes", "kept"),
    [
        ([("a", 4), ("b", 4), ("c", 4)], ["b", "c"]),  # over the budget: the oldest goes
        ([("a", 4), ("b", 9)], ["a"]),  # larger than the whole budget: not kept
        ([("a", 4), ("b", 4), ("a", 0), ("c", 4)], ["a", "c"]),  # reading "a" made "b" the oldest
    ],
)
def test_recent_keeps_the_most_recently_used_within_its_budget(sizes, kept):
    recent = Recent(budget=8)
    for key, size in sizes:
        if recent.get(key) is None:
            recent.put(key, key.upper(), size)
    assert [key for key in "abc" if recent.get(key) is not None] == kept
    assert [recent.get(key) for key in kept] == [key.upper() for key in kept]
