"""Measure the lock-in rows added for issue 18 on a CUDA machine: torch.accelerator, cpp_extension,
the private allocator settings, and CUDA reached in DataLoader workers by paths other than
`__getitem__`.

    python bench/gpu/accelerator_probe.py > bench/gpu/accelerator_probe.json

Part 1 (`calls`) has the shape of lockin_probe.py's: one call after `import torch` in a fresh
interpreter and what it started (`driver`, `torch_init`, `context`, `allocated`); tests/test_lockin_table.py
checks the table's `measured` names against both files. Part 2 (`workers`) runs a DataLoader with
two workers after the parent allocated on the GPU and records whether a batch came back or the
error the worker raised. Part 3 (`allocator_settings`) records which allocator-settings calls exist
and warn.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lockin_probe import _STATE, _run  # noqa: E402

_EXTENSION = """
import os
from torch.utils.cpp_extension import load_inline
build = os.environ["PROBE_BUILD_DIR"]
os.makedirs(build, exist_ok=True)
"""
_CPU_EXTENSION = _EXTENSION + (
    'load_inline(name="probe_cpp", cpp_sources="int answer() { return 42; }", functions=["answer"], '
    "build_directory=build, with_cuda=False)"
)
_CUDA_EXTENSION = _EXTENSION + (
    'load_inline(name="probe_cuda", cpp_sources="void launch();", '
    'cuda_sources="__global__ void k() {}\\nvoid launch() { k<<<1, 1>>>(); }", functions=["launch"], '
    "build_directory=build, with_cuda=True)"
)

_LOAD_CU = """
import os
from torch.utils.cpp_extension import load
build = os.environ["PROBE_BUILD_DIR"]
os.makedirs(build, exist_ok=True)
with open(os.path.join(build, "probe_kernel.cu"), "w") as f:
    f.write("#include <torch/extension.h>\\n__global__ void k() {}\\nvoid launch() { k<<<1, 1>>>(); }\\n"
            "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def(\\"launch\\", &launch); }\\n")
load(name="probe_cu", sources=[os.path.join(build, "probe_kernel.cu")], build_directory=build)
"""

#: name -> (code, environment); the name is what a `measured` list in lockin.toml says.
CALLS = {
    "torch.accelerator.is_available": ("torch.accelerator.is_available()", {}),
    "torch.accelerator.current_accelerator": ("torch.accelerator.current_accelerator()", {}),
    "torch.accelerator.current_accelerator(check_available=True)": (
        "torch.accelerator.current_accelerator(check_available=True)",
        {},
    ),
    "torch.accelerator.device_count": ("torch.accelerator.device_count()", {}),
    "torch.accelerator.current_device_index": ("torch.accelerator.current_device_index()", {}),
    "torch.accelerator.set_device_index": ("torch.accelerator.set_device_index(0)", {}),
    "torch.accelerator.device_index": ("with torch.accelerator.device_index(0):\n    pass", {}),
    "torch.accelerator.current_stream": ("torch.accelerator.current_stream()", {}),
    "torch.accelerator.synchronize": ("torch.accelerator.synchronize()", {}),
    "torch.accelerator.empty_cache": ("torch.accelerator.empty_cache()", {}),
    "torch.accelerator.memory_allocated": ("torch.accelerator.memory_allocated()", {}),
    "torch.accelerator.memory_reserved": ("torch.accelerator.memory_reserved()", {}),
    "torch.accelerator.max_memory_allocated": ("torch.accelerator.max_memory_allocated()", {}),
    "torch.accelerator.memory_stats": ("torch.accelerator.memory_stats()", {}),
    "torch.accelerator.reset_peak_memory_stats": ("torch.accelerator.reset_peak_memory_stats()", {}),
    "torch.accelerator.get_memory_info": ("torch.accelerator.get_memory_info()", {}),
    "import torch.utils.cpp_extension": ("import torch.utils.cpp_extension", {}),
    "torch.utils.cpp_extension.load_inline(with_cuda=False)": (_CPU_EXTENSION, {"BUILD": "cpu"}),
    "torch.utils.cpp_extension.load_inline(with_cuda=True)": (_CUDA_EXTENSION, {"BUILD": "cuda"}),
    "torch.utils.cpp_extension.load_inline(with_cuda=True) with TORCH_CUDA_ARCH_LIST": (
        _CUDA_EXTENSION,
        {"BUILD": "cuda_arch", "TORCH_CUDA_ARCH_LIST": "9.0"},
    ),
    "torch.utils.cpp_extension.load(sources=[*.cu])": (_LOAD_CU, {"BUILD": "load_cu"}),
}
#: Run after the first build of the same directory: the build is then reused.
CACHED = {
    "torch.utils.cpp_extension.load_inline(with_cuda=True), already built": (
        "torch.utils.cpp_extension.load_inline(with_cuda=True)"
    ),
}

_WORKERS = """
import json, sys, torch
from torch.utils.data import DataLoader, Dataset, TensorDataset, default_collate

class Rows(Dataset):
    def __len__(self):
        return 8
    def __getitem__(self, i):
        return torch.full((2,), float(i))

def to_cuda(batch):
    return default_collate(batch).cuda()

def pin(batch):
    return default_collate(batch).pin_memory()

def init_worker(worker_id):
    torch.zeros(1, device="cuda")

