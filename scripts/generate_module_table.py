"""Generate gpumem_lint/knowledge/modules.json: what each `torch.nn` module class holds.

The analyzer asks "is `self.fc.weight` a Parameter?" without importing torch. The answer
lives in the modules themselves, so each public `torch.nn` module class is built once with
the smallest positional arguments its constructor accepts (its defaults otherwise: `bias`
on, InstanceNorm without affine parameters) and its own parameters and buffers are read
with `named_parameters(recurse=False)` / `named_buffers(recurse=False)`. A class that no
small argument list builds is listed as a module with unknown contents. A class built around
two `nn.Linear` layers given as arguments, a list or a dict, that holds them as its children named by
position or key (`Sequential`, `ModuleList`, `ModuleDict`) is a container: its parameters are its layers'.
tests/test_module_table.py regenerates the table and fails on any difference.

Usage: python scripts/generate_module_table.py [--check]
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
import warnings
from pathlib import Path

import torch
from torch import nn

OUT_PATH = Path(__file__).resolve().parents[1] / "gpumem_lint" / "knowledge" / "modules.json"

#: Tried in order: sizes small enough to build any layer, the kernel size last.
_ARGUMENTS = ((), (4,), (4, 4), (4, 4, 3), (4, 4, 4))


def _build(cls: type[nn.Module]) -> nn.Module | None:
    for args in _ARGUMENTS:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return cls(*args)
        except Exception:  # noqa: BLE001, S112 - any failure means "try the next arguments"
            continue
    return None


def _holds_modules(cls: type[nn.Module]) -> bool:
    """Built from two layers, as arguments, a list or a dict, it holds them as its children, named by
    position or key (not by constructor parameters that happened to receive a module)."""
    for layers, names in (
        (lambda: (nn.Linear(1, 1), nn.Linear(1, 1)), {"0", "1"}),
        (lambda: ([nn.Linear(1, 1), nn.Linear(1, 1)],), {"0", "1"}),
        (lambda: ({"a": nn.Linear(1, 1), "b": nn.Linear(1, 1)},), {"a", "b"}),
    ):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if {name for name, _ in cls(*layers()).named_children()} == names:
                    return True
        except Exception:  # noqa: BLE001, S112 - not built from layers this way
            continue
    return False


def build_table() -> dict:
    modules: dict[str, dict] = {}
    for name in sorted(dir(nn)):
        cls = getattr(nn, name)
        if name.startswith("_") or not (inspect.isclass(cls) and issubclass(cls, nn.Module)):
            continue
        module = _build(cls)
        if module is None:
            modules[name] = {"built": False}
            continue
        modules[name] = {
            "built": True,
            "parameters": [n for n, _ in module.named_parameters(recurse=False)],
            "buffers": [n for n, _ in module.named_buffers(recurse=False)],
        }
        if _holds_modules(cls):
            modules[name]["container"] = True
    return {"torch_version": torch.__version__.split("+")[0], "modules": modules}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the checked-in table is stale")
    args = parser.parse_args()
    table = build_table()
    text = json.dumps(table, indent=1, sort_keys=True) + "\n"
    if args.check:
        if OUT_PATH.read_text(encoding="utf-8") != text:
            print(f"{OUT_PATH} is stale; run scripts/generate_module_table.py", file=sys.stderr)
            return 1
        return 0
    OUT_PATH.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
