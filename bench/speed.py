"""How fast is a lint run, against the libcst parse floor and TorchFix?

    python bench/speed.py [--corpus NAME ...] [--rounds 3] [--ruff PATH] [--torchfix PATH] [--fixit PATH]
                          [--slow-corpus NAME ...]

Each corpus (bench/corpora.py) is linted **as a checkout**, the way its users lint it: its
`.py` files are copied into a scratch directory whose root holds a `pyproject.toml` (the
corpus's own when it has one), so the linter finds the project root and follows first-party
imports (`semantic/module_graph.py`). timm, transformers and the torch package are unpacked
packages (`timm/...` under the copy's root, as in their repositories); the corpora unpacked
from repositories keep their layout. `--as-found` lints the files where they lie instead (a
corpus without a root marker is then a tree of unrelated scripts: no import is followed).

For each corpus it runs, interleaved, `--rounds` times each:

- floor:  start Python, import libcst, parse every file, on the same number of processes
          (and chunks) as the linter's pool;
- cold:   `gpumem-lint check --no-cache` on the same files (what a first run costs);
- warm:   the same with a cache filled by the run just before it (an unchanged tree);
- ruff:     `ruff check --select ALL --no-cache` on the same files, when given (all cores, as ruff runs);
- torchfix: `torchfix --jobs N` from its own venv (it pins libcst < 1.6) on the same files, when given;
- fixit:    `fixit lint` (Fixit 2, its default rules, all cores) from its own venv, when given.

TorchFix and Fixit are slow (15-25 times the floor): they run on the `--slow-corpus` corpora only,
in the first `--slow-rounds` rounds.

Each run is a fresh process tree: wall time, CPU time (user + system of every process) and
the peak resident memory of its largest process (a worker, for a pooled run) come from the
kernel (wait4). Ratios are taken round by round against that round's floor, then the median
is reported, so a load change from other work on the machine moves both sides alike; the
load average is printed with each round.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpora import compile_linter, default_corpora, python_files

_CHUNK_SIZE = 4  # as gpumem_lint/runner.py
_SELECT: str | None = None


@dataclass
class Sample:
    corpus: str
    mode: str
    round: int
    wall: float
    cpu: float
    peak_rss_mib: float
    exit_code: int
    load: float


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", action="append", help="a corpus name from bench/corpora.py (repeatable)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)), help="processes (default: all cores)")
    parser.add_argument("--ruff", type=Path, help="the ruff executable")
    parser.add_argument("--torchfix", type=Path, help="the torchfix executable, in its own venv")
    parser.add_argument("--fixit", type=Path, help="the fixit executable, in its own venv")
    parser.add_argument("--slow-corpus", action="append", default=[], help="corpora to run TorchFix and Fixit on")
    parser.add_argument("--slow-rounds", type=int, default=1, help="TorchFix and Fixit in the first N rounds only")
    parser.add_argument("--no-warm", action="store_true", help="skip the warm (cached) runs")
    parser.add_argument("--select", help="rule selectors for the linter runs (default: its own default)")
    parser.add_argument("--json", type=Path, help="also write every sample here")
    parser.add_argument(
        "--as-found", action="store_true", help="lint the files where they lie, not as a checkout with a project root"
    )
    args = parser.parse_args()
    global _SELECT
    _SELECT = args.select
    available = default_corpora()
    names = args.corpus or list(available)
    samples: list[Sample] = []
    compile_linter()
    _print_header(args.jobs, {"ruff": args.ruff, "TorchFix": args.torchfix, "Fixit": args.fixit})
    with tempfile.TemporaryDirectory(prefix="gpumem-lint-bench-") as scratch:
        lists = {}
        for name in names:
            root = available[name] if args.as_found else checkout(name, available[name], Path(scratch) / "checkouts")
            files = python_files(root)
            listing = Path(scratch) / f"{name}.files"
            listing.write_text("\n".join(map(str, files)))
            lines = sum(_count_lines(path) for path in files)
            lists[name] = listing
            where = available[name] if args.as_found else f"{available[name]}, as a checkout in {root}"
            print(f"{name}: {len(files)} files, {lines:,} lines ({where})", flush=True)
        for round_ in range(args.rounds):
            for name in names:
                listing = lists[name]
                modes = {
                    "floor": [sys.executable, __file__, "--floor", str(listing), "--jobs", str(args.jobs)],
                    "cold": _lint_command(listing, None),
                }
                if not args.no_warm:
                    modes["warm"] = _lint_command(listing, Path(scratch) / f"{name}.cache")
                if args.ruff:
                    modes["ruff"] = [str(args.ruff), "check", "--select", "ALL", "--no-cache", "--exit-zero"]
                    modes["ruff"] += ["--quiet", "@" + str(listing)]
                if name in args.slow_corpus and round_ < args.slow_rounds:
                    if args.torchfix:
                        modes["torchfix"] = [str(args.torchfix), "--jobs", str(args.jobs), "@" + str(listing)]
                    if args.fixit:
                        modes["fixit"] = [str(args.fixit), "lint", "@" + str(listing)]
                for mode, command in modes.items():
                    if mode == "warm":  # refill first: other work on the tool's own files invalidates the cache
                        _run(command, scratch)
                    sample = Sample(name, mode, round_, *_run(command, scratch), os.getloadavg()[0])
                    samples.append(sample)
                    print(
                        f"  round {round_ + 1} {name:>14} {mode:>8}: wall {sample.wall:7.2f} s  cpu {sample.cpu:7.2f} s  "
                        f"peak {sample.peak_rss_mib:6.0f} MiB  exit {sample.exit_code}  load {sample.load:.2f}",
                        flush=True,
                    )
    print(f"load average at the end: {' '.join(f'{load:.2f}' for load in os.getloadavg())}", flush=True)
    _summarize(samples, names)
    if args.json:
        args.json.write_text(json.dumps([asdict(sample) for sample in samples], indent=1))
    return 0


#: What makes a directory a project root for the linter (semantic/module_graph.py `_ROOT_MARKERS`).
_ROOT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")


def checkout(name: str, corpus: Path, under: Path) -> Path:
    """A copy of the corpus's `.py` files (and its root's configuration) laid out as its
    repository is: a package directory (timm, transformers, torch) under a root, and a
    `pyproject.toml` at the root unless the corpus has a root marker of its own."""
    package = (corpus / "__init__.py").is_file()
    root = under / name
    top = root / corpus.name if package else root
    for source in python_files(corpus):
        target = top / source.relative_to(corpus)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    for marker in ("pyproject.toml", "setup.py", "setup.cfg"):
        if not package and (corpus / marker).is_file():
            shutil.copyfile(corpus / marker, root / marker)
    if not any((root / marker).exists() for marker in _ROOT_MARKERS):
        (root / "pyproject.toml").write_text(f'[project]\nname = "{name}"\n')
    return root


def _lint_command(listing: Path, cache: Path | None) -> list[str]:
    command = [sys.executable, "-m", "gpumem_lint", "check", "--output-format", "concise", "--quiet"]
    command += ["--select", _SELECT] if _SELECT else []
    command += ["--no-cache"] if cache is None else ["--cache-dir", str(cache)]
    return [*command, "@" + str(listing)]


def _run(command: list[str], cwd: str) -> tuple[float, float, float, int]:
    """(wall s, cpu s, peak RSS MiB of the largest process, exit code) of one process tree."""
    command = _expand_listing(command)
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, process.returncode


def _expand_listing(command: list[str]) -> list[str]:
    """`@file` stands for the paths listed in it (the torch package is 2,000+ paths)."""
    expanded = []
    for argument in command:
        if argument.startswith("@"):
            expanded.extend(Path(argument[1:]).read_text().splitlines())
        else:
            expanded.append(argument)
    return expanded


def _count_lines(path: Path) -> int:
    with path.open("rb") as handle:
        return sum(1 for _ in handle)


def _summarize(samples: list[Sample], names: list[str]) -> None:
    print("\nmedians (ratios: median over rounds of run / that round's floor)")
    print(f"{'corpus':>14} {'mode':>8} {'wall s':>8} {'cpu s':>8} {'peak MiB':>9} {'wall x':>7} {'cpu x':>7}")
    for name in names:
        floors = {s.round: s for s in samples if s.corpus == name and s.mode == "floor"}
        for mode in ("floor", "cold", "warm", "ruff", "torchfix", "fixit"):
            runs = [s for s in samples if s.corpus == name and s.mode == mode]
            if not runs:
                continue
            wall_ratio = statistics.median(s.wall / floors[s.round].wall for s in runs)
            cpu_ratio = statistics.median(s.cpu / floors[s.round].cpu for s in runs)
            print(
                f"{name:>14} {mode:>8} {statistics.median(s.wall for s in runs):8.2f} "
                f"{statistics.median(s.cpu for s in runs):8.2f} {max(s.peak_rss_mib for s in runs):9.0f} "
                f"{wall_ratio:7.2f} {cpu_ratio:7.2f}"
            )


def _print_header(jobs: int, peers: dict[str, Path | None]) -> None:
    import libcst

    versions = {
        "python": platform.python_version(),
        "libcst": _version("libcst"),
        "gpumem-lint": _version("gpumem-lint"),
    }
    print(
        f"rules: {_SELECT or 'default selection'}; "
        f"{time.strftime('%Y-%m-%d %H:%M %Z')}  {platform.machine()} {os.cpu_count()} cores "
        f"({jobs} used), {platform.system()} {platform.release()}; "
        + ", ".join(f"{k} {v}" for k, v in versions.items())
        + f"; libcst native parser: {libcst.parse_module.__module__}",
        flush=True,
    )
    for label, tool in peers.items():
        if tool is not None:
            found = subprocess.run([str(tool), "--version"], capture_output=True, text=True, check=False)
            print(f"{label}: {tool} ({(found.stdout or found.stderr).strip().splitlines()[-1]})", flush=True)
    print(f"load average at the start: {' '.join(f'{load:.2f}' for load in os.getloadavg())}", flush=True)


def _version(distribution: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(distribution)
    except PackageNotFoundError:
        return "?"


# ------------------------------------------------------------------ the floor


def _floor(listing: Path, jobs: int) -> None:
    """Parse every listed file with libcst, as the linter's pool would schedule them."""
    files = listing.read_text().splitlines()
    jobs = min(jobs, len(files) // 16)  # as gpumem_lint/runner.py: a pool only for 16+ files per process
    if jobs <= 1:
        for file in files:
            _parse(file)
        return
    with ProcessPoolExecutor(jobs) as pool:
        for _ in pool.map(_parse, files, chunksize=_CHUNK_SIZE):
            pass


def _parse(file: str) -> None:
    import io
    import tokenize

    import libcst

    data = Path(file).read_bytes()
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        libcst.parse_module(data.decode(encoding).removeprefix("\ufeff"))
    except Exception:
        pass


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "--floor":
        _floor(Path(sys.argv[2]), int(sys.argv[4]))
    else:
        raise SystemExit(main())
