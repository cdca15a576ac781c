"""Peak memory of one process linting one large file, against libcst parsing it.

    python bench/memory.py [FILE ...]

Without files it takes the largest files of the installed torch package, among them
torch/testing/_internal/common_methods_invocations.py (1.4 MB) and the generated,
literal-heavy ones. Each measurement is a fresh process (peak RSS from wait4): the
floor (start Python, import libcst, parse the file), the linter on it alone (cold, no
cache) and the linter with the fast path off (every file parsed in full).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpora import python_files, torch_package

_FLOOR = "import libcst, sys; libcst.parse_module(open(sys.argv[1], encoding='utf-8').read())"
_FULL = (
    "import sys; from gpumem_lint import fast_path; fast_path.enabled = False; "
    "from gpumem_lint.cli import main; main(['check', '--no-cache', '--quiet', sys.argv[1]])"
)


def main() -> int:
    files = [Path(argument) for argument in sys.argv[1:]] or _largest_torch_files(6)
    print(f"{'file':60} {'KiB':>6} {'floor':>14} {'lint':>14} {'full parse':>14}   (peak RSS MiB, CPU s)")
    for path in files:
        floor = _measure([sys.executable, "-c", _FLOOR, str(path)])
        lint = _measure([sys.executable, "-m", "gpumem_lint", "check", "--no-cache", "--quiet", str(path)])
        full = _measure([sys.executable, "-c", _FULL, str(path)])
        name = str(path).split("site-packages/")[-1]
        print(f"{name:60} {path.stat().st_size // 1024:6} {_show(floor):>14} {_show(lint):>14} {_show(full):>14}")
    return 0


def _largest_torch_files(count: int) -> list[Path]:
    torch = torch_package()
    return sorted(python_files(torch), key=lambda path: path.stat().st_size, reverse=True)[:count] if torch else []


def _measure(command: list[str]) -> tuple[float, float]:
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(process.pid, 0)
    return usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def _show(measured: tuple[float, float]) -> str:
    return f"{measured[0]:5.0f} / {measured[1]:5.1f}"


if __name__ == "__main__":
    raise SystemExit(main())
