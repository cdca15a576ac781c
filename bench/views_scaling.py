"""The worst case of the alias analysis: one function that writes through N views of one tensor.

    python bench/views_scaling.py [--sizes 100 200 400 800] [--runs 3]

For each N it writes a file whose one function makes N views of a tensor (`v{i} = x[i]`),
writes through each (`v{i}.add_(1)`) and reads each afterwards, one statement a read (a sum of
N terms in one expression would nest N deep, which measures how libcst and the deep-stack retry
of `deep_stack.py` cope with depth, not the alias analysis), then times
`gpumem-lint check --no-cache` on it (a fresh process, median of the runs, CPU time from the
kernel). The time of the same program with one view (start-up, imports) is taken off; linear
growth keeps what remains per view flat from one N to the next: the last column is each N's
time per view against the smallest N's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpora import compile_linter


def program(views: int) -> str:
    lines = ["import torch", "", "", "def step(n):", f"    x = torch.zeros({views}, n)"]
    lines += [f"    v{i} = x[{i}]" for i in range(views)]
    lines += [f"    v{i}.add_(1)" for i in range(views)]
    lines += ["    total = 0"]
    lines += [f"    total = total + v{i}.sum()" for i in range(views)]  # not one N-term sum: see the docstring
    lines += ["    return total"]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 200, 400, 800])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    compile_linter()
    first = None
    with tempfile.TemporaryDirectory(prefix="gpumem-lint-views-") as scratch:
        baseline = _median_cpu(Path(scratch), 1, args.runs)[1]
        print(f"one view: {baseline:.2f} s CPU (start-up), load {os.getloadavg()[0]:.2f}")
        print(f"{'views':>6} {'wall s':>8} {'cpu s':>8} {'cpu ms/view':>12} {'vs first':>9}")
        for views in args.sizes:
            wall, cpu = _median_cpu(Path(scratch), views, args.runs)
            per_view = (cpu - baseline) / views
            first = first or per_view
            print(f"{views:>6} {wall:8.2f} {cpu:8.2f} {per_view * 1000:12.2f} {per_view / first:8.2f}x", flush=True)
        print(f"load {os.getloadavg()[0]:.2f} at the end")
    return 0


def _median_cpu(scratch: Path, views: int, runs: int) -> tuple[float, float]:
    path = scratch / f"views_{views}.py"
    path.write_text(program(views))
    command = [sys.executable, "-m", "gpumem_lint", "check", "--no-cache", "-q", "-e", str(path)]
    samples = [_run(command) for _ in range(runs)]
    return statistics.median(run[0] for run in samples), statistics.median(run[1] for run in samples)


def _run(command: list[str]) -> tuple[float, float]:
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(process.pid, 0)
    return time.perf_counter() - started, usage.ru_utime + usage.ru_stime


if __name__ == "__main__":
    raise SystemExit(main())
