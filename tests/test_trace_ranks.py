"""`gpumem-lint trace --nproc-per-node 2`: torchrun runs the program on two gloo ranks on CPU, each rank traced,
and one report names the rank each finding was observed on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
distributed = pytest.importorskip("torch.distributed")
pytestmark = pytest.mark.skipif(
    not distributed.is_available() or not distributed.is_gloo_available(), reason="needs torch.distributed with gloo"
)

ROOT = Path(__file__).resolve().parent.parent

PROGRAM = """
    import sys

    import torch
    import torch.distributed as dist


    def main():
        dist.init_process_group("gloo")
        rank = dist.get_rank()
        weights = torch.ones(4)
        if rank == 1:
            snapshot = weights.detach()
            weights.add_(1)  # the hazard, on rank 1 only
            sys.stdout.write(f"delta {(weights - snapshot).tolist()}\\n")
        dist.all_reduce(weights)
        sys.stdout.write(f"{rank} {weights.tolist()}\\n")
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
"""


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=environment, timeout=240, check=False)


def test_every_rank_is_traced_and_one_report_names_the_rank(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(PROGRAM).lstrip(), encoding="utf-8")
    report = tmp_path / "report.json"
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", str(script)]
    trace = [sys.executable, "-m", "gpumem_lint", "trace", "--nproc-per-node", "2", "--output-format", "json"]
    with ThreadPoolExecutor(max_workers=2) as pool:
        plain = pool.submit(_run, torchrun, tmp_path)
        traced = pool.submit(_run, [*trace, "-o", str(report), str(script)], tmp_path)
        plain, traced = plain.result(), traced.result()
    assert plain.returncode == 0, plain.stderr
    # The ranks print concurrently: the same lines, in an order neither run fixes. Each line is one write, so that
    # an unbuffered stdout (PYTHONUNBUFFERED) cannot interleave one rank's words with the other's.
    assert sorted(traced.stdout.splitlines()) == sorted(plain.stdout.splitlines())
    assert traced.returncode == 1
    findings = [finding for finding in json.loads(report.read_text()) if finding["source"] == "trace"]
    assert [(f["code"], f["location"]["row"]) for f in findings] == [("GML103", 13)]
    assert findings[0]["message"].endswith("on rank 1]")
