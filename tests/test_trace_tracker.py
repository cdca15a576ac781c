"""The storage tracker in this process: each snippet runs under the dispatch mode and the Python-level hooks,
and its findings must be exactly the `# trace: CODE` comments on its lines (data-driven, like the fixtures).

Intended patterns (optimizer steps, nn.init, BatchNorm statistics, writes to fresh tensors, in-place ReLU,
gradient clipping, EMA, SGD momentum, writing through one's own view) must produce nothing.
"""

from __future__ import annotations

import re
import textwrap

import pytest

torch = pytest.importorskip("torch")

from gpumem_lint.trace import patches
from gpumem_lint.trace.environment import Environment
from gpumem_lint.trace.findings import FindingLog
from gpumem_lint.trace.sites import SiteFinder
from gpumem_lint.trace.tracker import StorageMode, Tracker

MARK = re.compile(r"#\s*trace:\s*(GML\d{3})")

CASES = {
    "detach snapshot read after a write through the original": """
        import torch
        hidden = torch.zeros(3)
        prev = hidden.detach()
        hidden.add_(1)  # trace: GML103
        delta = hidden - prev
    """,
    "a write judged while another thread is inside torch's own writes": """
        import threading
        import torch

        class Blocking(torch.nn.Module):
            def _load_from_state_dict(self, *args):
                inside.set()
                leave.wait()

        inside, leave = threading.Event(), threading.Event()
        loader = threading.Thread(target=Blocking().load_state_dict, args=({},))
        loader.start()
        inside.wait()
        hidden = torch.zeros(3)
        prev = hidden.detach()
        hidden.add_(1)  # trace: GML103
        delta = hidden - prev
        leave.set()
        loader.join()
    """,
    "detach alias never read again": """
        import torch
        hidden = torch.zeros(3)
        prev = hidden.detach()
        hidden.add_(1)
        print_me = hidden.sum()
    """,
    "the alias is refreshed by an overwrite before it is read": """
        import torch
        hidden = torch.zeros(3)
        prev = hidden.detach()
        hidden.add_(1)
        prev.copy_(torch.ones(3))
        total = prev.sum()
    """,
    "state_dict snapshot overwritten by the optimizer, then saved": """
        import io
        import torch
        model = torch.nn.Linear(2, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        best = model.state_dict()
        model(torch.ones(1, 2)).sum().backward()
        optimizer.step()  # trace: GML102
        torch.save(best, io.BytesIO())
    """,
    "a backward hook's detach, read after the next backward accumulated into the gradient": """
        import torch
        weight = torch.ones(3, requires_grad=True)
        kept = []
        weight.register_hook(lambda grad: kept.append(grad.detach()))
        (weight * 2).sum().backward()
        (weight * 2).sum().backward()  # trace: GML103
        total = kept[0].sum()
    """,
    "deep-copied state_dict snapshot": """
        import copy
        import torch
        model = torch.nn.Linear(2, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        best = copy.deepcopy(model.state_dict())
        for _ in range(2):
            model(torch.ones(1, 2)).sum().backward()
            optimizer.step()
        model.load_state_dict(best)
    """,
    ".data write between forward and backward": """
        import torch
        weight = torch.ones(3, requires_grad=True)
        loss = (weight * weight).sum()
        weight.data.mul_(10)  # trace: GML101
        loss.backward()
    """,
    ".data write after backward (manual SGD)": """
        import torch
        weight = torch.ones(3, requires_grad=True)
        for _ in range(2):
            loss = (weight * weight).sum()
            loss.backward()
            weight.data.add_(weight.grad, alpha=-0.1)
            weight.grad = None
    """,
    "x.data = y between forward and backward": """
        import torch
        weight = torch.ones(3, requires_grad=True)
        loss = (weight * weight).sum()
        weight.data = torch.zeros(3)  # trace: GML101
        loss.backward()
    """,
    "numpy buffer wrapped again while older tensors are kept": """
        import numpy as np
        import torch
        buffer = np.zeros(2, dtype=np.float32)
        batches = []
        for value in (1.0, 2.0):
            buffer[:] = value
            batches.append(torch.from_numpy(buffer))
        stacked = torch.stack(batches)  # trace: GML106
    """,
    "one numpy buffer wrapped once and refilled (a staging buffer)": """
        import numpy as np
        import torch
        buffer = np.zeros(2, dtype=np.float32)
        staged = torch.from_numpy(buffer)
        for value in (1.0, 2.0):
            buffer[:] = value
            total = staged.sum()
    """,
    "view read after its base was written: evidence only, not reported alone": """
        import torch
        base = torch.zeros(4)
        tail = base[2:]
        base.add_(1)
        total = tail.sum()
    """,
    "writes through one's own view": """
        import torch
        x = torch.zeros(3, 4)
        row = x[1]
        row.zero_()
        x[:, 0] = 5
        x[2].add_(1)
        total = x.sum()
    """,
    "disjoint slices of one storage": """
        import torch
        x = torch.zeros(8)
        head = x[:4].detach()
        x[4:].add_(1)
        total = head.sum()
    """,
    "empty_cache() in every optimizer step": """
        import torch
        model = torch.nn.Linear(2, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(3):
            model(torch.ones(1, 2)).sum().backward()
            optimizer.step()
            torch.cuda.empty_cache()  # trace: GML406
    """,
    "empty_cache() once per epoch": """
        import torch
        model = torch.nn.Linear(2, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(4):
            for _ in range(3):
                model(torch.ones(1, 2)).sum().backward()
                optimizer.step()
            torch.cuda.empty_cache()
    """,
    "a saved result overwritten before backward": """
        import torch
        x = torch.randn(3, requires_grad=True)
        hidden = torch.tanh(x)
        hidden.mul_(2)  # trace: GML109
    """,
    "a saved input overwritten through a view": """
        import torch
        x = torch.randn(4, requires_grad=True)
        scale = torch.ones(4)
        out = x * scale
        scale[:2].zero_()  # trace: GML109
    """,
    "a parameter saved by the forward pass updated before backward": """
        import torch
        model = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        loss = model(torch.ones(4, 2)).sum()
        for parameter in model.parameters():
            parameter.grad = torch.ones_like(parameter)
        optimizer.step()  # trace: GML109
    """,
    "saved tensors written after backward, through .data, or for a dropped graph": """
        import torch
        x = torch.randn(3, requires_grad=True)
        hidden = torch.tanh(x)
        hidden.sum().backward()
        hidden.data.mul_(2)
        hidden.detach().mul_(2)
        other = torch.sigmoid(x)
        other.data.mul_(2)
        dropped = torch.exp(x).detach()
        dropped.mul_(2)
    """,
    "a training step with the usual in-place idioms": """
        import copy
        import torch
        from torch import nn
        torch.manual_seed(0)
        model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(inplace=True), nn.Flatten(),
                              nn.LazyLinear(2))
        model(torch.randn(2, 3, 6, 6))
        nn.init.zeros_(model[4].bias)
        ema = copy.deepcopy(model)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
        for _ in range(3):
            images = torch.randn(2, 3, 6, 6).clamp_(-2, 2)
            loss = nn.functional.cross_entropy(model(images), torch.tensor([0, 1]))
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            with torch.no_grad():
                for average, live in zip(ema.parameters(), model.parameters()):
                    average.mul_(0.9).add_(live.detach(), alpha=0.1)
        adam = torch.optim.Adam(model.parameters())
        model(torch.randn(2, 3, 6, 6)).sum().backward()
        adam.step()
    """,
}


