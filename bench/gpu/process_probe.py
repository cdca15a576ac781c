"""Measure what the process-boundary rules (GML2xx) rely on, on a CUDA machine.

    python bench/gpu/process_probe.py > bench/gpu/process_probe.json

Each probe runs in a fresh interpreter (so that what initialised CUDA is exactly what the
probe did) and prints one JSON object. docs/facts.md F13-F15 quote the output (H200,
torch 2.11.0+cu130, 2026-11-29); tests/test_process_facts.py checks the recorded JSON
against them, and tests/gpu/test_process_probe_gpu.py re-runs the CUDA probes on a GPU.
The two relay probes (a received CUDA tensor sent on to a third process, issue 18) were first run
on 2026-12-01 (the same H200 and torch): docs/facts.md F38. The clone relay, the resend probes (sent
on through a Pipe, which pickles in the relay's own thread, so it sees the error) and the reply to
the first sender were run later that day (`process_probe.py relay_sends_clone resend_from_queue ...`,
merged into the JSON): F38 and GML213's page quote them. The two manager-queue probes were run on
2026-12-03 (`process_probe.py manager_queue_cuda_tensor manager_queue_cpu_tensor`, merged): F55.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

_CHILD_USES_CUDA = """
import json, multiprocessing as mp, torch

def child(queue):
    try:
        queue.put(("ok", torch.ones(2, device="cuda").sum().item()))
    except Exception as error:
        queue.put((type(error).__name__, str(error)))

if __name__ == "__main__":
    {before}
    ctx = mp.get_context("{method}")
    queue = ctx.Queue()
    p = ctx.Process(target=child, args=(queue,))
    p.start()
    outcome, detail = queue.get(timeout=60)
    p.join()
    print(json.dumps({{"child": outcome, "detail": detail}}))
"""

# The parent sends a CUDA tensor through a spawn queue; both sides write and the other reads.
_CUDA_QUEUE_BOTH_WAYS = """
import json, torch, torch.multiprocessing as mp

def child(queue, replies, parent_wrote, child_wrote):
    x = queue.get()
    parent_wrote.wait()
    torch.cuda.synchronize()
    replies.put(x.sum().item())
    x.fill_(9.0)
    torch.cuda.synchronize()
    child_wrote.set()
    replies.get()  # keep the tensor until the parent has read

if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    queue, replies = ctx.Queue(), ctx.Queue()
    parent_wrote, child_wrote = ctx.Event(), ctx.Event()
    x = torch.zeros(4, device="cuda")
    shared_before_put = x.is_shared()
    p = ctx.Process(target=child, args=(queue, replies, parent_wrote, child_wrote))
    p.start()
    queue.put(x)
    x.fill_(7.0)
    torch.cuda.synchronize()
    parent_wrote.set()
    child_saw = replies.get(timeout=60)
    child_wrote.wait(120)
    parent_saw = x.sum().item()
    replies.put("done")
    p.join()
    print(json.dumps({"is_shared_before_put": shared_before_put, "child_saw_parent_write": child_saw,
                      "parent_saw_child_write": parent_saw}))
"""

# A spawned producer puts a CUDA tensor and returns at once; the consumer reads it afterwards.
_PRODUCER_EXITS = """
import json, time, torch, torch.multiprocessing as mp

def producer(queue, keep_alive):
    x = torch.full((1 << 20,), 3.0, device="cuda")
    queue.put(x)
    if keep_alive:
        del x  # the producer drops its reference but stays alive
        torch.cuda.empty_cache()
        y = torch.full((1 << 20,), 5.0, device="cuda")  # may reuse freed memory
        time.sleep(6)

if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    p = ctx.Process(target=producer, args=(queue, {keep_alive}))
    p.start()
    {wait}
    try:
        x = queue.get(timeout=60)
        value = x.mean().item()
        outcome = "read"
    except Exception as error:
        value, outcome = None, f"{{type(error).__name__}}: {{error}}"
    p.join()
    print(json.dumps({{"producer_alive_when_read": {keep_alive}, "outcome": outcome, "mean": value,
                      "producer_exitcode": p.exitcode}}))
"""

# The parent sends a CUDA tensor to a relay child, which puts what it received on a second queue for a
# reader child; the parent keeps the tensor alive until the reader has answered. Does a received CUDA
# tensor survive being sent on (its IPC handle shared again), with the relay alive or gone?
_CUDA_RELAY = """
import json, torch, torch.multiprocessing as mp

