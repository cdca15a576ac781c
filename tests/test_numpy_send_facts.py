"""F33 against the installed torch (CPU): a numpy array made by `t.numpy()` before `t` is sent to
another process is left behind when pickling moves `t` into shared memory; one made after follows
it, and so does one made from a tensor already shared; a forked child's argument is not pickled. Each
program is run in a fresh interpreter and reports whether the array still points at the tensor's memory
and whether it sees a write through the tensor; GML214 must report the array's use exactly when the array
was left behind, and GML201 otherwise (the write reaches the receiver). The programs never
write through a left-behind array: that writes freed memory (once it aborted the interpreter with
`malloc(): unaligned tcache chunk detected`)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from gpumem_lint.engine import lint_source
from gpumem_lint.rules import RULES_BY_CODE

pytest.importorskip("torch")

#: name -> (the program, whether the array is left behind)
_PROGRAMS = {
    "array_made_before_a_pipe_send": (
        """
        import torch
        import torch.multiprocessing as mp

        if __name__ == "__main__":
            tensor = torch.zeros(4)
            array = tensor.numpy()
            sender, receiver = mp.Pipe()
            sender.send(tensor)
            # write
            received = receiver.recv()
        """,
        True,
    ),
    "array_made_after_a_pipe_send": (
        """
        import torch
        import torch.multiprocessing as mp

        if __name__ == "__main__":
            tensor = torch.zeros(4)
            sender, receiver = mp.Pipe()
            sender.send(tensor)
            array = tensor.numpy()
            # write
            received = receiver.recv()
        """,
        False,
    ),
    "array_made_before_a_spawn_process": (
        """
        import torch
        import torch.multiprocessing as mp

        def child(tensor, received):
            received.put(tensor.sum().item())

        if __name__ == "__main__":
            tensor = torch.zeros(4)
            array = tensor.numpy()
            ctx = mp.get_context("spawn")
            received = ctx.Queue()
            process = ctx.Process(target=child, args=(tensor, received))
            process.start()
            # write
            received.get(timeout=60)
        """,
        True,
    ),
    "array_made_before_a_fork_process": (
        """
        import torch
        import torch.multiprocessing as mp

        def child(tensor, received):
            received.put(tensor.sum().item())

        if __name__ == "__main__":
            tensor = torch.zeros(4)
            array = tensor.numpy()
            ctx = mp.get_context("fork")
            received = ctx.Queue()
            process = ctx.Process(target=child, args=(tensor, received))
            process.start()
            # write
            received.get(timeout=60)
        """,
        False,
    ),
    "array_made_between_two_sends": (
        """
        import torch
        import torch.multiprocessing as mp

        if __name__ == "__main__":
            tensor = torch.zeros(4)
            sender, receiver = mp.Pipe()
            sender.send(tensor)
            array = tensor.numpy()
            sender.send(tensor)
            # write
            received = receiver.recv()
        """,
        False,
    ),
    "array_made_after_share_memory": (
        """
        import torch
        import torch.multiprocessing as mp

        if __name__ == "__main__":
            tensor = torch.zeros(4).share_memory_()
            array = tensor.numpy()
            sender, receiver = mp.Pipe()
            sender.send(tensor)
            # write
            received = receiver.recv()
        """,
        False,
    ),
    "array_sent_itself": (
        """
        import torch
        import torch.multiprocessing as mp

        if __name__ == "__main__":
            tensor = torch.zeros(4)
            array = tensor.numpy()
            sender, receiver = mp.Pipe()
            sender.send(array)
            # write
            received = receiver.recv()
        """,
        False,
    ),
}

#: Where the program writes through the array, in the linted source (the run leaves it out).
_WRITE = "# write"

# Appended to the program for the run: what the array points at, after a write through the tensor.
_REPORT = """
    tensor.fill_(7.0)
    print(__import__("json").dumps({
        "follows": array.__array_interface__["data"][0] == tensor.data_ptr(),
        "sees_write": bool((array == 7.0).all()),
        "shared": tensor.is_shared(),
    }))
"""


def _run(program: str, tmp_path, report: str = _REPORT) -> dict:
    script = tmp_path / "program.py"
    script.write_text(program + report)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize(("program", "left_behind"), list(_PROGRAMS.values()), ids=list(_PROGRAMS))
def test_a_use_of_the_array_is_reported_exactly_when_the_array_was_left_behind(program, left_behind, tmp_path):
    program = textwrap.dedent(program)
    measured = _run(program, tmp_path)
    # Sending the tensor moves it into shared memory (F12); an array is pickled by value; a fork child's
    # argument is inherited, not pickled.
    assert measured["shared"] is not ("send(array)" in program or '"fork"' in program)
    assert measured["follows"] is measured["sees_write"] is (not left_behind)
    written = program.replace(_WRITE, "array[0] = 1.0")
    findings = lint_source(written, "program.py", [RULES_BY_CODE["GML201"], RULES_BY_CODE["GML214"]])
    # Left behind, the write reaches no one (GML214); else it reaches the receiver's shared memory (GML201),
    # except in a forked child's copy-on-write copy, or in memory shared on purpose (GML208's).
    expected = ["GML214"] if left_behind else [] if '"fork"' in program or "share_memory_" in program else ["GML201"]
    assert [d.code for d in findings] == expected, [d.message for d in findings]


def test_an_array_a_sent_tensor_was_made_from_keeps_its_own_memory(tmp_path):
    """F48: `torch.from_numpy(a)` sent moves the tensor too, but `a` owns its memory: it keeps its values
    (no garbage) and only stops sharing writes with the tensor. A read of it is not reported."""
    program = textwrap.dedent(
        """
        import numpy as np
        import torch
        import torch.multiprocessing as mp

        if __name__ == "__main__":
            array = np.full(4, 3.0, dtype=np.float32)
            tensor = torch.from_numpy(array)
            sender, receiver = mp.Pipe()
            sender.send(tensor)
            received = receiver.recv()
            keeps = [torch.ones(4) for _ in range(100)]
            print(array.sum())
        """
    )
    report = _REPORT.replace('"shared"', '"owns": bool(array.flags.owndata), "values": array.tolist(), "shared"')
    measured = _run(program, tmp_path, report)
    assert measured["shared"] and not measured["follows"] and not measured["sees_write"]
    assert measured["owns"] and measured["values"] == [3.0] * 4
    assert not lint_source(program, "program.py", [RULES_BY_CODE["GML214"]])


def test_share_memory_moves_the_tensor_as_a_send_does(tmp_path):
    """F48: `t.share_memory_()` is the same move into shared memory: an array made before it is left behind,
    and its use is reported."""
    program = textwrap.dedent(
        """
        import torch

        if __name__ == "__main__":
            tensor = torch.zeros(4)
            array = tensor.numpy()
            tensor.share_memory_()
        """
    )
    measured = _run(program, tmp_path)
    assert measured["shared"] and not measured["follows"] and not measured["sees_write"]
    findings = lint_source(program + "    print(array.sum())\n", "program.py", [RULES_BY_CODE["GML214"]])
    assert [d.code for d in findings] == ["GML214"], [d.message for d in findings]
