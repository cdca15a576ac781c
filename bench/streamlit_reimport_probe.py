"""Measure what a spawn child sees when it re-imports a Streamlit page (docs/facts.md F44).

Run with a Python that has streamlit (not a dependency of gpumem-lint):

    python bench/streamlit_reimport_probe.py > bench/streamlit_reimport_probe.json

Three measurements, each in a fresh interpreter:
- `child_widgets`: the page's widget calls, made again in a spawn child that re-imports the page as
  `__mp_main__` (no ScriptRunContext there): what each returns;
- `guarded_launch`: the page run by Streamlit's own ScriptRunner (`streamlit.testing.v1.AppTest`),
  its button clicked, starts a spawn `Process` under `if st.button(...)`: the child re-imports the
  page (the ScriptRunner made it `sys.modules["__main__"]`, with its `__file__`) and exits 0;
- `unguarded_launch`: the same launch under `if True:`: the child re-runs it, fails with the
  bootstrapping `RuntimeError` and exits 1.

`gpumem_lint/knowledge/processes.toml` [reimport_defaults] lists the widgets whose default is falsy;
tests/test_reimport_defaults.py checks the table against this output.
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

WIDGETS = {
    "button": 'st.button("b")',
    "form_submit_button": None,  # needs a form: made below
    "download_button": 'st.download_button("d", data=b"x")',
    "checkbox": 'st.checkbox("c")',
    "toggle": 'st.toggle("t")',
    "file_uploader": 'st.file_uploader("f")',
    "camera_input": 'st.camera_input("ca")',
    "chat_input": 'st.chat_input("ch")',
    "text_input": 'st.text_input("ti")',
    "text_area": 'st.text_area("ta")',
    "checkbox(value=True)": 'st.checkbox("c2", value=True)',
    "sidebar.button": 'st.sidebar.button("sb")',
    "columns()[0].button": 'st.columns(2)[0].button("cb")',
}

CHILD_PAGE = """
import multiprocessing as mp
import sys

import streamlit as st


def values():
    found = {{}}
{calls}
    with st.form("form"):
        found["form_submit_button"] = st.form_submit_button("go")
    return found


if __name__ == "__mp_main__":  # the spawn child re-importing this page
    sys.stderr.write("CHILD " + repr(values()) + "\\n")


def noop(x):
    return x


if __name__ == "__main__":
    with mp.get_context("spawn").Pool(1) as pool:
        pool.map(noop, [0])
"""

LAUNCH_PAGE = """
import multiprocessing as mp
import os

import streamlit as st


def work():
    pass


if {guard}:
    child = mp.get_context("spawn").Process(target=work)
    child.start()
    child.join(120)
    st.write(f"exitcode={{child.exitcode}}")
"""

DRIVER = """
import json
from streamlit.testing.v1 import AppTest

at = AppTest.from_file({page!r}, default_timeout=120).run()
if at.button:
    at.button[0].click().run()
print(json.dumps({{"markdown": [m.value for m in at.markdown], "exception": [e.value for e in at.exception]}}))
"""


def _run(directory: Path, code: str) -> subprocess.CompletedProcess:
    script = directory / "driver.py"
    script.write_text(code, encoding="utf-8")
    return subprocess.run([sys.executable, str(script)], cwd=directory, capture_output=True, text=True, timeout=300)


def child_widgets(directory: Path) -> dict:
    calls = "\n".join(f"    found[{name!r}] = {call}" for name, call in WIDGETS.items() if call)
    page = directory / "child_page.py"
    page.write_text(CHILD_PAGE.format(calls=calls), encoding="utf-8")
    done = subprocess.run([sys.executable, str(page)], cwd=directory, capture_output=True, text=True, timeout=300)
    line = next(line for line in done.stderr.splitlines() if line.startswith("CHILD "))
    values = eval(line[len("CHILD ") :])  # a repr of bools, None and strings
    return {name: repr(value) for name, value in values.items()}


def launch(directory: Path, guard: str) -> dict:
    page = directory / "launch_page.py"
    page.write_text(LAUNCH_PAGE.format(guard=guard), encoding="utf-8")
    done = _run(directory, DRIVER.format(page=str(page)))
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["child_bootstrap_error"] = "bootstrapping phase" in done.stderr
    return result


def main() -> None:
    import streamlit

    with tempfile.TemporaryDirectory() as name:
        directory = Path(name)
        report = {
            "streamlit": streamlit.__version__,
            "python": platform.python_version(),
            "platform": platform.system(),
            "child_widgets": child_widgets(directory),
            "guarded_launch": launch(directory, 'st.button("Run")'),
            "unguarded_launch": launch(directory, "True"),
        }
    print(json.dumps(report, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
