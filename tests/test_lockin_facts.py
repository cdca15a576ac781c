"""F20 (docs/facts.md): the thread-count variables are read when torch is imported (GML303's premise);
the compiler's variables when the first `torch.compile(...)` imports its configuration.

Run in fresh interpreters; the CUDA rows of the lock-in table are checked against the GPU machine's
measurements in tests/test_lockin_table.py.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpumem_lint.knowledge.lockin import lockin_table

pytest.importorskip("torch")

_LATE = "import os, torch; d = torch.get_num_threads(); os.environ['OMP_NUM_THREADS'] = '1'; print(d, torch.get_num_threads())"
_EARLY = "import torch; print(torch.get_num_threads())"


def _run(code: str, env: dict[str, str]) -> list[int]:
    environment = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    environment.update(env)
    result = subprocess.run(
        [sys.executable, "-c", code], env=environment, capture_output=True, text=True, check=True, timeout=120
    )
    return [int(word) for word in result.stdout.split()]


def test_f20_omp_num_threads_is_read_at_import():
    default, after_late_write = _run(_LATE, {})
    if default == 1:
        pytest.skip("one core: a late write cannot be told from an honoured one")
    assert after_late_write == default
    assert _run(_EARLY, {"OMP_NUM_THREADS": "1"}) == [1]


# The compiler's variables (lockin.toml, event `compiler_config_import`), each with how the probe sees it
# take effect: an option of torch._inductor.config and a value other than its default.
_OPTIONS = {
    "TORCHINDUCTOR_MAX_AUTOTUNE": ("max_autotune", "1"),
    "TORCHINDUCTOR_MAX_AUTOTUNE_GEMM": ("max_autotune_gemm", "1"),
    "TORCHINDUCTOR_COORDINATE_DESCENT_TUNING": ("coordinate_descent_tuning", "1"),
    "TORCHINDUCTOR_FREEZING": ("freezing", "1"),
    "TORCHINDUCTOR_CPP_WRAPPER": ("cpp_wrapper", "1"),
    "TORCHINDUCTOR_BENCHMARK_KERNEL": ("benchmark_kernel", "1"),
    "TORCHINDUCTOR_SHAPE_PADDING": ("shape_padding", "0"),
    "TORCHINDUCTOR_LAYOUT_OPTIMIZATION": ("layout_optimization", "0"),
    "TORCHINDUCTOR_PERMUTE_FUSION": ("permute_fusion", "1"),
    "TORCHINDUCTOR_CUDAGRAPHS": ("triton.cudagraphs", "1"),
}
# Seen through torch.compile itself: the function is compiled or not.
_DISABLE = {"TORCH_COMPILE_DISABLE": "1"}
# Read again on each use: a late write is honoured, so the table must not lock them.
_REREAD = {"TORCHINDUCTOR_CACHE_DIR": "cache_dir"}
_CONFIG_MODULES = ("torch/_inductor/config.py", "torch/_dynamo/config.py")

# Sets the variables after `import torch`, then before (early) or after (late) `torch.compile(...)`.
_COMPILER_PROBE = """
import json, operator, os, sys
import torch
variables, options, late = json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3] == "late"
imported = {"by_import_torch": "torch._inductor.config" in sys.modules}
compiled = []

def backend(graph, inputs):
    compiled.append(True)
    return graph.forward

def read():
    from torch._inductor import config
    from torch._inductor.runtime.cache_dir_utils import cache_dir
    return {**{v: operator.attrgetter(o)(config) for v, o in options.items()}, "cache_dir": cache_dir()}

if not late:
    os.environ.update(variables)
compiled_function = torch.compile(lambda x: x + 1, backend=backend)
imported["by_torch_compile"] = "torch._inductor.config" in sys.modules
before = read()
if late:
    os.environ.update(variables)
