from collections.abc import Iterator
from itertools import chain

import libcst as cst

from gpumem_lint.context import FileContext
from gpumem_lint.diagnostics import Severity
from gpumem_lint.rules._boundaries import CudaEvidence, crossing_text, cuda_evidence, process_model
from gpumem_lint.rules.base import Invalid, Report, Rule
from gpumem_lint.semantic.boundaries import ProcessModel, Receiver
from gpumem_lint.semantic.devices import made_on_cuda
from gpumem_lint.semantic.flow import ScopeFacts
from gpumem_lint.semantic.processes import FRESH_METHODS, PROCESS_CROSSING, Crossing
from gpumem_lint.semantic.values import AliasKind, Handle, Role

#: Sends and receives go through queues and pipes; processes started here hand them over.
_CHANNELS = ("queue", "pipe")
_STARTS = ("process", "spawn")


class ReceivedCudaTensorSentOn(Rule):
    """
    ## What it does
    Flags a queue `put` or pipe `send` of a CUDA tensor that this process received from
    another one: taken from a queue or pipe (`x = inbox.get()`, `x = self.in_q.get()` in a
    method that runs in the child) that the module fills with CUDA tensors, or handed to a child
    started with spawn or forkserver as a `Process` argument. The
    tensor counts when it is sent itself, a view of it, or inside a tuple, list or dict; a copy
    (`x.clone()`, `x * 2`, `x.cpu()`) is new memory and is not reported.

    A CUDA tensor put on a queue made by a `multiprocessing` manager (`mp.Manager().Queue()`) is
    reported too: that queue is a proxy, and its `put` sends the tensor to the manager's server
    process, which has to send it on to the process that gets it.

    ## Why is this bad?
    A CUDA tensor crosses a process boundary as an IPC handle to memory its first sender
    owns, and torch does not share such a received tensor again. Measured on an H200 (torch
    2.11.0+cu130, [docs/facts.md](../docs/facts.md) F38, `bench/gpu/process_probe.json`): a
    relay that took a CUDA tensor from one spawn queue and put it on a second one never
    reached the reader, whose `get(timeout=60)` raised `queue.Empty`, whether the relay stayed
    alive or not; the relay saw no error, because a queue pickles in its feeder thread, and every
    process exited 0. Sent through a `Pipe`, which pickles in the sending thread, the relay's
    `send` raised `RuntimeError: Attempted to send CUDA tensor received from another process;
    this is not currently supported. Consider cloning before sending.`, for the tensor, a view of
    it and a tensor received as a spawn `Process` argument alike; `x.clone()` and `x * 2` arrived.
    A reply that puts the received tensor back on a queue to its first sender never arrives either.

    A CPU tensor can be sent on: it lives in shared memory, which every process can map (F12).
    Run on the CPU (3 processes, spawn and fork), a tensor relayed through a second queue
    reached the reader, and the reader's write reached the first sender
    (`tests/test_process_facts.py`).

    Through a manager's queue (F55, the same H200, 2026-12-03): a spawn child's `put` of a CUDA
    tensor on `mp.Manager().Queue()` made the parent's `get()` raise `RemoteError`, the manager's
    traceback ending in the same `RuntimeError: Attempted to send CUDA tensor received from another
    process`; a CPU tensor arrived.

    ## Known problems
    A tensor counts as a CUDA tensor when the syntax of its first send says so (`.cuda()`,
    `device="cuda"`, a name bound to a CUDA device; GML203's evidence), in the same module as
    the relay. A channel is followed from the call that made it (`ctx.Queue()`) into the
    functions started with it as an argument, and into the methods of a class that run in the
    child (the `run` of a `Process` subclass, a `target=self.loop`) through the `self.` queue
    `__init__` stores it in (`self.in_q = in_q`) or makes there; a queue a parent method of the
    class fills with CUDA tensors counts too. A queue reached otherwise (a global, another
    object's attribute) is not. Methods that may return their own tensor (`x.contiguous()`,
    `x.to(device)`) are taken for copies.

    ## Example
    ```python
    def relay(inbox, outbox):
        batch = inbox.get()  # a CUDA tensor from the main process
        outbox.put(batch)
    ```

    ## Use instead
    ```python
    def relay(inbox, outbox, done):
        batch = inbox.get()
        outbox.put(batch.clone())  # the relay owns the copy
        done.wait()  # and keeps it alive until the reader has it
    ```
    or let the first sender put the tensor on the reader's queue itself.

    ## Fix safety
    There is no automatic fix. A copy costs GPU memory and makes the relay its owner, which
    must then stay alive while the reader uses it (GML209), and the reader's writes no longer
    reach the first sender's tensor.

    ## References
    - [torch.multiprocessing: sharing CUDA tensors](https://docs.pytorch.org/docs/stable/multiprocessing.html#sharing-cuda-tensors)
    """

    code = "GML213"
    name = "received-cuda-tensor-sent-on"
    severity = Severity.ERROR
    summary = "A CUDA tensor received from another process is sent on (to a third, or back)"
    fix_title = (
        "Send a copy (`x.clone()`) and keep this process alive until the reader has it, or let the first sender "
        "send the tensor to the reader itself"
    )
    triggers = ("multiprocessing",)
    file_trigger = PROCESS_CROSSING
    VALID = (
        """
import torch
import torch.multiprocessing as mp

def relay(inbox, outbox, done):
    batch = inbox.get()
    outbox.put(batch.clone())
    done.wait()

def main():
    ctx = mp.get_context("spawn")
    inbox, outbox, done = ctx.Queue(), ctx.Queue(), ctx.Event()
    ctx.Process(target=relay, args=(inbox, outbox, done)).start()
    inbox.put(torch.ones(8, device="cuda"))
""",
        """
import torch
import torch.multiprocessing as mp

def relay(inbox, outbox, done):
    batch = inbox.get()
    outbox.put(batch)
    done.wait()

def main():
    ctx = mp.get_context("spawn")
    inbox, outbox, done = ctx.Queue(), ctx.Queue(), ctx.Event()
    ctx.Process(target=relay, args=(inbox, outbox, done)).start()
    inbox.put(torch.ones(8))  # a CPU tensor: in shared memory, it can be sent on
""",
        """
import torch
import torch.multiprocessing as mp

def relay(inbox, outbox, done):
    batch = inbox.get()
    outbox.put(batch * 2)  # new memory, owned by the relay
    done.wait()

def main():
    ctx = mp.get_context("spawn")
    inbox, outbox, done = ctx.Queue(), ctx.Queue(), ctx.Event()
    ctx.Process(target=relay, args=(inbox, outbox, done)).start()
    inbox.put(torch.ones(8, device="cuda"))
""",
        """
import torch
import torch.multiprocessing as mp

class Augmenter(mp.Process):
    def __init__(self, in_q, out_q, done):
        super().__init__()
        self.in_q = in_q
        self.out_q = out_q
        self.done = done

    def run(self):
        batch = self.in_q.get()
        self.out_q.put(batch.clone())
        self.done.wait()

def main():
    ctx = mp.get_context("spawn")
    in_q, out_q, done = ctx.Queue(), ctx.Queue(), ctx.Event()
    Augmenter(in_q, out_q, done).start()
    in_q.put(torch.ones(8, device="cuda"))
""",
        """
import torch
import torch.multiprocessing as mp

class Augmenter(mp.Process):
    def __init__(self, in_q, out_q, done):
        super().__init__()
        self.in_q = in_q
        self.out_q = out_q
        self.done = done

    def run(self):
        batch = self.in_q.get()
        self.out_q.put(batch)
        self.done.wait()

def main():
    ctx = mp.get_context("spawn")
    in_q, out_q, done = ctx.Queue(), ctx.Queue(), ctx.Event()
    Augmenter(in_q, out_q, done).start()
    in_q.put(torch.ones(8))  # a CPU tensor: in shared memory, it can be sent on
""",
        # every method here runs in this process: the staged tensor never crossed
        """
import torch
import torch.multiprocessing as mp

class Batcher:
    def __init__(self):
        self.staged_q = mp.Queue()
        self.out_q = mp.Queue()

    def stage(self, batch):
        self.staged_q.put(batch.cuda())

    def flush(self):
        batch = self.staged_q.get()
        self.out_q.put(batch)
""",
        # a CPU tensor through a manager's queue: pickled to the manager and on to the reader, as F55 measured
        """
import torch
import torch.multiprocessing as mp


def produce(out_q, done):
    out_q.put(torch.ones(4))
    done.wait()


if __name__ == "__main__":
    mp.set_start_method("spawn")
    manager = mp.Manager()
    out_q, done = manager.Queue(), mp.Event()
    producer = mp.Process(target=produce, args=(out_q, done))
    producer.start()
    print(out_q.get(timeout=30))
    done.set()
    producer.join()
""",
    )
    INVALID = (
        # a manager's queue is a proxy: the manager's process receives the CUDA tensor and has to send it on
        Invalid(
            """
import torch
import torch.multiprocessing as mp


def produce(out_q, done):
    out_q.put(torch.ones(4, device="cuda"))
    done.wait()


if __name__ == "__main__":
    mp.set_start_method("spawn")
    manager = mp.Manager()
    out_q, done = manager.Queue(), mp.Event()
    producer = mp.Process(target=produce, args=(out_q, done))
    producer.start()
    print(out_q.get(timeout=30))
    done.set()
    producer.join()
""",
            (7,),
        ),
        Invalid(
            """
import torch
import torch.multiprocessing as mp

def relay(inbox, outbox, done):
    batch = inbox.get()
    outbox.put(batch)
    done.wait()

def main():
    ctx = mp.get_context("spawn")
    inbox, outbox, done = ctx.Queue(), ctx.Queue(), ctx.Event()
    ctx.Process(target=relay, args=(inbox, outbox, done)).start()
    inbox.put(torch.ones(8, device="cuda"))
""",
            (7,),
        ),
        Invalid(
            """
import torch
import torch.multiprocessing as mp

def produce(results, done):
    results.put(torch.randn(4, 4, device="cuda"))
    done.wait()

def main():
    ctx = mp.get_context("spawn")
    results, to_writer, done = ctx.Queue(), ctx.Queue(), ctx.Event()
    ctx.Process(target=produce, args=(results, done)).start()
    batch = results.get()
    to_writer.put((batch, 0))
""",
            (14,),
        ),
        Invalid(
            """
import torch
import torch.multiprocessing as mp

def relay(batch, conn, done):
    conn.send(batch[:2])
    done.wait()

def main():
    ctx = mp.get_context("spawn")
    (here, there), done = ctx.Pipe(), ctx.Event()
    ctx.Process(target=relay, args=(torch.ones(8, device="cuda"), there, done)).start()
    print(here.recv())
""",
            (6,),
        ),
        Invalid(
            """
import torch
import torch.multiprocessing as mp

class Augmenter(mp.Process):
    def __init__(self, in_q, out_q, done):
        super().__init__()
        self.in_q = in_q
        self.out_q = out_q
        self.done = done

    def run(self):
        batch = self.in_q.get()
        self.out_q.put(batch)
        self.done.wait()

def main():
    ctx = mp.get_context("spawn")
    in_q, out_q, done = ctx.Queue(), ctx.Queue(), ctx.Event()
    Augmenter(in_q, out_q, done).start()
    in_q.put(torch.ones(8, device="cuda"))
""",
            (14,),
        ),
        Invalid(
            """
import torch
import torch.multiprocessing as mp

class Relay:
    def __init__(self):
        self.in_queue = mp.Queue()
        self.out_queue = mp.Queue()
        self.done = mp.Event()
        self.worker = mp.Process(target=self.loop)

    def loop(self):
        batch = self.in_queue.get()
        self.out_queue.put({"pixels": batch[:, :2]})
        self.done.wait()

    def feed(self, images):
        self.worker.start()
        self.in_queue.put(images.cuda())
""",
            (14,),
        ),
    )

    def check(self, ctx: FileContext) -> Iterator[Report]:
        model = process_model(ctx)
        evidence = cuda_evidence(ctx)
        sends = _cuda_sends(model, evidence)
        channels = set().union(*(made for _, made in sends))
        reported: set[int] = set()
        relays = chain(_relays(model, evidence, channels), _child_method_relays(model, evidence, channels))
        proxies = _manager_queues(model)
        for send, made in sends:
            if made & proxies and id(send.node) not in reported:
                reported.add(id(send.node))
                yield Report(
                    send.node,
                    f"{crossing_text(ctx, send)} puts a CUDA tensor on a `Manager()` queue: the manager's process "
                    "receives it and cannot send it on, so the reader's `get()` raises",
                )
        for facts, send, received in relays:
            if id(send.node) in reported:
                continue
            reported.add(id(send.node))
            where = f"line {ctx.line(received)}" if received is not None else f"an argument of `{facts.scope.name}`"
            yield Report(
                send.node,
                f"{crossing_text(ctx, send)} sends on a CUDA tensor received from another process ({where}): torch "
                "refuses to share a received CUDA tensor again, so it never arrives",
            )