def main(case):
    if case != "collate_fn .cuda() without CUDA in the parent":
        torch.zeros(1, device="cuda")
    kwargs = {"num_workers": 2, "batch_size": 4}
    dataset = Rows()
    if case.startswith("collate_fn .cuda()"):
        kwargs["collate_fn"] = to_cuda
        if case.endswith("spawn"):
            kwargs["multiprocessing_context"] = "spawn"
    elif case == "collate_fn .pin_memory()":
        kwargs["collate_fn"] = pin
    elif case == "pin_memory=True":
        kwargs["pin_memory"] = True
    elif case == "worker_init_fn allocates":
        kwargs["worker_init_fn"] = init_worker
    elif case == "TensorDataset of CUDA tensors":
        dataset = TensorDataset(torch.arange(8.0).cuda())
    try:
        batches = [batch for batch in DataLoader(dataset, **kwargs)]
        first = batches[0][0] if isinstance(batches[0], list) else batches[0]
        out = {"outcome": "ok", "device": str(first.device), "pinned": bool(first.is_pinned())}
    except Exception as error:
        out = {"outcome": type(error).__name__, "detail": str(error).strip().splitlines()[-1][:200]}
    print(json.dumps(out))

if __name__ == "__main__":
    main(sys.argv[1])
"""
WORKER_CASES = [
    "collate_fn .cuda()",
    "collate_fn .cuda() without CUDA in the parent",
    "collate_fn .cuda(), spawn",
    "collate_fn .pin_memory()",
    "pin_memory=True",
    "worker_init_fn allocates",
    "TensorDataset of CUDA tensors",
]

_ALLOCATOR_SETTINGS = """
import json, warnings, torch
out = {}
for name in ("torch.cuda.memory._set_allocator_settings", "torch._C._accelerator_setAllocatorSettings",
             "torch._C._cuda_cudaCachingAllocator_set_allocator_settings", "torch.cuda.memory.set_allocator_settings",
             "torch.accelerator.set_allocator_settings", "torch._C._accelerator_getAllocatorSettings"):
    owner, _, attr = name.rpartition(".")
    try:
        target = eval(owner)
        function = getattr(target, attr)
    except Exception:
        out[name] = {"exists": False}
        continue
    record = {"exists": True}
    if attr.startswith("_accelerator_get"):
        out[name] = record
        continue
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            function("expandable_segments:False")
            record["accepted"] = True
        except Exception as error:
            record["error"] = f"{type(error).__name__}: {str(error).strip().splitlines()[0][:160]}"
    record["warnings"] = [f"{w.category.__name__}: {str(w.message)[:160]}" for w in caught]
    out[name] = record
out["torch.cuda.is_initialized() after"] = torch.cuda.is_initialized()
print(json.dumps(out))
"""


def _call(name: str, code: str, env: dict[str, str], root: str) -> dict:
    env = dict(env)
    build = env.pop("BUILD", None)
    if build is not None:
        env.update(PROBE_BUILD_DIR=os.path.join(root, build), MAX_JOBS="4")
    result = _run(_STATE + "import os\n" + code + "\nprint(json.dumps(_state()))", env)
    record = {"name": name, "code": code.strip() if build is None else f"(build {build}) {name}"}
    if result.returncode == 0:
        record["result"] = json.loads(result.stdout.strip().splitlines()[-1])
    else:
        lines = [line for line in result.stderr.strip().splitlines() if line.strip()]
        record["error"] = lines[-1][:300] if lines else f"exit {result.returncode}"
    return record


def _worker(case: str, script: str) -> dict:
    result = subprocess.run(
        [sys.executable, script, case], capture_output=True, text=True, timeout=240, check=False
    )
    lines = result.stdout.strip().splitlines()
    if lines:
        return {"name": case, "result": json.loads(lines[-1])}
    return {"name": case, "error": (result.stderr.strip().splitlines() or [f"exit {result.returncode}"])[-1][:300]}


def main() -> None:
    # The machine's image may preset the architectures; without them a CUDA build asks the GPU.
    preset = os.environ.pop("TORCH_CUDA_ARCH_LIST", None)
    version = _run(
        "import sys, torch; print(torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0), "
        "torch.cuda.device_count(), sys.version.split()[0])",
        {},
    )
    with tempfile.TemporaryDirectory() as root:
        script = os.path.join(root, "workers.py")
        Path(script).write_text(_WORKERS, encoding="utf-8")
        with ThreadPoolExecutor(max_workers=8) as pool:
            calls = list(pool.map(lambda item: _call(item[0], *item[1], root), CALLS.items()))
            workers = list(pool.map(lambda case: _worker(case, script), WORKER_CASES))
        for name, again in CACHED.items():
            code, env = CALLS[again]
            calls.append(_call(name, code, env, root))
        settings = _run(_ALLOCATOR_SETTINGS, {})
    json.dump(
        {
            "torch": version.stdout.strip() or version.stderr.strip()[-300:],
            "preset TORCH_CUDA_ARCH_LIST (removed for the probes)": preset,
            "calls": calls,
            "workers": workers,
            "allocator_settings": json.loads(settings.stdout.strip().splitlines()[-1])
            if settings.returncode == 0
            else settings.stderr.strip()[-300:],
        },
        sys.stdout,
        indent=1,
    )
    print()


if __name__ == "__main__":
    main()
