"""`gpumem-lint trace` end to end on small CPU programs: what the run proves and what it must not invent.

- A program that dies of an exception a hazard explains is reported under that hazard's code at the innermost
  line of the user's code (or at the write that caused it), and its output, traceback and exit code are those of
  the plain run.
- A write over a tensor autograd saved is GML109 at the writing line, naming the line that saved it.
- Writes made by torch's own machinery (unpickling, DataLoader workers, optimizers, load_state_dict) are not
  findings, and repeats of one site are one finding with a count.
- Children of every start method (spawn, forkserver, fork) and DataLoader workers trace themselves: a child's
  hazard is reported at its line, naming the child process.

Each program marks the lines its findings must point at: `# trace: CODE STATUS` for run-time findings,
`# check: CODE STATUS` for static findings the report carries (only where the case is about their status).
"""

from __future__ import annotations

import json
import re
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor

import pytest
from trace_runs import run, trace_command

pytest.importorskip("torch")

MARK = re.compile(r"#\s*(trace|check):\s*(GML\d{3})\s+([a-z-]+)")

# name: (trace options, program)
PROGRAMS = {
    "in-place write on a leaf": (
        ["--no-static"],
        """
        import torch

        weight = torch.zeros(3, requires_grad=True)


        def step():
            weight.add_(1)  # trace: GML108 static-check-off


        step()
        """,
    ),
    "in-place write on a view of a leaf": (
        ["--no-static"],
        """
        import torch

        weight = torch.zeros(4, requires_grad=True)
        head = weight[:2]
        head.zero_()  # trace: GML108 static-check-off
        """,
    ),
    "in-place write on a view of a leaf confirms the static finding": (
        [],
        """
        import torch

        weight = torch.zeros(4, requires_grad=True)
        head = weight[:2]
        head.zero_()  # trace: GML108 confirmed
        """,
    ),
    "a saved tensor overwritten confirms the static finding": (
        [],
        """
        import torch

        x = torch.randn(3, requires_grad=True)
        hidden = torch.relu(x * 2)
        hidden += 1  # trace: GML109 confirmed
        hidden.sum().backward()
        """,
    ),
    "in-place write on a chunk output under autograd": (
        ["--no-static"],
        """
        import torch


        def attention(x):
            q, k = x.chunk(2, dim=-1)
            q *= 0.5  # trace: GML105 static-check-off
            return (q * k).sum()


        attention(torch.randn(2, 4, requires_grad=True) * 1).backward()
        """,
    ),
    "in-place write on a chunk output confirms the static finding": (
        [],
        """
        import torch


        def attention(x):
            q, k = x.chunk(2, dim=-1)
            q *= 0.5  # trace: GML105 confirmed
            return (q * k).sum()


        attention(torch.randn(2, 4, requires_grad=True) * 1).backward()
        """,
    ),
    "in-place write on an expanded tensor confirms the static finding": (
        [],
        """
        import torch

        bias = torch.zeros(1, 3).expand(4, 3)
        bias.add_(torch.ones(4, 3))  # trace: GML104 confirmed
        """,
    ),
    "a write over its own input": (
        ["--no-static"],
        """
        import torch

        signal = torch.arange(6.0)
        signal[1:5].copy_(signal[:4])  # trace: GML110 static-check-off
        """,
    ),
    "a DataLoader worker's crash points at the worker's line": (
        ["--no-static"],
        """
        import torch
        from torch.utils.data import DataLoader, Dataset


        class Scaled(Dataset):
            def __init__(self):
                self.weight = torch.ones(4, requires_grad=True)

            def __len__(self):
                return 2

            def __getitem__(self, index):
                self.weight.mul_(2)  # trace: GML108 static-check-off
                return self.weight.detach()


        if __name__ == "__main__":
            for batch in DataLoader(Scaled(), num_workers=1):
                print(batch)
        """,
    ),
    "a tensor received after its sender exited": (
        [],
        """
        import torch
        import torch.multiprocessing as mp


        def produce(queue):
            queue.put(torch.ones(4))  # trace: GML209 confirmed


        if __name__ == "__main__":
            context = mp.get_context("spawn")
            queue = context.Queue()
            child = context.Process(target=produce, args=(queue,))
            child.start()
            child.join()
            print(queue.get())
        """,
    ),
    "a refused connection of the program's own is not a finding": (
        [],
        """
        import socket

        import torch

        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        port = server.getsockname()[1]
        server.close()
        socket.create_connection(("127.0.0.1", port))
        """,
    ),
    "a saved tensor overwritten, then backward fails": (
        ["--no-static"],
        """
        import torch

        x = torch.randn(3, requires_grad=True)
        hidden = torch.relu(x * 2)
        hidden += 1  # trace: GML109 static-check-off
        hidden.sum().backward()
        """,
    ),
    "a saved tensor overwritten, backward never runs; repeats are one finding": (
        ["--no-static"],
        """
        import torch

        x = torch.randn(3, requires_grad=True)
        kept = []
        for step in range(3):
            hidden = torch.sigmoid(x * step)
            hidden.mul_(2)  # trace: GML109 static-check-off
            kept.append(hidden)
        print(len(kept))
        """,
    ),
    "writes that autograd allows": (
        ["--no-static"],
        """
        import torch

        x = torch.randn(3, requires_grad=True)
        hidden = torch.relu(x * 2)
        hidden.sum().backward()
        hidden.add_(1)  # after backward: its graph is spent
        total = (x * 2).sum()
        x.data.mul_(0.5)  # `.data` moves no version: GML101's business, not GML109's
        summed = x * 1 + 1  # add saves nothing
        summed.add_(1)
        lost = torch.relu(x * 1)
        del lost  # its graph is gone
        with torch.no_grad():
            x.add_(1)
        print(total.item() != 0, summed.sum().item() != 0)
        """,
    ),
    "spawn and forkserver children that only receive": (
        [],
        """
        import torch
        import torch.multiprocessing as mp


        def child(queue, done):
            for _ in range(3):
                tensor = queue.get()
            done.put(float(tensor.sum()))


        if __name__ == "__main__":
            for method in ("spawn", "forkserver"):
                context = mp.get_context(method)
                queue, done = context.Queue(), context.Queue()
                process = context.Process(target=child, args=(queue, done))
                process.start()
                base = torch.ones(4)
                queue.put(base)
                queue.put(base[:2])
                queue.put(base)
                print(method, done.get())
                process.join()
        """,
    ),
    "children of every start method, and DataLoader workers, are traced": (
        ["--no-static"],
        """
        import torch
        import torch.multiprocessing as mp
        from torch.utils.data import DataLoader, Dataset


        def stale_read(how):
            weights = torch.ones(4)
            snapshot = weights.detach()
            if how == "spawn":
                weights.add_(1)  # trace: GML103 static-check-off
            elif how == "forkserver":
                weights.add_(2)  # trace: GML103 static-check-off
            elif how == "fork":
                weights.add_(3)  # trace: GML103 static-check-off
            else:
                weights.add_(4)  # trace: GML103 static-check-off
            print(how, (weights - snapshot).tolist(), flush=True)


        class Items(Dataset):
            def __len__(self):
                return 1

            def __getitem__(self, index):
                stale_read("worker")
                return index


        if __name__ == "__main__":
            for method in ("spawn", "forkserver", "fork"):
                child = mp.get_context(method).Process(target=stale_read, args=(method,))
                child.start()
                child.join()
            for batch in DataLoader(Items(), num_workers=1):
                print(batch.tolist())
        """,
    ),
    "training with DataLoader workers, optimizers and load_state_dict": (
        [],
        """
        import copy

        import torch
        from torch import nn
        from torch.utils.data import DataLoader, TensorDataset


        def main():
            torch.manual_seed(0)
            data = TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
            loader = DataLoader(data, batch_size=8, num_workers=2, shuffle=True)
            model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(inplace=True), nn.Linear(8, 1))
            adam = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
            sgd = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9, nesterov=True)
            best = copy.deepcopy(model.state_dict())
            for epoch in range(2):
                for inputs, targets in loader:
                    loss = nn.functional.mse_loss(model(inputs), targets)
                    adam.zero_grad()
                    loss.backward()
                    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                    adam.step()
                    sgd.step()
                snapshot = {k: v.detach().clone() for k, v in model.state_dict().items()}
                adam_state = copy.deepcopy(adam.state_dict())
            model.load_state_dict(best)
            model.load_state_dict(snapshot)
            adam.load_state_dict(adam_state)
            print(sum(float(p.detach().sum()) for p in model.parameters()) != 0)


        if __name__ == "__main__":
            main()
        """,
    ),
    "load_state_dict of the model's own state_dict": (
        ["--no-static"],
        """
        import io

        import torch

        model = torch.nn.Linear(2, 1)
        state = model.state_dict()
        model.load_state_dict(state)  # copies each tensor onto itself
        torch.save(state, io.BytesIO())
        print(model(torch.ones(1, 2)).shape)
        """,
    ),
    "load_state_dict while a graph that saved the weights is alive": (
        ["--no-static"],
        """
        import torch

        model = torch.nn.Sequential(torch.nn.Linear(2, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
        loss = model(torch.ones(3, 2)).sum()  # the second layer's weight is saved for the first one's gradient
        zeros = {k: torch.zeros_like(v) for k, v in model.state_dict().items()}
        model.load_state_dict(zeros)  # trace: GML109 static-check-off
        loss.backward()
        """,
    ),
    "writes the kernel accepts: through an expanded view, and over an input's memory": (
        ["--no-static"],
        """
        import torch

        bias = torch.zeros(1, 3)
        rows = bias.expand(4, 3)
        rows[0] = 5  # trace: GML104 static-check-off
        m = torch.arange(4.0).view(2, 2)
        torch.mm(m, m, out=m)  # trace: GML110 static-check-off
        x = torch.arange(6.0)
        x[1:].masked_scatter_(torch.ones(5, dtype=torch.bool), x[:-1])  # trace: GML110 static-check-off
        x.add_(x)
        x[::2].copy_(x[1::2])
        print(bias.tolist(), m.tolist(), x.tolist())
        """,
    ),
    "tracing stopped by --max-ops": (
        ["--max-ops", "2"],
        """
        import torch

        hidden = torch.zeros(3)
        prev = hidden.detach()
        for step in range(3):
            hidden.mul_(0.5).add_(1)  # check: GML103 not-traced
        print((hidden - prev).tolist())
        """,
    ),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """name -> (plain run, traced run, report, script lines), each pair run concurrently."""
    work = tmp_path_factory.mktemp("evidence")

    def pair(index: int, name: str):
        options, source = PROGRAMS[name]
        script = work / f"program_{index}.py"
        script.write_text(textwrap.dedent(source).lstrip(), encoding="utf-8")
        report = work / f"report_{index}.json"
        plain = run([sys.executable, str(script)], work)
        traced = run(trace_command("--output-format", "json", "-o", str(report), *options, str(script)), work)
        findings = json.loads(report.read_text(encoding="utf-8")) if report.exists() else None
        return plain, traced, findings, script.read_text(encoding="utf-8").splitlines()

    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {name: pool.submit(pair, index, name) for index, name in enumerate(PROGRAMS)}
        return {name: future.result() for name, future in futures.items()}


def _marks(lines: list[str]) -> set[tuple[str, int, str, str]]:
    return {
        (match.group(1), row, match.group(2), match.group(3))
        for row, line in enumerate(lines, start=1)
        for match in [MARK.search(line)]
        if match
    }


@pytest.mark.parametrize("name", PROGRAMS)
def test_the_program_runs_as_without_trace(runs, name):
    plain, traced, findings, _ = runs[name]
    assert traced.stdout == plain.stdout
    # The traceback included: the report went to the output file.
    assert _unraced(traced.stderr) == _unraced(plain.stderr)
    observed = any(finding["source"] == "trace" for finding in findings)
    assert traced.returncode == (plain.returncode or (1 if observed else 0))


@pytest.mark.parametrize("name", PROGRAMS)
def test_the_findings_are_the_marked_lines(runs, name):
    _, _, findings, lines = runs[name]
    marks = _marks(lines)
    sources = {source for source, *_ in marks}
    reported = {(f["source"], f["location"]["row"], f["code"], f["status"]) for f in findings}
    # Static findings are part of the expectation only where a mark asks about them.
    assert {entry for entry in reported if entry[0] == "trace" or entry[0] in sources} == marks


#: A receiver that connects after its sender exited fails one of two ways, by whether the sender's
#: socket file was already removed when it tried: a race of the two processes, run with or without trace.
_GONE_SENDER = re.compile(
    r"(ConnectionRefusedError: \[Errno 111\] Connection refused|FileNotFoundError: \[Errno 2\] No such file or directory)$",
    re.MULTILINE,
)


def _unraced(stderr: str) -> str:
    return _GONE_SENDER.sub("<the sender is gone>", stderr)


def _related_rows(finding: dict) -> dict[str, int]:
    return {related["message"]: related["location"]["row"] for related in finding["related"]}


def test_a_saved_tensor_finding_names_the_saving_line_and_where_backward_failed(runs):
    plain, _, findings, _ = runs["a saved tensor overwritten, then backward fails"]
    assert "one of the variables needed for gradient computation has been modified" in plain.stderr
    [finding] = findings
    assert "`add_`" in finding["message"] and "`relu`" in finding["message"]
    assert _related_rows(finding) == {"saved by `relu` for its backward": 4, "the program failed here": 6}


def test_a_crash_confirms_the_static_finding_that_explains_it_and_names_where_it_failed(runs):
    _, _, findings, lines = runs["a tensor received after its sender exited"]
    [finding] = findings
    assert _related_rows(finding) == {"the program failed here": lines.index("    print(queue.get())") + 1}


def test_repeats_of_one_site_are_one_finding_with_a_count(runs):
    _, _, findings, _ = runs["a saved tensor overwritten, backward never runs; repeats are one finding"]
    [finding] = findings
    assert "3 times" in finding["message"]
    assert _related_rows(finding) == {"saved by `sigmoid` for its backward": 6}


def test_a_childs_finding_names_the_child_process(runs):
    _, _, findings, _ = runs["children of every start method, and DataLoader workers, are traced"]
    assert len(findings) == 4
    assert all(re.search(r"in child process \d+\]$", finding["message"]) for finding in findings)


def test_a_status_says_that_tracing_stopped_before_the_line(runs):
    _, _, findings, _ = runs["tracing stopped by --max-ops"]
    [finding] = findings
    assert "tracing stopped at --max-ops before this line" in finding["message"]


def test_a_script_that_cannot_be_opened_is_a_usage_error(tmp_path):
    result = run(trace_command("nope.py"), tmp_path)
    assert result.returncode == 2
    assert result.stderr == "gpumem-lint: error: nope.py: cannot open the script to trace: No such file or directory\n"
    assert result.stdout == ""
