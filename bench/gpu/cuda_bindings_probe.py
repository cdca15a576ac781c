"""Compare the `torch._C._cuda_*` bindings of a CUDA build with gpumem_lint/knowledge/cuda_private_api.json.

    python bench/gpu/cuda_bindings_probe.py > bench/gpu/cuda_bindings_probe.json

GML404 calls a binding outside the generated list nonexistent; this lists, for the torch on a GPU
host, the bindings that exist but are missing from the list (possible false positives) and the
listed names that do not exist there (harmless: newer or ROCm-only).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

LISTED = Path(__file__).resolve().parents[2] / "gpumem_lint" / "knowledge" / "cuda_private_api.json"


def main() -> None:
    runtime = sorted(name for name in dir(torch._C) if name.startswith("_cuda_"))
    listed = set(json.loads(LISTED.read_text(encoding="utf-8"))["names"])
    try:
        torch.cuda.set_per_process_memory_fraction(1, 0)
        integer_fraction = "accepted"
    except Exception as error:
        integer_fraction = f"{type(error).__name__}: {error}"
    json.dump(
        {
            "torch": torch.__version__,
            "runtime_bindings": len(runtime),
            "runtime_names": runtime,
            "existing_but_unlisted": sorted(set(runtime) - listed),
            "listed_but_absent": sorted(listed - set(runtime)),
            "set_per_process_memory_fraction(1, 0)": integer_fraction,
        },
        sys.stdout,
        indent=1,
    )
    print()


if __name__ == "__main__":
    main()