compiled_function(torch.ones(2))
print(json.dumps({"imported": imported, "before": before, "after": read(), "compiled": bool(compiled)}))
"""


def _compiler_probe(late: bool, tmp_path) -> dict:
    variables = {name: value for name, (_, value) in _OPTIONS.items()} | _DISABLE
    variables["TORCHINDUCTOR_CACHE_DIR"] = str(tmp_path / ("late" if late else "early"))
    options = {name: option for name, (option, _) in _OPTIONS.items()}
    environment = {k: v for k, v in os.environ.items() if k not in variables}
    when = "late" if late else "early"
    result = subprocess.run(
        [sys.executable, "-c", _COMPILER_PROBE, json.dumps(variables), json.dumps(options), when],
        env=environment,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return json.loads(result.stdout.splitlines()[-1]) | {"written": variables}


@pytest.fixture(scope="module")
def compiler_probes(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("inductor")
    return _compiler_probe(False, tmp_path), _compiler_probe(True, tmp_path)


def _compiler_rows():
    return [row for row in lockin_table().variables if row.event == "compiler_config_import"]


def test_every_compiler_variable_in_the_table_is_probed():
    names = frozenset().union(*(row.names for row in _compiler_rows()))
    assert names == _OPTIONS.keys() | _DISABLE.keys()


def test_the_compiler_configuration_is_imported_by_torch_compile_not_by_import_torch(compiler_probes):
    _, late = compiler_probes
    assert late["imported"] == {"by_import_torch": False, "by_torch_compile": True}


@pytest.mark.parametrize("name", sorted(_OPTIONS))
def test_inductor_variable_is_read_when_torch_compile_imports_the_config(compiler_probes, name):
    early, late = compiler_probes
    default = late["before"][name]
    assert early["after"][name] != default, "set after `import torch`, before torch.compile: honoured"
    assert late["after"][name] == default, "set after torch.compile: ignored"


def test_torch_compile_disable_is_read_when_torch_compile_imports_the_config(compiler_probes):
    early, late = compiler_probes
    assert not early["compiled"] and late["compiled"]


@pytest.mark.parametrize("name", sorted(_REREAD))
def test_reread_variable_is_honoured_late_and_not_in_the_table(compiler_probes, name):
    _, late = compiler_probes
    assert late["after"][_REREAD[name]] == late["written"][name] != late["before"][_REREAD[name]]
    assert not any(row.covers(name) for row in lockin_table().variables)


def test_compiler_variables_are_read_only_by_the_config_modules():
    # A variable also read elsewhere may be read again at use; the rows claim only the config's reads.
    root = Path(importlib.util.find_spec("torch").origin).parent
    names = frozenset().union(*(row.names for row in _compiler_rows()))
    for path in root.rglob("*.py"):
        if path.relative_to(root.parent).as_posix() not in _CONFIG_MODULES and "test" not in path.name:
            text = path.read_text(encoding="utf-8", errors="replace")
            assert not [name for name in names if f'"{name}"' in text], path


# Each call the lock-in table says does nothing when `enabled=False` is written, as the table writes it; run in
# this process with `torch.cuda.is_available` counted (the call that runs cuInit, measured on the GPU machine).
_DISABLED_CALLS = {
    "torch.amp.GradScaler": "torch.amp.GradScaler('cuda', enabled={})",
    "torch.cuda.amp.GradScaler": "torch.cuda.amp.GradScaler(enabled={})",
    "torch.cuda.amp.autocast": "torch.cuda.amp.autocast(enabled={})",
    "torch.autocast": "torch.autocast('cuda', enabled={})",
    "torch.amp.autocast": "torch.amp.autocast('cuda', enabled={})",
}


def test_the_disabled_calls_are_measured():
    event = lockin_table().events["cuda_driver_init"]
    assert set(event.disabled_by) == set(_DISABLED_CALLS)
    assert set(event.disabled_by.values()) == {"enabled"}


@pytest.mark.parametrize("name", sorted(_DISABLED_CALLS))
def test_a_disabled_autocast_or_scaler_asks_nothing_of_cuda(name: str, monkeypatch):
    import warnings

    import torch

    asked: list[int] = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: asked.append(1) or False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecated spellings, and "CUDA is not available"
        eval(_DISABLED_CALLS[name].format("False"), {"torch": torch})
        assert asked == []
        eval(_DISABLED_CALLS[name].format("True"), {"torch": torch})
    assert asked, "enabled, it asks is_available(): the table's row for the call itself stands"
