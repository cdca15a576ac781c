"""The program-order model: which CUDA event runs before a statement, on some path, and where.

Each case is a snippet whose statement marked `# query` is asked for the first CUDA-initialising
event before it; the expected answer is the line marked `# event` (or none when no line is marked).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst
import pytest

from gpumem_lint.context import FileContext
from gpumem_lint.semantic.program_order import CUDA_INIT_EVENTS, LAUNCH, _compatible
from gpumem_lint.semantic.walk import Walker

CASES = {
    "module level": """
        import os, torch
        torch.cuda.is_available()  # event
        os.environ["CUDA_VISIBLE_DEVICES"] = "0"  # query
    """,
    "torch.device and device_count do not initialise": """
        import os, torch
        device = torch.device("cuda")
        n = torch.cuda.device_count()
        torch.manual_seed(0)
        os.environ["CUDA_VISIBLE_DEVICES"] = "0"  # query
    """,
    "the exclusive arm of an if": """
        import os, torch
        if cpu:
            os.environ["CUDA_VISIBLE_DEVICES"] = ""  # query
        else:
            model.cuda()
    """,
    "a later statement after either arm": """
        import os, torch
        if cpu:
            pass
        else:
            model.cuda()  # event
        os.environ["CUDA_VISIBLE_DEVICES"] = ""  # query
    """,
    "an arm that returns ends its function's path": """
        import os, torch
        def pick(args):
            if args.gpu:
                torch.cuda.set_device(0)
                return
            os.environ["CUDA_VISIBLE_DEVICES"] = ""  # query
    """,
    "but not the caller's": """
        import os, torch
        def pick(args):
            if args.gpu:
                torch.cuda.set_device(0)  # event
                return
        def main(args):
            pick(args)
            os.environ["CUDA_VISIBLE_DEVICES"] = ""  # query
    """,
    "an arm that exits ends the program's path": """
        import os, sys, torch
        if not ok:
            torch.cuda.init()
            sys.exit(1)
        os.environ["CUDA_VISIBLE_DEVICES"] = ""  # query
    """,
    "the next iteration of a loop": """
        import os, torch
        for gpu in gpus:
            os.environ["CUDA_VISIBLE_DEVICES"] = str(gpu)  # query
            model = Net().to("cuda")  # event
    """,
    "functions called from the main block, in order": """
        import os, torch

        def init():
            return torch.cuda.get_device_properties(0)  # event

        def configure():
            os.environ["CUDA_VISIBLE_DEVICES"] = "1"  # query

        if __name__ == "__main__":
            init()
            configure()
    """,
    "a method reached through self": """
        import os, torch

        class Trainer:
            def __init__(self):
                self.setup()
                os.environ["CUDA_VISIBLE_DEVICES"] = "1"  # query

            def setup(self):
                self.stream = torch.cuda.Stream()  # event
    """,
    "a constructor runs __init__": """
        import os, torch

        class Runner:
            def __init__(self, rank):
                torch.cuda.set_device(rank)  # event

        runner = Runner(0)
        os.environ["CUDA_VISIBLE_DEVICES"] = "1"  # query
    """,
    "the NVML check makes is_available() harmless": """
        import os, torch
        os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
        if torch.cuda.is_available():
            pass
        os.environ["CUDA_VISIBLE_DEVICES"] = "1"  # query
    """,
    "pin_memory creates a context": """
        import os, torch
        batch = torch.ones(4).pin_memory()  # event
        os.environ["CUDA_VISIBLE_DEVICES"] = "1"  # query
    """,
    "a device keyword names a CUDA device": """
        import os, torch
        x = torch.zeros(3, device=f"cuda:{rank}")  # event
        os.environ["CUDA_VISIBLE_DEVICES"] = "1"  # query
    """,
    "a library placing weights on a GPU": """
        import os
        from transformers import AutoModelForCausalLM, pipeline
        generator = pipeline("text-generation", device=0)  # event
        model = AutoModelForCausalLM.from_pretrained("gpt2", device_map="auto")
        os.environ["CUDA_VISIBLE_DEVICES"] = "1"  # query
    """,
    "a library kept on the CPU": """
        import os
        from transformers import pipeline
        generator = pipeline("text-generation", device=-1)
        model = AutoModel.from_pretrained("gpt2", device_map="cpu")
        os.environ["CUDA_VISIBLE_DEVICES"] = "1"  # query
    """,
    "a CPU device keyword does not": """
        import os, torch
        x = torch.zeros(3, device="cpu")
        y = torch.zeros(3, device=cpu_device)
        os.environ["CUDA_VISIBLE_DEVICES"] = "1"  # query
    """,
    "arguments run before the call that receives them": """
        import os, torch
        os.environ.setdefault("CUDA_VISIBLE_DEVICES", str(torch.cuda.current_device()))  # event query
    """,
    "a function not called from here still runs after import-time code": """
        import os, torch
        DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # event

        def worker():
            os.environ["CUDA_VISIBLE_DEVICES"] = "1"  # query
    """,
    "the main block does not run on import": """
        import os, torch

        def worker():
            os.environ["CUDA_VISIBLE_DEVICES"] = "1"  # query

        if __name__ == "__main__":
            torch.cuda.init()
            worker2()
    """,
}


class _Finder(Walker):
    def __init__(self, rows: set[int], ctx: FileContext) -> None:
        self.rows, self.ctx, self.found = rows, ctx, []

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        if self.ctx.line(node) in self.rows:
            self.found.extend(node.body)


def _context(source: str, path: str = "<snippet>") -> FileContext:
    return FileContext(path, source, cst.parse_module(source))


def _query_nodes(ctx: FileContext, source: str) -> list[cst.CSTNode]:
    rows = {row for row, line in enumerate(source.splitlines(), 1) if line.rstrip().endswith("query")}
    finder = _Finder(rows, ctx)
    finder.walk(ctx.module)
    assert finder.found, "no statement marked # query"
    return finder.found


@pytest.mark.parametrize("name", CASES)
def test_first_cuda_event_before(name: str):
    source = textwrap.dedent(CASES[name])
    ctx = _context(source)
    expected = {row for row, line in enumerate(source.splitlines(), 1) if "# event" in line}
    for node in _query_nodes(ctx, source):
        site = ctx.program_order.first_event_before(node, CUDA_INIT_EVENTS)
        assert (site.line if site else None) == (min(expected) if expected else None), site


COMPILER_CASES = {
    "torch.compile(...)": """
        import os, torch
        model = torch.compile(model)  # event
        os.environ["TORCHINDUCTOR_FREEZING"] = "1"  # query
    """,
    "a decorator without a call": """
        import os, torch
        @torch.compile  # event
        def step(x):
            return x
        os.environ["TORCHINDUCTOR_FREEZING"] = "1"  # query
    """,
    "a decorator with a call": """
        import os, torch
        @torch.compile(mode="max-autotune")  # event
        def step(x):
            return x
        os.environ["TORCHINDUCTOR_FREEZING"] = "1"  # query
    """,
    "from torch._inductor import config": """
        import os, torch
        from torch._inductor import config  # event
        os.environ["TORCHINDUCTOR_FREEZING"] = "1"  # query
    """,
    "from torch import _dynamo": """
        import os, torch
        from torch import _dynamo  # event
        os.environ["TORCH_COMPILE_DISABLE"] = "1"  # query
    """,
    "import torch._dynamo.config": """
        import os, torch
        import torch._dynamo.config  # event
        os.environ["TORCH_COMPILE_DISABLE"] = "1"  # query
    """,
    "import torch is not the event": """
        import os, torch, torch.nn
        from torch import nn
        os.environ["TORCHINDUCTOR_FREEZING"] = "1"  # query
        model = torch.compile(model)
    """,
    "another module's compile": """
        import os, re, torch
        pattern = re.compile("x")
        os.environ["TORCHINDUCTOR_FREEZING"] = "1"  # query
    """,
}


@pytest.mark.parametrize("name", COMPILER_CASES)
def test_compiler_configuration_import(name: str):
    source = textwrap.dedent(COMPILER_CASES[name])
    ctx = _context(source)
    expected = {row for row, line in enumerate(source.splitlines(), 1) if "# event" in line}
    for node in _query_nodes(ctx, source):
        site = ctx.program_order.first_event_before(node, {"compiler_config_import"})
        assert (site.line if site else None) == (min(expected) if expected else None), site
        assert site is None or site.event == "compiler_config_import"


def test_site_names_the_call_and_the_event():
    source = "import torch\nimport os\nmodel.cuda()\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'  # query\n"
    ctx = _context(source, "train.py")
    site = ctx.program_order.first_event_before(_query_nodes(ctx, source)[0], CUDA_INIT_EVENTS)
    assert (site.event, site.call, site.line, site.file, site.via) == (
        "first_allocation",
        "model.cuda()",
        3,
        "train.py",
        None,
    )


def test_launch_after_a_write():
    source = "import os, subprocess\nos.environ['OMP_NUM_THREADS'] = '1'  # query\nsubprocess.run(cmd)\n"
    ctx = _context(source)
    site = ctx.program_order.first_event_after(_query_nodes(ctx, source)[0], {LAUNCH})
    assert site is not None and site.line == 3


def _project(tmp_path: Path, files: dict[str, str]) -> None:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "pyproject.toml").write_text("")
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def _lint_context(tmp_path: Path, name: str, monkeypatch) -> tuple[FileContext, str]:
    monkeypatch.chdir(tmp_path)
    source = (tmp_path / name).read_text()
    return _context(source, name), source


def test_first_party_module_run_at_import(tmp_path, monkeypatch):
    _project(
        tmp_path,
        {
            "utils.py": """
            import torch

            DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")

            def later():
                torch.cuda.init()
        """,
            "train.py": """
            import os
            import utils
            os.environ["CUDA_VISIBLE_DEVICES"] = "1"  # query
        """,
        },
    )
    ctx, source = _lint_context(tmp_path, "train.py", monkeypatch)
    site = ctx.program_order.first_event_before(_query_nodes(ctx, source)[0], CUDA_INIT_EVENTS)
    assert (site.call, site.file, site.line, site.via) == (
        "torch.cuda.is_available()",
        "utils.py",
        4,
        "`import utils` at line 3",
    )
    assert ctx.dependencies == {(tmp_path / "utils.py").resolve()}


def test_package_relative_import_and_nested_modules(tmp_path, monkeypatch):
    _project(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/env.py": "import torch\ntorch.cuda.set_device(0)\n",
            "pkg/data.py": "from . import env\nLOADER = None\n",
            "pkg/main.py": "import os\nfrom .data import LOADER\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'  # query\n",
        },
    )
    ctx, source = _lint_context(tmp_path, "pkg/main.py", monkeypatch)
    site = ctx.program_order.first_event_before(_query_nodes(ctx, source)[0], CUDA_INIT_EVENTS)
    assert (site.call, site.file, site.line) == ("torch.cuda.set_device(0)", "env.py", 2)
    assert {p.name for p in ctx.dependencies} == {"data.py", "env.py"}


@pytest.mark.parametrize(
    "importing",
    ["from tools.env import ready", "import tools.env", "from tools import env"],
)
def test_namespace_packages_are_followed(tmp_path, monkeypatch, importing: str):
    # `tools/` has no `__init__.py` (PEP 420): importing runs nothing of its own, and its modules are found
    _project(
        tmp_path,
        {
            "tools/env.py": "import torch\nready = torch.cuda.is_available()\n",
            "train.py": f"import os\n{importing}\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'  # query\n",
        },
    )
    ctx, source = _lint_context(tmp_path, "train.py", monkeypatch)
    site = ctx.program_order.first_event_before(_query_nodes(ctx, source)[0], CUDA_INIT_EVENTS)
    assert (site.call, site.file, site.line) == ("torch.cuda.is_available()", "tools/env.py", 2)
    assert ctx.dependencies == {(tmp_path / "tools" / "env.py").resolve()}


def test_modules_outside_the_project_are_not_read(tmp_path, monkeypatch):
    (tmp_path / "utils.py").write_text("import torch\ntorch.cuda.init()\n")
    _project(
        tmp_path / "proj", {"train.py": "import os\nimport utils\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'  # query\n"}
    )
    ctx, source = _lint_context(tmp_path / "proj", "train.py", monkeypatch)
    assert ctx.program_order.first_event_before(_query_nodes(ctx, source)[0], CUDA_INIT_EVENTS) is None
    assert ctx.dependencies == set()


def test_calls_into_first_party_functions(tmp_path, monkeypatch):
    _project(
        tmp_path,
        {
            "helpers/__init__.py": "",
            "helpers/devices.py": """
            import torch

            def get_device():
                return torch.device("cuda" if torch.cuda.is_available() else "cpu")

            def describe():
                return "no CUDA here"
        """,
            "train.py": """
            import os
            from helpers.devices import describe, get_device
            from helpers import devices

            describe()
            os.environ["CUDA_VISIBLE_DEVICES"] = "0"  # query
            device = get_device()
            os.environ["CUDA_VISIBLE_DEVICES"] = "1"  # query
            devices.get_device()
        """,
        },
    )
    ctx, source = _lint_context(tmp_path, "train.py", monkeypatch)
    first, second = _query_nodes(ctx, source)
    assert ctx.program_order.first_event_before(first, CUDA_INIT_EVENTS) is None
    site = ctx.program_order.first_event_before(second, CUDA_INIT_EVENTS)
    assert (site.call, site.file, site.line, site.via) == (
        "torch.cuda.is_available()",
        "helpers/devices.py",
        5,
        "`get_device()` at line 8",
    )
    assert (tmp_path / "helpers" / "devices.py").resolve() in ctx.dependencies


def test_a_function_named_like_its_module(tmp_path, monkeypatch):
    """`from engines.launch import launch`: the function is in `launch.py`; in `from engines import launch`
    the name is the submodule, which a call does not run."""
    _project(
        tmp_path,
        {
            "engines/__init__.py": "",
            "engines/launch.py": """
            import torch.multiprocessing as mp

            def launch(worker, n):
                mp.spawn(worker, nprocs=n)
        """,
            "train.py": """
            import os
            from engines.launch import launch
            os.environ["OMP_NUM_THREADS"] = "1"  # query
            launch(print, 2)
        """,
            "other.py": """
            import os
            from engines import launch
            os.environ["OMP_NUM_THREADS"] = "1"  # query
            launch(print, 2)
        """,
        },
    )
    ctx, source = _lint_context(tmp_path, "train.py", monkeypatch)
    site = ctx.program_order.first_event_after(_query_nodes(ctx, source)[0], {LAUNCH}, reached=True)
    assert (site.call, site.file) == ("mp.spawn(worker, nprocs=n)", "engines/launch.py")
    ctx, source = _lint_context(tmp_path, "other.py", monkeypatch)
    assert ctx.program_order.first_event_after(_query_nodes(ctx, source)[0], {LAUNCH}, reached=True) is None


# Every fixture whose program order a rule may query, with the first-party modules it imports.
ORDERED_FIXTURES = sorted(
    path
    for path in Path(__file__).resolve().parent.parent.joinpath("fixtures").rglob("*.py")
    if "import" in path.read_text()
)


def _reference_first(order, node, wanted, before: bool, reached: bool):
    """The answer of the eager model: every other module's steps laid out in the timelines first."""
    timelines = [[done for step in timeline for done in step.expanded()] for timeline in order._timelines_built()]
    prefix = sum(len(step.expanded()) for step in order._import_steps())
    best = None
    for timeline_index, timeline in enumerate(timelines):
        for position, target in enumerate(timeline):
            if target.node is not node or target.site is not None:
                continue
            if reached and timeline_index > 0 and position < prefix:
                continue
            for index, step in enumerate(timeline):
                if index == position or not step.events & wanted:
                    continue
                ordered = index < position if before else index > position
                if not ordered and not set(step.loops) & set(target.loops):
                    continue
                if _compatible(step, target) if before else _compatible(target, step):
                    rank = index if ordered else len(timeline) + index
                    if best is None or rank < best[0]:
                        best = (rank, step)
    return order._site(best[1]) if best else None


@pytest.mark.parametrize("path", ORDERED_FIXTURES, ids=lambda path: path.name)
def test_other_modules_summarised_on_demand_give_the_eager_answers(path, monkeypatch):
    """Another module's events become steps only when a query reaches its import or call: every
    query about every step must answer as if they had all been laid out first."""
    monkeypatch.chdir(path.parent)
    ctx = _context(path.read_text(), path.name)
    order = ctx.program_order
    nodes = {id(step.node): step.node for timeline in order._timelines_built() for step in timeline if not step.runs}
    queries = [(frozenset(CUDA_INIT_EVENTS), True, False), (frozenset({LAUNCH}), False, True)]
    for node in nodes.values():
        for wanted, before, reached in queries:
            found = order._first(node, wanted, before=before, reached=reached)
            assert found == _reference_first(order, node, wanted, before, reached), ctx.code(node)
