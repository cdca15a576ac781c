"""`gpumem-lint trace --nproc-per-node N`: the program runs on N ranks under torchrun, every rank traced, one report.

The command starts `python -m torch.distributed.run --standalone --nproc-per-node N -m gpumem_lint trace ...` with
`GPUMEM_LINT_TRACE_RANKS` naming a folder: each rank writes what it observed there (`rank-<RANK>.json`) instead of
a report, and the command merges them: a finding seen on several ranks is one finding with its ranks. torchrun's
output passes through as it prints it; the exit code is torchrun's (else 1 when a hazard was observed).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from gpumem_lint.trace.findings import Observation

RANKS_ENV = "GPUMEM_LINT_TRACE_RANKS"


def rank_folder() -> Path | None:
    """In a rank started by `trace --nproc-per-node`: the folder its observation goes to."""
    folder = os.environ.get(RANKS_ENV)
    return Path(folder) if folder and "RANK" in os.environ else None


def write_rank_observation(folder: Path, observation: Observation) -> None:
    path = folder / f"rank-{os.environ['RANK']}.json"
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(observation.to_json()), encoding="utf-8")
    temporary.replace(path)


def run_ranks(nproc: int, rank_arguments: list[str], folder: Path) -> tuple[int, Observation]:
    """Run torchrun; its exit code and the ranks' merged observation (a rank that died leaves none)."""
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node",
        str(nproc),
        "-m",
        "gpumem_lint",
        "trace",
        *rank_arguments,
    ]
    code = subprocess.call(command, env={**os.environ, RANKS_ENV: str(folder)})
    parts = []
    for path in sorted(folder.glob("rank-*.json")):
        try:
            parts.append((int(path.stem.removeprefix("rank-")), Observation.from_json(json.loads(path.read_text()))))
        except (OSError, ValueError, KeyError, TypeError):
            continue  # a rank killed while writing: the others still count
    return code, Observation.merged(parts)
