from collections.abc import Iterator

from gpumem_lint.context import FileContext
from gpumem_lint.diagnostics import Severity
from gpumem_lint.rules._boundaries import crossing_text, cuda_evidence, process_model
from gpumem_lint.rules.base import Invalid, Report, Rule
from gpumem_lint.semantic.boundaries import ProcessModel
from gpumem_lint.semantic.flow import ScopeFacts
from gpumem_lint.semantic.processes import PROCESS_CROSSING, Crossing


class SenderExitsBeforeReceiver(Rule):
    """
    ## What it does
    Flags a function that runs as a child process — the `target` of `Process`, the function
    of `torch.multiprocessing.spawn`, defined in the same module (also through
    `functools.partial`, or a method of a module class bound to an instance:
    `target=tracker.spin` after `tracker = Tracker()`), or the `run()` of a
    `multiprocessing.Process` subclass — that puts a tensor on a
    queue or pipe and then returns without waiting for the receiver: no `join()`, `wait()`,
    `get()`, `recv()` or barrier after the `put`. Returning ends the process.

    ## Why is this bad?
    A tensor on a queue is not the data: it is a handle to memory the sender still owns.
    For a CPU tensor (the default `file_descriptor` sharing strategy) the receiver's `get()`
    fetches the file descriptor from the sender, so once the sender has exited `get()` fails
    with `ConnectionRefusedError` or `FileNotFoundError` ([docs/facts.md](../docs/facts.md)
    F17, fork and spawn alike). For a CUDA tensor the sender must stay alive for as long as
    the receiver *uses* it; on an H200 a read after the sender had exited failed with
    `CUDA error: invalid resource handle`, and the sender printed `Producer process has been
    terminated before all shared CUDA tensors released` (F15). Whether the receiver wins the
    race depends on timing, so the program fails intermittently.

    A sender that only drops its reference (`del x`) while staying alive is fine (F15) and
    is not reported; neither are pool workers, which outlive their tasks.

    ## Example
    ```python
    def producer(rank, queue):
        batch = torch.randn(64, 128)
        queue.put(batch)

    mp.spawn(producer, args=(queue,), nprocs=4, join=False)
    ```

    ## Use instead
    ```python
    def producer(rank, queue, done):
        queue.put(torch.randn(64, 128))
        done.wait()  # the receiver sets it once it has what it needs
    ```

    ## Fix safety
    There is no automatic fix. Keep the sender alive until the receiver signals (an `Event`,
    a reply on another queue), or send plain data (`t.tolist()`, `t.numpy()`) that is
    copied into the message.

    ## References
    - [Multiprocessing best practices: reuse buffers passed through a Queue](https://docs.pytorch.org/docs/stable/notes/multiprocessing.html)
    - [torch.multiprocessing: sharing CUDA tensors](https://docs.pytorch.org/docs/stable/multiprocessing.html#sharing-cuda-tensors)
    """

    code = "GML209"
    name = "sender-exits-before-receiver"
    severity = Severity.ERROR
    summary = "A child process sends a tensor and exits before the receiver has it"
    fix_title = (
        "Keep the sending process alive until the receiver signals (`done.wait()`), or send a copy as plain data"
    )
    triggers = ("multiprocessing",)
    file_trigger = PROCESS_CROSSING
    VALID = (
        """
import torch
import torch.multiprocessing as mp

def producer(rank, queue, done):
    queue.put(torch.randn(64, 128))
    done.wait()

def main(queue, done):
    mp.spawn(producer, args=(queue, done), nprocs=2, join=False)
""",
        """
import torch
import torch.multiprocessing as mp

def producer(rank, queue):
    queue.put(torch.randn(64, 128).tolist())

def main(queue):
    mp.spawn(producer, args=(queue,), nprocs=2, join=False)
""",
    )
    INVALID = (
        Invalid(
            # a bound method of a module class runs as the child: `tracker` is the only value of its name
            """
import torch
import torch.multiprocessing as mp

class Tracker:
    def __init__(self, size):
        self.size = size

    def spin(self, frames):
        frames.put(torch.zeros(self.size, device="cuda"))

if __name__ == "__main__":
    frames = mp.get_context("spawn").Queue()
    tracker = Tracker(4)
    child = mp.get_context("spawn").Process(target=tracker.spin, args=(frames,))
    child.start()
    print(frames.get().sum().item())
""",
            (10,),
        ),
        Invalid(
            """
import torch
import torch.multiprocessing as mp

def producer(rank, queue):
    batch = torch.randn(64, 128, device="cuda")
    queue.put(batch)

def main(queue):
    mp.spawn(producer, args=(queue,), nprocs=1)
""",
            (7,),
        ),
        Invalid(
            """
import torch
import multiprocessing as mp

def work(results):
    results.put(torch.zeros(2, 2))

if __name__ == "__main__":
    results = mp.Queue()
    p = mp.Process(target=work, args=(results,))
    p.start()
    print(results.get())
""",
            (6,),
        ),
    )

    def check(self, ctx: FileContext) -> Iterator[Report]:
        model = process_model(ctx)
        evidence = cuda_evidence(ctx)
        reported = set()
        for facts, crossing in [*self._sends_from_children(model), *_sends_from_child_methods(model)]:
            if crossing in facts.processes.finished or not _sends_tensor(crossing) or id(crossing.node) in reported:
                continue
            reported.add(id(crossing.node))
            cuda = evidence.sends_cuda(facts, crossing)
            consequence = (
                "a receiver using the CUDA tensor afterwards fails with `CUDA error: invalid resource handle`"
                if cuda
                else "the receiver's `get()` then fails with `ConnectionRefusedError`"
            )
            yield Report(
                crossing.node,
                f"{crossing_text(ctx, crossing)} sends a tensor, and the child process `{facts.scope.name}` returns "
                f"without waiting for the receiver: {consequence}",
            )

    @staticmethod
    def _sends_from_children(model: ProcessModel) -> Iterator[tuple[ScopeFacts, Crossing]]:
        """The queue and pipe sends of every function run as a whole child process."""
        for sender, crossing in model.crossings():
            if crossing.kind not in ("process", "spawn"):
                continue
            child = model.child_facts(sender, crossing)
            if child is None:
                continue
            for send in child.processes.crossings:
                if send.kind in ("queue", "pipe"):
                    yield child, send


def _sends_from_child_methods(model: ProcessModel) -> Iterator[tuple[ScopeFacts, Crossing]]:
    """The sends of the methods that run in a child (`run()` of a `multiprocessing.Process` subclass, a
    `target=self.loop`): the child's whole life."""
    for facts in model.facts:
        if model.classes.runs_in_child(facts):
            for send in facts.processes.crossings:
                if send.kind in ("queue", "pipe"):
                    yield facts, send


def _sends_tensor(crossing: Crossing) -> bool:
    return crossing.sent.tensor or any(handle.tensor for handle in crossing.sent.handles if handle.role is None)
