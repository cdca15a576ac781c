"""What `gpumem-lint trace` costs: training-step time with and without the tracer, and per operator.

    python bench/trace_overhead.py --workload mlp                  # CPU: MLP 256-512-512-10, batch 64, Adam
    python bench/trace_overhead.py --workload mlp --threads 1      # steadier on a shared machine
    python bench/trace_overhead.py --workload resnet50 --device cuda  # ResNet-50-shaped net, batch 64, SGD
    python bench/trace_overhead.py --workload torchvision --device cuda  # a real training step (below)
    python bench/trace_overhead.py split --workload torchvision --device cuda  # where the tracer's time goes
    python bench/trace_overhead.py opcodes --workload narrow       # the tracker's own work per op, counted
    python bench/trace_overhead.py --workload torchvision --device cuda --compare /tmp/before  # an older tracer too

`torchvision` is what users run: torchvision's ResNet-50, bf16 autocast, channels_last, GradScaler, and batches
from a 2-worker DataLoader (uint8 images in pinned memory, made float on the GPU), SGD with momentum.

Each configuration runs in its own process: plain `python`, under an empty dispatch mode (the floor any
dispatch-mode tracer pays), under `gpumem-lint trace --no-static` (every step traced), and under
`gpumem-lint trace --no-static --trace-steps N` (the sampling mode: N steps traced, then full speed); with
`--compare DIR`, also the tracer of the gpumem_lint package in DIR (a copy of an older commit), both ways. The workload
prints its median step time (wall clock, and process CPU time) over the timed steps, the wall time of the
whole loop (warm-up included: what a run pays in total), each step's time and its first operator's; the report
gives the ratios to plain and the tracer's cost per dispatched operator, for each clock, the whole process's wall
time (the tracer's start-up and report included), and where each configuration's extra time goes (the first step,
the steps the sampling mode traces, the steps after them). The rounds alternate the configurations, so drift on a shared
machine spreads evenly; the median round is reported.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def build(workload: str, device: str):
    import torch
    from torch import nn

    torch.manual_seed(0)
    if workload == "mlp":
        model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
        inputs, targets = torch.randn(64, 256), torch.randint(0, 10, (64,))
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    else:
        model = resnet50()
        inputs, targets = torch.randn(64, 3, 224, 224), torch.randint(0, 1000, (64,))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    model.to(device)
    return model, inputs.to(device), targets.to(device), optimizer


def resnet50(narrow: int = 1):
    """ResNet-50's shape (bottleneck blocks 3-4-6-3, widths 64-2048 divided by `narrow`, BatchNorm, in-place ReLU,
    residual adds), built here: torchvision may not be installed where the benchmark runs."""
    from torch import nn

    class Bottleneck(nn.Module):
        def __init__(self, inputs: int, width: int, stride: int) -> None:
            super().__init__()
            width //= narrow
            outputs = width * 4
            self.body = nn.Sequential(
                nn.Conv2d(inputs, width, 1, bias=False),
                nn.BatchNorm2d(width),
                nn.ReLU(inplace=True),
                nn.Conv2d(width, width, 3, stride, 1, bias=False),
                nn.BatchNorm2d(width),
                nn.ReLU(inplace=True),
                nn.Conv2d(width, outputs, 1, bias=False),
                nn.BatchNorm2d(outputs),
            )
            self.shortcut = (
                nn.Sequential(nn.Conv2d(inputs, outputs, 1, stride, bias=False), nn.BatchNorm2d(outputs))
                if stride != 1 or inputs != outputs
                else nn.Identity()
            )
            self.relu = nn.ReLU(inplace=True)

        def forward(self, x):
            out = self.body(x)
            out += self.shortcut(x)
            return self.relu(out)

    channels = 64 // narrow
    layers: list[nn.Module] = [
        nn.Conv2d(3, channels, 7, 2, 3, bias=False),
        nn.BatchNorm2d(channels),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(3, 2, 1),
    ]
    for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for index in range(blocks):
            layers.append(Bottleneck(channels, width, stride if index == 0 else 1))
            channels = width // narrow * 4
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(channels, 1000)]
    return nn.Sequential(*layers)


class Images:
    """A DataLoader's dataset of uint8 images, as decoded JPEGs arrive (module level: workers pickle it)."""

    def __init__(self, count: int) -> None:
        import torch

        generator = torch.Generator().manual_seed(0)
        self.images = torch.randint(0, 256, (count, 3, 224, 224), dtype=torch.uint8, generator=generator)
        self.labels = torch.randint(0, 1000, (count,), generator=generator)

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, index: int):
        return self.images[index], self.labels[index]


