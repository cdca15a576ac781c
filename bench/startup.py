"""Start-up: `gpumem-lint check` on a one-line file, and the imports that cost the most.

    python bench/startup.py [--runs 10]

Prints the median wall and CPU time of the runs (each a fresh process, no cache) next
to a bare `python -c pass`, then the ten slowest imports of one run (`-X importtime`,
self time, so a package is not charged for what it imports).
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    compile_linter()
    with tempfile.TemporaryDirectory(prefix="gpumem-lint-startup-") as scratch:
        tiny = Path(scratch) / "tiny.py"
        tiny.write_text("x = 1\n")
        lint = [sys.executable, "-m", "gpumem_lint", "check", "--no-cache", str(tiny)]
        bare = [sys.executable, "-c", "pass"]
        for label, command in (("python -c pass", bare), ("gpumem-lint check tiny.py", lint)):
            runs = [_run(command, scratch) for _ in range(args.runs)]
            wall = statistics.median(run[0] for run in runs)
            cpu = statistics.median(run[1] for run in runs)
            print(
                f"{label:28} wall {wall:.3f} s  cpu {cpu:.3f} s  (median of {args.runs}, load {os.getloadavg()[0]:.2f})"
            )
        result = subprocess.run(
            [sys.executable, "-X", "importtime", *lint[1:]], capture_output=True, text=True, cwd=scratch, check=False
        )
    imports = []
    for line in result.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            own, _, name = line[len("import time:") :].split("|")
            if own.strip().isdigit():
                imports.append((int(own), name.strip()))
    print(
        "slowest imports (self, ms):",
        ", ".join(f"{name} {own / 1000:.0f}" for own, name in sorted(imports)[-10:][::-1]),
    )
    return 0


def _run(command: list[str], cwd: str) -> tuple[float, float]:
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(process.pid, 0)
    return time.perf_counter() - started, usage.ru_utime + usage.ru_stime


if __name__ == "__main__":
    raise SystemExit(main())
