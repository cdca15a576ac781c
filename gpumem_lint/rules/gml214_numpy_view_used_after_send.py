import re
from collections.abc import Iterator

from gpumem_lint.context import FileContext
from gpumem_lint.diagnostics import Severity
from gpumem_lint.rules._boundaries import crossing_text, pickling_method_text, process_model
from gpumem_lint.rules.base import Invalid, Report, Rule
from gpumem_lint.semantic.boundaries import ProcessModel
from gpumem_lint.semantic.processes import PROCESS_CROSSING, LeftBehindUse


class NumpyViewUsedAfterSend(Rule):
    """
    ## What it does
    Flags a read or a write of a numpy array made from a CPU tensor (`a = t.numpy()`,
    `np.asarray(t)`) before the tensor was sent to another process: put on a queue, sent through
    a pipe, handed to a pool, or given as a `Process` argument to a child started with spawn or
    forkserver (the default on Python 3.14, and on macOS and Windows). `t.share_memory_()` is the
    same move, and an array made before it is flagged too.

    ## Why is this bad?
    Pickling a CPU tensor for another process moves its memory into shared memory in place
    ([docs/facts.md](../docs/facts.md) F12): the tensor gets new memory and the old is freed. A
    torch view follows the move; a numpy array does not, it keeps pointing at the freed memory
    (F33, measured on CPU by `tests/test_numpy_send_facts.py`). From the send on, the array no longer
    sees the tensor's writes, reads through it return whatever the allocator put there since, and
    a write through it reaches neither the tensor nor the receiver: once it aborted the interpreter
    (`malloc(): unaligned tcache chunk detected`). Nothing raises before that. `t.share_memory_()`
    moves the tensor the same way (F48, measured in the same test).

    An array made after the send follows the tensor's new memory, and sending the array itself
    pickles it by value, moving nothing; nor does sending a tensor already in shared memory (sent
    before, or `share_memory_()`). A forked child inherits its `Process` arguments without
    pickling, so under fork the array stays valid (measured in the same test); a queue or pipe
    pickles under every start method.

    ## Known problems
    The array and the send must be in one function. `torch.from_numpy(a)` sent moves the tensor
    too, but leaves `a` on its own memory, which stays valid (measured, F48): reads of `a` are not
    reported, though it no longer shares writes with the tensor.

    ## Example
    ```python
    frame = torch.zeros(3, 224, 224)
    pixels = frame.numpy()
    queue.put(frame)
    pixels[:] = next_image  # freed memory
    ```

    ## Use instead
    ```python
    queue.put(frame)
    pixels = frame.numpy()  # made after the send: the tensor's shared memory
    pixels[:] = next_image
    ```
    or send a copy (`queue.put(frame.clone())`), or send the array itself.

    ## Fix safety
    There is no automatic fix: making the array after the send, sending a copy, or sending the
    array each change what the receiver sees of later writes.

    ## References
    - [Multiprocessing best practices](https://docs.pytorch.org/docs/stable/notes/multiprocessing.html)
    - [torch.Tensor.numpy](https://docs.pytorch.org/docs/stable/generated/torch.Tensor.numpy.html)
    """

    code = "GML214"
    name = "numpy-view-used-after-send"
    severity = Severity.ERROR
    summary = "A numpy array made from a tensor is used after the tensor was sent to another process"
    fix_title = "Make the array after the send, send a copy (`t.clone()`), or send the array itself"
    triggers = ("numpy",)
    file_trigger = re.compile(rf"{PROCESS_CROSSING.pattern}|\bshare_memory_?\(")  # a send, or the same move
    VALID = (
        """
import torch
import torch.multiprocessing as mp

sender, receiver = mp.Pipe()
frame = torch.zeros(4)
sender.send(frame)
pixels = frame.numpy()
print(pixels.sum())
""",
        """
import torch
import torch.multiprocessing as mp

sender, receiver = mp.Pipe()
frame = torch.zeros(4)
pixels = frame.numpy()
sender.send(pixels)
print(pixels.sum())
""",
        """
import torch
import torch.multiprocessing as mp

def child(frame, results):
    results.put(frame.sum().item())

if __name__ == "__main__":
    ctx = mp.get_context("fork")
    frame = torch.zeros(4)
    pixels = frame.numpy()
    results = ctx.Queue()
    ctx.Process(target=child, args=(frame, results)).start()
    print(pixels.sum(), results.get())
""",
        """
import torch
import torch.multiprocessing as mp

sender, receiver = mp.Pipe()
frame = torch.zeros(4)
pixels = frame.clone().numpy()
sender.send(frame)
print(pixels.sum())
""",
        """
import numpy as np
import torch
import torch.multiprocessing as mp

sender, receiver = mp.Pipe()
pixels = np.zeros(4, dtype=np.float32)
frame = torch.from_numpy(pixels)
sender.send(frame)
print(pixels.sum(), frame.sum())  # the array keeps its own memory; the tensor follows the move
""",
        # made again by each pass: from the second on, the tensor is already in shared memory
        """
import torch
import torch.multiprocessing as mp

def publish(queue, steps):
    frame = torch.zeros(4)
    for step in range(steps):
        pixels = frame.numpy()
        print(step, pixels.sum())
        queue.put(frame)
""",
        # sent before the array was made: sending it again moves nothing
        """
import torch
import torch.multiprocessing as mp

def publish(queue, steps):
    frame = torch.zeros(4)
    queue.put(frame)
    for step in range(steps):
        pixels = frame.numpy()
        queue.put(frame)
        print(pixels.sum())
""",
        """
import torch
import torch.multiprocessing as mp

sender, receiver = mp.Pipe()
frame = torch.zeros(4).share_memory_()
pixels = frame.numpy()
sender.send(frame)  # already in shared memory: nothing moves
print(pixels.sum())
""",
    )
    INVALID = (
        Invalid(
            """
import torch
import torch.multiprocessing as mp

sender, receiver = mp.Pipe()
frame = torch.zeros(4)
pixels = frame.numpy()
sender.send(frame)
pixels[:] = 1.0
""",
            (9,),
        ),
        Invalid(
            """
import torch
import torch.multiprocessing as mp

def child(frame, results):
    results.put(frame.sum().item())

if __name__ == "__main__":
    frame = torch.zeros(4)
    pixels = frame.numpy()
    results = mp.Queue()
    mp.Process(target=child, args=(frame, results)).start()
    print(pixels.sum(), results.get())
""",
            (13,),
        ),
        Invalid(
            """
import numpy as np
import torch
import torch.multiprocessing as mp

def publish(queue, frames):
    for image in frames:
        frame = torch.from_numpy(image).float()
        pixels = np.asarray(frame)
        queue.put(frame)
        yield pixels.mean()
""",
            (11,),
        ),
        Invalid(
            """
import torch
import torch.multiprocessing as mp

def child(frame):
    frame.fill_(1.0)

if __name__ == "__main__":
    frame = torch.zeros(4)
    pixels = frame.numpy()
    frame.share_memory_()
    worker = mp.Process(target=child, args=(frame,))
    worker.start()
    worker.join()
    print(pixels.sum())
""",
            (15,),
        ),
    )

    def check(self, ctx: FileContext) -> Iterator[Report]:
        model = process_model(ctx)
        for facts in ctx.semantic.facts:
            reported: set[int] = set()
            for use in facts.processes.left_behind_uses:
                crossing = use.crossing
                if id(use.array) in reported or (crossing is not None and not model.pickled(crossing)):
                    continue
                reported.add(id(use.array))
                yield Report(
                    use.node,
                    f"`{ctx.code(use.node)}` reads or writes freed memory: {_mover_text(ctx, model, use)} moved its "
                    "tensor into shared memory",
                )


def _mover_text(ctx: FileContext, model: ProcessModel, use: LeftBehindUse) -> str:
    """The send (for a child's argument, with the start method under which it is pickled), or `share_memory_()`."""
    crossing = use.crossing
    if crossing is None:
        return f"`{ctx.code(use.mover)}` (line {ctx.line(use.mover)})"
    if crossing.kind in ("process", "spawn"):
        return f"{crossing_text(ctx, crossing)}, pickling under {pickling_method_text(model.start_method(crossing))},"
    return crossing_text(ctx, crossing)
