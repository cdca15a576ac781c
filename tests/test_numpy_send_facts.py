"""F33 against the installed torch (CPU): a numpy array made by `t.numpy()` before `t` is sent to
another process is left behind when pickling moves `t` into shared memory; one made after follows
it. Each program is run in a fresh interpreter and reports whether the array still points at the
tensor's memory and whether the receiver sees a write through the tensor; GML201 must call the
array's write a write to freed memory exactly when the array was left behind. The programs never
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


def _run(program: str, tmp_path) -> dict:
    script = tmp_path / "program.py"
    script.write_text(program + _REPORT)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize(("program", "left_behind"), list(_PROGRAMS.values()), ids=list(_PROGRAMS))
def test_the_write_is_called_a_write_to_freed_memory_exactly_when_the_array_was_left_behind(
    program, left_behind, tmp_path
):
    program = textwrap.dedent(program)
    measured = _run(program, tmp_path)
    # Sending the tensor moves it into shared memory (F12); an array is pickled by value.
    assert measured["shared"] is ("send(array)" not in program)
    assert measured["follows"] is measured["sees_write"] is (not left_behind)
    findings = lint_source(program.replace(_WRITE, "array[0] = 1.0"), "program.py", [RULES_BY_CODE["GML201"]])
    assert [d.code for d in findings] == ["GML201"], [d.message for d in findings]
    assert ("freed memory" in findings[0].message) is left_behind, findings[0].message
