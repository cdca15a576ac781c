"""Write gpumem_lint/knowledge/cuda_private_api.json: the `torch._C._cuda_*` names torch declares.

    python scripts/generate_cuda_private_api.py

Read from the installed torch's type stub (`torch/_C/__init__.pyi`), which lists most CUDA bindings
even on CPU-only builds, and from torch's own Python sources, which call the few the stub omits
(TunableOp, ROCm), plus the bindings a CUDA build was found to have beyond those
(`bench/gpu/cuda_bindings_probe.json`, from bench/gpu/cuda_bindings_probe.py on the GPU machine);
GML404 reports calls to names outside all three as not existing.
"""

from __future__ import annotations

import json
import re
from importlib.util import find_spec
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "gpumem_lint" / "knowledge" / "cuda_private_api.json"
PROBE = ROOT / "bench" / "gpu" / "cuda_bindings_probe.json"


def main() -> None:
    spec = find_spec("torch")
    if spec is None or spec.origin is None:
        raise SystemExit("torch is not installed")
    root = Path(spec.origin).parent
    stub = (root / "_C" / "__init__.pyi").read_text(encoding="utf-8")
    names = set(re.findall(r"^(?:def|class) (_cuda_\w+)", stub, re.MULTILINE))
    for source in sorted(root.rglob("*.py")):
        names.update(re.findall(r"\b_C\.(_cuda_\w+)", source.read_text(encoding="utf-8", errors="replace")))
    if PROBE.exists():
        probe = json.loads(PROBE.read_text(encoding="utf-8"))
        names.update(probe.get("runtime_names", probe["existing_but_unlisted"]))
    names = sorted(names)
    version = re.search(r"__version__ = '([^']+)'", (root / "version.py").read_text(encoding="utf-8"))
    OUTPUT.write_text(
        json.dumps({"torch_version": version.group(1) if version else "unknown", "names": names}, indent=1) + "\n",
        encoding="utf-8",
    )


if __name__ == "__main__":
    main()