def relay(inbox, outbox, answers, release):
    x = inbox.get()
    try:
        outbox.put({sent})
    except Exception as error:
        answers.put(("relay " + type(error).__name__, str(error)[:300]))
        return
    if {relay_waits}:
        release.wait(120)

def reader(outbox, answers):
    try:
        y = outbox.get(timeout=60)
        answers.put(("read", y.mean().item()))
    except Exception as error:
        answers.put((type(error).__name__, str(error)[:300]))

if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    inbox, outbox, answers, release = ctx.Queue(), ctx.Queue(), ctx.Queue(), ctx.Event()
    x = torch.full((1 << 20,), 3.0, device="cuda")
    middle = ctx.Process(target=relay, args=(inbox, outbox, answers, release))
    end = ctx.Process(target=reader, args=(outbox, answers))
    middle.start()
    inbox.put(x)
    if not {relay_waits}:
        middle.join()  # the relay has sent it on and exited before the reader starts
    end.start()
    outcome, detail = answers.get(timeout=120)
    release.set()
    middle.join()
    end.join()
    print(json.dumps({{"relay_alive_when_read": {relay_waits}, "outcome": outcome, "detail": detail,
                      "relay_exitcode": middle.exitcode, "reader_exitcode": end.exitcode}}))
"""

# The same relay sending on through a Pipe, which pickles in the sending thread, so that the relay sees
# why: the parent hands a CUDA tensor over (on a queue, or as a spawn Process argument), the relay sends
# `{sent}` back to the parent, which reads it.
_CUDA_RESEND = """
import json, torch, torch.multiprocessing as mp

def relay(inbox, x, conn, answers, release):
    if x is None:
        x = inbox.get()
    try:
        conn.send({sent})
        answers.put(("sent", ""))
    except Exception as error:
        answers.put((type(error).__name__, str(error)[:300]))
    release.wait(120)

if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    inbox, answers, release = ctx.Queue(), ctx.Queue(), ctx.Event()
    here, there = ctx.Pipe()
    x = torch.full((1 << 20,), 3.0, device="cuda")
    middle = ctx.Process(target=relay, args=(inbox, {argument}, there, answers, release))
    middle.start()
    {hand_over}
    outcome, detail = answers.get(timeout=120)
    mean = here.recv().mean().item() if outcome == "sent" else None
    release.set()
    middle.join()
    print(json.dumps({{"outcome": outcome, "detail": detail, "mean": mean, "relay_exitcode": middle.exitcode}}))
"""

# A worker puts the CUDA tensor it received back on a queue to the process that made it (a reply).
_CUDA_BACK_TO_SENDER = """
import json, queue, torch, torch.multiprocessing as mp

def worker(inbox, replies, release):
    x = inbox.get()
    replies.put(x)
    release.wait(120)

if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    inbox, replies, release = ctx.Queue(), ctx.Queue(), ctx.Event()
    x = torch.full((1 << 20,), 3.0, device="cuda")
    p = ctx.Process(target=worker, args=(inbox, replies, release))
    p.start()
    inbox.put(x)
    try:
        outcome, mean = "read", replies.get(timeout=30).mean().item()
    except queue.Empty:
        outcome, mean = "Empty", None
    release.set()
    p.join()
    print(json.dumps({"outcome": outcome, "mean": mean, "worker_exitcode": p.exitcode}))
"""

# A child writes the CPU tensor it received as a Process argument; does the parent see it?
_CPU_CHILD_WRITE = """
import json, multiprocessing as mp, torch

def child(t):
    t.add_(100)

if __name__ == "__main__":
    ctx = mp.get_context("{method}")
    t = torch.zeros(3)
    p = ctx.Process(target=child, args=(t,))
    p.start()
    p.join()
    print(json.dumps({{"parent_sees": t.sum().item(), "parent_is_shared": t.is_shared()}}))
"""

# A child puts a tensor on a queue made by `mp.Manager()`: a proxy, whose `put` sends it to the manager's server
# process, which sends it on to the process that gets it (issue 18, the seventh recall batch's manager queue case).
_MANAGER_QUEUE = """
import json, queue as queues, torch, torch.multiprocessing as mp

def producer(q, release):
    x = torch.arange(4.0, device="{device}")
    try:
        q.put(x)
        outcome = "put"
    except Exception as error:
        outcome = type(error).__name__ + ": " + str(error)[:160]
    release.wait(30)
    print(json.dumps({{"producer": outcome}}), flush=True)

