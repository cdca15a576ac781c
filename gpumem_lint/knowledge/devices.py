"""The default-device table (`devices.toml`): what makes a factory call without `device=` allocate on CUDA."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import cache

from gpumem_lint.knowledge import data_text

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib


@dataclass(frozen=True)
class DefaultDevice:
    device_setters: frozenset[str]  # `torch.set_default_device(d)`
    type_setters: frozenset[str]  # `torch.set_default_tensor_type("torch.cuda.FloatTensor")`
    factories: frozenset[str]  # qualified: "torch.zeros"


@cache
def default_device() -> DefaultDevice:
    data = tomllib.loads(data_text("devices.toml"))["default_device"]
    return DefaultDevice(
        device_setters=frozenset(data["device_setters"]),
        type_setters=frozenset(data["type_setters"]),
        factories=frozenset(f"torch.{name}" for name in data["factories"]),
    )
