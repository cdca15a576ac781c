"""Recall on reproductions of real bug reports (bench/recall/cases/).

Each case marks the line of its hazard with a trailing `# hazard: CODE`, and may mark with
`# hazard-via: CODE` the calls that hand the written tensor (or the tensor it is a view of) to the
function that writes it. The case is found when a finding of CODE lands on the hazard line ("on
line"), on a via line ("via line": the report points at the call), or names the hazard line ("names
line": a related location, or `file.py:N` / `line N` in the message, since a two-line hazard may be
reported at its other end). Cases whose header says `runs-on-cpu: yes` are also run under
`gpumem-lint trace --no-static`, judged the same way. Both run the installed gpumem-lint in
subprocesses; this script never imports torch.

    python bench/recall/run.py            # the table and the totals
    python bench/recall/run.py --json     # one object per case
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

CASES = Path(__file__).resolve().parent / "cases"
HAZARD_MARK = re.compile(r"#\s*hazard:\s*(GML\d{3})\b")
VIA_MARK = re.compile(r"#\s*hazard-via:\s*(GML\d{3})\b")
HEADER_FIELD = re.compile(r"^#\s*([a-z-]+):\s*(.*)$")
LINE_REFERENCE = re.compile(r"\.py:(\d+)|\blines? (\d+)")


@dataclass
class Case:
    name: str
    source: str
    family: str
    code: str
    line: int
    via: list[int]
    runs_on_cpu: bool


@dataclass
class Result:
    case: str
    source: str
    family: str
    code: str
    line: int
    static: str
    trace: str
    static_other: list[str]
    trace_other: list[str]


def load_case(path: Path) -> Case:
    lines = path.read_text(encoding="utf-8").splitlines()
    header = {}
    for text in lines:
        if not text.startswith("#"):
            break
        field = HEADER_FIELD.match(text)
        if field:
            header.setdefault(field[1], field[2])
    marks = [(number, mark[1]) for number, text in enumerate(lines, 1) if (mark := HAZARD_MARK.search(text))]
    if len(marks) != 1:
        raise SystemExit(f"{path.name}: expected one `# hazard: CODE` mark, found {len(marks)}")
    (line, code), = marks
    via = [number for number, text in enumerate(lines, 1) if (mark := VIA_MARK.search(text)) and mark[1] == code]
    return Case(path.stem, header["source"], header["family"], code, line, via,
                header.get("runs-on-cpu", "no").startswith("yes"))


def named_lines(finding: dict) -> set[int]:
    related = {place["location"]["row"] for place in finding.get("related") or []}
    mentioned = {int(a or b) for a, b in LINE_REFERENCE.findall(finding["message"])}
    return related | mentioned


def judge(findings: list[dict], case: Case) -> tuple[str, list[str]]:
    """The best of 'on line', 'via line', 'names line' and 'no', and the other findings as CODE@row."""
    verdicts = {"no"}
    for finding in findings:
        if finding["code"] != case.code:
            continue
        row = finding["location"]["row"]
        if row == case.line:
            verdicts.add("on line")
        elif row in case.via:
            verdicts.add("via line")
        elif case.line in named_lines(finding):
            verdicts.add("names line")
    best = next(v for v in ("on line", "via line", "names line", "no") if v in verdicts)
    return best, others(findings, case)


def others(findings: list[dict], case: Case) -> list[str]:
    return sorted({f"{f['code']}@{f['location']['row']}" for f in findings
                   if not (f["code"] == case.code and f["location"]["row"] in (case.line, *case.via))})


def gpumem_lint(*arguments: str, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpumem_lint", *arguments], cwd=CASES, capture_output=True,
                          text=True, timeout=timeout)


def lint(case: Case) -> list[dict]:
    done = gpumem_lint("check", "--no-cache", "--exit-zero", "--quiet", "--output-format", "json",
                       f"{case.name}.py", timeout=300)
    if done.returncode != 0:
        raise SystemExit(f"{case.name}: gpumem-lint check failed:\n{done.stderr}")
    return json.loads(done.stdout)


def trace(case: Case, timeout: float) -> list[dict] | str:
    """The traced run's findings, or why there are none (the program's own failure is expected)."""
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "trace.json"
        try:
            gpumem_lint("trace", "--no-static", "--quiet", "--output-format", "json", "-o", str(report),
                        f"{case.name}.py", timeout=timeout)
        except subprocess.TimeoutExpired:
            return "timed out"
        if not report.exists():
            return "no report"
        return json.loads(report.read_text(encoding="utf-8") or "[]")


def measure(case: Case, with_trace: bool, timeout: float) -> Result:
    static, static_other = judge(lint(case), case)
    trace_verdict, trace_other = "not run", []
    if case.runs_on_cpu and with_trace:
        findings = trace(case, timeout)
        if isinstance(findings, str):
            trace_verdict = findings
        else:
            trace_verdict, trace_other = judge(findings, case)
    return Result(case.name, case.source, case.family, case.code, case.line, static, trace_verdict,
                  static_other, trace_other)


def found(verdict: str) -> bool:
    return verdict in ("on line", "via line", "names line")


def print_table(results: list[Result]) -> None:
    width = max(len(r.case) for r in results)
    print(f"{'case':<{width}}  expected       static      trace       other findings (static | trace)")
    for r in results:
        other = f"{' '.join(r.static_other) or '-'} | {' '.join(r.trace_other) or '-'}"
        print(f"{r.case:<{width}}  {r.code}@{r.line:<6}  {r.static:<10}  {r.trace:<10}  {other}")
    traced = [r for r in results if r.trace != "not run"]
    static_hits = sum(found(r.static) for r in results)
    trace_hits = sum(found(r.trace) for r in traced)
    either = sum(found(r.static) or found(r.trace) for r in results)
    print(f"\nstatic recall {static_hits}/{len(results)}; trace recall {trace_hits}/{len(traced)} of the cases it ran"
          f" ({trace_hits}/{len(results)} of all); either {either}/{len(results)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="one JSON object per case instead of the table")
    parser.add_argument("--no-trace", action="store_true", help="the static check only")
    parser.add_argument("--case", action="append", help="only this case (file stem); repeatable")
    parser.add_argument("--trace-timeout", type=float, default=300.0, help="seconds per traced run")
    args = parser.parse_args()
    paths = sorted(CASES.glob("*.py"))
    if args.case:
        paths = [path for path in paths if path.stem in args.case]
        if len(paths) != len(set(args.case)):
            raise SystemExit(f"no such case among {sorted(set(args.case) - {path.stem for path in paths})}")
    results = [measure(load_case(path), not args.no_trace, args.trace_timeout) for path in paths]
    if args.json:
        print(json.dumps([asdict(r) for r in results], indent=2))
    else:
        print_table(results)


if __name__ == "__main__":
    main()
