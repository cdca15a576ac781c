"""Running a program, plain or under `gpumem-lint trace`, in a subprocess that imports this checkout."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(command: list[str], cwd: Path) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=environment, timeout=240, check=False)


def trace_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "gpumem_lint", "trace", *args]