def real_step(device: str):
    """torchvision's ResNet-50 as it is trained: autocast, channels_last, GradScaler, a worker DataLoader."""
    import torch
    import torchvision
    from torch import nn

    torch.manual_seed(0)
    model = torchvision.models.resnet50().to(device, memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    scaler = torch.amp.GradScaler(device)
    loader = torch.utils.data.DataLoader(
        Images(512), batch_size=64, num_workers=2, pin_memory=True, persistent_workers=True, drop_last=True
    )
    batches = iter(())

    def step():
        nonlocal batches
        try:
            images, labels = next(batches)
        except StopIteration:
            batches = iter(loader)
            images, labels = next(batches)
        images = images.to(device, non_blocking=True).to(memory_format=torch.channels_last).float().div_(255)
        labels = labels.to(device, non_blocking=True)
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device, dtype=torch.bfloat16):
            loss = nn.functional.cross_entropy(model(images), labels)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()

    return step


def narrow_step(device: str):
    """The real step's operators on a CPU: ResNet-50's shape at 1/16 of its widths on 32x32 images (batch 2), bf16
    autocast, channels_last, GradScaler, SGD with momentum over lists of tensors (what CUDA picks by default)."""
    import torch
    from torch import nn

    torch.manual_seed(0)
    model = resnet50(narrow=16).to(device, memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9, weight_decay=1e-4, foreach=True)
    scaler = torch.amp.GradScaler(device)
    images = torch.randn(2, 3, 32, 32, device=device).to(memory_format=torch.channels_last)
    labels = torch.randint(0, 1000, (2,), device=device)

    def step():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device, dtype=torch.bfloat16):
            loss = nn.functional.cross_entropy(model(images), labels)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()

    return step


def training_step(args):
    from torch import nn

    if args.workload == "torchvision":
        return real_step(args.device)
    if args.workload == "narrow":
        return narrow_step(args.device)
    model, inputs, targets, optimizer = build(args.workload, args.device)

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(inputs), targets)
        loss.backward()
        optimizer.step()

    return step


def workload(args) -> None:
    """The timed program (run as a child): prints {"ms": median ms/step, "ops": operators per step, "total_ms"}."""
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    start = time.perf_counter()
    torch.ones(1).add_(1)  # the program's first operator: what a tracer's start-up adds to it
    first_op_ms = (time.perf_counter() - start) * 1e3
    synchronize = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)
    step = training_step(args)
    counter = None
    if args.mode == "empty-mode":
        from torch.utils._python_dispatch import TorchDispatchMode

        class Empty(TorchDispatchMode):
            @classmethod
            def _should_skip_dynamo(cls):
                return False

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                counter[0] += 1
                return func(*args, **(kwargs or {}))

        counter = [0]
        Empty().__enter__()
    synchronize()
    loop_start = time.perf_counter()
    step_ms, cpu_ms = [], []  # every step's, warm-up included: where a run's total goes
    for _ in range(args.warmup + args.steps):
        start, cpu_start = time.perf_counter(), time.process_time()
        step()
        synchronize()
        step_ms.append((time.perf_counter() - start) * 1e3)
        cpu_ms.append((time.process_time() - cpu_start) * 1e3)
    total = time.perf_counter() - loop_start
    ops = counter[0] / (args.warmup + args.steps) if counter else None
    timed = slice(args.warmup, None)
    result = {"ms": statistics.median(step_ms[timed]), "cpu_ms": statistics.median(cpu_ms[timed]), "ops": ops}
    print(json.dumps({**result, "total_ms": total * 1e3, "first_op_ms": first_op_ms, "step_ms": step_ms}))