def _cuda_sends(model: ProcessModel, evidence: CudaEvidence) -> list[tuple[Crossing, set[cst.CSTNode]]]:
    """Each queue put or pipe send of a CUDA tensor, with the calls that made the channel it goes on: in the
    scope that made the channel, or in a child started with it as an argument."""
    found = []
    for facts, crossing in model.crossings():
        if crossing.kind in _CHANNELS and isinstance(crossing.channel, cst.CSTNode):
            if evidence.sends_cuda(facts, crossing):
                found.append((crossing, {crossing.channel}))
        elif crossing.kind in _STARTS and (receiver := model.receiver(facts, crossing)) is not None:
            for send in receiver.facts.processes.crossings:
                if (
                    send.kind in _CHANNELS
                    and isinstance(send.channel, str)
                    and send.channel in receiver.received
                    and evidence.sends_cuda(receiver.facts, send)
                ):
                    found.append((send, _objects(receiver.received[send.channel].handles)))
    return found


def _manager_queues(model: ProcessModel) -> set[cst.CSTNode]:
    """The calls that made a manager's queue (`manager.Queue()`): a proxy whose puts go through the manager (F55)."""
    return {info.node for facts in model.facts for info in facts.processes.process_objects.values() if info.proxy}


def _relays(
    model: ProcessModel, evidence: CudaEvidence, channels: set[cst.CSTNode]
) -> Iterator[tuple[ScopeFacts, Crossing, cst.CSTNode | None]]:
    """Sends of a received CUDA tensor, with the call that received it (None: a `Process` argument)."""
    for facts, crossing in model.crossings():
        if crossing.kind in _CHANNELS:
            yield from _sent_on(facts, crossing, channels.__contains__, frozenset())
        elif crossing.kind in _STARTS:
            receiver = model.receiver(facts, crossing)
            if receiver is not None:
                inboxes = {name for name, value in receiver.received.items() if _objects(value.handles) & channels}
                arguments = _cuda_arguments(model, receiver, evidence)
                for send in receiver.facts.processes.crossings:
                    if send.kind in _CHANNELS:
                        yield from _sent_on(receiver.facts, send, inboxes.__contains__, arguments)