def run_snippet(tmp_path, source: str, *, max_ops=None, warn_once=pytest.fail, expect_active=True):
    path = tmp_path / "snippet.py"
    path.write_text(source, encoding="utf-8")
    sites, log, evidence = SiteFinder(), FindingLog(), FindingLog()
    tracker = Tracker(sites, log, evidence, warn_once=warn_once)
    tracker.max_ops = max_ops
    uninstall = patches.install(tracker, Environment(sites, log, pytest.fail))
    try:
        with StorageMode(tracker):
            exec(compile(source, str(path), "exec"), {"__name__": "snippet"})
    finally:
        uninstall()
    assert tracker.active == expect_active
    tracker.finish()
    return log, evidence


@pytest.mark.parametrize("name", CASES)
def test_findings_are_the_marked_lines(tmp_path, name):
    source = textwrap.dedent(CASES[name])
    expected = {
        (row, match.group(1))
        for row, line in enumerate(source.splitlines(), start=1)
        for match in [MARK.search(line)]
        if match
    }
    log, _ = run_snippet(tmp_path, source)
    assert {(finding.site.line, finding.code) for finding in log} == expected


def test_view_read_after_base_write_is_kept_as_evidence(tmp_path):
    source = textwrap.dedent(CASES["view read after its base was written: evidence only, not reported alone"])
    _, evidence = run_snippet(tmp_path, source)
    [finding] = list(evidence)
    assert (finding.code, finding.site.line) == ("GML103", 5)
    assert [(label, site.line) for label, site in finding.related] == [("view made", 4), ("read", 6)]