def split(args) -> None:
    """Where the tracer's time goes: the step in one process, traced whole, then with parts switched off in turn
    (sites found by walking the frames instead of following calls, reading new nodes' saved tensors, every site
    lookup, saved-tensor tracking, the tracker itself: an empty hook). Each line: ms per step, and the µs per
    operator that the part switched off had cost. Beside them, the whole tracer with the dispatch mode taken off
    while backward runs: what tracing the backward pass costs (it sees `.data` writes that backward reads, GML101,
    gradient accumulation and user hooks), a design's price, not a part to switch off."""
    import torch

    from gpumem_lint.trace import patches, saved, tracker
    from gpumem_lint.trace.environment import Environment
    from gpumem_lint.trace.findings import FindingLog
    from gpumem_lint.trace.sites import SiteFinder

    step = training_step(args)
    synchronize = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)

    def timed() -> float:
        for _ in range(args.warmup):
            step()
        synchronize()
        start = time.perf_counter()
        for _ in range(args.steps):
            step()
        synchronize()
        return (time.perf_counter() - start) / args.steps * 1e3

    sites, log = SiteFinder(), FindingLog()
    following = sites.follow_calls()
    traced = tracker.Tracker(sites, log, FindingLog(), print)
    patches.install(traced, Environment(sites, log, print))
    ms = {"plain": timed()}
    mode = tracker.StorageMode(traced)
    mode.__enter__()
    traced.ops = 0
    full = "full tracer" + (" (sites by following calls)" if following else " (sites by walking frames)")
    ms[full] = timed()
    ops = traced.ops / (args.warmup + args.steps)
    traced_backward = torch.autograd.backward

    def untraced_backward(*arguments, **keywords):
        mode.__exit__(None, None, None)
        try:
            return traced_backward(*arguments, **keywords)
        finally:
            mode.__enter__()

    torch.autograd.backward = untraced_backward
    ms["full tracer, backward untraced"] = timed()
    torch.autograd.backward = traced_backward
    ms[full + " again"] = timed()
    if following:
        sites.stop_following()
        ms["sites by walking the frames"] = timed()
    read_fresh, saved.SavedTensors.read_fresh = saved.SavedTensors.read_fresh, lambda self: self.fresh.clear()
    ms["and new nodes not read"] = timed()
    saved.SavedTensors.read_fresh = read_fresh
    user_site, SiteFinder.user_site = SiteFinder.user_site, lambda self: None
    ms["and no site lookup"] = timed()
    SiteFinder.user_site = user_site
    needs_grad, tracker._needs_grad = tracker._needs_grad, lambda args: False
    ms["and no saved-tensor tracking"] = timed()
    tracker._needs_grad = needs_grad
    traced.active = False  # the hook returns at once: what is left is the dispatch mode itself
    ms["empty hook (tracer inactive)"] = timed()
    mode.__exit__(None, None, None)
    ms["plain again"] = timed()
    report, previous = {"ops_per_step": round(ops)}, None
    for name, value in ms.items():
        report[name] = {"ms": round(value, 2)}
        if previous is not None and name not in ("plain again", full + " again"):
            report[name]["us_per_op_saved"] = round((previous - value) * 1e3 / ops, 2)
        if name != "full tracer, backward untraced":
            previous = value
    print(json.dumps(report, indent=2))


def opcodes(args) -> None:
    """The tracker's own work per operator, counted instead of timed (a count does not depend on what else the
    machine runs): the Python opcodes executed in gpumem_lint's trace modules over two traced steps, per dispatched
    operator and per function, after three steps of warm-up."""
    import collections

    from gpumem_lint.trace import patches, tracker
    from gpumem_lint.trace.environment import Environment
    from gpumem_lint.trace.findings import FindingLog
    from gpumem_lint.trace.sites import SiteFinder

    step = training_step(args)
    sites, log = SiteFinder(), FindingLog()
    sites.follow_calls()
    traced = tracker.Tracker(sites, log, FindingLog(), print)
    patches.install(traced, Environment(sites, log, print))
    mode = tracker.StorageMode(traced)
    mode.__enter__()
    for _ in range(3):
        step()
    package = str(Path(tracker.__file__).parent)
    counts: collections.Counter = collections.Counter()

    def count(frame, event, arg):
        if event == "opcode":
            counts[frame.f_code.co_name] += 1
        return count

    def on_call(frame, event, arg):
        if not frame.f_code.co_filename.startswith(package):
            return None
        frame.f_trace_opcodes = True
        return count

    traced.ops = 0
    sys.settrace(on_call)
    for _ in range(2):
        step()
    sys.settrace(None)
    mode.__exit__(None, None, None)
    ops = traced.ops
    report = {"ops_per_step": ops / 2, "opcodes_per_op": round(sum(counts.values()) / ops, 1)}
    report["by_function"] = {name: round(number / ops, 1) for name, number in counts.most_common(12)}
    print(json.dumps(report, indent=2))


