"""A launch under an `if` whose test is falsy in a re-importing child is not re-run there (F44):
the table (`processes.toml` [reimport_defaults]) against the probe's measurement, and GML211 on the
forms it knows and their look-alikes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpumem_lint.engine import lint_source
from gpumem_lint.rules.gml211_unguarded_process_start import UnguardedProcessStart
from gpumem_lint.semantic.reimport import reimport_defaults

ROOT = Path(__file__).resolve().parent.parent
MEASURED = json.loads((ROOT / "bench" / "streamlit_reimport_probe.json").read_text(encoding="utf-8"))


def test_every_widget_default_is_the_measured_one():
    widgets = reimport_defaults().widgets
    child = MEASURED["child_widgets"]
    assert {name: widget.default for name, widget in widgets.items()} == {name: child[name] for name in widgets}
    assert child["checkbox(value=True)"] == "True"  # why an argument that sets the default is `given`
    # on a container too: the same widget methods
    assert child["sidebar.button"] == child["columns()[0].button"] == "False"


def test_the_probe_saw_the_launch_re_run_only_when_unguarded():
    assert MEASURED["guarded_launch"]["markdown"] == ["exitcode=0"]
    assert not MEASURED["guarded_launch"]["child_bootstrap_error"]
    assert MEASURED["unguarded_launch"]["markdown"] == ["exitcode=1"]
    assert MEASURED["unguarded_launch"]["child_bootstrap_error"]


HEAD = """
import multiprocessing as mp

import streamlit as st

def work(x):
    return x * 2

"""
LAUNCH = "    with mp.get_context('spawn').Pool(2) as pool:\n        pool.map(work, range(4))\n"


def _reported(setup: str) -> bool:
    source = HEAD + setup + LAUNCH
    return bool(lint_source(source, "page.py", [UnguardedProcessStart]))


@pytest.mark.parametrize(
    "setup",
    [
        "if st.button('Run'):\n",
        "if st.sidebar.button('Run'):\n",
        "tab1, tab2 = st.tabs(['a', 'b'])\nif tab1.form_submit_button('Run'):\n",
        "form = st.form('f')\ngo = form.form_submit_button('Run')\nif go and True:\n",
        "upload = st.file_uploader('data')\nif upload is not None:\n",
        "text = st.text_input('prompt')\nif text:\n",
        "a = st.button('a')\nb = st.checkbox('b')\nif a or b:\n",
        "if True:\n    go = st.button('Run')\nelse:\n    go = st.button('Again')\nif go:\n",
    ],
)
def test_a_launch_under_a_widget_default_is_not_reported(setup: str):
    assert not _reported(setup)


@pytest.mark.parametrize(
    "setup",
    [
        "if True:\n",
        "if st.checkbox('Run', value=True):\n",
        "if st.toggle('Run', True):\n",
        "if st.selectbox('mode', ['run', 'stop']):\n",  # its default is the first option
        "upload = st.file_uploader('data', accept_multiple_files=True)\nif upload is not None:\n",  # []
        "go = st.button('Run')\ngo = True\nif go:\n",  # another binding
        "go = st.button('Run')\nif not go:\n",
        "a = st.button('a')\nif a or True:\n",
        "if gui.button('Run'):\n",  # not Streamlit
        "col = make_column()\nif col.button('Run'):\n",  # not a Streamlit container
        "def run():\n    global go\n    go = True\n\ngo = st.button('Run')\nif go:\n",
    ],
)
def test_a_launch_under_anything_else_is_reported(setup: str):
    assert _reported(setup)


def test_the_probe_measures_again_where_streamlit_is_installed(tmp_path: Path):
    pytest.importorskip("streamlit")
    import importlib.util

    spec = importlib.util.spec_from_file_location("probe", ROOT / "bench" / "streamlit_reimport_probe.py")
    probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)
    child = probe.child_widgets(tmp_path)
    assert {name: child[name] for name in reimport_defaults().widgets} == {
        name: widget.default for name, widget in reimport_defaults().widgets.items()
    }


def test_a_function_that_launches_called_under_a_nested_widget_guard_is_not_reported():
    # the form of a Streamlit page seen in a real project: the launch in a function, its call under two `if`s
    source = HEAD + (
        "def submit():\n"
        "    with mp.get_context('spawn').Pool(2) as pool:\n"
        "        return pool.map(work, range(4))\n\n"
        "col1, col2 = st.columns((10, 6))\n"
        "use_yaml = col1.toggle('yaml', value=True)\n"
        "if use_yaml:\n"
        "    uploaded = col1.file_uploader('config')\n"
        "    if uploaded is not None:\n"
        "        submitted = col1.button('Run')\n"
        "        if submitted:\n"
        "            submit()\n"
        "else:\n"
        "    submitted = col1.button('Run')\n"
        "    if submitted:\n"
        "        submit()\n"
        "submit()\n"  # unguarded: still reported
    )
    rows = [d.start.row for d in lint_source(source, "page.py", [UnguardedProcessStart])]
    assert rows == [source.count("\n")]


PROGRAM = """
import multiprocessing as mp

def work():
    pass

if {guard}:
    child = mp.get_context("{method}").Process(target=work)
    child.start()
    child.join()
    print(child.exitcode)
"""


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
@pytest.mark.parametrize(
    "guard, rerun",
    [('mp.current_process().name == "MainProcess"', False), ("mp.parent_process() is None", True)],
)
def test_f47_a_re_importing_child_has_its_own_name_but_no_parent_yet(tmp_path: Path, method: str, guard: str, rerun):
    import subprocess
    import sys

    program = tmp_path / "program.py"
    program.write_text(PROGRAM.format(guard=guard, method=method), encoding="utf-8")
    done = subprocess.run([sys.executable, str(program)], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == ("1" if rerun else "0")  # a child that re-runs the launch fails
    assert ("bootstrapping phase" in done.stderr) == rerun
    reported = lint_source(program.read_text(encoding="utf-8"), "program.py", [UnguardedProcessStart])
    assert bool(reported) == rerun
