"""GML213 beyond its page's examples: what counts as a received CUDA tensor, and what does not.
Each case is a whole program linted with GML213 alone (other rules may report the same program)."""

from __future__ import annotations

import textwrap

import pytest

from gpumem_lint.engine import lint_source
from gpumem_lint.rules import RULES_BY_CODE

_ARGUMENT_RELAY = """
import torch
import torch.multiprocessing as mp

def relay(batch, outbox, done):
    outbox.put(batch)
    done.wait()

def main():
    ctx = mp.get_context("{method}")
    outbox, done = ctx.Queue(), ctx.Event()
    ctx.Process(target=relay, args=(torch.ones(8, device="cuda"), outbox, done)).start()
"""

_QUEUE_RELAY = """
import torch
import torch.multiprocessing as mp

def relay(inbox, outbox, done):
    batch = inbox.get()
    outbox.put({sent})
    done.wait()

def main():
    ctx = mp.get_context("spawn")
    inbox, outbox, done = ctx.Queue(), ctx.Queue(), ctx.Event()
    ctx.Process(target=relay, args=(inbox, outbox, done)).start()
    inbox.put(torch.ones(8, device="cuda"))
"""


def lines(source: str) -> list[int]:
    found = lint_source(textwrap.dedent(source), "example.py", [RULES_BY_CODE["GML213"]])
    return [d.start.row for d in found]


@pytest.mark.parametrize(("method", "expected"), [("spawn", [6]), ("forkserver", [6]), ("fork", [])])
def test_a_process_argument_is_received_only_when_pickled(method, expected):
    # Under fork the child cannot use CUDA at all (GML203 reports the handover), so nothing is sent on.
    assert lines(_ARGUMENT_RELAY.format(method=method)) == expected


@pytest.mark.parametrize(
    ("sent", "expected"),
    [
        ("batch", [7]),
        ("batch[:2]", [7]),  # a view: the same received memory (process_probe.json resend_view_from_queue)
        ("batch.view(-1)", [7]),
        ("(batch, 0)", [7]),  # inside a tuple: pickled all the same
        ("{'x': batch}", [7]),
        ("batch.clone()", []),  # resend_clone_from_queue: arrives
        ("batch * 2", []),  # resend_product_from_queue: new memory, arrives
        ("batch.cpu()", []),
        ("batch.sum().item()", []),
        ("batch.tolist()", []),
    ],
)
def test_what_is_sent_on(sent, expected):
    assert lines(_QUEUE_RELAY.format(sent=sent)) == expected


def test_a_reply_to_the_first_sender_is_sent_on_too():
    # process_probe.json relay_back_to_first_sender: the reply never arrives.
    source = """
import torch
import torch.multiprocessing as mp

def worker(tasks, replies, done):
    x = tasks.get()
    replies.put(x)
    done.wait()

def main():
    ctx = mp.get_context("spawn")
    tasks, replies, done = ctx.Queue(), ctx.Queue(), ctx.Event()
    ctx.Process(target=worker, args=(tasks, replies, done)).start()
    tasks.put(torch.ones(8).cuda())
    print(replies.get())
    done.set()
"""
    assert lines(source) == [7]


def test_a_channel_without_cuda_tensors_is_not_followed():
    # The parent puts CUDA on one queue and CPU on another; only what comes from the first is CUDA.
    source = """
import torch
import torch.multiprocessing as mp

def relay(cuda_in, cpu_in, outbox, done):
    a = cuda_in.get()
    b = cpu_in.get()
    outbox.put(b)
    outbox.put(a)
    done.wait()

def main():
    ctx = mp.get_context("spawn")
    cuda_in, cpu_in, outbox, done = ctx.Queue(), ctx.Queue(), ctx.Queue(), ctx.Event()
    ctx.Process(target=relay, args=(cuda_in, cpu_in, outbox, done)).start()
    cuda_in.put(torch.ones(8, device="cuda"))
    cpu_in.put(torch.ones(8))
"""
    assert lines(source) == [9]
