"""F20 (docs/facts.md): the thread-count variables are read when torch is imported (GML303's premise).

Run in fresh interpreters; the CUDA rows of the lock-in table are checked against the GPU machine's
measurements in tests/test_lockin_table.py.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

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
