"""Which third-party packages initialise CUDA when they are imported, on a CUDA machine (issue 18).

    python bench/gpu/import_probe.py > bench/gpu/import_probe.json

Each package is imported in a fresh interpreter right after `import torch`; the probe reports whether
it is installed, its version, and what the import started, in the words of lockin_probe.py (`driver`:
cuInit has run; `torch_init`: torch.cuda.is_initialized(); `context`: device 0's primary context is
active), and whether a child forked after the import can still use CUDA (`fork_child`: "ok" or the
error it raised). A package whose import starts the driver would be a lock-in event for the GML3xx
rules and a fork poison for GML204; none is in the lock-in table until this probe has measured it.
Run on 2026-12-01 (H200, torch 2.11.0+cu130, Python 3.12): docs/facts.md F39. Only the packages on
that machine's image could be tested; the JSON says which were not installed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lockin_probe import _STATE  # noqa: E402  (the state read shared with the lock-in probe)

#: Packages commonly imported beside torch in training and serving code.
PACKAGES = (
    "accelerate",
    "apex",
    "bitsandbytes",
    "cupy",
    "deepspeed",
    "flash_attn",
    "jax",
    "numba.cuda",
    "pynvml",
    "tensorflow",
    "timm",
    "torchaudio",
    "torchvision",
    "transformer_engine",
    "transformers",
    "triton",
    "vllm",
    "xformers",
)

_PROBE = (
    _STATE
    + """
import importlib, multiprocessing as mp
try:
    module = importlib.import_module(__PACKAGE__)
except Exception as error:  # not installed, or failing to import without a GPU stack it expects
    print(json.dumps({"installed": False, "error": type(error).__name__ + ": " + str(error)[:200]}))
    raise SystemExit

def child(answers):
    try:
        answers.put(("ok", torch.ones(1, device="cuda").sum().item()))
    except Exception as error:
        answers.put((type(error).__name__, str(error)[:200]))

state = _state()
ctx = mp.get_context("fork")
answers = ctx.Queue()
p = ctx.Process(target=child, args=(answers,))
p.start()
outcome = answers.get(timeout=120)
p.join()
top = importlib.import_module(__PACKAGE__.split(".")[0])
version = getattr(module, "__version__", None) or getattr(top, "__version__", None)
print(json.dumps({"installed": True, "version": version, **state, "fork_child": outcome[0], "detail": outcome[1]}))
"""
)


def run(package: str) -> dict:
    try:
        done = subprocess.run(
            [sys.executable, "-c", _PROBE.replace("__PACKAGE__", repr(package))],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"error": "timeout"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if lines else {"error": done.stderr.strip()[-400:]}


def main() -> None:
    import torch

    with ThreadPoolExecutor(4) as pool:
        results = dict(zip(PACKAGES, pool.map(run, PACKAGES)))
    report = {
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(0) if torch.cuda.device_count() else None,
        "python": sys.version.split()[0],
        "packages": results,
    }
    json.dump(report, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
