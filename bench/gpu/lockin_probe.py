"""Re-measure the lock-in table (gpumem_lint/knowledge/lockin.toml) on a CUDA machine.

    python bench/gpu/lockin_probe.py > bench/gpu/lockin_probe.json

Each probe runs in a fresh interpreter. Part 1 runs one call after `import torch` and reports
what it started: `driver` (cuInit has run: the driver's cuDeviceGetCount no longer answers
CUDA_ERROR_NOT_INITIALIZED), `torch_init` (torch.cuda.is_initialized()), `context` (device 0's
primary context is active) and `allocated` (bytes the caching allocator holds). Part 2 writes a
variable after a given call and observes whether the write was honoured, ignored, made torch and
CUDA disagree, or crashed. tests/test_lockin_table.py checks the table against this output.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

_STATE = """
import ctypes, json, torch
def _state():
    cuda = ctypes.CDLL("libcuda.so.1")
    count = ctypes.c_int()
    driver = cuda.cuDeviceGetCount(ctypes.byref(count)) == 0
    flags, active = ctypes.c_uint(), ctypes.c_int()
    context = driver and cuda.cuDevicePrimaryCtxGetState(0, ctypes.byref(flags), ctypes.byref(active)) == 0 and bool(active.value)
    allocated = torch.cuda.memory_allocated() if torch.cuda.is_initialized() else 0
    return {"driver": driver, "torch_init": torch.cuda.is_initialized(), "context": context, "allocated": allocated}
"""

#: The name a row of lockin.toml uses for a call -> the code that makes it.
CALLS = {
    "torch.cuda.is_available": "torch.cuda.is_available()",
    "torch.cuda.init": "torch.cuda.init()",
    "torch.cuda.current_device": "torch.cuda.current_device()",
    "torch.cuda.get_device_properties": "torch.cuda.get_device_properties(0)",
    "torch.cuda.get_device_name": "torch.cuda.get_device_name(0)",
    "torch.cuda.get_device_capability": "torch.cuda.get_device_capability(0)",
    "torch.cuda.is_bf16_supported": "torch.cuda.is_bf16_supported()",
    "torch.backends.cudnn.version": "torch.backends.cudnn.version()",
    "torch.cuda.set_per_process_memory_fraction": "torch.cuda.set_per_process_memory_fraction(0.5)",
    "torch.cuda.set_device": "torch.cuda.set_device(0)",
    "torch.cuda.Stream": "torch.cuda.Stream()",
    "torch.cuda.mem_get_info": "torch.cuda.mem_get_info()",
    "torch.cuda.synchronize": "torch.cuda.synchronize()",
    ".pin_memory": "torch.ones(1).pin_memory()",
    ".cuda": "torch.ones(1).cuda()",
    "torch.zeros(device='cuda')": "torch.zeros(1, device='cuda')",
    ".to('cuda')": "torch.ones(1).to('cuda')",
    "torch.device": "torch.device('cuda')",
    "torch.cuda.device_count": "torch.cuda.device_count()",
    "torch.cuda.is_initialized": "torch.cuda.is_initialized()",
    "torch.manual_seed": "torch.manual_seed(0)",
    "torch.cuda.manual_seed": "torch.cuda.manual_seed(0)",
    "torch.cuda.get_arch_list": "torch.cuda.get_arch_list()",
    "torch.cuda.memory_allocated": "torch.cuda.memory_allocated()",
    "torch.cuda.Event": "torch.cuda.Event()",
    "torch.amp.GradScaler": "torch.amp.GradScaler('cuda')",
    "torch.autocast": "torch.autocast('cuda')",
    "torch.cuda.memory._set_allocator_settings": "torch.cuda.memory._set_allocator_settings('expandable_segments:False')",
    "torch.cuda.memory._record_memory_history": "torch.cuda.memory._record_memory_history()",
    "torch.cuda.empty_cache": "torch.cuda.empty_cache()",
    # Not in the table yet: measured to decide.
    "torch.cuda.reset_peak_memory_stats": "torch.cuda.reset_peak_memory_stats()",
    "torch.cuda.memory_reserved": "torch.cuda.memory_reserved()",
    "torch.cuda.max_memory_allocated": "torch.cuda.max_memory_allocated()",
    "torch.cuda.memory_summary": "torch.cuda.memory_summary()",
    "torch.backends.cudnn.is_available": "torch.backends.cudnn.is_available()",
    "torch.Generator(device='cuda')": "torch.Generator(device='cuda')",
}

_CVD_CHECK = """
os.environ["CUDA_VISIBLE_DEVICES"] = ""
count = torch.cuda.device_count()
try:
    torch.zeros(1, device="cuda"); usable = True
except Exception:
    usable = False
out = {"device_count": count, "allocation_works": usable}
out["verdict"] = "honoured" if not usable and count == 0 else "inconsistent" if usable and count == 0 else "ignored"
"""
_BACKEND = """
try:
    torch.zeros(2, device="cuda"); out = {"backend": torch.cuda.get_allocator_backend()}
except Exception as error:
    out = {"error": str(error).strip().splitlines()[0][:200]}
