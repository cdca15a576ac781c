"""The processes of one run share module summaries through a directory."""

from __future__ import annotations

import pytest

from gpumem_lint.semantic import module_graph


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
