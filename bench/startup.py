"""Start-up: `gpumem-lint` on a one-line file, and the imports that cost the most.

    python bench/startup.py [--runs 10]

Prints the median wall and CPU time of the runs (each a fresh process) next to a bare
`python -c pass` and `import libcst`:

- a clean file (no trigger word of any rule) with `--no-cache -q`: answered without the
  rules, libcst, typer or rich (gpumem_lint/untriggered.py);
- the same file as the pre-commit hook runs it (`check --force-exclude`, the cache, the summary);
- a file with a trigger word (`import torch`): the rules and libcst are loaded.

Then the ten slowest imports of each gpumem-lint run (`-X importtime`, self time, so a
package is not charged for what it imports).
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
        Path(scratch, "tiny.py").write_text("x = 1\n")
        Path(scratch, "torch_tiny.py").write_text("import torch\n\nx = torch.zeros(3)\n")
        linter = [sys.executable, "-m", "gpumem_lint"]
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "python -c 'import libcst'": [sys.executable, "-c", "import libcst"],
            "--no-cache -q tiny.py": [*linter, "--no-cache", "-q", "tiny.py"],
            "check --force-exclude tiny.py": [*linter, "check", "--force-exclude", "tiny.py"],
            "--no-cache -q torch_tiny.py": [*linter, "--no-cache", "-q", "torch_tiny.py"],
        }
        for label, command in commands.items():
            runs = [_run(command, scratch) for _ in range(args.runs)]
            wall = statistics.median(run[0] for run in runs)
            cpu = statistics.median(run[1] for run in runs)
            print(
                f"{label:30} wall {wall:.3f} s  cpu {cpu:.3f} s  (median of {args.runs}, load {os.getloadavg()[0]:.2f})"
            )
        for label, command in commands.items():
            if command[:3] == linter:
                print(f"slowest imports of `{label}` (self, ms):", _slowest_imports(command, scratch))
    return 0


def _slowest_imports(command: list[str], cwd: str) -> str:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", *command[1:]], capture_output=True, text=True, cwd=cwd, check=False
    )
    imports = []
    for line in result.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            own, _, name = line[len("import time:") :].split("|")
            if own.strip().isdigit():
                imports.append((int(own), name.strip()))
    return ", ".join(f"{name} {own / 1000:.1f}" for own, name in sorted(imports)[-10:][::-1])


def _run(command: list[str], cwd: str) -> tuple[float, float]:
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(process.pid, 0)
    return time.perf_counter() - started, usage.ru_utime + usage.ru_stime


if __name__ == "__main__":
    raise SystemExit(main())
