from collections.abc import Iterator

import libcst as cst

from gpumem_lint.context import FileContext
from gpumem_lint.diagnostics import Position, Severity
from gpumem_lint.fixes import Applicability, Edit, Fix, source_line
from gpumem_lint.rules._boundaries import (
    crossing_text,
    cuda_evidence,
    is_main_guard,
    process_model,
    start_method_text,
)
from gpumem_lint.rules.base import Invalid, Report, Rule
from gpumem_lint.semantic.boundaries import ProcessModel, StartMethod
from gpumem_lint.semantic.devices import CudaUses
from gpumem_lint.semantic.flow import ScopeFacts
from gpumem_lint.semantic.process_starts import Starts, starts
from gpumem_lint.semantic.processes import PROCESS_CROSSING, Crossing
from gpumem_lint.semantic.program_order import CUDA_INIT_EVENTS

#: How many same-module calls deep the child's function is searched for CUDA use.
_DEPTH = 2


#: Crossings that start processes, and so may fork (`start_processes(..., start_method="fork")` too).
_FORKING = ("process", "spawn", "pool", "executor")


#: The modules whose default start method the fix sets (a `ProcessPoolExecutor` follows it too).
_MULTIPROCESSING = ("torch.multiprocessing", "multiprocessing")


class ForkAfterCudaInit(Rule):
    """
    ## What it does
    Flags a child process started with the **fork** start method — `Process(target=f)`, an object of a
    `Process` subclass of the module (whose `run` the child runs), `Pool(...)` /
    `ProcessPoolExecutor(...)` running `f` — when `f` (defined in the same
    module, or a function of the module it calls; also given as `functools.partial(f, ...)`,
    or a local name bound once to one) uses CUDA and the parent initialised the
    CUDA driver before the fork on some path. The start method is fork when the code says so
    (`set_start_method("fork")`, `get_context("fork")`) or by default: the stdlib default on
    Linux is fork up to Python 3.13 and forkserver from 3.14 (set `target-version` to say
    which Python you target).

    The fork happens where the children start: a `Process` at its `start()` — also when it is
    made in one method and started in another (`self.worker = Process(...)` in `__init__`,
    `self.worker.start()` in `run()`) — a `Pool` where it is made, and a `ProcessPoolExecutor`
    under fork at the first task it is given, also when a method of the class made it
    (`self.executor = ProcessPoolExecutor()` in `__init__`, `self.executor.submit(f, x)` in
    `run()`: the class facts say what `self.executor` holds). Measured on CPU by
    `tests/test_fork_points.py`: a child of such a pool or executor carries what the parent did
    before its fork point, and the rule flags exactly the programs whose child was forked after
    the parent's CUDA initialisation.

    What initialises the driver comes from the shared lock-in table
    ([knowledge/lockin.toml](../gpumem_lint/knowledge/lockin.toml)): an allocation or
    `.cuda()`, `set_device`, and also calls that look harmless, such as
    `torch.cuda.is_available()`, `get_arch_list()`, `GradScaler("cuda")`,
    `torch.accelerator.is_available()`, and `import torch.utils.cpp_extension` on a machine with
    a CUDA toolkit (it calls `torch.cuda.is_available()` to find it: measured on an H200,
    `bench/gpu/accelerator_probe.json`, [docs/facts.md](../docs/facts.md) F28).

    ## Why is this bad?
    A forked child inherits the parent's memory but not a usable CUDA driver state. Its first
    CUDA call raises `RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use
    CUDA with multiprocessing, you must use the 'spawn' start method` — after an allocation,
    and equally after nothing more than `torch.cuda.is_available()` (measured on an H200,
    [docs/facts.md](../docs/facts.md) F14). The error surfaces in the child, far from the
    `is_available()` that caused it.

    ## Known problems
    A pool or executor held on `self` is followed when every method that assigns the attribute
    assigns that one constructor call (or `None`). An executor made there with `mp_context=` is
    not judged: its start method is an expression of the other method. The first task is taken to
    be the one given after CUDA in the same method: a task another method gave earlier, before
    CUDA, has already forked the workers.

    ## Example
    ```python
    use_cuda = torch.cuda.is_available()
    p = mp.Process(target=train, args=(rank,))  # train() calls model.cuda()
    p.start()
    ```

    ## Use instead
    ```python
    ctx = mp.get_context("spawn")
    p = ctx.Process(target=train, args=(rank,))
    p.start()
    ```

    ## Fix safety
    The fix selects spawn as the first statement under `if __name__ == "__main__":`
    (`mp.set_start_method("spawn")`), for a child started with the default method, in a file
    that imports `multiprocessing`, has such a guard and sets no start method yet. It is unsafe: spawn children
    re-import the main module and receive their target and arguments pickled, so a lambda or
    nested function, a lock or queue made before the call, or unguarded top-level work breaks
    or runs again. Setting `PYTORCH_NVML_BASED_CUDA_CHECK=1` makes `is_available()` safe, not
    an allocation.

    ## References
    - [CUDA in multiprocessing](https://docs.pytorch.org/docs/stable/notes/multiprocessing.html#cuda-in-multiprocessing)
    - [multiprocessing: contexts and start methods](https://docs.python.org/3/library/multiprocessing.html#contexts-and-start-methods)
    """

    code = "GML204"
    name = "fork-after-cuda-init"
    severity = Severity.ERROR
    summary = "A forked child uses CUDA after the parent initialised it"
    fix_title = 'Start CUDA-using children with spawn (`mp.get_context("spawn")`), or keep CUDA out of the parent until they are started'
    fix_applicability = Applicability.UNSAFE
    triggers = ("multiprocessing", "ProcessPoolExecutor")
    file_trigger = PROCESS_CROSSING
    VALID = (
        # the same Process subclass under spawn: the child starts a fresh interpreter, CUDA unseen
        """
import multiprocessing as mp

import torch

device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")


class Worker(mp.Process):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def run(self):
        x = torch.zeros(1).to(device)
        x.add_(self.net.bias.sum().item())


if __name__ == "__main__":
    mp.set_start_method("spawn")
    net = torch.nn.Linear(2, 2).to(device)
    w = Worker(net)
    w.start()
    w.join()
""",
        """
import torch
import torch.multiprocessing as mp

def train(rank):
    torch.zeros(1).cuda(rank)

if __name__ == "__main__":
    use_cuda = torch.cuda.is_available()
    ctx = mp.get_context("spawn")
    p = ctx.Process(target=train, args=(0,))
    p.start()
    p.join()
""",
        """
import torch
import multiprocessing as mp

def preprocess(path):
    return torch.load(path).float()

if __name__ == "__main__":
    model = torch.nn.Linear(4, 4).cuda()
    with mp.Pool(4) as pool:
        batches = pool.map(preprocess, ["a.pt", "b.pt"])
""",
        """
import torch
import multiprocessing as mp

def serve(queue):
    queue.put(torch.ones(2).cuda().sum().item())

class Server:
    def __init__(self):
        self.queue = mp.Queue()
        self.worker = mp.Process(target=serve, args=(self.queue,))
        self.model = torch.nn.Linear(4, 4)

    def run(self):
        self.worker.start()  # forked before the parent touches CUDA
        self.model.cuda()
        return self.queue.get()
""",
        """
import torch
import multiprocessing as mp

def score(batch):
    return torch.as_tensor(batch, device="cuda").sum().item()

class Scorer:
    def __init__(self):
        self.pool = mp.Pool(2)  # a Pool forks its workers here, before the parent touches CUDA
        self.model = torch.nn.Linear(2, 2)

    def run(self, batches):
        self.model.cuda()
        return self.pool.map(score, batches)
""",
    )
    INVALID = (
        # `Worker(net)` of a `Process` subclass: `start()` forks a child that runs `Worker.run`, which moves to CUDA
        Invalid(
            """
import multiprocessing as mp

import torch

device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")


class Worker(mp.Process):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def run(self):
        x = torch.zeros(1).to(device)
        x.add_(self.net.bias.sum().item())


if __name__ == "__main__":
    net = torch.nn.Linear(2, 2).to(device)
    w = Worker(net)
    w.start()
    w.join()
    print(w.exitcode)
""",
            (21,),
            fixed="""
import multiprocessing as mp

import torch

device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")


class Worker(mp.Process):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def run(self):
        x = torch.zeros(1).to(device)
        x.add_(self.net.bias.sum().item())


if __name__ == "__main__":
    mp.set_start_method("spawn")
    net = torch.nn.Linear(2, 2).to(device)
    w = Worker(net)
    w.start()
    w.join()
    print(w.exitcode)
""",
            prints="0",
            cuda=1,
        ),
        Invalid(
            """
import torch
import torch.multiprocessing as mp

def train(rank):
    torch.zeros(1).cuda(rank)

if __name__ == "__main__":
    use_cuda = torch.cuda.is_available()
    p = mp.Process(target=train, args=(0,))
    p.start()
    p.join()
    print(p.exitcode)
""",
            (10,),
            fixed="""
import torch
import torch.multiprocessing as mp

def train(rank):
    torch.zeros(1).cuda(rank)

if __name__ == "__main__":
    mp.set_start_method("spawn")
    use_cuda = torch.cuda.is_available()
    p = mp.Process(target=train, args=(0,))
    p.start()
    p.join()
    print(p.exitcode)
""",
            prints="0",
            cuda=1,
        ),
        Invalid(
            """
import multiprocessing
from concurrent.futures import ProcessPoolExecutor

import torch

def score(batch):
    return torch.as_tensor(batch, device="cuda").sum().item()

if __name__ == "__main__":
    model = torch.nn.Linear(2, 2).to("cuda")
    with ProcessPoolExecutor(2) as pool:
        results = [pool.submit(score, batch) for batch in ([1.0], [2.0])]
        print([result.result() for result in results])
""",
            (12,),
            fixed="""
import multiprocessing
from concurrent.futures import ProcessPoolExecutor

import torch

def score(batch):
    return torch.as_tensor(batch, device="cuda").sum().item()

if __name__ == "__main__":
    multiprocessing.set_start_method("spawn")
    model = torch.nn.Linear(2, 2).to("cuda")
    with ProcessPoolExecutor(2) as pool:
        results = [pool.submit(score, batch) for batch in ([1.0], [2.0])]
        print([result.result() for result in results])
""",
            prints="[1.0, 2.0]",
            cuda=1,
        ),
        Invalid(
            """
import torch
import multiprocessing as mp

def serve(queue):
    queue.put(torch.ones(2).cuda().sum().item())

class Server:
    def __init__(self):
        self.queue = mp.Queue()
        self.worker = mp.Process(target=serve, args=(self.queue,))
        self.model = torch.nn.Linear(4, 4)

    def run(self):
        self.model.cuda()
        self.worker.start()
        return self.queue.get()
""",
            (16,),
        ),
        Invalid(
            """
import torch
from concurrent.futures import ProcessPoolExecutor

def score(batch):
    return torch.as_tensor(batch, device="cuda").sum().item()

class Scorer:
    def __init__(self):
        self.executor = ProcessPoolExecutor(2)
        self.model = torch.nn.Linear(2, 2)

    def run(self, batch):
        self.model.cuda()
        return self.executor.submit(score, batch).result()

    def close(self):
        self.executor.shutdown()
        self.executor = None
""",
            (15,),
        ),
        Invalid(
            # the pool runs `encode` through the partial bound to `task`
            """
import functools
import multiprocessing

import torch

def encode(batch, scale):
    return torch.tensor(batch, device="cuda").sum().item() * scale

def main():
    model = torch.nn.Linear(2, 2).cuda()
    task = functools.partial(encode, scale=2)
    with multiprocessing.Pool(2) as pool:
        return pool.map(task, [[1.0], [2.0]])
""",
            (13,),
        ),
    )

    def check(self, ctx: FileContext) -> Iterator[Report]:
        model = process_model(ctx)
        imports = ctx.semantic.imports
        evidence = cuda_evidence(ctx)
        reported = set()
        for sender, crossing in model.crossings():
            if crossing.kind not in _FORKING or not model.start_method(crossing).forks:
                continue
            if evidence.sends_cuda(sender, crossing):
                continue  # a CUDA tensor handed to the forked child: GML203 says so
            launch = crossing.launcher or crossing.node
            target = model.target_facts(sender, crossing)
            if target is None or id(launch) in reported:
                continue
            use = _cuda_use(model, target, evidence.names, imports)
            if use is None:
                continue
            site, fork = None, launch
            for fork in (launch, *_later_forks(ctx, crossing)):
                site = ctx.program_order.first_event_before(fork, CUDA_INIT_EVENTS)
                if site is not None:
                    break
            if site is None:
                continue
            reported.add(id(launch))
            method = start_method_text(model.start_method(crossing))
            made = crossing_text(ctx, crossing) if fork is launch else f"`{ctx.code(fork)}` (line {ctx.line(fork)})"
            yield Report(
                fork,
                f"{made} starts a child with {method} after `{site.call}` ({site.where()}) "
                f"initialised CUDA: the child's `{ctx.code(use)}` (line {ctx.line(use)}) raises `Cannot "
                "re-initialize CUDA in forked subprocess`",
                fix=_spawn_under_main(ctx, model.start_method(crossing)),
            )


