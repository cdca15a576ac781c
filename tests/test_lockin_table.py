"""The lock-in table agrees with what the GPU machine measured (bench/gpu/lockin_probe.json).

The probe output is data kept in the repository; re-run bench/gpu/lockin_probe.py on a GPU host
to refresh it. Two checks:
- every call the table lists as `measured` started exactly the events the table says (driver
  initialisation, torch.cuda initialisation, context), and every measured non-trigger none;
- every late-write probe ("VAR=value after CALL") was honoured exactly when the table, applied by
  the analyzer itself to that call, says the variable was not locked yet.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import libcst as cst
import pytest

from gpumem_lint.context import FileContext
from gpumem_lint.knowledge.lockin import lockin_table

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
MEASURED = json.loads((ROOT / "bench" / "gpu" / "lockin_probe.json").read_text(encoding="utf-8"))
# torch.accelerator and torch.utils.cpp_extension, measured for issue 18 in the same way.
ACCELERATOR = json.loads((ROOT / "bench" / "gpu" / "accelerator_probe.json").read_text(encoding="utf-8"))
CALLS = {record["name"]: record for record in (*MEASURED["calls"], *ACCELERATOR["calls"])}
RAW = tomllib.loads((ROOT / "gpumem_lint" / "knowledge" / "lockin.toml").read_text(encoding="utf-8"))
TABLE = lockin_table()
OBSERVABLE = ("cuda_driver_init", "torch_cuda_init", "context_creation")

MEASURED_CALLS = [(event, name) for event, raw in RAW["events"].items() for name in raw.get("measured", ())]


@pytest.mark.parametrize(("event", "name"), MEASURED_CALLS, ids=[f"{e}:{n}" for e, n in MEASURED_CALLS])
def test_measured_call_starts_exactly_its_events(event: str, name: str):
    result = CALLS[name]["result"]
    observed = {
        "cuda_driver_init": result["driver"],
        "torch_cuda_init": result["torch_init"],
        "context_creation": result["context"],
    }
    expected = {kind: kind in TABLE.events[event].closure for kind in OBSERVABLE}
    assert observed == expected, f"{CALLS[name]['code']}: measured {observed}, table says {expected}"


@pytest.mark.parametrize("name", RAW["non_triggers"]["measured"])
def test_measured_non_trigger_starts_nothing(name: str):
    result = CALLS[name]["result"]
    assert not (result["driver"] or result["torch_init"] or result["context"]), CALLS[name]


# The call each late-write probe made before its write, as code the analyzer classifies.
_BEFORE = {
    "import torch": "",
    "torch.cuda.device_count()": "torch.cuda.device_count()",
    "torch.device('cuda')": "torch.device('cuda')",
    "torch.cuda.is_available()": "torch.cuda.is_available()",
    "is_available() with PYTORCH_NVML_BASED_CUDA_CHECK=1": "os.environ['PYTORCH_NVML_BASED_CUDA_CHECK'] = '1'\ntorch.cuda.is_available()",
    "get_device_properties(0)": "torch.cuda.get_device_properties(0)",
    "torch.cuda.set_device(0)": "torch.cuda.set_device(0)",
    "the first allocation": "torch.zeros(1, device='cuda')",
    "torch.cuda.init()": "torch.cuda.init()",
    "init": "dist.init_process_group('nccl')",
    "collective": "dist.init_process_group('nccl')\ndist.all_reduce(x)",
}
# How each probe shows that the write took effect.
_HONOURED = {
    "verdict": lambda value, written: value == "honoured",
    "backend": lambda value, written: f"backend:{value}" == written,
    "error": lambda value, written: False,
    "expandable": lambda value, written: value,
    "reserved_after_free": lambda value, written: value == 0,
    "launch_ms": lambda value, written: value > 400,  # a 10^9-cycle sleep that blocks takes ~0.5 s
    "threads": lambda value, written: value == 1,
    "nccl_info_lines": lambda value, written: value > 0,
}
_LATE = re.compile(r"(?P<var>[A-Z_]+)(=(?P<value>\S+))? after (?P<after>.+)")
LATE_WRITES = [r for r in MEASURED["late_writes"] if _LATE.fullmatch(r["name"]) and not r["name"].startswith("change")]


def _locked(variable: str, value: str | None, before: str) -> bool:
    source = (
        f"import os\nimport torch\nimport torch.distributed as dist\n{before}\nos.environ[{variable!r}] = {value!r}\n"
    )
    ctx = FileContext("<probe>", source, cst.parse_module(source))
    write = ctx.module.body[-1].body[0]
    rows = [
        row for row in TABLE.variables if row.covers(variable) and (row.value is None or row.value.search(value or ""))
    ]
    return any(ctx.program_order.first_event_before(write, TABLE.events_implying(row.event)) for row in rows)


@pytest.mark.parametrize("record", LATE_WRITES, ids=[r["name"] for r in LATE_WRITES])
def test_late_write_honoured_exactly_when_not_locked(record: dict):
    match = _LATE.fullmatch(record["name"])
    outcome = record.get("result") or {"error": record.get("error")}
    ((kind, value),) = [(k, v) for k, v in outcome.items() if k in _HONOURED][:1]
    honoured = _HONOURED[kind](value, match["value"])
    locked = _locked(match["var"], match["value"], _BEFORE[match["after"]])
    assert honoured is not locked, f"measured honoured={honoured}, table says locked={locked}: {outcome}"


def test_probe_covers_every_late_write_phrase():
    assert len(LATE_WRITES) >= 20
    assert {_LATE.fullmatch(r["name"])["after"] for r in LATE_WRITES} <= _BEFORE.keys()


# What the analyzer makes of each call the accelerator probe measured: the code it ran, as a program.
_BUILDS = {
    "torch.utils.cpp_extension.load_inline(with_cuda=False)": "load_inline(name='e', cpp_sources='', with_cuda=False)",
    "torch.utils.cpp_extension.load_inline(with_cuda=True)": "load_inline(name='e', cpp_sources='', with_cuda=True)",
}
_ANALYSED = [
    (record["name"], "from torch.utils.cpp_extension import load_inline\n" + _BUILDS[record["name"]])
    if record["name"] in _BUILDS
    else (record["name"], record["code"])
    for record in ACCELERATOR["calls"]
    if record["name"] in _BUILDS or not record["code"].startswith("(build")
]


@pytest.mark.parametrize(("name", "code"), _ANALYSED, ids=[name for name, _ in _ANALYSED])
def test_the_analyzer_places_exactly_the_measured_events(name: str, code: str):
    source = f"import os\nimport torch\n{code}\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'\n"
    ctx = FileContext("<probe>", source, cst.parse_module(source))
    write = ctx.module.body[-1].body[0]
    order = ctx.program_order
    placed = {kind: bool(order.first_event_before(write, TABLE.events_implying(kind))) for kind in OBSERVABLE}
    result = CALLS[name]["result"]
    measured = {
        "cuda_driver_init": result["driver"],
        "torch_cuda_init": result["torch_init"],
        "context_creation": result["context"],
    }
    assert placed == measured, f"{code}: measured {measured}, the analyzer places {placed}"
