"""Re-measure the process-boundary facts the GML2xx rules rely on (docs/facts.md F11-F19).

CPU facts run here; the CUDA facts (F14, F15) are checked against the recorded GPU run in
bench/gpu/process_probe.json, and re-measured by tests/gpu/test_process_probe_gpu.py on a GPU.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import multiprocessing
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parent.parent
RECORDED = json.loads((ROOT / "bench" / "gpu" / "process_probe.json").read_text())["probes"]


def test_f11_torch_spawn_defaults_to_the_spawn_start_method():
    for function in (torch.multiprocessing.spawn, torch.multiprocessing.start_processes):
        assert inspect.signature(function).parameters["start_method"].default == "spawn"


def test_f12_put_moves_the_tensor_into_shared_memory_in_place():
    queue = multiprocessing.get_context("fork").Queue()
    sent = torch.zeros(3)
    view = sent[1:]
    assert not sent.is_shared()
    queue.put(sent)
    received = queue.get(timeout=30)
    assert sent.is_shared() and view.is_shared()
    sent.add_(1)  # the sender writes after put
    assert received.sum().item() == 3.0
    received.fill_(9)  # and the receiver's write reaches the sender
    assert view.sum().item() == 18.0


def _child_writes(tensor):
    tensor.add_(100)


def test_f13_child_write_is_lost_under_fork():
    # Spawn pickles the argument (F12, measured in process above); a fresh interpreter per run would
    # cost seconds, so the spawn side is the recorded run of bench/gpu/process_probe.py.
    tensor = torch.zeros(3)
    child = multiprocessing.get_context("fork").Process(target=_child_writes, args=(tensor,))
    child.start()
    child.join()
    assert child.exitcode == 0 and tensor.sum().item() == 0.0 and not tensor.is_shared()
    assert RECORDED["cpu_child_write_fork"] == {"parent_sees": 0.0, "parent_is_shared": False}
    assert RECORDED["cpu_child_write_spawn"] == {"parent_sees": 300.0, "parent_is_shared": True}


def test_f14_recorded_fork_after_cuda_init():
    message = "Cannot re-initialize CUDA in forked subprocess"
    assert RECORDED["fork_after_nothing"]["child"] == "ok"
    assert message in RECORDED["fork_after_is_available"]["detail"]
    assert message in RECORDED["fork_after_allocation"]["detail"]
    assert RECORDED["spawn_after_allocation"]["child"] == "ok"


def test_f15_recorded_cuda_ipc_lifetime():
    both_ways = RECORDED["cuda_queue_both_ways"]
    assert both_ways["is_shared_before_put"] is True
    assert (both_ways["child_saw_parent_write"], both_ways["parent_saw_child_write"]) == (28.0, 36.0)
    exited = RECORDED["producer_exits_before_read"]
    assert exited["mean"] is None and "invalid resource handle" in exited["outcome"]
    assert any("Producer process has been terminated" in line for line in exited["stderr"])
    alive = RECORDED["producer_drops_reference_alive"]
    assert alive["outcome"] == "read" and alive["mean"] == 3.0


def test_f38_recorded_cuda_tensor_sent_on_never_arrives():
    for name, relay_alive in (("relay_received_cuda_tensor", True), ("relay_exits_after_sending_on", False)):
        relayed = RECORDED[name]
        assert relayed["relay_alive_when_read"] is relay_alive
        assert relayed["outcome"] == "Empty", name  # the reader's get(timeout=60) saw nothing
        assert (relayed["relay_exitcode"], relayed["reader_exitcode"]) == (0, 0)
    copied = RECORDED["relay_sends_clone"]  # `outbox.put(x.clone())`: the relay owns the copy
    assert (copied["outcome"], copied["detail"]) == ("read", 3.0)
    refused = "Attempted to send CUDA tensor received from another process"
    # Sent on through a Pipe (pickled in the relay's own thread): the tensor, a view, a spawn argument.
    for name in ("resend_from_queue", "resend_view_from_queue", "resend_process_argument"):
        assert RECORDED[name]["outcome"] == "RuntimeError" and refused in RECORDED[name]["detail"], name
    assert (RECORDED["resend_product_from_queue"]["outcome"], RECORDED["resend_product_from_queue"]["mean"]) == (
        "sent",
        6.0,
    )
    assert (RECORDED["resend_clone_from_queue"]["outcome"], RECORDED["resend_clone_from_queue"]["mean"]) == (
        "sent",
        3.0,
    )
    back = RECORDED["relay_back_to_first_sender"]  # a reply with the received tensor, to its first sender
    assert back["outcome"] == "Empty" and any(refused in line for line in back["stderr"])


_CPU_RELAY = """
import json, sys, torch, torch.multiprocessing as mp

def relay(inbox, outbox, release):
    outbox.put(inbox.get())  # sent on as received
    release.wait(60)

def reader(outbox, answers):
    y = outbox.get(timeout=30)
    y.add_(1)
    answers.put((y.mean().item(), y.is_shared()))

