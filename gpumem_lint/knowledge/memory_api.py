"""The memory-control API table (`memory_api.toml`) and the declared `torch._C._cuda_*` names."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from functools import cache

from gpumem_lint.knowledge import data_text

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib


@dataclass(frozen=True)
class MemoryApi:
    fraction_functions: frozenset[str]
    device_switches: frozenset[str]
    allocator_swaps: frozenset[str]
    private_to_public: dict[str, str]
    same_call: frozenset[str]  # bindings whose public function takes the same arguments, returns the same value
    deprecated_private: dict[str, str]  # a deprecated private function -> what it forwards to
    deprecated_instead: dict[str, str]  # ... -> what to do instead
    missing_hint: str
    private_names: frozenset[str]  # every torch._C._cuda_* name the stub declares
    private_names_version: str
    empty_cache_functions: frozenset[str]
    step_methods: frozenset[str]
    host_methods: frozenset[str]  # `x.cpu()`: a result in host memory
    host_load_functions: frozenset[str]  # `torch.load(f, map_location="cpu")`: host memory at these locations
    host_locations: frozenset[str]
    host_loader_methods: frozenset[str]  # `AutoModel.from_pretrained(name)`: host memory without a placement keyword
    host_loader_packages: tuple[str, ...]  # whose classes' loaders those are: "transformers", "diffusers"
    placement_keywords: frozenset[str]
    moving_methods: frozenset[str]  # `model.to("cuda")`: the object itself moves
    keepers: dict[str, frozenset[str]]  # a class -> its methods whose arguments its objects keep
    built_keepers: dict[str, str]  # a class -> the parameter whose argument its objects keep (`Trainer(model=m)`)


@cache
def memory_api() -> MemoryApi:
    data = tomllib.loads(data_text("memory_api.toml"))
    declared = json.loads(data_text("cuda_private_api.json"))
    return MemoryApi(
        fraction_functions=frozenset(data["fraction"]["functions"]),
        device_switches=frozenset(data["fraction"]["device_switches"]),
        allocator_swaps=frozenset(data["allocator_swap"]["functions"]),
        private_to_public=dict(data["private_to_public"]),
        same_call=frozenset(data["same_call"]["bindings"]),
        deprecated_private={name: row["forwards_to"] for name, row in data["deprecated_private"].items()},
        deprecated_instead={name: row["instead"] for name, row in data["deprecated_private"].items()},
        missing_hint=data["missing_hint"]["default"],
        private_names=frozenset(declared["names"]),
        private_names_version=declared["torch_version"],
        empty_cache_functions=frozenset(data["empty_cache"]["functions"]),
        step_methods=frozenset(data["empty_cache"]["step_methods"]),
        host_methods=frozenset(data["host_memory"]["methods"]),
        host_load_functions=frozenset(data["host_memory"]["load_functions"]),
        host_locations=frozenset(data["host_memory"]["locations"]),
        host_loader_methods=frozenset(data["host_memory"]["loader_methods"]),
        host_loader_packages=tuple(f"{package}." for package in data["host_memory"]["loader_packages"]),
        placement_keywords=frozenset(data["host_memory"]["placement_keywords"]),
        moving_methods=frozenset(data["host_memory"]["moving_methods"]),
        keepers={name: frozenset(methods) for name, methods in data["keepers"].items()},
        built_keepers=dict(data["built_keepers"]),
    )
