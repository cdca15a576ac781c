"""Re-measure devices.toml [default_device] (docs/facts.md F40) with the meta device: the factories
listed allocate on the default device, the others do not, and a forked child inherits the default
device while a spawned one does not."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpumem_lint.knowledge.devices import default_device

torch = pytest.importorskip("torch")

_ARGUMENTS = {"full": ((2,), 1.0), "randint": (0, 5, (2,)), "linspace": (0, 1, 3), "logspace": (0, 1, 3)}
_ARGUMENTS |= {"tensor": ([1, 2],), "as_tensor": ([1, 2],), "empty_strided": ((2,), (1,))}


@pytest.fixture
def meta_default():
    torch.set_default_device("meta")
    try:
        yield
    finally:
        torch.set_default_device(None)


@pytest.mark.parametrize("factory", sorted(default_device().factories))
def test_each_factory_allocates_on_the_default_device(meta_default, factory):
    name = factory.removeprefix("torch.")
    assert getattr(torch, name)(*_ARGUMENTS.get(name, (2,))).device.type == "meta"


def test_the_factories_left_out_do_not(meta_default):
    assert torch.normal(0.0, 1.0, (2,)).device.type == "cpu"
    assert torch.zeros_like(torch.zeros(2, device="cpu")).device.type == "cpu"


_CHILDREN = """
import multiprocessing as mp, torch

def child(answers):
    answers.put(torch.zeros(1).device.type)

if __name__ == "__main__":
    torch.set_default_device("meta")
    for method in ("fork", "spawn"):
        context = mp.get_context(method)
        answers = context.Queue()
        process = context.Process(target=child, args=(answers,))
        process.start()
        print(method, answers.get(timeout=120))
        process.join()
"""


def test_a_forked_child_inherits_the_default_device_and_a_spawned_one_does_not(tmp_path):
    script = tmp_path / "children.py"  # a file: spawn children import the main module by its path
    script.write_text(_CHILDREN)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, check=True)
    assert done.stdout.split() == ["fork", "meta", "spawn", "cpu"]


def test_the_setters_exist():
    for name in default_device().device_setters | default_device().type_setters:
        module, attribute = name.rsplit(".", 1)
        assert module == "torch" and callable(getattr(torch, attribute))


def test_recorded_gpu_run_of_a_cuda_default_tensor_type():
    recorded = json.loads((Path(__file__).resolve().parent.parent / "bench/gpu/default_device_probe.json").read_text())
    assert recorded["parent_int_tensor"] == recorded["parent_zeros"] == "cuda:0"
    assert recorded["fork"][0] == "RuntimeError" and "Cannot re-initialize CUDA" in recorded["fork"][1]
    assert recorded["spawn"] == ["ok", "cpu"]