if __name__ == "__main__":
    torch.set_num_threads(1)  # a child forked after the OpenMP pool ran can hang in its first op
    ctx = mp.get_context(sys.argv[1])
    inbox, outbox, answers, release = ctx.Queue(), ctx.Queue(), ctx.Queue(), ctx.Event()
    x = torch.full((1 << 16,), 3.0)
    middle = ctx.Process(target=relay, args=(inbox, outbox, release))
    end = ctx.Process(target=reader, args=(outbox, answers))
    middle.start()
    end.start()  # before the put: forking while a queue's feeder thread runs can hang the child
    inbox.put(x)
    read, shared = answers.get(timeout=60)
    release.set()
    middle.join()
    end.join()
    print(json.dumps({"read": read, "shared": shared, "first_sender_sees": x.mean().item(),
                      "exitcodes": [middle.exitcode, end.exitcode]}))
"""


def test_f55_recorded_a_manager_queue_relays_what_is_put_on_it():
    """A queue made by `mp.Manager()` is a proxy: the manager's server process receives the tensor and sends
    it on, which torch refuses for a CUDA tensor (F38's error, raised in the manager) and does for a CPU one."""
    cuda, cpu = RECORDED["manager_queue_cuda_tensor"], RECORDED["manager_queue_cpu_tensor"]
    assert cuda["consumer"] == "RemoteError"
    assert "Attempted to send CUDA tensor received from another process" in cuda["error"]
    assert (cpu["consumer"], cpu["values"]) == ("got", [0.0, 1.0, 2.0, 3.0])


def test_f55_a_manager_queue_relays_a_cpu_tensor():
    spec = importlib.util.spec_from_file_location("process_probe", ROOT / "bench" / "gpu" / "process_probe.py")
    probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)
    measured = probe.run(probe._PROBES["manager_queue_cpu_tensor"])
    assert (measured["consumer"], measured["values"]) == ("got", [0.0, 1.0, 2.0, 3.0])


@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_f38_a_cpu_tensor_can_be_sent_on(tmp_path, method):
    # A CPU tensor lives in shared memory (F12): relayed to a third process it arrives, and the
    # reader's write reaches the first sender. (GML213 reports only CUDA tensors sent on.)
    script = tmp_path / "relay.py"
    script.write_text(_CPU_RELAY)
    done = subprocess.run(
        [sys.executable, str(script), method], capture_output=True, text=True, timeout=120, check=False
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines, done.stderr[-400:]
    assert json.loads(lines[-1]) == {"read": 4.0, "shared": True, "first_sender_sees": 4.0, "exitcodes": [0, 0]}


def _put_and_exit(queue):
    queue.put(torch.zeros(2, 2))


def _put_and_wait(queue, done):
    queue.put(torch.ones(2, 2))
    done.wait()


def test_f17_a_cpu_tensor_cannot_be_received_once_its_sender_exited():
    ctx = multiprocessing.get_context("fork")
    queue, done = ctx.Queue(), ctx.Event()
    exited = ctx.Process(target=_put_and_exit, args=(queue,))
    exited.start()
    exited.join()
    with pytest.raises((ConnectionRefusedError, FileNotFoundError)):
        queue.get(timeout=30)
    waiting = ctx.Process(target=_put_and_wait, args=(queue, done))
    waiting.start()
    assert queue.get(timeout=30).sum().item() == 4.0
    done.set()
    waiting.join()


class _Pids(torch.utils.data.Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, index):
        import os

        return os.getpid()


@pytest.mark.parametrize("persistent", [False, True])
def test_dataloader_workers_are_forked_again_each_epoch_unless_persistent(persistent):
    # Issue 18: CUDA first used by the main process during an epoch reaches the workers of every later
    # epoch, which are new forks of it; GML205 reports CUDA in worker code whatever the order.
    loader = torch.utils.data.DataLoader(
        _Pids(), batch_size=2, num_workers=1, multiprocessing_context="fork", persistent_workers=persistent
    )
    epochs = [set(next(iter(loader)).tolist()) for _ in range(2)]
    assert (epochs[0] == epochs[1]) is persistent


class _Counting(torch.utils.data.Dataset):
    def __init__(self):
        self.count = 0
        self.plain = torch.zeros(4)
        self.shared = torch.zeros(4).share_memory_()

    def __len__(self):
        return 4

    def __getitem__(self, index):
        self.count += 1
        self.plain[index] += 1
        self.shared[index] += 1
        return index


def test_f16_dataloader_workers_update_their_own_copy():
    dataset = _Counting()
    loader = torch.utils.data.DataLoader(dataset, batch_size=2, num_workers=2, multiprocessing_context="fork")
    assert sorted(i for batch in loader for i in batch.tolist()) == [0, 1, 2, 3]
    assert dataset.count == 0
    assert dataset.plain.sum().item() == 0.0
    assert dataset.shared.sum().item() == 4.0


_UNGUARDED = """
import multiprocessing

def work(x):
    return x

child = multiprocessing.get_context("spawn").Process(target=work, args=(1,))
child.start()
child.join()
print("exitcode", child.exitcode)
"""


def test_f19_top_level_start_is_run_again_by_a_spawn_child(tmp_path):
    script = tmp_path / "launch.py"
    script.write_text(_UNGUARDED)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False)
    assert "finished its bootstrapping phase" in done.stderr
    assert "exitcode 1" in done.stdout
