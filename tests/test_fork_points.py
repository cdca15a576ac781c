"""GML204's fork points for pools and executors held on `self`, against the installed Python (CPU is
enough): each program initialises "CUDA" in one method and hands a task to a pool or executor made
in another. It is run with `torch.cuda.init()` patched to leave a mark in the parent's memory and
`torch.cuda.current_device()` to return whether the calling process carries that mark: a child
forked after the parent's init inherits it, exactly the children whose CUDA use raises
`Cannot re-initialize CUDA in forked subprocess` on a GPU (docs/facts.md F14). The rule must flag
exactly the programs whose child carried the mark."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor

import pytest

from gpumem_lint.engine import lint_source
from gpumem_lint.rules import RULES_BY_CODE

pytest.importorskip("torch")

# Run again on import by spawn children, which therefore carry no mark of their own.
_PRELUDE = """\
import torch

def _mark():
    torch.cuda._initialised_here = True

torch.cuda.init = _mark
torch.cuda.current_device = lambda: getattr(torch.cuda, "_initialised_here", False)
"""

_TASK = """
import multiprocessing as mp
from concurrent.futures import ProcessPoolExecutor

import torch


def work(i):
    return torch.cuda.current_device()
"""

#: name -> (the class and how it is used, whether its child is forked after the parent's init)
_PROGRAMS = {
    "executor_made_in_init_first_task_after_init": (
        """
        class Runner:
            def __init__(self):
                self.executor = ProcessPoolExecutor(1)

            def run(self):
                torch.cuda.init()
                return self.executor.submit(work, 0).result()

            def close(self):
                self.executor.shutdown()
                self.executor = None


        if __name__ == "__main__":
            runner = Runner()
            print(runner.run())
            runner.close()
        """,
        True,
    ),
    "pool_made_in_init_before_init": (
        """
        class Runner:
            def __init__(self):
                self.pool = mp.Pool(1)

            def run(self):
                torch.cuda.init()
                return self.pool.map(work, range(1))[0]


        if __name__ == "__main__":
            runner = Runner()
            print(runner.run())
            runner.pool.close()
        """,
        False,
    ),
    "pool_made_by_a_method_called_after_init": (
        """
        class Runner:
            def start_workers(self):
                self.pool = mp.Pool(1)

            def run(self):
                torch.cuda.init()
                self.start_workers()
                return self.pool.map(work, range(1))[0]


        if __name__ == "__main__":
            runner = Runner()
            print(runner.run())
            runner.pool.close()
        """,
        True,
    ),
    "spawn_executor_made_in_init": (
        """
        class Runner:
            def __init__(self):
                self.executor = ProcessPoolExecutor(1, mp_context=mp.get_context("spawn"))

            def run(self):
                torch.cuda.init()
                return self.executor.submit(work, 0).result()


        if __name__ == "__main__":
            runner = Runner()
            print(runner.run())
            runner.executor.shutdown()
        """,
        False,
    ),
    "executor_made_again_with_spawn_before_the_task": (
        """
        class Runner:
            def __init__(self):
                self.executor = ProcessPoolExecutor(1)

            def respawn(self):
                self.executor.shutdown()
                self.executor = ProcessPoolExecutor(1, mp_context=mp.get_context("spawn"))

            def run(self):
                self.respawn()
                torch.cuda.init()
                return self.executor.submit(work, 0).result()


        if __name__ == "__main__":
            runner = Runner()
            print(runner.run())
            runner.executor.shutdown()
        """,
        False,
    ),
}


def _child_carries_mark(program: str, tmp_path) -> bool:
    script = tmp_path / "program.py"
    script.write_text(_PRELUDE + program)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.split()[-1] == "True"


@pytest.mark.skipif(sys.version_info >= (3, 14), reason="the stdlib default start method is forkserver from 3.14")
def test_flagged_exactly_when_the_child_is_forked_after_the_parents_init(tmp_path_factory):
    programs = {name: _TASK + textwrap.dedent(body) for name, (body, _) in _PROGRAMS.items()}
    with ThreadPoolExecutor(2) as pool:
        carried = dict(
            zip(programs, pool.map(lambda p: _child_carries_mark(p, tmp_path_factory.mktemp("fork")), programs.values()))
        )
    assert carried == {name: forked_after for name, (_, forked_after) in _PROGRAMS.items()}
    rule = RULES_BY_CODE["GML204"]
    flagged = {name: bool(lint_source(source, "program.py", [rule])) for name, source in programs.items()}
    assert flagged == carried
