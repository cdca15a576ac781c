"""The memory-API tables agree with torch: the installed one (CPU) and the GPU machine's probe."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpumem_lint.knowledge.memory_api import memory_api

ROOT = Path(__file__).resolve().parent.parent
PROBE = json.loads((ROOT / "bench" / "gpu" / "cuda_bindings_probe.json").read_text(encoding="utf-8"))
API = memory_api()


def test_every_binding_a_cuda_build_has_is_listed():
    runtime = PROBE.get("runtime_names", PROBE["existing_but_unlisted"])
    assert set(runtime) <= API.private_names


@pytest.mark.parametrize("binding", sorted(API.private_to_public))
def test_private_binding_with_a_public_counterpart_exists(binding: str):
    assert binding in API.private_names


@pytest.mark.parametrize("public", sorted(set(API.private_to_public.values())))
def test_public_counterpart_exists_in_torch(public: str):
    torch = pytest.importorskip("torch")
    dotted = public.split("(", 1)[0].split(" ", 1)[0]  # "torch.cuda.memory_stats()" -> torch.cuda.memory_stats
    target = torch
    for part in dotted.split(".")[1:]:
        target = getattr(target, part)
    assert callable(target)


TWINS = json.loads((ROOT / "bench" / "gpu" / "public_twin_probe.json").read_text(encoding="utf-8"))["bindings"]


@pytest.mark.parametrize("binding", sorted(API.same_call))
def test_a_same_call_binding_returned_what_its_public_function_returns_on_the_gpu_machine(binding: str):
    """F41: GML405's fix calls the table's public function with the binding's own arguments."""
    assert TWINS[binding]["same"]
    assert API.private_to_public[binding] == f"torch.cuda.{TWINS[binding]['public']}()"


def test_bindings_measured_to_differ_are_not_same_call():
    assert {name for name, row in TWINS.items() if not row["same"]} == set(TWINS) - API.same_call


def test_integer_fraction_is_rejected_on_the_gpu_machine():
    assert PROBE["set_per_process_memory_fraction(1, 0)"].startswith("TypeError")


ACCELERATOR = json.loads((ROOT / "bench" / "gpu" / "accelerator_probe.json").read_text(encoding="utf-8"))


def _resolve(torch, dotted: str):
    target = torch
    for part in dotted.split(".")[1:]:
        target = getattr(target, part)
    return target


@pytest.mark.parametrize("name", sorted(API.deprecated_private))
def test_deprecated_private_function_warns_and_forwards(name: str):
    torch = pytest.importorskip("torch")
    assert callable(_resolve(torch, API.deprecated_private[name]))
    with pytest.warns(FutureWarning, match=API.deprecated_private[name].rsplit(".", 1)[1]):
        _resolve(torch, name)("expandable_segments:False")


@pytest.mark.parametrize("name", sorted(API.deprecated_private))
def test_deprecated_private_function_warned_on_the_gpu_machine(name: str):
    record = ACCELERATOR["allocator_settings"][name]
    assert record["accepted"] and any(w.startswith("FutureWarning") for w in record["warnings"]), record
    assert ACCELERATOR["allocator_settings"][API.deprecated_private[name]]["exists"]


HOST = json.loads((ROOT / "bench" / "gpu" / "host_memory_probe.json").read_text(encoding="utf-8"))


def test_f49_host_memory_was_measured_outside_the_cuda_allocator():
    """GML407 ignores a deleted name whose memory is on the host: nothing of it is the cache's."""
    assert HOST["load_map_location_cpu"]["device"] == "cpu" and HOST["load_map_location_cpu"]["cuda_memory_unchanged"]
    assert HOST["cpu_copy"]["device"] == "cpu" and HOST["cpu_copy"]["cuda_memory_unchanged"]
    assert HOST["del_cuda_tensor_with_host_copy_kept"]["block_returned"]


def test_f49_the_host_calls_give_cpu_tensors_on_the_installed_torch(tmp_path):
    torch = pytest.importorskip("torch")
    path = tmp_path / "t.pt"
    torch.save({"w": torch.ones(3)}, path)
    loaded = torch.load(path, map_location=next(iter(API.host_locations)))
    assert API.host_load_functions == {"torch.load"} and loaded["w"].device.type == "cpu"
    for method in API.host_methods:
        assert getattr(torch.ones(3), method)().device.type == "cpu"
