"""`gpumem-lint trace` end to end, in subprocesses: the program behaves exactly as under `python` (stdout,
stderr, exit code, traceback, atexit, threads, child processes), and the report holds exactly the run-time
findings each fixture marks with `# trace: CODE STATUS`.

Every program runs twice, with and without the tracer, and the pairs run concurrently to keep the suite fast.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TRACE_FIXTURES = ROOT / "fixtures" / "trace"
MARK = re.compile(r"#\s*trace:\s*(GML\d{3})\s+([a-z-]+)")

# Programs without torch: the launcher's fidelity, fast.
PROGRAMS = {
    "exit code and both streams": """
        import sys
        print("out")
        print("err", file=sys.stderr)
        sys.exit(3)
    """,
    "sys.exit with a message": """
        import sys
        sys.exit("giving up")
    """,
    "uncaught exception with a cause": """
        def lookup():
            return {}["missing"]

        try:
            lookup()
        except KeyError as error:
            raise ValueError("no such entry") from error
    """,
    "a syntax error (no traceback, none of the tracer's frames)": """
        print("never")
        total = (1 +
    """,
    "KeyboardInterrupt": """
        print("before")
        raise KeyboardInterrupt
    """,
    "os._exit": """
        import os
        import sys
        print("flushed")
        sys.stdout.flush()
        os._exit(7)
    """,
    "atexit handlers and non-daemon threads": """
        import atexit
        import threading
        import time

        def later():
            time.sleep(0.2)
            print("thread done", flush=True)

        atexit.register(print, "atexit ran")
        threading.Thread(target=later).start()
        print("main done", flush=True)
    """,
    "argv, sys.path[0], __main__": """
        import os
        import sys
        print(sys.argv[1:], sys.path[0] == os.path.dirname(os.path.abspath(__file__)))
        print(__name__, __file__ == os.path.abspath(sys.argv[0]), __spec__)
    """,
    "a spawn child imports the script, not the tracer": """
        import multiprocessing as mp

        def child(queue):
            queue.put(__name__)

        if __name__ == "__main__":
            context = mp.get_context("spawn")
            queue = context.Queue()
            process = context.Process(target=child, args=(queue,))
            process.start()
            print(queue.get())
            process.join()
            print(process.exitcode)
    """,
    "a forked child that returns instead of exiting": """
        import os
        pid = os.fork()
        if pid == 0:
            print("child", flush=True)
        else:
            os.waitpid(pid, 0)
            print("parent")
    """,
}

# Programs with torch (fixtures/trace): fidelity and findings. The CUDA ones run where a GPU is.
TORCH_FIXTURES = ["planted_hazards.py", "train_safe.py"]
GPU_FIXTURES = ["gpu_hazards.py", "gpu_train.py"]


def _has_cuda() -> bool:
    torch = pytest.importorskip("torch")
    return torch.cuda.is_available()


needs_cuda = pytest.mark.skipif(not _has_cuda(), reason="needs a CUDA GPU (runs on the device machine)")


def _gpumem_lint(*args: str) -> list[str]:
    return [sys.executable, "-m", "gpumem_lint", *args]


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=environment, timeout=240, check=False)


def _pair(script: Path, args: list[str], cwd: Path, report: Path, module: str | None = None):
    target = ["-m", module] if module else [str(script)]
    # Programs that start processes are scheduled differently from run to run, and on a loaded
    # machine a plain run has (rarely) ended early: a difference that does not repeat is the
    # machine's, one that repeats is the tracer's, so a differing pair is run once more.
    for _ in range(2):
        plain = _run([sys.executable, *target, *args], cwd)
        traced = _run(_gpumem_lint("trace", "--output-format", "json", "-o", str(report), *target, *args), cwd)
        if (plain.stdout, plain.stderr) == (traced.stdout, traced.stderr):
            break
    return plain, traced


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Every program, with and without the tracer: name -> (plain, traced, report path, source)."""
    work = tmp_path_factory.mktemp("trace")
    jobs = {}
    for index, (name, source) in enumerate(PROGRAMS.items()):
        script = work / f"program_{index}.py"
        script.write_text(textwrap.dedent(source), encoding="utf-8")
        jobs[name] = (script, ["--flag", "value"], work, work / f"report_{index}.json", None)
    package = work / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "tool.py").write_text(
        "import sys\nprint(__name__, sys.argv[1:], sys.path[0] == __import__('os').getcwd())\n"
    )
    jobs["python -m a module"] = (
        package / "tool.py",
        ["-x", "--output-format", "y"],
        work,
        work / "report_m.json",
        "pkg.tool",
    )
    for name in TORCH_FIXTURES + (GPU_FIXTURES if _has_cuda() else []):
        jobs[name] = (TRACE_FIXTURES / name, [], ROOT, work / f"report_{name}.json", None)
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {name: pool.submit(_pair, *job) for name, job in jobs.items()}
        return {name: (*futures[name].result(), jobs[name][3], jobs[name][0]) for name in jobs}


