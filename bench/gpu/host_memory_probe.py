"""Whether host memory ever sits in the CUDA caching allocator: what GML407 may ignore (docs/facts.md F49).

    python bench/gpu/host_memory_probe.py > bench/gpu/host_memory_probe.json

On device 0, for a 64 MiB tensor: `torch.load(f, map_location="cpu")` of a saved CUDA tensor and
`t.cpu()` give CPU tensors and change neither `memory_allocated()` nor `memory_reserved()`; and
`del` of a CUDA tensor whose `.cpu()` copy is still referred to, then `empty_cache()`, returns the
CUDA block to the driver (reserved memory drops): a holder of host memory keeps no CUDA memory.
"""

from __future__ import annotations

import io
import json

import torch

ELEMENTS = 16 * 1024 * 1024  # 64 MiB of float32


def counters() -> dict[str, int]:
    torch.cuda.synchronize()
    return {"allocated": torch.cuda.memory_allocated(), "reserved": torch.cuda.memory_reserved()}


def main() -> None:
    saved = io.BytesIO()
    torch.save(torch.ones(ELEMENTS, device="cuda"), saved)
    torch.cuda.empty_cache()
    before_load = counters()
    saved.seek(0)
    loaded = torch.load(saved, map_location="cpu")
    after_load = counters()

    gpu = torch.ones(ELEMENTS, device="cuda")
    before_copy = counters()
    host = gpu.cpu()
    after_copy = counters()
    kept = host  # the host copy is still referred to by another name
    del gpu, host
    torch.cuda.empty_cache()
    after_release = counters()
    print(
        json.dumps(
            {
                "torch": torch.__version__,
                "device": torch.cuda.get_device_name(0),
                "bytes": ELEMENTS * 4,
                "load_map_location_cpu": {
                    "device": str(loaded.device),
                    "before": before_load,
                    "after": after_load,
                    "cuda_memory_unchanged": before_load == after_load,
                },
                "cpu_copy": {
                    "device": str(kept.device),
                    "before": before_copy,
                    "after": after_copy,
                    "cuda_memory_unchanged": before_copy == after_copy,
                },
                "del_cuda_tensor_with_host_copy_kept": {
                    "before": before_copy,
                    "after_empty_cache": after_release,
                    "block_returned": after_release["reserved"] <= before_copy["reserved"] - ELEMENTS * 4,
                },
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
