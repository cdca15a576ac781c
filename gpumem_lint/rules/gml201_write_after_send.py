from collections.abc import Iterator

from gpumem_lint.context import FileContext
from gpumem_lint.diagnostics import Severity
from gpumem_lint.fixes import Applicability
from gpumem_lint.rules._boundaries import (
    crossing_text,
    pickling_method_text,
    process_model,
)
from gpumem_lint.rules._clone_fix import clone_sent
from gpumem_lint.rules._copy_fix import copy_the_tensors
from gpumem_lint.rules._reporting import write_text
from gpumem_lint.rules.base import Invalid, Report, Rule
from gpumem_lint.semantic.processes import PROCESS_CROSSING, Crossing
from gpumem_lint.semantic.values import AliasKind, Write


class WriteAfterSend(Rule):
    """
    ## What it does
    Flags an in-place write by the sender to a tensor it has handed to another process and
    not yet waited for: after `q.put(t)` / `conn.send(t)`, after `pool.apply_async(f, (t,))`
    / `executor.submit(f, t)` (until `.get()` / `.result()` / leaving the `with` block),
    and after `Process(target=f, args=(t,)).start()` under spawn or forkserver (until
    `p.join()`), chosen or by default: the default is spawn on macOS and Windows. Tensors inside the tuples, lists and dicts handed over count too. Also
    flagged: a buffer that outlives the function — a parameter, `self.staging` — refilled in
    place and then put on a queue, so each call refills the memory of the previous message.

    ## Why is this bad?
    Handing a CPU tensor to another process pickles it, and torch's pickler moves the
    tensor's memory into shared memory *in place* ([docs/facts.md](../docs/facts.md) F12):
    from then on the sender and the receiver read and write the same bytes. `Queue.put`
    pickles later, in a feeder thread, so the receiver may get the values written *after*
    `put`, or see them change while it computes; reusing one buffer for several `put`s
    makes every message hold the last batch. Nothing raises: the numbers are just wrong.
    A numpy array made by `t.numpy()` before `t` was sent is left on freed memory instead, so a
    write through it reaches neither side (F33): GML214 reports it.

    A child started with the fork start method gets a copy-on-write copy instead (F13), so
    writes after `start()` are not seen and are not reported when the code chooses fork
    (`mp.get_context("fork")`); left at the platform default, it forks only on Linux up to
    Python 3.13. Tensors made shareable on
    purpose (`share_memory_()`, `model.share_memory()`) and optimizer steps on a shared
    model (Hogwild) are sharing by design and are left to GML208 — but a `state_dict()` put
    on a queue (for an evaluator, a checkpoint writer) is taken as a snapshot, so training
    on after it is reported: the receiver's "snapshot" keeps changing (as in GML102).

    ## Example
    ```python
    buffer = torch.empty(batch, dim)
    for chunk in reader:
        buffer.copy_(chunk)
        queue.put(buffer)
    ```

    ## Use instead
    ```python
    for chunk in reader:
        queue.put(chunk.clone())  # one tensor per message; never written again here
    ```

    ## Fix safety
    The fix sends a copy: `.clone()` on the tensor where it is sent (`q.put(buf.clone())`,
    `args=(t.clone(),)`), `copy.deepcopy(model.state_dict())` for weights trained after they
    are sent. It is unsafe: it costs one copy per message, and a receiver
    meant to see later writes (a shared buffer) no longer does. Waiting for the receiver
    (`p.join()`, an acknowledgement) before writing is the other remedy.

    ## References
    - [Multiprocessing best practices](https://docs.pytorch.org/docs/stable/notes/multiprocessing.html)
    - [torch.multiprocessing: sharing strategies](https://docs.pytorch.org/docs/stable/multiprocessing.html#sharing-strategies)
    """

    code = "GML201"
    name = "write-after-send"
    severity = Severity.ERROR
    summary = "In-place write to a tensor another process received and may still read"
    fix_title = "Send a copy (`q.put(t.clone())`), or wait for the receiver (`p.join()`, `.get()`) before writing"
    fix_applicability = Applicability.UNSAFE
    triggers = ("multiprocessing", "ProcessPoolExecutor")
    file_trigger = PROCESS_CROSSING
    VALID = (
        """
import torch
import torch.multiprocessing as mp

def produce(queue, reader):
    for chunk in reader:
        queue.put(chunk.clone())
""",
        """
import torch
import torch.multiprocessing as mp

def main(worker):
    mp.set_start_method("spawn")
    stats = torch.zeros(4)
    p = mp.Process(target=worker, args=(stats,))
    p.start()
    p.join()
    stats.zero_()
""",
        """
import torch
import torch.multiprocessing as mp

def main(worker):
    mp.set_start_method("fork")
    stats = torch.zeros(4)
    p = mp.Process(target=worker, args=(stats,))
    p.start()
    stats.zero_()
    p.join()
""",
        # the worker's reply, polled with get_nowait(), comes after it took its copy, as with get()
        """
import time
import torch
import torch.multiprocessing as mp

def worker(params_queue, replies):
    params = params_queue.get()
    replies.put(float(params.sum()))

def main():
    ctx = mp.get_context("spawn")
    params_queue, replies = ctx.Queue(), ctx.Queue()
    ctx.Process(target=worker, args=(params_queue, replies)).start()
    params = torch.zeros(4)
    params_queue.put(params)
    while replies.empty():
        time.sleep(0.01)
    params.add_(replies.get_nowait())
""",
    )
    INVALID = (
        Invalid(
            """
import torch
import multiprocessing as mp

def child(t):
    print(t.sum().item())

def main():
    t = torch.zeros(3)
    p = mp.Process(target=child, args=(t,))  # the default: spawn on macOS and Windows
    p.start()
    t.add_(1)
    p.join()
""",
            (12,),
            fixed="""
import torch
import multiprocessing as mp

def child(t):
    print(t.sum().item())

def main():
    t = torch.zeros(3)
    p = mp.Process(target=child, args=(t.clone(),))  # the default: spawn on macOS and Windows
    p.start()
    t.add_(1)
    p.join()
""",
        ),
        Invalid(
            """
import torch
import torch.multiprocessing as mp

def consume(connection, ready, results):
    ready.wait()
    results.put(connection.recv().tolist())

def main():
    receiver, sender = mp.Pipe(duplex=False)
    results, ready = mp.Queue(), mp.Event()
    child = mp.Process(target=consume, args=(receiver, ready, results))
    child.start()
    tensor = torch.zeros(3)
    sender.send(tensor)  # pickled here, in this thread: the memory is now shared
    tensor.add_(1)
    ready.set()
    print(results.get())
    child.join()

if __name__ == "__main__":
    main()
""",
            (16,),
            fixed="""
import torch
import torch.multiprocessing as mp

def consume(connection, ready, results):
    ready.wait()
    results.put(connection.recv().tolist())

def main():
    receiver, sender = mp.Pipe(duplex=False)
    results, ready = mp.Queue(), mp.Event()
    child = mp.Process(target=consume, args=(receiver, ready, results))
    child.start()
    tensor = torch.zeros(3)
    sender.send(tensor.clone())  # pickled here, in this thread: the memory is now shared
    tensor.add_(1)
    ready.set()
    print(results.get())
    child.join()

if __name__ == "__main__":
    main()
""",
            prints="[0.0, 0.0, 0.0]",
        ),
        Invalid(
            """
import torch
import torch.multiprocessing as mp

def train(model, optimizer, batches, eval_queue):
    for epoch, batch in enumerate(batches):
        eval_queue.put({"epoch": epoch, "weights": model.state_dict()})
        model(batch).sum().backward()
        optimizer.step()
""",
            (9,),
            fixed="""
import copy
import torch
import torch.multiprocessing as mp

def train(model, optimizer, batches, eval_queue):
    for epoch, batch in enumerate(batches):
        eval_queue.put({"epoch": epoch, "weights": copy.deepcopy(model.state_dict())})
        model(batch).sum().backward()
        optimizer.step()
""",
        ),
        Invalid(
            """
import torch
import torch.multiprocessing as mp

def produce(reader, workers):
    queue = mp.Queue()
    buffer = torch.empty(64, 128)
    for chunk in reader:
        buffer.copy_(chunk)
        queue.put(buffer)
""",
            (9,),
            fixed="""
import torch
import torch.multiprocessing as mp

def produce(reader, workers):
    queue = mp.Queue()
    buffer = torch.empty(64, 128)
    for chunk in reader:
        buffer.copy_(chunk)
        queue.put(buffer.clone())
""",
        ),
        Invalid(
            """
import torch
from concurrent.futures import ProcessPoolExecutor

def score(batches, fn):
    with ProcessPoolExecutor() as pool:
        futures = [pool.submit(fn, b) for b in batches]
        for b in batches:
            b.mul_(0.5)
        return [f.result() for f in futures]
""",
            (9,),
            fixed="""
import torch
from concurrent.futures import ProcessPoolExecutor

def score(batches, fn):
    with ProcessPoolExecutor() as pool:
        futures = [pool.submit(fn, b.clone()) for b in batches]
        for b in batches:
            b.mul_(0.5)
        return [f.result() for f in futures]
""",
        ),
    )

    def check(self, ctx: FileContext) -> Iterator[Report]:
        model = process_model(ctx)
        for facts in ctx.semantic.facts:
            shared = facts.processes.shared_on_purpose
            reported = set()
            for write, crossing in facts.processes.crossed_writes:
                if id(write.node) in reported or not model.pickled(crossing):
                    continue
                if write.module and not _sent_as_snapshot(crossing, write):
                    continue  # a model handed over and trained on by both sides: Hogwild
                if any(write.storage.related(storage) for storage in shared):
                    continue
                if facts.processes.left_behind(write.writer, crossing):
                    continue  # through an array the send left on freed memory: it reaches no one (GML214)
                reported.add(id(write.node))
                consequence = self._consequence(ctx, model, crossing)
                yield Report(write.node, f"{write_text(ctx, write)} {consequence}", fix=_sent_copy(ctx, crossing, write))
            yield from self._refilled_each_call(ctx, facts, reported)

    @staticmethod
    def _refilled_each_call(ctx: FileContext, facts, reported: set[int]) -> Iterator[Report]:
        """`buf.copy_(chunk); q.put(buf)` on a buffer that outlives the call (a parameter,
        `self.buf`): the next call refills the memory the previous message points to."""
        if not facts.scope.is_function:
            return
        for crossing in facts.processes.crossings:
            if crossing.kind not in ("queue", "pipe") or crossing in facts.processes.finished:
                continue
            sent = [h.storage for h in crossing.sent.handles if h.role is None and h.tensor]
            for write in facts.writes:
                if id(write.node) in reported or write.module or write.rebinds or write.storage.origin == "fresh":
                    continue
                if not any(write.storage.related(s) for s in sent) or ctx.line(write.node) >= ctx.line(crossing.node):
                    continue
                reported.add(id(write.node))
                yield Report(
                    write.node,
                    f"{write_text(ctx, write)} refills `{write.storage.label}`, which {crossing_text(ctx, crossing)} "
                    f"then sends to another process: the next `{facts.scope.name}` call overwrites the last message",
                    fix=clone_sent(ctx, crossing.node, write),
                )

    @staticmethod
    def _consequence(ctx: FileContext, model, crossing: Crossing) -> str:
        where = crossing_text(ctx, crossing)
        if crossing.kind in ("queue", "pipe") and any(h.ndarray for h in crossing.sent.handles):
            return (
                f"writes in place memory that {where} sent to another process as a numpy array: the receiver may "
                "get the new values"
            )
        if crossing.kind == "queue":
            return (
                f"writes in place a tensor that {where} sent to another process: it is pickled later, so the "
                "receiver may get the new values"
            )
        if crossing.kind == "pipe":
            return (
                f"writes in place a tensor that {where} sent to another process: the receiver shares this memory and "
                "sees it change"
            )
        if crossing.kind in ("pool", "executor"):
            return (
                f"writes in place a tensor that {where} handed to worker processes: a task still running sees the "
                "new values"
            )
        method = pickling_method_text(model.start_method(crossing))
        return (
            f"writes in place a tensor the process of {where} received: under {method} the child sees "
            "the write"
        )


def _sent_copy(ctx: FileContext, crossing: Crossing, write: Write):
    """Send copies: `model.state_dict()` deep-copied for weights trained after the send, else `.clone()`."""
    if write.module:
        handle = _snapshot_handle(crossing, write)
        return copy_the_tensors(ctx, handle.node) if handle is not None and handle.node is not None else None
    return clone_sent(ctx, crossing.node, write)


def _snapshot_handle(crossing: Crossing, write: Write):
    return next(
        (
            handle
            for handle in crossing.sent.handles
            if handle.kind is AliasKind.STATE_DICT and handle.storage.related(write.storage)
        ),
        None,
    )


def _sent_as_snapshot(crossing: Crossing, write: Write) -> bool:
    """`q.put(model.state_dict())`: the receiver means to get the weights as they are now."""
    return _snapshot_handle(crossing, write) is not None