if __name__ == "__main__":
    mp.set_start_method("spawn")
    manager = mp.Manager()
    q, release = manager.Queue(), mp.Event()
    p = mp.Process(target=producer, args=(q, release))
    p.start()
    try:
        got = q.get(timeout=30)
        result = {{"consumer": "got", "values": got.tolist(), "device": str(got.device)}}
    except queues.Empty:
        result = {{"consumer": "nothing within 30 s"}}
    except Exception as error:
        # a manager's error carries the server's traceback: its last `...Error: ...` line says what failed
        lines = [line.strip() for line in str(error).splitlines() if "Error" in line]
        result = {{"consumer": type(error).__name__, "error": lines[-1][:240] if lines else str(error)[:240]}}
    release.set()
    p.join(60)
    print(json.dumps(result))
"""

_PROBES = {
    "fork_after_nothing": _CHILD_USES_CUDA.format(before="pass", method="fork"),
    "fork_after_is_available": _CHILD_USES_CUDA.format(before="torch.cuda.is_available()", method="fork"),
    "fork_after_allocation": _CHILD_USES_CUDA.format(before="torch.zeros(1, device='cuda')", method="fork"),
    "spawn_after_allocation": _CHILD_USES_CUDA.format(before="torch.zeros(1, device='cuda')", method="spawn"),
    "cuda_queue_both_ways": _CUDA_QUEUE_BOTH_WAYS,
    "producer_exits_before_read": _PRODUCER_EXITS.format(keep_alive=False, wait="p.join()"),
    "producer_drops_reference_alive": _PRODUCER_EXITS.format(keep_alive=True, wait="time.sleep(3)"),
    "relay_received_cuda_tensor": _CUDA_RELAY.format(relay_waits=True, sent="x"),
    "relay_exits_after_sending_on": _CUDA_RELAY.format(relay_waits=False, sent="x"),
    "relay_sends_clone": _CUDA_RELAY.format(relay_waits=True, sent="x.clone()"),
    "resend_from_queue": _CUDA_RESEND.format(argument="None", hand_over="inbox.put(x)", sent="x"),
    "resend_view_from_queue": _CUDA_RESEND.format(argument="None", hand_over="inbox.put(x)", sent="x[:8]"),
    "resend_product_from_queue": _CUDA_RESEND.format(argument="None", hand_over="inbox.put(x)", sent="x * 2"),
    "resend_clone_from_queue": _CUDA_RESEND.format(argument="None", hand_over="inbox.put(x)", sent="x.clone()"),
    "resend_process_argument": _CUDA_RESEND.format(argument="x", hand_over="pass", sent="x"),
    "relay_back_to_first_sender": _CUDA_BACK_TO_SENDER,
    "cpu_child_write_spawn": _CPU_CHILD_WRITE.format(method="spawn"),
    "cpu_child_write_fork": _CPU_CHILD_WRITE.format(method="fork"),
    "manager_queue_cuda_tensor": _MANAGER_QUEUE.format(device="cuda"),
    "manager_queue_cpu_tensor": _MANAGER_QUEUE.format(device="cpu"),
}


def run(source: str) -> dict:
    # A file, not `python -c`: spawn children re-import the main module by its path.
    with tempfile.TemporaryDirectory() as directory:
        script = Path(directory) / "probe.py"
        script.write_text(source)
        try:
            done = subprocess.run(
                [sys.executable, str(script)], check=False, capture_output=True, text=True, timeout=180
            )
        except subprocess.TimeoutExpired:
            return {"error": "timeout"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    result = json.loads(lines[-1]) if lines else {"error": done.stderr.strip()[-400:]}
    # The CUDA IPC warnings, and the last line of any traceback a queue's feeder thread printed.
    warnings = [
        line.strip()[:200]
        for line in done.stderr.splitlines()
        if "CudaIPCTypes" in line or "Producer" in line or line.startswith(("RuntimeError", "TypeError"))
    ]
    if warnings:
        result["stderr"] = warnings[:2]
    return result


def main() -> None:
    import torch

    names = sys.argv[1:] or list(_PROBES)  # `process_probe.py resend_from_queue ...`: only those
    report = {
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(0) if torch.cuda.device_count() else None,
        "probes": {name: run(_PROBES[name]) for name in names},
    }
    json.dump(report, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
