"""`gpumem-lint trace` on the hazards only a CUDA machine shows (issue 17): the finding at its line, the
program's output, traceback and exit code unchanged. Skipped without a CUDA device."""

from __future__ import annotations

import json
import re
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")
if torch.cuda.device_count() == 0:  # NVML: does not initialise CUDA in this process
    pytest.skip("needs a CUDA device", allow_module_level=True)

from tests.trace_runs import run, trace_command  # noqa: E402

FORK_AFTER_CUDA = """
import multiprocessing

import torch


def work():
    print(torch.zeros(1, device="cuda").sum().item())


if __name__ == "__main__":
    torch.zeros(1, device="cuda")  # the parent starts CUDA
    child = multiprocessing.get_context("fork").Process(target=work)
    child.start()
    child.join()
    print("child exit code", child.exitcode)
"""

ALLOCATOR_AFTER_INIT = """
import torch
from torch.cuda.memory import CUDAPluggableAllocator, change_current_allocator

torch.zeros(1, device="cuda")  # the caching allocator is initialised here
allocator = CUDAPluggableAllocator("libc.so.6", "malloc", "free")  # never called: the swap is refused
change_current_allocator(allocator)
"""


def traced_and_plain(tmp_path, source: str):
    script = tmp_path / "program.py"
    script.write_text(textwrap.dedent(source).lstrip(), encoding="utf-8")
    report = tmp_path / "report.json"
    plain = run([sys.executable, str(script)], tmp_path)
    traced = run(trace_command("--output-format", "json", "-o", str(report), str(script)), tmp_path)
    lines = script.read_text(encoding="utf-8").splitlines()
    return plain, traced, json.loads(report.read_text(encoding="utf-8")), lines


def row(lines: list[str], text: str) -> int:
    return next(number for number, line in enumerate(lines, start=1) if text in line)


def test_fork_after_cuda_is_gml204_with_the_childs_cuda_use(tmp_path):
    plain, traced, report, lines = traced_and_plain(tmp_path, FORK_AFTER_CUDA)
    assert "Cannot re-initialize CUDA in forked subprocess" in plain.stderr
    assert (traced.stdout, traced.stderr) == (plain.stdout, plain.stderr)
    assert "child exit code 1" in plain.stdout
    assert traced.returncode == 1 and plain.returncode == 0  # 1: a hazard was observed
    [finding] = [f for f in report if f["source"] == "trace"]
    # Confirmed against the static finding (at the child's creation); the run adds where the child used CUDA.
    assert (finding["code"], finding["status"]) == ("GML204", "confirmed")
    assert finding["location"]["row"] == row(lines, 'get_context("fork")')
    related = {r["message"]: r["location"]["row"] for r in finding["related"]}
    assert related["CUDA used in the child"] == row(lines, 'print(torch.zeros(1, device="cuda")')


def test_an_allocator_swapped_after_cuda_init_is_gml403_at_the_swap(tmp_path):
    plain, traced, report, lines = traced_and_plain(tmp_path, ALLOCATOR_AFTER_INIT)
    assert "Can't swap an already initialized allocator" in plain.stderr
    assert (traced.stdout, traced.stderr, traced.returncode) == (plain.stdout, plain.stderr, plain.returncode)
    [finding] = [f for f in report if f["source"] == "trace"]
    assert (finding["code"], finding["location"]["row"]) == (
        "GML403",
        row(lines, "change_current_allocator(allocator)"),
    )
    assert finding["status"] == "confirmed"


SAVED_ON_CUDA = """
import torch

model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(inplace=True), torch.nn.Linear(8, 1)).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
for step in range(3):  # backward runs on its own CUDA thread: its `.grad` detaches are no alias of ours
    optimizer.zero_grad(set_to_none=False)
    model(torch.ones(2, 4, device="cuda")).sum().backward()
    optimizer.step()
x = torch.randn(8, device="cuda", requires_grad=True)
hidden = torch.sigmoid(x * 2)
hidden += 1
hidden.sum().backward()
"""