def measure(args) -> dict:
    child = [
        str(Path(__file__).resolve()),
        "run",
        "--workload",
        args.workload,
        "--device",
        args.device,
        "--steps",
        str(args.steps),
        "--warmup",
        str(args.warmup),
        "--threads",
        str(args.threads),
    ]
    trace = [sys.executable, "-m", "gpumem_lint", "trace", "--no-static", "-o", "/dev/null"]
    commands = {
        "plain": ([sys.executable, *child, "--mode", "plain"], ROOT),
        "empty-mode": ([sys.executable, *child, "--mode", "empty-mode"], ROOT),
        "trace": ([*trace, *child, "--mode", "plain"], ROOT),
        f"trace --trace-steps {args.trace_steps}": (
            [*trace, "--trace-steps", str(args.trace_steps), *child, "--mode", "plain"],
            ROOT,
        ),
    }
    if args.compare:
        # `python -m` puts the current directory first on sys.path: the older package is the one imported.
        commands[f"trace ({args.compare})"] = ([*trace, *child, "--mode", "plain"], Path(args.compare))
        commands[f"trace --trace-steps {args.trace_steps} ({args.compare})"] = (
            [*trace, "--trace-steps", str(args.trace_steps), *child, "--mode", "plain"],
            Path(args.compare),
        )
    results: dict[str, list[dict]] = {name: [] for name in commands}
    for _ in range(args.rounds):
        for name, (command, cwd) in commands.items():
            start = time.perf_counter()
            done = subprocess.run(command, capture_output=True, text=True, cwd=cwd, check=False)
            process_s = time.perf_counter() - start
            lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
            if done.returncode not in (0, 1) or not lines:
                raise SystemExit(f"{name} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
            # A tracer that stopped on an internal error runs fast and proves nothing: the report says so.
            warnings = [line for line in done.stderr.splitlines() if line.startswith("gpumem-lint trace: warning")]
            results[name].append({**json.loads(lines[-1]), "process_s": process_s, "warnings": warnings})
            print(name, json.dumps({key: results[name][-1][key] for key in ("ms", "total_ms", "process_s")}),
                  file=sys.stderr, flush=True)
        if args.raw:
            Path(args.raw).write_text(json.dumps(results), encoding="utf-8")
    ops = statistics.median(r["ops"] for r in results["empty-mode"])
    report = {"workload": args.workload, "device": args.device, "ops_per_step": round(ops)}
    report["tracer warnings"] = {name: r["warnings"] for name, runs in results.items() for r in runs if r["warnings"]}
    # Wall time is what a user waits for; CPU time is steadier on a shared machine (and is the whole cost on CPU).
    for clock in ("ms", "cpu_ms"):
        ms = {name: statistics.median(r[clock] for r in runs) for name, runs in results.items()}
        report[clock] = {
            "per_step": {name: round(value, 3) for name, value in ms.items()},
            "ratio": {name: round(value / ms["plain"], 3) for name, value in ms.items()},
            "us_per_op": {
                name: round((value - ms["plain"]) * 1e3 / ops, 2) for name, value in ms.items() if name != "plain"
            },
        }
    steps = args.warmup + args.steps
    total = {name: statistics.median(r["total_ms"] for r in runs) for name, runs in results.items()}
    report[f"total of {steps} steps"] = {
        "s": {name: round(value / 1e3, 2) for name, value in total.items()},
        "ratio": {name: round(value / total["plain"], 3) for name, value in total.items()},
    }
    process = {name: statistics.median(r["process_s"] for r in runs) for name, runs in results.items()}
    report["whole process (start-up and report included)"] = {
        "s": {name: round(value, 2) for name, value in process.items()},
        "extra_s": {name: round(value - process["plain"], 2) for name, value in process.items()},
    }
    report["first operator ms"] = {
        name: round(statistics.median(r["first_op_ms"] for r in runs), 2) for name, runs in results.items()
    }
    report["extra over plain, s"] = {name: _phases(runs, results["plain"], args) for name, runs in results.items()}
    return report


def _phases(runs: list[dict], plain: list[dict], args) -> dict:
    """Where a configuration's extra time over plain goes, in seconds: the first step, the steps the sampling mode
    traces (N steps and the next one's forward pass), and the steps after them (each step's median over the rounds,
    less plain's)."""
    sampled = args.trace_steps + 1

    def step_medians(results):
        return [statistics.median(steps) for steps in zip(*(r["step_ms"] for r in results))]

    extra = [mine - theirs for mine, theirs in zip(step_medians(runs), step_medians(plain))]
    return {
        "first step": round(extra[0] / 1e3, 3),
        f"steps 2-{sampled}": round(sum(extra[1:sampled]) / 1e3, 3),
        f"steps {sampled + 1}-{len(extra)}": round(sum(extra[sampled:]) / 1e3, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", nargs="?", default="measure", choices=["measure", "run", "split", "opcodes"])
    parser.add_argument("--workload", choices=["mlp", "resnet50", "narrow", "torchvision"], default="mlp")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--mode", choices=["plain", "empty-mode"], default="plain")
    parser.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: torch's default)")
    parser.add_argument("--trace-steps", type=int, default=5, help="the sampling configuration's --trace-steps")
    parser.add_argument("--compare", metavar="DIR", help="also time the tracer of the gpumem_lint package in DIR")
    parser.add_argument("--raw", metavar="PATH", help="write every run's own numbers (each step's time) there")
    args = parser.parse_args()
    if args.action == "run":
        workload(args)
    elif args.action == "split":
        split(args)
    elif args.action == "opcodes":
        opcodes(args)
    else:
        print(json.dumps(measure(args), indent=2))


if __name__ == "__main__":
    main()
