"""`gpumem-lint trace` on exceptions a hazard explains that the program catches: a refused write inside a `try`
is a finding all the same (Python 3.12+, where `sys.monitoring` tells of handled exceptions); one that a `with` or
`finally` block only passes on is the crash's finding, and nothing else the program catches is a finding."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest
from trace_runs import run, trace_command

needs_monitoring = pytest.mark.skipif(
    sys.version_info < (3, 12), reason="handled exceptions are told by sys.monitoring (3.12+)"
)

#: Runs a program with only the site finder and the caught-exception records of a traced process (no torch):
#: prints each finding's line and count.
HANDLERS = """
import json
import runpy
import sys

from gpumem_lint.trace.crashes import CaughtErrors
from gpumem_lint.trace.findings import FindingLog
from gpumem_lint.trace.sites import SiteFinder

sites = SiteFinder()
caught = CaughtErrors(sites)
sites.on_handled, sites.on_reraised = caught.handled, caught.reraised
assert sites.follow_calls()
try:
    runpy.run_path(sys.argv[1], run_name="__main__")
except RuntimeError as error:
    caught.ended_with(error)
log = FindingLog()
log.extend(caught.findings())
print(json.dumps(sorted([finding.site.line, finding.count, finding.message] for finding in log)))
"""

#: The same raise point caught twice, once through a `finally`, once re-raised by `raise error` and caught further
#: out, once passed on by a `with` and ended with; the message is a crash row's (hazards.toml).
HANDLED = """
import contextlib

from gpumem_lint.trace.codes import CRASHES

MESSAGE = next(crash.match for crash in CRASHES if crash.through is None)


def refuse():
    raise RuntimeError(MESSAGE)  # caught: 3


for attempt in range(2):
    try:
        refuse()
    except RuntimeError:
        pass
try:
    try:
        refuse()
    finally:
        pass
except RuntimeError:
    pass
try:
    with contextlib.nullcontext():
        raise RuntimeError(MESSAGE)  # caught: 1
except RuntimeError as error:
    try:
        raise error
    except RuntimeError:
        pass
try:
    with contextlib.nullcontext():
        raise RuntimeError(MESSAGE)  # the program ends with it
except ValueError:
    pass
"""


@needs_monitoring
def test_a_caught_exception_is_counted_once_however_often_handlers_pass_it_on(tmp_path):
    (tmp_path / "handlers.py").write_text(textwrap.dedent(HANDLERS).lstrip(), encoding="utf-8")
    program = tmp_path / "program.py"
    program.write_text(textwrap.dedent(HANDLED).lstrip(), encoding="utf-8")
    result = run([sys.executable, str(tmp_path / "handlers.py"), str(program)], tmp_path)
    assert result.returncode == 0, result.stderr
    lines = program.read_text(encoding="utf-8").splitlines()
    expected = [[row(lines, "# caught: 3"), 3], [row(lines, "# caught: 1"), 1]]
    findings = json.loads(result.stdout)
    assert [[line, count] for line, count, _ in findings] == sorted(expected)
    assert all("(the program caught `RuntimeError: " in message for _, _, message in findings)


CAUGHT = """
import torch


def rescale(weight):
    weight[:2].mul_(2)


weight = torch.zeros(4, requires_grad=True)
for attempt in range(2):
    try:
        rescale(weight)
    except RuntimeError as error:
        print("refused", attempt)
try:
    try:
        weight.add_(1)
    finally:
        print("finally")
except RuntimeError:
    print("refused again")
try:
    {}["missing"]
except KeyError:
    print("no hazard")
"""

PASSED_ON = """
import contextlib

import torch

weight = torch.zeros(4, requires_grad=True)
with contextlib.nullcontext():
    weight.add_(1)
"""


def traced(tmp_path, source: str):
    pytest.importorskip("torch")
    script = tmp_path / "program.py"
    script.write_text(textwrap.dedent(source).lstrip(), encoding="utf-8")
    plain = run([sys.executable, str(script)], tmp_path)
    result = run(trace_command("--no-static", "--output-format", "json", "-o", "report.json", str(script)), tmp_path)
    assert (result.stdout, result.stderr) == (plain.stdout, plain.stderr)
    lines = script.read_text(encoding="utf-8").splitlines()
    return plain, result, json.loads((tmp_path / "report.json").read_text(encoding="utf-8")), lines


def row(lines: list[str], text: str) -> int:
    return next(number for number, line in enumerate(lines, start=1) if text in line)


@needs_monitoring
def test_a_refused_write_the_program_catches_is_a_finding_at_the_write(tmp_path):
    plain, result, findings, lines = traced(tmp_path, CAUGHT)
    assert plain.returncode == 0 and result.returncode == 1  # 1: hazards were observed
    found = {(f["code"], f["location"]["row"]): f for f in findings}
    assert set(found) == {("GML108", row(lines, "weight[:2].mul_(2)")), ("GML108", row(lines, "weight.add_(1)"))}
    view_write = found["GML108", row(lines, "weight[:2].mul_(2)")]
    assert "(the program caught `RuntimeError: a view of a leaf Variable" in view_write["message"]
    assert "2 times" in view_write["message"]  # once per attempt; the `finally` passed the second one on


def test_an_error_a_with_block_passes_on_is_the_crash(tmp_path):
    plain, result, findings, lines = traced(tmp_path, PASSED_ON)
    assert plain.returncode == result.returncode == 1
    [finding] = findings
    assert (finding["code"], finding["location"]["row"]) == ("GML108", row(lines, "weight.add_(1)"))
    assert "(the program ended with `RuntimeError: a leaf Variable" in finding["message"]