def test_a_saved_tensor_overwritten_on_cuda_is_gml109_and_training_steps_are_clean(tmp_path):
    plain, traced, report, lines = traced_and_plain(tmp_path, SAVED_ON_CUDA)
    assert "modified by an inplace operation" in plain.stderr
    assert (traced.stdout, traced.stderr, traced.returncode) == (plain.stdout, plain.stderr, plain.returncode)
    [finding] = [f for f in report if f["source"] == "trace"]
    assert (finding["code"], finding["location"]["row"]) == ("GML109", row(lines, "hidden += 1"))
    related = {r["message"]: r["location"]["row"] for r in finding["related"]}
    assert related["saved by `sigmoid` for its backward"] == row(lines, "torch.sigmoid(x * 2)")


CUDA_TENSOR_AFTER_ITS_SENDER_EXITED = """
import torch
import torch.multiprocessing as mp


def produce(queue):
    queue.put(torch.ones(4, device="cuda"))


if __name__ == "__main__":
    context = mp.get_context("spawn")
    queue = context.Queue()
    child = context.Process(target=produce, args=(queue,))
    child.start()
    child.join()  # the sender exits: its CUDA memory, and the IPC handle the queue carries, go with it
    print(queue.get())
"""

#: The time stamp of a line c10 logs (`[W1201 19:39:53.589068516 CudaIPCTypes.cpp:16] ...`).
_LOGGED_AT = re.compile(r"^\[([WEI])\d{4} [\d:.]+ ", re.MULTILINE)


def _timeless(stderr: str) -> str:
    return _LOGGED_AT.sub(r"[\1 ", stderr)


def test_a_cuda_tensor_received_after_its_sender_exited_is_gml209_at_the_put(tmp_path):
    plain, traced, report, lines = traced_and_plain(tmp_path, CUDA_TENSOR_AFTER_ITS_SENDER_EXITED)
    assert "invalid resource handle" in plain.stderr, plain.stderr
    assert "torch/multiprocessing/reductions.py" in plain.stderr  # raised while the receiver rebuilds the tensor
    assert (traced.stdout, traced.returncode) == (plain.stdout, plain.returncode)
    assert plain.returncode == 1
    assert _timeless(traced.stderr) == _timeless(plain.stderr)
    [finding] = [f for f in report if f["source"] == "trace"]
    assert (finding["code"], finding["status"]) == ("GML209", "confirmed")
    assert finding["location"]["row"] == row(lines, "queue.put(")
    related = {r["message"]: r["location"]["row"] for r in finding["related"]}
    assert related["the program failed here"] == row(lines, "print(queue.get())")


CUDA_IN_FORKED_WORKERS = """
import torch
from torch.utils.data import DataLoader, Dataset


class OnDevice(Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, index):
        return torch.full((2,), float(index)).cuda()


if __name__ == "__main__":
    torch.zeros(1, device="cuda")  # the parent starts CUDA
    for batch in DataLoader(OnDevice(), num_workers=1, multiprocessing_context="fork"):
        print(batch)
"""


def test_a_forked_workers_cuda_use_is_gml205_at_its_line(tmp_path):
    plain, traced, report, lines = traced_and_plain(tmp_path, CUDA_IN_FORKED_WORKERS)
    story = json.dumps(report, indent=1) + "\n" + plain.stderr + "\n---\n" + traced.stderr
    assert "Cannot re-initialize CUDA in forked subprocess" in plain.stderr, story
    assert (traced.stdout, traced.stderr, traced.returncode) == (plain.stdout, plain.stderr, plain.returncode), story
    found = [(f["code"], f["status"], f["location"]["row"]) for f in report if f["source"] == "trace"]
    assert found == [("GML205", "confirmed", row(lines, ".cuda()"))], story
