"""On a CUDA machine, re-run bench/gpu/process_probe.py and compare with the recorded facts (F13-F15, F38, F55)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
if torch.cuda.device_count() == 0:  # NVML: does not initialise CUDA in this process
    pytest.skip("needs a CUDA device", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
RECORDED = json.loads((ROOT / "bench" / "gpu" / "process_probe.json").read_text())["probes"]


def test_probe_matches_the_recorded_facts():
    spec = importlib.util.spec_from_file_location("process_probe", ROOT / "bench" / "gpu" / "process_probe.py")
    probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)
    for name in ("fork_after_nothing", "fork_after_is_available", "fork_after_allocation", "spawn_after_allocation"):
        assert probe.run(probe._PROBES[name])["child"] == RECORDED[name]["child"], name
    measured = probe.run(probe._PROBES["producer_exits_before_read"])
    assert measured["mean"] is None and "invalid resource handle" in measured["outcome"]
    relayed = probe.run(probe._PROBES["relay_received_cuda_tensor"])
    assert relayed["outcome"] == RECORDED["relay_received_cuda_tensor"]["outcome"]
    for name in ("resend_from_queue", "resend_view_from_queue", "resend_process_argument", "resend_clone_from_queue"):
        measured = probe.run(probe._PROBES[name])
        assert (measured["outcome"], measured["mean"]) == (RECORDED[name]["outcome"], RECORDED[name]["mean"]), name
    managed = probe.run(probe._PROBES["manager_queue_cuda_tensor"])
    assert (managed["consumer"], managed["error"]) == (
        RECORDED["manager_queue_cuda_tensor"]["consumer"],
        RECORDED["manager_queue_cuda_tensor"]["error"],
    )
