"""Which private `torch._C._cuda_*` bindings take the same arguments as their public function in
torch.cuda and return the same value: where GML405's fix may call the public one in their place.

    python bench/gpu/public_twin_probe.py > bench/gpu/public_twin_probe.json

Each binding of gpumem_lint/knowledge/memory_api.toml `[private_to_public]` whose public counterpart
is a plain call is called on device 0 with the arguments of CALLS, then its public function with
the same ones; `same` says both returned equal values without raising. Bindings not in CALLS are
not probed (their public function takes other arguments or returns another type).
"""

from __future__ import annotations

import json
import sys

import torch

#: Binding -> the arguments it is called with (device 0 where it takes a device).
CALLS = {
    "_cuda_init": (),
    "_cuda_getDevice": (),
    "_cuda_getDeviceCount": (),
    "_cuda_setDevice": (0,),
    "_cuda_synchronize": (),
    "_cuda_emptyCache": (),
    "_cuda_getAllocatorBackend": (),
    "_cuda_getMemoryFraction": (0,),
    "_cuda_resetPeakMemoryStats": (0,),
    "_cuda_resetAccumulatedMemoryStats": (0,),
    "_cuda_canDeviceAccessPeer": (0, 0),
    "_cuda_ipc_collect": (),
    "_cuda_memoryStats": (0,),
}
#: The public function of each, as memory_api.toml names it (without the call's parentheses).
PUBLIC = {
    "_cuda_init": "init",
    "_cuda_getDevice": "current_device",
    "_cuda_getDeviceCount": "device_count",
    "_cuda_setDevice": "set_device",
    "_cuda_synchronize": "synchronize",
    "_cuda_emptyCache": "empty_cache",
    "_cuda_getAllocatorBackend": "get_allocator_backend",
    "_cuda_getMemoryFraction": "get_per_process_memory_fraction",
    "_cuda_resetPeakMemoryStats": "reset_peak_memory_stats",
    "_cuda_resetAccumulatedMemoryStats": "reset_accumulated_memory_stats",
    "_cuda_canDeviceAccessPeer": "can_device_access_peer",
    "_cuda_ipc_collect": "ipc_collect",
    "_cuda_memoryStats": "memory_stats",
}


def _call(function, args) -> tuple[str, object]:
    try:
        return "returned", function(*args)
    except Exception as error:  # the probe records what each call does
        return "raised", f"{type(error).__name__}: {error}"


def main() -> None:
    torch.cuda.init()  # the bindings expect an initialised torch.cuda; the public functions do it lazily
    rows = {}
    for binding, args in CALLS.items():
        kind, private = _call(getattr(torch._C, binding), args)
        name = PUBLIC[binding]
        public_kind, public = _call(getattr(torch.cuda, name), args)
        same = kind == public_kind == "returned" and type(private) is type(public) and private == public
        rows[binding] = {
            "public": name,
            "args": list(args),
            "binding": repr(private)[:200],
            "public_result": repr(public)[:200],
            "same": bool(same),
        }
    json.dump({"torch": torch.__version__, "bindings": rows}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