"""
_EXPANDABLE = """
x = torch.empty(64 * 2**20, dtype=torch.uint8, device="cuda")
out = {"expandable": any(s.get("is_expandable") for s in torch.cuda.memory_snapshot() if s["total_size"] >= 64 * 2**20)}
"""
_CACHING = """
x = torch.empty(64 * 2**20, dtype=torch.uint8, device="cuda"); del x
out = {"reserved_after_free": torch.cuda.memory_reserved()}
"""
_BLOCKING = """
import time
start = time.perf_counter(); torch.cuda._sleep(10**9); out = {"launch_ms": round((time.perf_counter() - start) * 1e3, 1)}
torch.cuda.synchronize()
"""

# (name, code run after `import torch, os`, environment)
LATE_WRITES = [
    ("CUDA_VISIBLE_DEVICES after import torch", _CVD_CHECK, {}),
    ("CUDA_VISIBLE_DEVICES after torch.cuda.device_count()", "torch.cuda.device_count()\n" + _CVD_CHECK, {}),
    ("CUDA_VISIBLE_DEVICES after torch.device('cuda')", "torch.device('cuda')\n" + _CVD_CHECK, {}),
    ("CUDA_VISIBLE_DEVICES after torch.cuda.is_available()", "torch.cuda.is_available()\n" + _CVD_CHECK, {}),
    (
        "CUDA_VISIBLE_DEVICES after is_available() with PYTORCH_NVML_BASED_CUDA_CHECK=1",
        "torch.cuda.is_available()\n" + _CVD_CHECK,
        {"PYTORCH_NVML_BASED_CUDA_CHECK": "1"},
    ),
    ("CUDA_VISIBLE_DEVICES after get_device_properties(0)", "torch.cuda.get_device_properties(0)\n" + _CVD_CHECK, {}),
    ("CUDA_VISIBLE_DEVICES after torch.cuda.set_device(0)", "torch.cuda.set_device(0)\n" + _CVD_CHECK, {}),
    ("CUDA_VISIBLE_DEVICES after the first allocation", "torch.zeros(1, device='cuda')\n" + _CVD_CHECK, {}),
    (
        "PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync before import",
        _BACKEND,
        {"PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync"},
    ),
    (
        "PYTORCH_ALLOC_CONF=backend:cudaMallocAsync before import",
        _BACKEND,
        {"PYTORCH_ALLOC_CONF": "backend:cudaMallocAsync"},
    ),
    (
        "PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync after import torch",
        "os.environ['PYTORCH_CUDA_ALLOC_CONF'] = 'backend:cudaMallocAsync'\n" + _BACKEND,
        {},
    ),
    (
        "PYTORCH_ALLOC_CONF=backend:cudaMallocAsync after import torch",
        "os.environ['PYTORCH_ALLOC_CONF'] = 'backend:cudaMallocAsync'\n" + _BACKEND,
        {},
    ),
    (
        "PYTORCH_CUDA_ALLOC_CONF=backend:native after import torch",
        "os.environ['PYTORCH_CUDA_ALLOC_CONF'] = 'backend:native'\n" + _BACKEND,
        {},
    ),
    (
        "PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync after the first allocation",
        "torch.zeros(1, device='cuda')\nos.environ['PYTORCH_CUDA_ALLOC_CONF'] = 'backend:cudaMallocAsync'\n" + _BACKEND,
        {},
    ),
    (
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True after import torch",
        "os.environ['PYTORCH_CUDA_ALLOC_CONF'] = 'expandable_segments:True'\n" + _EXPANDABLE,
        {},
    ),
    (
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True after torch.cuda.is_available()",
        "torch.cuda.is_available()\nos.environ['PYTORCH_CUDA_ALLOC_CONF'] = 'expandable_segments:True'\n" + _EXPANDABLE,
        {},
    ),
    (
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True after torch.cuda.init()",
        "torch.cuda.init()\nos.environ['PYTORCH_CUDA_ALLOC_CONF'] = 'expandable_segments:True'\n" + _EXPANDABLE,
        {},
    ),
    (
        "PYTORCH_ALLOC_CONF=expandable_segments:True after torch.cuda.init()",
        "torch.cuda.init()\nos.environ['PYTORCH_ALLOC_CONF'] = 'expandable_segments:True'\n" + _EXPANDABLE,
        {},
    ),
    ("PYTORCH_NO_CUDA_MEMORY_CACHING=1 unset (baseline)", _CACHING, {}),
    (
        "PYTORCH_NO_CUDA_MEMORY_CACHING=1 after import torch",
        "os.environ['PYTORCH_NO_CUDA_MEMORY_CACHING'] = '1'\n" + _CACHING,
        {},
    ),
    (
        "PYTORCH_NO_CUDA_MEMORY_CACHING=1 after torch.cuda.init()",
        "torch.cuda.init()\nos.environ['PYTORCH_NO_CUDA_MEMORY_CACHING'] = '1'\n" + _CACHING,
        {},
    ),
    (
        "PYTORCH_NO_CUDA_MEMORY_CACHING=1 after the first allocation",
        "torch.zeros(1, device='cuda')\nos.environ['PYTORCH_NO_CUDA_MEMORY_CACHING'] = '1'\n" + _CACHING,
        {},
    ),
    ("CUDA_LAUNCH_BLOCKING unset (baseline)", "torch.cuda.init()\n" + _BLOCKING, {}),
    (
        "CUDA_LAUNCH_BLOCKING=1 after torch.cuda.init()",
        "torch.cuda.init()\nos.environ['CUDA_LAUNCH_BLOCKING'] = '1'\n" + _BLOCKING,
        {},
    ),
    (
        "CUDA_LAUNCH_BLOCKING=1 after torch.cuda.set_device(0)",
        "torch.cuda.set_device(0)\nos.environ['CUDA_LAUNCH_BLOCKING'] = '1'\n" + _BLOCKING,
        {},
    ),
    (
        "change_current_allocator after torch.cuda.is_available()",
        (
            "a = torch.cuda.memory._get_current_allocator()\ntorch.cuda.is_available()\n"
            "torch.cuda.memory.change_current_allocator(a)\nout = {'swapped': True}"
        ),
        {},
    ),
    (
        "change_current_allocator after torch.cuda.init()",
        (
            "a = torch.cuda.memory._get_current_allocator()\ntorch.cuda.init()\n"
            "torch.cuda.memory.change_current_allocator(a)\nout = {'swapped': True}"
        ),
        {},
    ),
    (
        "set_per_process_memory_fraction(1.5)",
        "torch.cuda.set_per_process_memory_fraction(1.5)\nout = {'accepted': True}",
        {},
    ),
    (
        "set_per_process_memory_fraction(-0.1)",
        "torch.cuda.set_per_process_memory_fraction(-0.1)\nout = {'accepted': True}",
        {},
    ),
    (
        "OMP_NUM_THREADS=1 after import torch",
        "os.environ['OMP_NUM_THREADS'] = '1'\nout = {'threads': torch.get_num_threads()}",
        {},
    ),
    ("OMP_NUM_THREADS=1 before import", "out = {'threads': torch.get_num_threads()}", {"OMP_NUM_THREADS": "1"}),
    ("torch._C._cuda_emptyCache exists", "out = {'exists': hasattr(torch._C, '_cuda_emptyCache')}", {}),
    (
        "torch.cuda.memory._C._cuda_allocate exists",
        "out = {'exists': hasattr(torch.cuda.memory, '_C') and hasattr(torch.cuda.memory._C, '_cuda_allocate')}",
        {},
    ),
]

_NCCL = """
import os, sys, torch, torch.distributed as dist
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=sys.argv[1], RANK="0", WORLD_SIZE="1")
dist.init_process_group("nccl")
x = torch.ones(1, device="cuda")
if sys.argv[2] == "after_collective":
    dist.all_reduce(x)
