"""A file that shows no trigger word of its rules is answered without the rules or libcst
(gpumem_lint/untriggered.py), with what the engine would report, and a run of such files
imports neither libcst nor typer nor rich."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpumem_lint import untriggered
from gpumem_lint.engine import lint_bytes
from gpumem_lint.rules import ALL_CODES, RULES_BY_CODE

ROOT = Path(__file__).resolve().parent.parent
GENERATOR = ROOT / "scripts" / "generate_rule_triggers.py"

SOURCES = {
    "clean": b"x = 1\n",
    "syntax error": b"def f(:\n    pass\n",
    "unclosed bracket": b"values = [1,\n  2\n",
    "NUL byte": b"x = 1\x00\n",
    "not UTF-8": b"x = '\xff'\n",
    "binary": b"\x00\x01\x02",
    "BOM and cookie": b"\xef\xbb\xbf# -*- coding: utf-8 -*-\nx = 1\n",
    "latin-1 cookie": b"# -*- coding: latin-1 -*-\nx = '\xe9'\n",
    "unknown cookie": b"# -*- coding: klingon -*-\nx = 1\n",
    "deep nesting": b"x = " + b"(" * 300 + b")" * 300 + b"\n",
    "noqa comment": b"x = 1  # noqa: GML107\n",
    "trigger word": b"import torch\nx = torch.zeros(3)\nx.add_(1)\n",
    "trigger in a string": b"s = 'torch'\ndef f(:\n",
}


def test_the_table_is_the_rules_own():
    spec = importlib.util.spec_from_file_location("generate_rule_triggers", GENERATOR)
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    assert untriggered.rule_table() == generator.table(), (
        "gpumem_lint/rule_triggers.json is stale; run `python scripts/generate_rule_triggers.py`"
    )
    assert list(untriggered.rule_table()) == list(ALL_CODES)


@pytest.mark.parametrize("codes", [ALL_CODES, ("GML001",), ("GML002", "GML003"), ("GML103", "GML301")], ids=str)
@pytest.mark.parametrize("name", list(SOURCES))
def test_an_answer_is_what_the_engine_reports(name, codes):
    data = SOURCES[name]
    found = untriggered.answer(data, "f.py", codes)
    if found is None:  # left to the engine: a rule may flag it
        rules = [RULES_BY_CODE[code] for code in codes]
        assert any(word in data.decode("utf-8", "replace") for rule in rules for word in (*rule.triggers, "noqa"))
        return
    assert found == lint_bytes(data, "f.py", [RULES_BY_CODE[code] for code in codes])


def test_the_engine_gets_files_with_a_trigger_or_a_noqa_comment():
    assert untriggered.answer(SOURCES["trigger word"], "f.py", ALL_CODES) is None
    assert untriggered.answer(SOURCES["noqa comment"], "f.py", ALL_CODES) is None
    # Without GML002, nothing judges the comment, and the rules' words are what counts.
    assert untriggered.answer(SOURCES["noqa comment"], "f.py", ("GML001", "GML107")) == []
    # A word only the unselected rules wait for does not wake the selected ones.
    assert untriggered.answer(b"import multiprocessing\n", "f.py", ("GML101",)) == []
    assert untriggered.answer(b"import multiprocessing\n", "f.py", ("GML201",)) is None
    # A rule added since the table was written: its words are not known here.
    assert untriggered.answer(b"x = 1\n", "f.py", ("GML001", "GML999")) is None


def _modules_loaded(tmp_path: Path, arguments: list[str]) -> tuple[int, list[str], str]:
    """Exit code, which of libcst/typer/rich/pathspec a run imported, and its stdout."""
    probe = (
        "import sys\n"
        "from gpumem_lint.cli import main\n"
        "try:\n"
        f"    main({arguments!r})\n"
        "except SystemExit as done:\n"
        "    code = done.code\n"
        "heavy = ('libcst', 'typer', 'rich', 'pathspec')\n"
        "print(code, sorted(name for name in sys.modules if name in heavy))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, check=False)
    *report, last = result.stdout.strip().splitlines()
    code, loaded = last.split(" ", 1)
    return int(code), json.loads(loaded.replace("'", '"')), "\n".join(report)


def test_a_clean_run_imports_neither_libcst_nor_typer_nor_rich(tmp_path):
    (tmp_path / "tiny.py").write_text("x = 1\n")
    assert _modules_loaded(tmp_path, ["--no-cache", "-q", "tiny.py"]) == (0, [], "")
    # The pre-commit hook's form: the cache, --force-exclude, the summary.
    code, loaded, report = _modules_loaded(tmp_path, ["check", "--force-exclude", "tiny.py"])
    assert (code, report) == (0, "All checks passed!")
    assert "libcst" not in loaded and "typer" not in loaded and "rich" not in loaded


def test_a_syntax_error_is_reported_without_libcst(tmp_path):
    (tmp_path / "bad.py").write_text("def f(:\n    pass\n")
    code, loaded, report = _modules_loaded(tmp_path, ["--no-cache", "--output-format", "concise", "bad.py"])
    assert (code, report.splitlines()[0]) == (1, "bad.py:1:7: GML001 invalid syntax")
    assert "libcst" not in loaded and "typer" not in loaded


def test_a_file_a_rule_may_flag_is_linted_with_libcst(tmp_path):
    (tmp_path / "hazard.py").write_text("import torch\n\nx = torch.zeros(3)\ny = x.numpy()\nx.add_(1)\nprint(y)\n")
    code, loaded, report = _modules_loaded(tmp_path, ["--no-cache", "--output-format", "concise", "hazard.py"])
    assert code == 1 and "GML106" in report
    assert "libcst" in loaded


def test_options_the_quick_parser_does_not_know_go_to_typer(tmp_path):
    (tmp_path / "tiny.py").write_text("x = 1\n")
    code, loaded, _ = _modules_loaded(tmp_path, ["--no-cache", "--statistics", "tiny.py"])
    assert code == 0 and "typer" in loaded
    code, loaded, _ = _modules_loaded(tmp_path, ["--no-cache", "--output-format", "xml", "tiny.py"])
    assert code == 2 and "typer" in loaded  # typer's own message names the choices


QUICK_FORMS = [
    ["--no-cache", "-q", "tiny.py"],
    ["check", "--force-exclude", "tiny.py"],
    ["--no-cache", "bad.py", "tiny.py"],
    ["--no-cache", "--output-format", "concise", "bad.py", "hazard.py"],
    ["--no-cache", "--output-format=json", "hazard.py"],
    ["--no-cache", "--output-format", "sarif", "tiny.py"],
    ["--no-cache", "-e", "--select", "GML1", "--ignore=GML103", "hazard.py"],
    ["--no-cache", "--extend-select", "GML002", "--select", "GML001,GML106", "hazard.py"],
    ["--no-cache", "--select", "NOPE", "tiny.py"],
    ["--no-cache", "missing.py", "tiny.py"],
    ["--no-cache", "--config", "other.toml", "tiny.py"],
    ["--no-cache", "empty"],
    ["--cache-dir", "elsewhere", "-q", "hazard.py", "tiny.py"],
    [],
]


@pytest.mark.parametrize("arguments", QUICK_FORMS, ids=" ".join)
def test_the_quick_parser_answers_as_typer_does(tmp_path, monkeypatch, capsys, arguments):
    """`cli.main` parses the common forms of `check` without typer: the same output and exit code."""
    from gpumem_lint import cli

    monkeypatch.chdir(tmp_path)
    for variable in ("GPUMEM_LINT_OUTPUT_FORMAT", "GPUMEM_LINT_CACHE_DIR"):
        monkeypatch.delenv(variable, raising=False)
    (tmp_path / "tiny.py").write_text("x = 1\n")
    (tmp_path / "bad.py").write_text("def f(:\n")
    (tmp_path / "hazard.py").write_text("import torch\n\nx = torch.zeros(3)\ny = x.numpy()\nx.add_(1)\nprint(y)\n")
    (tmp_path / "empty").mkdir()

    real, answered = cli._quick_check, []

    def outcome(quick: bool) -> tuple[object, str, str]:
        def recording(arguments):
            answered.append(real(arguments) if quick else None)
            return answered[-1]

        monkeypatch.setattr(cli, "_quick_check", recording)
        with pytest.raises(SystemExit) as done:
            cli.main(list(arguments))
        out, err = capsys.readouterr()
        return done.value.code, out, err

    quick, typer_run = outcome(True), outcome(False)
    assert answered[0] is not None  # the quick parser took this command line
    assert quick == typer_run