def _child_method_relays(
    model: ProcessModel, evidence: CudaEvidence, channels: set[cst.CSTNode]
) -> Iterator[tuple[ScopeFacts, Crossing, cst.CSTNode | None]]:
    """Sends, by a method that runs in a child (a `Process` subclass's `run`, a `target=self.loop`), of what
    it took from a `self.` queue that carries CUDA tensors from the parent."""
    classes = model.classes
    # (class, "self.inbox"): holding a channel the module fills with CUDA tensors, or filled so by a parent method
    cuda_queues = {
        (name, f"self.{attribute}") for (name, attribute), made in classes.channels.items() if made & channels
    }
    for facts, crossing in model.crossings():
        place = crossing.channel
        parent_side = crossing.kind in _CHANNELS and isinstance(place, str) and not classes.runs_in_child(facts)
        if parent_side and place.startswith("self.") and evidence.sends_cuda(facts, crossing):
            cuda_queues.add((facts.scope.class_name, place))
    for facts in model.facts:
        if not classes.runs_in_child(facts):
            continue
        inboxes = {
            place for place in facts.processes.receives.values() if (facts.scope.class_name, place) in cuda_queues
        }
        for send in facts.processes.crossings:
            if send.kind in _CHANNELS and inboxes:
                yield from _sent_on(facts, send, inboxes.__contains__, frozenset())