os.environ["NCCL_DEBUG"] = "INFO"
group = dist.new_group([0])
dist.all_reduce(x, group=group)
dist.all_reduce(x)
torch.cuda.synchronize()
dist.destroy_process_group()
"""


def _run(code: str, env: dict[str, str], argv: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("PYTORCH_", "CUDA_", "NCCL_", "OMP_"))}
    environment.update(env)
    return subprocess.run(
        [sys.executable, "-c", code, *argv], env=environment, capture_output=True, text=True, timeout=240, check=False
    )


def _json_probe(name: str, body: str, env: dict[str, str]) -> dict:
    result = _run(_STATE + "import os\n" + body + "\nprint(json.dumps(out))", env)
    record = {"name": name, "env": env}
    if result.returncode == 0:
        record["result"] = json.loads(result.stdout.strip().splitlines()[-1])
    else:
        lines = [line for line in result.stderr.strip().splitlines() if line.strip()]
        record["error"] = lines[-1][:300] if lines else f"exit {result.returncode}"
    return record


def _call_probe(name: str) -> dict:
    record = _json_probe(name, f"{CALLS[name]}\nout = _state()", {})
    record["code"] = CALLS[name]
    return record


def _nccl_probe(case: str, port: int) -> dict:
    result = _run(_NCCL, {}, (str(port), case))
    info = sum("NCCL INFO" in line for line in (result.stdout + result.stderr).splitlines())
    return {
        "name": f"NCCL_DEBUG=INFO {case.replace('_', ' ')}",
        "result": {"nccl_info_lines": info},
        **({"error": result.stderr.strip().splitlines()[-1][:300]} if result.returncode else {}),
    }


def main() -> None:
    version = _run(
        "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0), "
        "torch.cuda.device_count())",
        {},
    )
    with ThreadPoolExecutor(max_workers=8) as pool:
        calls = list(pool.map(_call_probe, CALLS))
        writes = list(pool.map(lambda probe: _json_probe(*probe), LATE_WRITES))
    nccl = [_nccl_probe("after_init", 29611), _nccl_probe("after_collective", 29612)]
    json.dump(
        {
            "torch": version.stdout.strip() or version.stderr.strip()[-300:],
            "calls": calls,
            "late_writes": writes + nccl,
        },
        sys.stdout,
        indent=1,
    )
    print()


if __name__ == "__main__":
    main()
