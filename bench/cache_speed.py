"""What the result cache saves: cold, warm and one-file-edited runs over a copied corpus.

    python bench/cache_speed.py [CORPUS_DIR ...] [--rounds 3]

Each corpus is copied to a temporary directory (one file of the copy gets edited). Per round:

- cold:   `gpumem-lint check` with an empty cache directory (every file is parsed and linted);
- warm:   the same again: an unchanged tree, every result from the cache;
- edited: one file's content changed, the rest unchanged.

Runs are fresh processes (wall time includes interpreter start-up) of a frozen copy of the
package: the cache key covers the tool's own files, so edits to the checkout during a
measurement would otherwise turn warm runs cold. The median of the rounds is printed with the
warm speed-up; the issue's bar is warm >= 10x faster than cold.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_CORPORA = [Path("/work/corpora/timm"), Path("/work/corpora/yolov5")]


PACKAGE = Path(__file__).resolve().parent.parent / "gpumem_lint"


def lint(tree: Path, cache: Path, tool: Path) -> float:
    command = [sys.executable, "-m", "gpumem_lint", "check", "-q", "--exit-zero", "--output-format", "concise"]
    environment = {**os.environ, "PYTHONPATH": str(tool)}
    started = time.perf_counter()
    subprocess.run(
        [*command, "--cache-dir", str(cache), str(tree)],
        check=True,
        stdout=subprocess.DEVNULL,
        cwd=tool,
        env=environment,
    )
    return time.perf_counter() - started


def measure(corpus: Path, rounds: int) -> dict[str, float]:
    samples: dict[str, list[float]] = {"cold": [], "warm": [], "edited": []}
    with tempfile.TemporaryDirectory() as scratch:
        tool = Path(scratch) / "tool"
        shutil.copytree(PACKAGE, tool / "gpumem_lint", ignore=shutil.ignore_patterns("__pycache__"))
        tree = Path(scratch) / corpus.name
        shutil.copytree(corpus, tree, ignore=shutil.ignore_patterns(".git", "__pycache__"))
        edited = next(iter(sorted(tree.rglob("*.py"))))
        for round_number in range(rounds):
            cache = Path(scratch) / f"cache-{round_number}"
            samples["cold"].append(lint(tree, cache, tool))
            samples["warm"].append(lint(tree, cache, tool))
            edited.write_text(edited.read_text(encoding="utf-8") + f"\n# edit {round_number}\n", encoding="utf-8")
            samples["edited"].append(lint(tree, cache, tool))
    return {mode: statistics.median(times) for mode, times in samples.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpora", nargs="*", type=Path, default=DEFAULT_CORPORA)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    print(f"cores: {len(os.sched_getaffinity(0))}, load: {os.getloadavg()[0]:.1f}, rounds: {options.rounds}")
    print(f"{'corpus':<28} {'files':>6} {'cold s':>8} {'warm s':>8} {'edited s':>9} {'warm speed-up':>14}")
    for corpus in options.corpora:
        files = sum(1 for _ in corpus.rglob("*.py"))
        times = measure(corpus, options.rounds)
        speedup = times["cold"] / times["warm"]
        print(
            f"{corpus.name:<28} {files:>6} {times['cold']:>8.2f} {times['warm']:>8.2f} {times['edited']:>9.2f} "
            f"{speedup:>13.1f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
