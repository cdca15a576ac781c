"""The lock-in table agrees with the recorded import probe (docs/facts.md F39): a third-party package
is an import-time CUDA event exactly when bench/gpu/import_probe.py saw its import start the driver.

The probe needs a GPU (bench/gpu/import_probe.py); this test reads its recorded JSON and needs no torch.
"""

from __future__ import annotations

import json
from pathlib import Path

from gpumem_lint.knowledge.lockin import lockin_table

ROOT = Path(__file__).resolve().parent.parent
RECORDED = json.loads((ROOT / "bench" / "gpu" / "import_probe.json").read_text())["packages"]
CUDA_EVENTS = ("cuda_driver_init", "torch_cuda_init", "context_creation")


def _cuda_event_modules() -> set[str]:
    events = lockin_table().events
    return {module for event in CUDA_EVENTS for module in events[event].modules}


def test_every_package_measured_to_start_cuda_at_import_is_a_cuda_event():
    started = {name for name, row in RECORDED.items() if row.get("installed") and (row["driver"] or row["context"])}
    assert started <= _cuda_event_modules()


def test_no_package_measured_to_start_nothing_is_a_cuda_event():
    quiet = {name for name, row in RECORDED.items() if row.get("installed") and not (row["driver"] or row["context"])}
    assert quiet, "the recorded probe measured no installed package"
    assert not quiet & _cuda_event_modules()


def test_a_forked_child_uses_cuda_after_each_quiet_import():
    # F14: what poisons a fork is a started driver; a quiet import must leave the fork usable.
    for name, row in RECORDED.items():
        if row.get("installed") and not row["driver"]:
            assert row["fork_child"] == "ok", name
