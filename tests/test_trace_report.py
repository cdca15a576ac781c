"""The trace's text report: a code frame for every line of a finding's story, one verdict per static finding with
the fix `check --fix` applies to a confirmed one; json and sarif carry the same lines as related locations."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest
from trace_runs import run, trace_command

pytest.importorskip("torch")

PROGRAM = """
import torch

hidden = torch.zeros(3)
prev = hidden.detach()
hidden.mul_(0.5).add_(1)
print((hidden - prev).tolist())
unused = torch.zeros(2)
if False:
    snapshot = unused.detach()
    unused.add_(1)
    print(snapshot)
"""


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    work = tmp_path_factory.mktemp("report")
    script = work / "program.py"
    script.write_text(textwrap.dedent(PROGRAM).lstrip(), encoding="utf-8")
    full = run(trace_command(str(script.name)), work)
    machine = run(trace_command("--output-format", "json", "-o", "report.json", str(script.name)), work)
    return full, json.loads((work / "report.json").read_text(encoding="utf-8")), machine


def test_every_line_of_the_story_has_its_code_frame(reports):
    full, _, _ = reports
    text = full.stderr
    assert "program.py:5:1: GML103 confirmed at run time" in text
    frames = text.split("program.py:5:1: GML103", 1)[1].split("help:", 1)[0]
    assert "note: `.detach()` alias made at program.py:4:1" in frames
    assert "4 | prev = hidden.detach()\n  | ^^^^^^^^^^^^^^^^^^^^^^ `.detach()` alias made" in frames
    assert "note: read at program.py:6:1" in frames
    assert "6 | print((hidden - prev).tolist())\n  | ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ read" in frames


def test_one_verdict_per_static_finding_with_the_fix_of_a_confirmed_one(reports):
    full, _, _ = reports
    lines = full.stderr.splitlines()
    start = lines.index("Verdicts on the static findings:")
    verdicts = lines[start + 1 : start + 3]
    assert verdicts[0].startswith("  program.py:5:1 GML103 confirmed at run time; fix: Copy `hidden.detach()` with ")
    assert verdicts[0].endswith("(unsafe: `gpumem-lint check --fix --unsafe-fixes program.py`)")
    assert verdicts[1] == "  program.py:10:5 GML103 not reached at run time"
    assert lines[start + 3].startswith("Found 1 warning at run time (1 confirmed).")


EVERY_STEP = """
import torch

model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    model(torch.ones(1, 2)).sum().backward()
    optimizer.step()
    torch.cuda.empty_cache()
"""


def test_a_confirmed_finding_without_a_fix_says_so(tmp_path):
    """GML406 has no automatic fix (its page says why): the verdict says so rather than naming none."""
    (tmp_path / "program.py").write_text(textwrap.dedent(EVERY_STEP).lstrip(), encoding="utf-8")
    lines = run(trace_command("program.py"), tmp_path).stderr.splitlines()
    verdicts = lines[lines.index("Verdicts on the static findings:") + 1 :]
    assert verdicts[0] == "  program.py:8:5 GML406 confirmed at run time; no automatic fix"


def test_json_carries_the_story_as_related_locations(reports):
    _, findings, machine = reports
    assert machine.returncode == 1
    [confirmed] = [f for f in findings if f["status"] == "confirmed"]
    assert [(r["message"], r["location"]["row"]) for r in confirmed["related"]] == [
        ("`.detach()` alias made", 4),
        ("read", 6),
    ]
    assert confirmed["fix"]["applicability"] == "unsafe"


def test_sarif_carries_the_story_as_related_locations_and_the_verdict_as_properties(tmp_path):
    (tmp_path / "program.py").write_text(textwrap.dedent(PROGRAM).lstrip(), encoding="utf-8")
    machine = run(trace_command("--output-format", "sarif", "-o", "report.sarif", "program.py"), tmp_path)
    assert machine.returncode == 1
    [results] = [run_["results"] for run_ in json.loads((tmp_path / "report.sarif").read_text())["runs"]]
    verdicts = {
        (result["ruleId"], result["locations"][0]["physicalLocation"]["region"]["startLine"]): result
        for result in results
    }
    confirmed = verdicts["GML103", 5]
    assert confirmed["properties"] == {"source": "trace", "status": "confirmed"}
    assert [
        (related["message"]["text"], related["physicalLocation"]["region"]["startLine"])
        for related in confirmed["relatedLocations"]
    ] == [("`.detach()` alias made", 4), ("read", 6)]
    assert verdicts["GML103", 10]["properties"]["status"] == "not-reached"


def test_a_failing_cuda_start_shows_torchs_own_traceback(tmp_path):
    """torch.cuda's initialisation is recorded from `is_initialized()`, which has returned before `_lazy_init`
    raises: the traceback (on a CPU build, "Torch not compiled with CUDA enabled") is the plain run's."""
    script = tmp_path / "program.py"
    script.write_text("import torch\n\ntorch.zeros(1, device='cuda')\nprint('ran')\n", encoding="utf-8")
    plain = run([sys.executable, str(script)], tmp_path)
    traced = run(trace_command("--no-static", "-o", str(tmp_path / "report.txt"), str(script)), tmp_path)
    assert (traced.stdout, traced.stderr, traced.returncode) == (plain.stdout, plain.stderr, plain.returncode)
