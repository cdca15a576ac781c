"""The process-boundary model (semantic/processes.py, semantic/boundaries.py): which calls
cross, with which start method, what the other side receives, and which writes reach a
tensor handed over. Each case is a snippet and what the model must say about it."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from gpumem_lint.context import FileContext
from gpumem_lint.rules._boundaries import process_model
from gpumem_lint.semantic.boundaries import ProcessModel


def model_of(source: str):
    source = textwrap.dedent(source)
    ctx = FileContext("snippet.py", source, cst.parse_module(source))
    return ctx, process_model(ctx)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import multiprocessing as mp\nmp.Process(target=f, args=(1,))\n", [("process", "fork")]),
        ("import torch.multiprocessing as mp\nmp.spawn(f, args=(x,), nprocs=2)\n", [("spawn", "spawn")]),
        (
            "import torch.multiprocessing as mp\nmp.start_processes(f, args=(x,), start_method='fork')\n",
            [("spawn", "fork")],
        ),
        (
            "import multiprocessing as mp\nmp.set_start_method('spawn')\nmp.Process(target=f).start()\n",
            [("process", "spawn")],
        ),
        (
            "import multiprocessing as mp\nctx = mp.get_context('forkserver')\nctx.Process(target=f)\n",
            [("process", "forkserver")],
        ),
        ("import multiprocessing as mp\nctx = mp.get_context(method)\nctx.Process(target=f)\n", [("process", None)]),
        (
            "import multiprocessing as mp\nwith mp.Pool(2) as pool:\n    pool.map(f, xs)\n    pool.apply_async(f, (x,))\n",
            [("pool", "fork"), ("pool", "fork")],
        ),
        (
            "from concurrent.futures import ProcessPoolExecutor\nwith ProcessPoolExecutor() as ex:\n    ex.submit(f, x)\n",
            [("executor", "fork")],
        ),
        (
            "import multiprocessing as mp\nq = mp.Queue()\nq.put(x)\na, b = mp.Pipe()\na.send(x)\n",
            [("queue", "fork"), ("pipe", "fork")],
        ),
        ("import queue\nq = queue.Queue()\nq.put(x)\n", []),  # a thread queue crosses nothing
        ("import json\n\ndef f(q):\n    q.put(x)\n", []),  # no multiprocessing in the module
    ],
)
def test_crossings_and_their_start_method(source, expected):
    _, model = model_of(source)
    found = [(crossing.kind, model.start_method(crossing).name) for _, crossing in model.crossings()]
    assert found == expected


@pytest.mark.parametrize(("version", "method"), [(None, "fork"), ((3, 13), "fork"), ((3, 14), "forkserver")])
def test_the_default_start_method_follows_the_target_version(version, method):
    ctx, _ = model_of("import multiprocessing as mp\nmp.Process(target=f)\n")
    model = ProcessModel(ctx.semantic.facts, ctx.semantic.imports, version)
    start = model.start_method(model.crossings()[0][1])
    assert start.default and start.name == method


def test_receiver_parameters_follow_the_call_shape():
    _, model = model_of(
        """
        import torch
        import torch.multiprocessing as mp

        def child(rank, data, *, labels):
            pass

        def parent():
            data, labels = torch.zeros(3), torch.ones(3)
            mp.spawn(child, args=(data,), nprocs=2)
            p = mp.Process(target=child, args=(0, data), kwargs={"labels": labels})
        """
    )
    received = [sorted(model.receiver(sender, c).received) for sender, c in model.crossings()]
    assert received == [["data"], ["data", "labels"]]


@pytest.mark.parametrize(
    ("body", "crossed"),
    [
        ("q.put(t)\nt.add_(1)", True),
        ("t.add_(1)\nq.put(t)", False),
        ("q.put(t.clone())\nt.add_(1)", False),
        ("q.put((t, 1))\nt.add_(1)", True),
        ("q.put({'x': t})\nt[0] = 1", True),
        ("q.put(t)\nt = t + 1", False),
        ("q.put(t)\ndone.wait()\nt.add_(1)", False),
        ("q.put(t[0])\nt[1].add_(1)", False),
        ("q.put(('stop', None))\nt.add_(1)", False),
        ("for i in range(3):\n    t.fill_(i)\n    q.put(t)", True),
        ("for i in range(3):\n    t.fill_(i)\n    q.put(t)\n    ack.get()", False),
    ],
)
def test_writes_reaching_a_tensor_on_a_queue(body, crossed):
    source = "import torch\nimport torch.multiprocessing as mp\n\ndef f(q, done, ack):\n    t = torch.zeros(3)\n"
    source += textwrap.indent(body, "    ") + "\n"
    ctx, _ = model_of(source)
    facts = next(f for f in ctx.semantic.facts if f.scope.name == "f")
    assert bool(facts.processes.crossed_writes) == crossed
