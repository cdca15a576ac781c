"""On a CUDA machine, re-run bench/gpu/public_twin_probe.py and compare with the recorded table (F41)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
if torch.cuda.device_count() == 0:  # NVML: does not initialise CUDA in this process
    pytest.skip("needs a CUDA device", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
RECORDED = json.loads((ROOT / "bench" / "gpu" / "public_twin_probe.json").read_text())["bindings"]


def test_probe_matches_the_recorded_table():
    probe = ROOT / "bench" / "gpu" / "public_twin_probe.py"
    done = subprocess.run([sys.executable, str(probe)], capture_output=True, text=True, check=True, timeout=300)
    measured = json.loads(done.stdout)["bindings"]
    assert {name: row["same"] for name, row in measured.items()} == {
        name: row["same"] for name, row in RECORDED.items()
    }
