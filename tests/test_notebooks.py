"""Jupyter notebooks, linted as ruff lints them: code cells in order as one program, IPython
syntax masked, findings at `path:cell N:row:col`, fixes written back into the cells only."""

from __future__ import annotations

import importlib.util
import io
import json
import sys
from pathlib import Path

import jsonschema
import pytest

from gpumem_lint.cli import main
from gpumem_lint.notebook import mask, read_notebook

SARIF_SCHEMA = Path(__file__).resolve().parent / "data" / "sarif-schema-2.1.0.json"


def code_cell(source: str, number: int, **extra) -> dict:
    return {
        "cell_type": "code",
        "execution_count": number,
        "id": f"cell-{number}",
        "metadata": {"tags": ["kept"]},
        "outputs": [{"name": "stdout", "output_type": "stream", "text": [f"out {number}\n"]}],
        "source": source.splitlines(keepends=True),
        **extra,
    }


def notebook(*sources: str) -> dict:
    """A markdown cell first (cell 1), then one code cell per source (cells 2, 3, ...)."""
    cells = [{"cell_type": "markdown", "id": "intro", "metadata": {}, "source": ["# Training\n"]}]
    cells += [code_cell(source, number) for number, source in enumerate(sources, start=2)]
    return {
        "cells": cells,
        "metadata": {"kernelspec": {"name": "python3"}, "language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def write(path: Path, document: dict) -> Path:
    path.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


IMPORTS = "import os\nimport numpy as np\nimport torch\n%matplotlib inline\n"
CUDA_CHECK = "device = 'cuda' if torch.cuda.is_available() else 'cpu'\n!nvidia-smi\nfiles = !ls"
LATE_ENV = "os.environ['CUDA_VISIBLE_DEVICES'] = '1'"
BRIDGE = "a = np.zeros(3)\nt = torch.from_numpy(a)\na[0] = 1\nprint(t)"
STALE_NOQA = "value = torch.zeros(3)  # noqa: GML107, E501"


@pytest.fixture(autouse=True)
def in_tmp(monkeypatch, tmp_path):
    for variable in ("GPUMEM_LINT_OUTPUT_FORMAT", "FORCE_COLOR", "NO_COLOR"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.chdir(tmp_path)


def run(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(["--no-cache", *args])
    out, err = capsys.readouterr()
    return exit_info.value.code or 0, out, err


def test_a_hazard_across_cells_is_reported_with_its_cell(capsys, tmp_path):
    write(tmp_path / "train.ipynb", notebook(IMPORTS, CUDA_CHECK, "%%bash\necho hi", "x = 1", LATE_ENV))
    code, out, _ = run(capsys, "--output-format", "concise", ".")
    assert code == 1
    assert out.splitlines()[0] == (
        "train.ipynb:cell 6:1:1: GML301 `CUDA_VISIBLE_DEVICES` set here is only half applied: the CUDA driver was "
        "initialised by `torch.cuda.is_available()` at cell 3, line 1"
    )


def test_ipython_syntax_is_masked_keeping_rows_and_blocks():
    source = "%load_ext autoreload\nfor x in y:\n    !echo $x\nfiles = !ls\nmodel?\nprint(1)\n"
    assert mask(source) == "pass\nfor x in y:\n    pass\nfiles = ...\npass\nprint(1)\n"
    assert mask("%%bash\necho hi\n") == "\n\n"
    assert mask("%%time\ntrain()\n") == "\ntrain()\n"
    # Colab forms put their `#@title` comments above the cell magic.
    assert mask("#@title Launch\n#@markdown Pick a model\n%%html\n<b>go</b>\n") == "\n\n\n\n"
    assert mask("# timed\n%%time\ntrain()\n") == "# timed\n\ntrain()\n"
    compile(mask(source), "cell", "exec")


def test_a_syntax_error_is_placed_in_its_cell(capsys, tmp_path):
    write(tmp_path / "nb.ipynb", notebook("x = 1", "def f(:\n    pass"))
    _, out, _ = run(capsys, "--output-format", "concise", "nb.ipynb")
    assert out.startswith("nb.ipynb:cell 3:1:7: GML001 invalid syntax\n")


def test_code_frame_quotes_the_cell(capsys, tmp_path):
    write(tmp_path / "nb.ipynb", notebook(IMPORTS, BRIDGE))
    _, out, _ = run(capsys, "nb.ipynb")
    assert out.startswith("nb.ipynb:cell 3:3:1: GML106 `a[0]` also changes `t` (read at line 4)")
    assert "3 | a[0] = 1\n  | ^^^^ GML106\n" in out


def test_noqa_works_per_line_in_a_cell(capsys, tmp_path):
    write(tmp_path / "nb.ipynb", notebook(IMPORTS, BRIDGE.replace("a[0] = 1", "a[0] = 1  # noqa: GML106")))
    code, out, _ = run(capsys, "--output-format", "concise", "nb.ipynb")
    assert (code, out) == (0, "All checks passed!\n")


def test_json_and_sarif_carry_the_cell(capsys, tmp_path):
    write(tmp_path / "nb.ipynb", notebook(IMPORTS, BRIDGE))
    _, out, _ = run(capsys, "--output-format", "json", "nb.ipynb")
    [finding] = json.loads(out)
    assert (finding["filename"], finding["cell"], finding["location"]) == ("nb.ipynb", 3, {"row": 3, "column": 1})
    assert finding["fix"]["edits"][0]["location"] == {"row": 2, "column": 24}
    _, out, _ = run(capsys, "--output-format", "sarif", "nb.ipynb")
    log = json.loads(out)
    jsonschema.validate(log, json.loads(SARIF_SCHEMA.read_text()))
    [result] = log["runs"][0]["results"]
    assert result["properties"] == {"cell": 3, "cellRegion": {"startLine": 3, "startColumn": 1}}
    region = result["locations"][0]["physicalLocation"]["region"]
    json_lines = (tmp_path / "nb.ipynb").read_text(encoding="utf-8").splitlines()
    # The region is in the notebook's JSON, where code scanning shows it: `a[0]` of `    "a[0] = 1\n",`.
    assert json_lines[region["startLine"] - 1] == '    "a[0] = 1\\n",'
    assert (region["startColumn"], region["endColumn"]) == (6, 10)


def test_fix_rewrites_only_the_changed_sources(capsys, tmp_path):
    document = notebook(IMPORTS, BRIDGE, STALE_NOQA, "%%bash\necho hi")
    path = write(tmp_path / "nb.ipynb", document)
    code, _, _ = run(capsys, "--fix", "--unsafe-fixes", "nb.ipynb")
    assert code == 0
    fixed = json.loads(path.read_text(encoding="utf-8"))
    expected = json.loads(json.dumps(document))
    expected["cells"][2]["source"][1] = "t = torch.from_numpy(a).clone()\n"
    expected["cells"][3]["source"] = ["value = torch.zeros(3)  # noqa: E501"]
    assert fixed == expected  # outputs, execution counts, metadata, ids and the other cells as they were
    assert path.read_text(encoding="utf-8").startswith('{\n "cells": [\n  {\n   "cell_type": "markdown",')


def test_diff_shows_each_changed_cell(capsys, tmp_path):
    path = write(tmp_path / "nb.ipynb", notebook(IMPORTS, STALE_NOQA))
    before = path.read_bytes()
    code, out, _ = run(capsys, "--diff", "nb.ipynb")
    assert code == 1
    assert out == (
        "--- nb.ipynb:cell 3\n+++ nb.ipynb:cell 3\n@@ -1 +1 @@\n"
        "-value = torch.zeros(3)  # noqa: GML107, E501\n+value = torch.zeros(3)  # noqa: E501\n"
    )
    assert path.read_bytes() == before


def test_add_noqa_comments_the_line_in_its_cell(capsys, tmp_path):
    path = write(tmp_path / "nb.ipynb", notebook(IMPORTS, BRIDGE))
    run(capsys, "--add-noqa", "nb.ipynb")
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    assert cells[2]["source"][2] == "a[0] = 1  # noqa: GML106\n"
    assert cells[1]["source"] == IMPORTS.splitlines(keepends=True)
    code, _, _ = run(capsys, "nb.ipynb")
    assert code == 0


def test_an_invalid_notebook_is_one_diagnostic(capsys, tmp_path):
    (tmp_path / "broken.ipynb").write_text('{"cells": [', encoding="utf-8")
    (tmp_path / "ok.py").write_text("x = 1\n", encoding="utf-8")
    code, out, _ = run(capsys, "--output-format", "concise", ".")
    assert code == 1
    assert out.startswith("broken.ipynb:1:1: GML003 not a notebook: invalid JSON")


def test_a_notebook_in_another_language_is_not_linted(capsys, tmp_path):
    document = notebook("def f(:")
    document["metadata"]["language_info"]["name"] = "julia"
    write(tmp_path / "julia.ipynb", document)
    code, _, _ = run(capsys, ".")
    assert code == 0


def test_a_notebook_on_standard_input(capsys, monkeypatch, tmp_path):
    data = json.dumps(notebook(IMPORTS, BRIDGE)).encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    code, out, _ = run(capsys, "-", "--stdin-filename", "nb.ipynb")
    assert code == 1
    assert out.startswith("nb.ipynb:cell 3:3:1: GML106 ")
    assert "3 | a[0] = 1\n" in out


def test_cells_map_rows_both_ways():
    document = read_notebook(json.dumps(notebook("a = 1\nb = 2", "", "c = 3")).encode())
    assert [cell.number for cell in document.cells] == [2, 3, 4]
    assert document.text == "a = 1\nb = 2\nc = 3\n"
    assert [(cell.number, row) for cell, row in map(document.cell_at, (1, 2, 3))] == [(2, 1), (2, 2), (4, 1)]
    assert document.first_row(4) == 3


def test_a_top_level_launch_in_a_notebook_is_not_an_unguarded_start(capsys, tmp_path):
    # The cells run in the kernel's `__main__`, which has no file for a spawn child to import again.
    launch = "import multiprocessing as mp\n\ndef child(x):\n    return x\n\nwith mp.Pool(2) as pool:\n    pool.map(child, [1])\n"
    write(tmp_path / "prepare.ipynb", notebook(launch))
    (tmp_path / "prepare.py").write_text(launch)
    _, out, _ = run(capsys, "--select", "GML211", "--output-format", "concise", ".")
    assert [line.split(":")[0] for line in out.splitlines() if "GML211" in line] == ["prepare.py"]


INDENTED_BRIDGE = "".join(f"    {line}\n" for line in BRIDGE.splitlines())


def test_a_cell_indented_as_a_whole_is_dedented_as_ipython_runs_it(capsys, tmp_path):
    path = write(tmp_path / "nb.ipynb", notebook(IMPORTS, INDENTED_BRIDGE))
    _, out, _ = run(capsys, "--output-format", "concise", "nb.ipynb")
    assert out.startswith("nb.ipynb:cell 3:3:5: GML106 `a[0]` also changes `t`")  # the column as written
    run(capsys, "--fix", "--unsafe-fixes", "nb.ipynb")
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    assert cells[2]["source"][1] == "    t = torch.from_numpy(a).clone()\n"  # written back indented
    run(capsys, "--add-noqa", str(write(tmp_path / "again.ipynb", notebook(IMPORTS, INDENTED_BRIDGE))))
    cells = json.loads((tmp_path / "again.ipynb").read_text(encoding="utf-8"))["cells"]
    assert cells[2]["source"][2] == "    a[0] = 1  # noqa: GML106\n"


def test_a_one_line_cell_automagic_runs_is_masked(capsys, tmp_path):
    write(tmp_path / "nb.ipynb", notebook(IMPORTS, "ls /content/checkpoints/", "cd ..", "pip install timm"))
    code, out, _ = run(capsys, "nb.ipynb")
    assert (code, out) == (0, "All checks passed!\n")
    # In a cell of two lines automagic is off, and Python's error stands.
    write(tmp_path / "nb.ipynb", notebook("x = 1\ncd .."))
    _, out, _ = run(capsys, "--output-format", "concise", "nb.ipynb")
    assert "nb.ipynb:cell 2:2:" in out and "GML001" in out


#: Cells whose IPython transforms the masking follows (compared with IPython itself below).
_TRANSFORMED_CELLS = (
    "    import os\n    x = 1\n",
    "\n\n  a = 1\n  if a:\n      b = 2\n",
    "\tcd ..\n",
    "ls /content/checkpoints/",
    "pip install timm",
    "ls = []\n",
    "x = 1\nls /tmp\n",
    "ls /tmp\n\n",
    "print(1)\n",
)


@pytest.mark.parametrize("source", _TRANSFORMED_CELLS)
def test_masking_agrees_with_ipython(source):
    shell = pytest.importorskip("IPython.core.interactiveshell").InteractiveShell.instance()
    ran = shell.transform_cell(source)
    masked = mask(source if source.endswith("\n") else source + "\n")
    if "run_line_magic(" in ran:
        assert masked.strip() == "pass"
    else:
        assert masked.lstrip("\n") == ran.lstrip("\n")


def test_the_line_magics_table_is_what_ipython_has():
    pytest.importorskip("IPython")
    script = Path(__file__).parents[1] / "scripts" / "generate_ipython_magics.py"
    spec = importlib.util.spec_from_file_location("generate_ipython_magics", script)
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    table = json.loads(generator.OUT_PATH.read_text(encoding="utf-8"))
    assert table["line_magics"] == generator.build_table()["line_magics"], (
        "ipython.json is stale: run `python scripts/generate_ipython_magics.py`"
    )
    assert table["automagic"]
