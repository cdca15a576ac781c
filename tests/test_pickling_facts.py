"""GML212 against the installed torch: each program hands a callable to another process; it is run
(under fork or spawn) and linted, and the rule must flag it exactly when the run failed to pickle it,
naming the error the run raised. Needs torch (CPU is enough)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor

import pytest

from gpumem_lint.engine import lint_path
from gpumem_lint.rules import RULES_BY_CODE

pytest.importorskip("torch")

_PROGRAM = """\
import json
import multiprocessing as mp
from concurrent.futures import ProcessPoolExecutor

import torch.multiprocessing as tmp
from torch.utils.data import DataLoader

{module_level}

def main():
{body}

if __name__ == "__main__":
    try:
        main()
        outcome = "ok"
    except Exception as error:
        outcome = type(error).__name__
    print(json.dumps(outcome))
"""

_LOADER = "list(DataLoader(list(range(4)), batch_size=2, num_workers=1, {argument}, multiprocessing_context={method!r}))"
_INIT = "def init(worker_id):\n    pass\n"

# name -> (module-level code, the body of main())
CASES = {
    f"{name} under {method}": (module_level, body.format(method=method))
    for name, module_level, body, methods in [
        ("a lambda collate_fn", "", _LOADER.replace("{argument}", "collate_fn=lambda b: b"), ("fork", "spawn")),
        ("a nested worker_init_fn", "", _INIT + _LOADER.replace("{argument}", "worker_init_fn=init"), ("fork", "spawn")),
        (
            "a lambda Process target",
            "",
            "p = mp.get_context({method!r}).Process(target=lambda: None)\np.start()\np.join()",
            ("fork", "spawn"),
        ),
        ("a lambda Pool task", "", "with mp.get_context({method!r}).Pool(1) as pool:\n    pool.map(lambda x: x, [1])", ("fork",)),
        (
            "a module-level lambda Pool task",
            "square = lambda x: x * x",
            "with mp.get_context({method!r}).Pool(1) as pool:\n    pool.map(square, [1])",
            ("fork",),
        ),
        (
            "a nested executor task",
            "",
            "def task(x):\n    return x\nwith ProcessPoolExecutor(1, mp_context=mp.get_context({method!r})) as ex:\n"
            "    ex.submit(task, 1).result()",
            ("fork",),
        ),
        ("a lambda to torch.multiprocessing.spawn", "", "tmp.spawn(lambda rank: None, nprocs=1)", ("spawn",)),
    ]
    for method in methods
}


def _program(name: str) -> str:
    module_level, body = CASES[name]
    return _PROGRAM.format(module_level=module_level, body=textwrap.indent(body, "    "))


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    root = tmp_path_factory.mktemp("pickling")

    def run(name: str) -> str:
        path = root / f"{abs(hash(name))}.py"
        path.write_text(_program(name))
        result = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=240, cwd=root)
        lines = result.stdout.strip().splitlines()
        return json.loads(lines[-1]) if lines else f"exit {result.returncode}: {result.stderr[-300:]}"

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(CASES, pool.map(run, CASES)))


@pytest.mark.parametrize("name", CASES)
def test_flagged_exactly_when_pickling_failed(name: str, outcomes, tmp_path):
    outcome = outcomes[name]
    assert outcome in ("ok", "AttributeError", "PicklingError"), outcome
    source = tmp_path / "program.py"
    source.write_text(_program(name))
    messages = [d.message for d in lint_path(source, str(source), [RULES_BY_CODE["GML212"]])]
    if outcome == "ok":
        assert not messages, messages
    else:
        assert len(messages) == 1 and f"`{outcome}" in messages[0], (outcome, messages)


def test_the_runs_fail_where_the_rule_page_says(outcomes):
    assert outcomes["a lambda collate_fn under fork"] == "ok"
    assert outcomes["a lambda collate_fn under spawn"] == "AttributeError"
    assert outcomes["a lambda Pool task under fork"] == "AttributeError"