def _findings(report: Path) -> list[dict]:
    return json.loads(report.read_text(encoding="utf-8"))


ALL_PROGRAMS = [
    *PROGRAMS,
    "python -m a module",
    *TORCH_FIXTURES,
    *(pytest.param(name, marks=needs_cuda) for name in GPU_FIXTURES),
]
WITH_MARKS = [*TORCH_FIXTURES, *(pytest.param(name, marks=needs_cuda) for name in GPU_FIXTURES)]


@pytest.mark.parametrize("name", ALL_PROGRAMS)
def test_program_behaves_as_without_trace(runs, name):
    plain, traced, report, _ = runs[name]
    assert traced.stdout == plain.stdout
    assert traced.stderr == plain.stderr
    observed = any(f["source"] == "trace" for f in _findings(report))
    assert traced.returncode == (plain.returncode or (1 if observed else 0))


def test_pickling_moves_into_shared_memory_are_not_the_programs_writes(tmp_path):
    """Pickling a CPU tensor for another process moves it into shared memory (`set_` onto the shared copy):
    torch's write, no GML201. The recall case hands a tensor to DataLoader workers in a `worker_init_fn` partial."""
    case = ROOT / "bench" / "recall" / "cases" / "worker_init_partial_numpy_view_after_pickle.py"
    report = tmp_path / "report.json"
    traced = _run(
        _gpumem_lint("trace", "--no-static", "--output-format", "json", "-o", str(report), str(case)), tmp_path
    )
    assert "after data loader data" in traced.stdout, traced.stderr[-2000:]
    assert [f["code"] for f in _findings(report) if f["code"] == "GML201"] == []


def test_keyboard_interrupt_ends_by_sigint(runs):
    plain, traced, _, _ = runs["KeyboardInterrupt"]
    assert plain.returncode == traced.returncode == -2


@pytest.mark.parametrize("name", WITH_MARKS)
def test_runtime_findings_are_the_marked_lines(runs, name):
    _, _, report, script = runs[name]
    expected = {
        (row, match.group(1), match.group(2))
        for row, line in enumerate(script.read_text(encoding="utf-8").splitlines(), start=1)
        for match in [MARK.search(line)]
        if match
    }
    findings = _findings(report)
    observed = {(f["location"]["row"], f["code"], f["status"]) for f in findings if f["source"] == "trace"}
    assert observed == expected
    for finding in findings:
        assert finding["status"] in {"confirmed", "runtime-only", "reached-not-observed", "not-reached", "not-traced"}
        assert all({"filename", "location", "message"} <= set(related) for related in finding["related"])


def test_missing_torch_is_a_usage_error_and_nothing_runs(tmp_path):
    marker = tmp_path / "ran"
    script = tmp_path / "train.py"
    script.write_text(f"open({str(marker)!r}, 'w').close()\n")
    blocker = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'torch':\n"
        "            raise ImportError('blocked')\n"
        "sys.meta_path.insert(0, Block())\n"
        "from gpumem_lint.cli import main\n"
        "main(['trace', sys.argv[1]])\n"
    )
    result = _run([sys.executable, "-c", blocker, str(script)], tmp_path)
    assert result.returncode == 2
    assert "needs PyTorch" in result.stderr and "pip install torch " in result.stderr
    assert "gpumem-lint[" not in result.stderr  # not on the package index: that install fails
    assert not marker.exists()


def test_the_install_hint_names_what_the_trace_extra_installs():
    """The hint installs by hand what `pip install '.[trace]'` would from a clone: torch, and only torch."""
    from gpumem_lint.trace.command import INSTALL_HINT

    tomllib = pytest.importorskip("tomllib" if sys.version_info >= (3, 11) else "tomli")

    extra = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    names = [re.match(r"[A-Za-z0-9_.-]+", requirement).group(0) for requirement in extra["trace"]]
    assert names == ["torch"]
    assert INSTALL_HINT.startswith("pip install torch ")
