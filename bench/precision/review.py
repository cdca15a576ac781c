"""Lint real corpora and compare every finding with its hand-written verdict.

    python bench/precision/review.py torch=/path/to/site-packages/torch transformers=/path/to/transformers ...
    python bench/precision/review.py --select=GML3,GML4 mmengine=/path/to/mmengine ...   # some rules only

Each finding is keyed by (corpus, path inside the corpus, line, code) and looked up in
`verdicts.json` next to this script: "true" (the hazard is real), "harmless" (true as
stated, but no caller in the corpus observes it today) or "false" (the message's claim
is wrong, or the mutation is evidently the code's purpose), with the reason. The script
prints per-rule counts and the precision, and exits 1 when a finding has no verdict
(review it) or a verdict no longer matches a finding (the rule changed).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

VERDICTS = Path(__file__).with_name("verdicts.json")


def lint(corpus: str, root: Path, select: str | None) -> list[tuple[str, str, int, str, str]]:
    selection = ["--select", select] if select else []
    result = subprocess.run(
        [sys.executable, "-m", "gpumem_lint", str(root), "--output-format", "json", "-q", "--exit-zero", *selection],
        capture_output=True,
        text=True,
        check=True,
    )
    findings = []
    for item in json.loads(result.stdout):
        relative = Path(item["filename"]).resolve().relative_to(root.resolve()).as_posix()
        findings.append((corpus, relative, item["location"]["row"], item["code"], item["message"]))
    return findings


def main(arguments: list[str]) -> int:
    # `--select=GML3,GML4` reviews only those rules (corpora added for them need no other verdicts).
    select = next((a.split("=", 1)[1] for a in arguments if a.startswith("--select=")), None)
    corpora = dict(argument.split("=", 1) for argument in arguments if not argument.startswith("--"))
    prefixes = tuple(select.split(",")) if select else ("",)
    verdicts = {
        (v["corpus"], v["path"], v["line"], v["code"]): v
        for v in json.loads(VERDICTS.read_text())
        if v["corpus"] in corpora and v["code"].startswith(prefixes)
    }
    counts: Counter[tuple[str, str]] = Counter()
    unreviewed, seen = [], set()
    for corpus, root in corpora.items():
        for corpus_name, path, line, code, message in lint(corpus, Path(root), select):
            key = (corpus_name, path, line, code)
            seen.add(key)
            verdict = verdicts.get(key)
            if verdict is None:
                unreviewed.append(f"{corpus_name}:{path}:{line}: {code} {message}")
                continue
            counts[(code, verdict["verdict"])] += 1
    print(f"{'rule':8} {'findings':>8} {'true':>5} {'harmless':>8} {'false':>5}")
    for code in sorted({code for code, _ in counts}):
        true, harmless, false = (counts[(code, v)] for v in ("true", "harmless", "false"))
        print(f"{code:8} {true + harmless + false:8} {true:5} {harmless:8} {false:5}")
    total = sum(counts.values())
    false_total = sum(n for (_, verdict), n in counts.items() if verdict == "false")
    if total:
        print(f"false positives: {false_total}/{total} = {false_total / total:.1%}")
    stale = sorted(set(verdicts) - seen)
    for line in unreviewed:
        print("unreviewed:", line)
    for key in stale:
        print("stale verdict:", ":".join(map(str, key)))
    return 1 if unreviewed or stale else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
