"""`gpumem-lint trace notebook.ipynb` end to end, in subprocesses: the code cells run in order in one namespace
(IPython syntax masked as the linter masks it), the program's output and exit code are a script's, an exception
in a cell ends the run with a traceback that names the cell, and the report gives every finding its cell.

Each notebook is written by the test; the runs go two at a time (the machine has few cores).
"""

from __future__ import annotations

import json
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
from trace_runs import run, trace_command

from gpumem_lint.notebook import read_notebook
from gpumem_lint.rules import RULES_BY_CODE

pytest.importorskip("torch")



def _code(source: str) -> dict:
    return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": source}


def _markdown(source: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": source}


def _notebook(*cells: dict) -> str:
    document = {"cells": list(cells), "metadata": {"language_info": {"name": "python"}}, "nbformat": 4}
    return json.dumps(document, indent=1)


# A `.detach()` alias read after an in-place write (cell 4, row 4), among IPython lines that must not run, and a
# static finding in a function no cell calls (cell 6, row 3).
HAZARD = _notebook(
    _code('import torch\n%matplotlib inline\nprint("start")\n'),
    _markdown("# A smoothing step\n"),
    _code("hidden = torch.zeros(3)\nprev = hidden.detach()\n"),
    _code(
        "files = !echo shell-ran\n!echo shell-ran\nprint(type(files).__name__)\n"
        "hidden.add_(1)\nprint((hidden - prev).tolist())"  # no final line break, as Jupyter writes the last line
    ),
    _code("%%bash\necho shell-ran\n"),
    _code("def unused(x):\n    snapshot = x.detach()\n    x.add_(1)\n    return x - snapshot\n"),
    _code('print("end")\n'),
)

# A write to a leaf that requires grad raises in cell 2; cell 3 never runs.
RAISES = _notebook(
    _code('import torch\nprint("before")\n'),
    _code("leaf = torch.ones(2, requires_grad=True)\nleaf.add_(1)\n"),
    _code('print("never")\n'),
)

# Cell 2 does not parse: cell 1 has run when it is compiled, as under Jupyter.
SYNTAX_ERROR = _notebook(_code('print("cell 1 ran")\n'), _code("%%time\nx = 1\ntotal = (x +\n"))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """name -> (completed process, report text or None); every notebook traced, and its masked text as a script."""
    work = tmp_path_factory.mktemp("trace-notebooks")
    for name, text in (("hazard", HAZARD), ("raises", RAISES), ("syntax_error", SYNTAX_ERROR)):
        (work / f"{name}.ipynb").write_text(text, encoding="utf-8")
    masked = read_notebook(HAZARD.encode()).text
    (work / "hazard_as_script.py").write_text(masked, encoding="utf-8")
    jobs = {
        "plain": ([sys.executable, "hazard_as_script.py"], None),
        "hazard": (trace_command("--output-format", "json", "-o", "hazard.json", "hazard.ipynb"), "hazard.json"),
        "hazard text": (trace_command("--output-format", "concise", "hazard.ipynb"), None),
        "raises": (trace_command("--output-format", "json", "-o", "raises.json", "raises.ipynb"), "raises.json"),
        "no static": (
            trace_command("--no-static", "--output-format", "json", "-o", "nostatic.json", "raises.ipynb"),
            "nostatic.json",
        ),
        "syntax error": (
            trace_command("--output-format", "json", "-o", "syntax.json", "syntax_error.ipynb"),
            "syntax.json",
        ),
    }
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {name: pool.submit(run, command, work) for name, (command, _) in jobs.items()}
        results = {name: future.result() for name, future in futures.items()}
    return {
        name: (results[name], json.loads((work / report).read_text(encoding="utf-8")) if report else None)
        for name, (_, report) in jobs.items()
    }


def _place(finding: dict) -> tuple:
    return (finding["code"], finding["cell"], finding["location"]["row"], finding["source"], finding["status"])


def test_cells_run_in_order_with_ipython_lines_skipped(runs):
    plain, _ = runs["plain"]
    traced, _ = runs["hazard"]
    assert plain.returncode == 0, plain.stderr
    assert traced.stdout == plain.stdout
    assert traced.stdout == "start\nellipsis\n[0.0, 0.0, 0.0]\nend\n"
    assert "shell-ran" not in traced.stdout + traced.stderr
    assert traced.stderr == plain.stderr == ""


def test_the_hazard_is_reported_in_its_cell(runs):
    traced, report = runs["hazard"]
    assert traced.returncode == 1  # the program exited 0; a hazard was observed
    places = {_place(finding) for finding in report}
    assert places == {
        ("GML103", 4, 4, "trace", "confirmed"),
        ("GML103", 6, 3, "check", "not-reached"),
    }
    confirmed = next(finding for finding in report if finding["status"] == "confirmed")
    assert confirmed["filename"] == "hazard.ipynb"
    assert "hazard.ipynb:cell 3:2" in confirmed["message"]  # where the alias was made
    assert [(r["location"]["row"], r["message"]) for r in confirmed["related"]] == [
        (2, "`.detach()` alias made (cell 3)"),
        (5, "read (cell 4)"),
    ]


def test_the_text_report_names_cells_and_counts_only_what_was_observed(runs):
    traced, _ = runs["hazard text"]
    assert traced.returncode == 1
    lines = traced.stderr.splitlines()
    assert any(line.startswith("hazard.ipynb:cell 4:4:1: GML103 confirmed at run time") for line in lines)
    assert any(line.startswith("hazard.ipynb:cell 6:3:5: GML103 not reached at run time") for line in lines)
    severity = RULES_BY_CODE["GML103"].severity.value
    assert lines[-2:] == [
        f"Found 1 {severity} at run time (1 confirmed).",
        "1 static finding not observed (1 not-reached).",
    ]


def test_an_exception_in_a_cell_ends_the_run_with_its_traceback(runs):
    traced, report = runs["raises"]
    assert traced.returncode == 1
    assert traced.stdout == "before\n"  # cell 3 never ran
    traceback = traced.stderr.splitlines()
    assert traceback[0] == "Traceback (most recent call last):"
    assert traceback[1].endswith('raises.ipynb", cell 2, line 2, in <module>')
    assert traceback[2].strip() == "leaf.add_(1)"
    assert traceback[-1].startswith("RuntimeError: a leaf Variable that requires grad")
    assert "gpumem_lint" not in traced.stderr  # none of the tracer's frames
    assert {_place(finding) for finding in report} == {("GML108", 2, 2, "trace", "confirmed")}


def test_without_the_static_pass_the_finding_keeps_its_cell(runs):
    traced, report = runs["no static"]
    assert traced.returncode == 1
    assert {_place(finding) for finding in report} == {("GML108", 2, 2, "trace", "static-check-off")}


def test_a_syntax_error_in_a_later_cell_is_reported_after_the_earlier_cells_ran(runs):
    traced, report = runs["syntax error"]
    assert traced.returncode == 1
    assert traced.stdout == "cell 1 ran\n"
    error = traced.stderr.splitlines()
    assert error[0].endswith('syntax_error.ipynb", cell 2, line 3')
    assert error[1].strip() == "total = (x +"  # the cell's line, not the notebook's JSON
    assert error[-1].startswith("SyntaxError:")
    assert report == []


def test_a_file_that_is_not_a_notebook_is_a_usage_error(tmp_path):
    (tmp_path / "broken.ipynb").write_text('{"cells": ', encoding="utf-8")
    result = run(trace_command("broken.ipynb"), tmp_path)
    assert result.returncode == 2
    assert "broken.ipynb: not a notebook" in result.stderr
    assert result.stdout == ""


RANKS = _notebook(
    _code("import sys\n\nimport torch\nimport torch.distributed as dist\n"),
    _code('dist.init_process_group("gloo")\nrank = dist.get_rank()\nweights = torch.ones(4)\n'),
    _code(
        "if rank == 1:\n    snapshot = weights.detach()\n    weights.add_(1)\n"
        "    sys.stdout.write(f'delta {(weights - snapshot).tolist()}\\n')\n"
    ),
    _code(
        "dist.all_reduce(weights)\nsys.stdout.write(f'{rank} {weights.tolist()}\\n')\ndist.destroy_process_group()\n"
    ),
)


def test_a_notebook_on_two_ranks_reports_the_cell_and_the_rank(tmp_path):
    distributed = pytest.importorskip("torch.distributed")
    if not distributed.is_available() or not distributed.is_gloo_available():
        pytest.skip("needs torch.distributed with gloo")
    (tmp_path / "ranks.ipynb").write_text(RANKS, encoding="utf-8")
    command = trace_command("--nproc-per-node", "2", "--output-format", "json", "-o", "report.json", "ranks.ipynb")
    result = run(command, tmp_path)
    assert result.returncode == 1, result.stderr
    # The ranks print concurrently: the same lines in an order neither fixes (each line is one write, so that an
    # unbuffered stdout cannot interleave the ranks' words). The alias still sees the write.
    assert sorted(result.stdout.splitlines()) == [
        "0 [3.0, 3.0, 3.0, 3.0]",
        "1 [3.0, 3.0, 3.0, 3.0]",
        "delta [0.0, 0.0, 0.0, 0.0]",
    ]
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert [_place(finding) for finding in report] == [("GML103", 3, 3, "trace", "confirmed")]
    assert report[0]["message"].endswith("on rank 1]")