def _spawn_under_main(ctx: FileContext, method: StartMethod) -> Fix | None:
    """`mp.set_start_method("spawn")` first under the module's `__main__` guard, for a child started with
    the default method, `mp` the name this file binds `multiprocessing` (or torch's) to, in a file that
    sets no start method."""
    imports = ctx.semantic.imports
    module = next((name for name in map(imports.local_name, _MULTIPROCESSING) if name is not None), None)
    if not method.default or module is None:
        return None
    if "set_start_method" in ctx.text:
        return None  # a second call raises "context has already been set"
    guard = next(
        (
            s
            for s in ctx.module.body
            if isinstance(s, cst.If) and is_main_guard(s.test) and isinstance(s.body, cst.IndentedBlock)
        ),
        None,
    )
    if guard is None:
        return None
    row = ctx.positions[guard.body.body[0]].start.line
    line = source_line(ctx.text, row)
    indent = line[: len(line) - len(line.lstrip())]
    code = f'{module}.set_start_method("spawn")'
    edit = Edit(Position(row, 1), Position(row, 1), f"{indent}{code}\n")
    return Fix((edit,), Applicability.UNSAFE, f"Start children with spawn: `{code}`")


def _later_forks(ctx: FileContext, crossing: Crossing) -> list[cst.Call]:
    """Where the child is forked, when not where the crossing is made: a `Process` at its `start()`
    (possibly in another method, `self.worker.start()`); a `ProcessPoolExecutor` under fork at the
    first task it is given (the `Pool` itself forks its workers when it is made)."""
    if crossing.kind == "process":
        return ctx.shared(_starts).of(crossing.node)
    if crossing.kind == "executor" and crossing.launcher is not None:
        return [crossing.node]
    return []


def _starts(ctx: FileContext) -> Starts:
    return starts(ctx.module)


def _cuda_use(model: ProcessModel, target: ScopeFacts, names, imports) -> cst.Call | None:
    """The first CUDA call the child makes: in its function, or in same-module functions it calls."""
    by_name = {f.scope.name: f for f in model.facts if f.scope.is_function and not f.scope.is_method}
    pending, seen = [(target, 0)], set()
    while pending:
        facts, depth = pending.pop(0)
        if id(facts.scope) in seen:
            continue
        seen.add(id(facts.scope))
        uses = CudaUses(names, imports)
        for statement in facts.scope.body:
            uses.walk(statement)
        if uses.found:
            return uses.found[0]
        if depth < _DEPTH:
            pending.extend((by_name[name], depth + 1) for name in sorted(uses.called) if name in by_name)
    return None