SNAPSHOT = CASES["detach snapshot read after a write through the original"]


def test_tracing_stops_after_max_ops_and_the_program_goes_on(tmp_path):
    source = textwrap.dedent(SNAPSHOT) + "assert delta.tolist() == [0.0, 0.0, 0.0]\n"
    log, _ = run_snippet(tmp_path, source, max_ops=1, expect_active=False)
    assert list(log) == []


def test_an_internal_failure_warns_once_and_fails_open(tmp_path, monkeypatch):
    def broken(*args):
        raise KeyError("tracer bug")

    monkeypatch.setattr(Tracker, "_register_views", broken)
    warnings = []
    source = textwrap.dedent(SNAPSHOT) + "assert delta.tolist() == [0.0, 0.0, 0.0]\n"
    log, _ = run_snippet(tmp_path, source, warn_once=warnings.append, expect_active=False)
    assert len(warnings) == 1 and "tracer bug" in warnings[0]
    assert list(log) == []


def test_hooks_are_removed_after_uninstall(tmp_path):
    run_snippet(tmp_path, "import torch\nx = torch.ones(2).data\n")
    assert "data" not in torch.Tensor.__dict__
    assert torch.from_numpy.__module__ is None or "gpumem_lint" not in repr(torch.from_numpy)


def test_storage_records_forget_freed_storages_whose_ids_may_be_reused():
    from gpumem_lint.trace.tracker import StorageRecords

    records = StorageRecords()
    sent = torch.ones(4)
    key = torch._C._storage_id(sent)
    records.remember(sent, "sent at train.py:3")
    view = sent[1:]
    del sent
    assert records.live(key) == "sent at train.py:3"  # a view keeps the storage alive
    del view
    assert records.live(key) is None
    assert key not in records


def test_records_of_dead_tensors_are_dropped(tmp_path):
    path = tmp_path / "loop.py"
    source = (
        "import torch\nx = torch.zeros(4)\nfor _ in range(3000):\n    v = x[1:]\n    snap = x.detach()\n    x.add_(1)\n"
    )
    path.write_text(source, encoding="utf-8")
    sites, log = SiteFinder(), FindingLog()
    tracker = Tracker(sites, log, FindingLog(), warn_once=pytest.fail)
    with StorageMode(tracker):
        exec(compile(source, str(path), "exec"), {"__name__": "loop"})
    assert tracker.active and list(log) == []
    assert sum(len(aliases) for aliases in tracker.aliases.values()) < 64
    assert len(tracker.by_id) < 4200 and len(tracker.pending) < 4200  # swept every 4096 registrations


def test_saved_tensor_records_keep_no_graph_memory_alive(tmp_path):
    """The tracker's aliases of saved tensors go when backward consumes the graph or the graph is dropped."""
    from torch.multiprocessing.reductions import StorageWeakRef

    sites, log = SiteFinder(), FindingLog()
    tracker = Tracker(sites, log, FindingLog(), warn_once=pytest.fail)
    with StorageMode(tracker):
        x = torch.randn(3, requires_grad=True)
        consumed = torch.sigmoid(x * 2)  # sigmoid saves its result
        consumed_memory = StorageWeakRef(consumed.untyped_storage())
        loss = consumed.sum()
        del consumed
        loss.backward()  # frees the saved result; `loss` keeps the nodes alive
        dropped = torch.sigmoid(x * 3)
        dropped_memory = StorageWeakRef(dropped.untyped_storage())
        del dropped
        torch.zeros(1)
    assert list(log) == []
    assert consumed_memory.expired()
    assert dropped_memory.expired()