def _cuda_arguments(model: ProcessModel, receiver: Receiver, evidence: CudaEvidence) -> frozenset[str]:
    """The parameters of a child that receive a CUDA tensor by pickling (spawn, forkserver): as IPC handles.
    A forked child cannot use them at all (GML203)."""
    method = model.start_method(receiver.crossing)
    if method.name not in FRESH_METHODS:
        return frozenset()
    return frozenset(
        name
        for name, value in receiver.received.items()
        if any(made_on_cuda(h, evidence.names, evidence.imports) for h in value.handles if h.role is None)
    )


def _sent_on(
    facts: ScopeFacts, send: Crossing, carries_cuda, arguments: frozenset[str]
) -> Iterator[tuple[ScopeFacts, Crossing, cst.CSTNode | None]]:
    receives = facts.processes.receives
    for handle in send.sent.handles:
        if handle.role is not None or handle.ndarray:
            continue
        for source in _aliases(handle):
            if source.node in receives and carries_cuda(receives[source.node]):
                yield facts, send, source.node
                return
            if source.node is None and source.storage.origin == "param" and source.storage.label in arguments:
                yield facts, send, None
                return


def _aliases(handle: Handle) -> Iterator[Handle]:
    """The handle and those it aliases (a view, `.detach()`), up to a numpy bridge: an array is sent by value."""
    for each in handle.chain():
        if each.kind is AliasKind.NUMPY:
            return
        yield each


def _objects(handles) -> set[cst.CSTNode]:
    return {h.node for h in handles if h.role is Role.PROCESS_OBJECT and h.node is not None}
