"""`trace --trace-steps N`: the first N training steps and the next forward pass are traced in full, then the
dispatch mode comes off and the program runs at full speed; what costs nothing per operator stays on."""

from __future__ import annotations

import ast
import json
import sys
import textwrap

import pytest

from trace_runs import run, trace_command

pytest.importorskip("torch")

TRAINING = """
import torch
from torch.utils._python_dispatch import _get_current_dispatch_mode

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
snapshot = model.weight.detach()  # read after the first step
modes = []
for step in range(4):
    loss = model(torch.ones(2, 4)).sum() + snapshot.sum()
    modes.append(type(_get_current_dispatch_mode()).__name__)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    if step == 2:
        late = model.bias.detach()
        model.bias.data.mul_(2)
        print(late.sum().item() > -1e9)
    torch.cuda.empty_cache()
print(modes)
"""

MANUAL = """
import torch
from torch.utils._python_dispatch import _get_current_dispatch_mode

weight = torch.zeros(3, requires_grad=True)
modes = []
for step in range(3):
    loss = (weight * 2).sum()
    modes.append(type(_get_current_dispatch_mode()).__name__)
    loss.backward()
    with torch.no_grad():
        weight -= 0.1 * weight.grad
    weight.grad = None
print(modes)
"""

ACCUMULATION = """
import torch
from torch.utils._python_dispatch import _get_current_dispatch_mode

model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
modes = []
for step in range(2):
    for micro in range(3):
        modes.append(type(_get_current_dispatch_mode()).__name__)
        model(torch.ones(1, 2)).sum().backward()
    optimizer.step()
    optimizer.zero_grad()
print(modes)
"""


WORKER = """
import torch
from torch.utils._python_dispatch import _get_current_dispatch_mode


class Items(torch.utils.data.Dataset):
    def __len__(self):
        return 60

    def __getitem__(self, index):
        value = torch.zeros(1)
        for _ in range(50):  # operators, so that a worker looks for the end of the sample
            value = value + 1
        return torch.tensor(type(_get_current_dispatch_mode()).__name__ == "StorageMode")


if __name__ == "__main__":
    model = torch.nn.Linear(1, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    traced_in_worker = []
    for traced in torch.utils.data.DataLoader(Items(), batch_size=1, num_workers=1):
        traced_in_worker.append(bool(traced))
        model(torch.ones(1, 1)).sum().backward()
        optimizer.step()
    print([traced_in_worker[0], traced_in_worker[-1]])
"""


def trace(tmp_path, source: str, *options: str):
    script = tmp_path / "program.py"
    script.write_text(textwrap.dedent(source).lstrip(), encoding="utf-8")
    report = tmp_path / "report.json"
    done = run(trace_command("--output-format", "json", "-o", str(report), *options, str(script)), tmp_path)
    plain = run([sys.executable, str(script)], tmp_path)
    return done, plain, json.loads(report.read_text(encoding="utf-8"))


def modes(done) -> list[str]:
    return ast.literal_eval(done.stdout.strip().splitlines()[-1])  # the program's own print of a list of names


def test_one_step_then_the_next_forward_then_no_dispatch_mode(tmp_path):
    done, plain, report = trace(tmp_path, TRAINING, "--trace-steps", "1")
    assert modes(done) == ["StorageMode", "StorageMode", "NoneType", "NoneType"], done.stderr
    assert modes(plain) == ["NoneType"] * 4
    by_code = {}
    for finding in report:
        by_code.setdefault(finding["code"], []).append(finding)
    # The first step's write is seen through the snapshot read in the second forward pass.
    [seen] = [f for f in by_code["GML103"] if f["source"] == "trace"]
    assert (seen["location"]["row"], seen["status"]) == (12, "confirmed")
    # The third step's `.data` write is past the sample: not traced, and said so.
    [late] = [f for f in by_code["GML103"] if f["source"] == "check"]
    assert (late["location"]["row"], late["status"]) == (16, "not-traced")
    assert late["message"].startswith("tracing stopped at --trace-steps before this line")
    # What costs nothing per operator keeps counting: empty_cache() in each of the 4 steps.
    [every_step] = by_code["GML406"]
    assert (every_step["source"], every_step["status"]) == ("trace", "confirmed")


def test_without_an_optimizer_a_step_is_a_backward_call(tmp_path):
    done, _, _ = trace(tmp_path, MANUAL, "--trace-steps", "1")
    assert modes(done) == ["StorageMode", "StorageMode", "NoneType"], done.stderr


def test_with_an_optimizer_accumulated_backward_calls_are_one_step(tmp_path):
    done, _, _ = trace(tmp_path, ACCUMULATION, "--trace-steps", "1")
    assert modes(done) == ["StorageMode"] * 4 + ["NoneType"] * 2, done.stderr


def test_a_worker_stops_tracing_once_the_parents_sample_ended(tmp_path):
    done, plain, _ = trace(tmp_path, WORKER, "--trace-steps", "1")
    assert done.stdout.splitlines()[-1] == "[True, False]", done.stderr
    assert plain.stdout.splitlines()[-1] == "[False, False]"
