"""Measure what GML402 relies on, on a machine with two GPUs: which device
`torch.cuda.set_per_process_memory_fraction(fraction)` caps when no `device` is given.

    python bench/gpu/memory_fraction_probe.py > bench/gpu/memory_fraction_probe.json

Each probe runs in a fresh interpreter: it sets a cap of 5 % without `device` (after
`torch.cuda.set_device(first)`), then allocates 16 GiB, well above the cap, on each GPU.
Not run yet: no machine with two GPUs was lent on 2026-12-01 (issue 18, docs/coverage-issue-18.md), so
no JSON, fact or test rests on it.
"""

from __future__ import annotations

import json
import subprocess
import sys

_CAP_WITHOUT_DEVICE = """
import json, torch

torch.cuda.set_device({current})
torch.cuda.set_per_process_memory_fraction(0.05)
out = {{"current_device": torch.cuda.current_device()}}
getter = getattr(torch.cuda, "get_per_process_memory_fraction", None)
if getter is not None:
    out["fractions"] = [getter(i) for i in range(2)]
for i in range(2):
    try:
        x = torch.empty(16 << 30, dtype=torch.uint8, device=f"cuda:{{i}}")
        out[f"cuda:{{i}}"] = "allocated 16 GiB"
        del x
        torch.cuda.empty_cache()
    except torch.OutOfMemoryError as error:
        out[f"cuda:{{i}}"] = "OutOfMemoryError: " + str(error).split(".")[0][:160]
print(json.dumps(out))
"""

_PROBES = {
    "cap_without_device_current_0": _CAP_WITHOUT_DEVICE.format(current=0),
    "cap_without_device_current_1": _CAP_WITHOUT_DEVICE.format(current=1),
}


def run(source: str) -> dict:
    done = subprocess.run([sys.executable, "-c", source], check=False, capture_output=True, text=True, timeout=180)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if lines else {"error": done.stderr.strip()[-400:]}


def main() -> None:
    import torch

    report = {
        "torch": torch.__version__,
        "devices": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())],
        "probes": {name: run(source) for name, source in _PROBES.items()},
    }
    json.dump(report, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
