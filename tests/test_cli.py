"""The command line as users and CI see it: exit codes, output formats, subcommands."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpumem_lint.cli import main
from gpumem_lint.docs import render_rule_page
from gpumem_lint.rules import ALL_RULES, RULES_BY_CODE

# No rule trigger (such as "torch") in it, so CPython reports the error: GML001 at 2:7 (1-based).
SYNTAX_ERROR = "x = 1\ndef f(:\n    pass\n"
UNDECODABLE = b'name = "caf\xe9"\n'  # Latin-1 byte in a UTF-8 file: GML003 at 1:1


@pytest.fixture(autouse=True)
def plain_environment(monkeypatch, tmp_path):
    for variable in ("FORCE_COLOR", "NO_COLOR", "GPUMEM_LINT_OUTPUT_FORMAT"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.chdir(tmp_path)


def run(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(list(args))
    out, err = capsys.readouterr()
    return exit_info.value.code or 0, out, err


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


def test_clean_tree_exits_0(capsys, tmp_path):
    write(tmp_path / "ok.py", "x = 1\n")
    code, out, _ = run(capsys)
    assert code == 0
    assert out == "All checks passed!\n"


def test_concise_lines_are_path_row_column_code_message(capsys, tmp_path):
    write(tmp_path / "bad.py", SYNTAX_ERROR)
    write(tmp_path / "latin.py", UNDECODABLE)
    code, out, _ = run(capsys, "--output-format", "concise", ".")
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith("bad.py:2:7: GML001 invalid syntax")
    assert lines[1].startswith("latin.py:1:1: GML003 cannot decode file")
    assert lines[2:] == ["Found 2 errors."]


@pytest.mark.parametrize("prefix", [[], ["check"]])
def test_check_subcommand_is_the_default(capsys, tmp_path, prefix):
    write(tmp_path / "bad.py", SYNTAX_ERROR)
    code, out, _ = run(capsys, *prefix, "--output-format=concise", "bad.py")
    assert code == 1
    assert out.startswith("bad.py:2:7: GML001 ")


def test_output_is_sorted_across_files(capsys, tmp_path):
    for name in ("b/z.py", "a.py", "b/a.py", "c.py"):
        write(tmp_path / name, SYNTAX_ERROR)
    code, out, _ = run(capsys, "--output-format", "concise", "-q", "c.py", "b", "a.py")
    assert code == 1
    assert [line.split(":")[0] for line in out.splitlines()] == ["a.py", "b/a.py", "b/z.py", "c.py"]


def test_quiet_prints_only_findings(capsys, tmp_path):
    write(tmp_path / "bad.py", SYNTAX_ERROR)
    _, out, _ = run(capsys, "-q", "--output-format", "concise")
    assert len(out.splitlines()) == 1
    assert "Found" not in out


def test_full_format_shows_frame_caret_and_help(capsys, tmp_path):
    write(tmp_path / "bad.py", SYNTAX_ERROR)
    code, out, _ = run(capsys, "bad.py")
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith("bad.py:2:7: GML001 ")
    source_line = lines.index("2 | def f(:")
    caret_line = lines[source_line + 1]
    # The caret sits under column 7 of the source text, which starts after "2 | ".
    assert caret_line.index("^") - len("2 | ") == 6
    assert caret_line.endswith("^ GML001")
    assert f"help: {RULES_BY_CODE['GML001'].fix_title}" in lines
    assert lines[-1] == "Found 1 error."


def test_full_format_without_readable_source_skips_the_frame(capsys, tmp_path):
    write(tmp_path / "latin.py", UNDECODABLE)
    _, out, _ = run(capsys, "latin.py")
    assert " | " not in out
    assert f"help: {RULES_BY_CODE['GML003'].fix_title}" in out


def test_output_format_from_environment(capsys, tmp_path, monkeypatch):
    write(tmp_path / "bad.py", SYNTAX_ERROR)
    monkeypatch.setenv("GPUMEM_LINT_OUTPUT_FORMAT", "json")
    _, out, _ = run(capsys, "bad.py")
    assert json.loads(out)[0]["code"] == "GML001"


def test_output_file_receives_the_report(capsys, tmp_path):
    write(tmp_path / "bad.py", SYNTAX_ERROR)
    code, out, _ = run(capsys, "--output-format", "concise", "-o", "report.txt", "bad.py")
    assert code == 1
    assert out == ""
    report = (tmp_path / "report.txt").read_text()
    assert report.startswith("bad.py:2:7: GML001 ")
    assert "\x1b[" not in report


def test_statistics_counts_by_rule(capsys, tmp_path):
    write(tmp_path / "a.py", SYNTAX_ERROR)
    write(tmp_path / "b.py", SYNTAX_ERROR)
    write(tmp_path / "c.py", UNDECODABLE)
    code, out, _ = run(capsys, "--statistics")
    assert code == 1
    assert [line.split() for line in out.splitlines()] == [
        ["2", "GML001", "invalid-syntax"],
        ["1", "GML003", "unreadable-file"],
    ]


def test_exit_zero_with_findings(capsys, tmp_path):
    write(tmp_path / "bad.py", SYNTAX_ERROR)
    code, out, _ = run(capsys, "--exit-zero", "bad.py")
    assert code == 0
    assert "GML001" in out


@pytest.mark.parametrize(
    ("options", "expected_codes"),
    [
        (["--ignore", "GML001"], ["GML003"]),
        (["--select", "GML003"], ["GML003"]),
        (["--select", "GML001,GML003"], ["GML001", "GML003"]),
        (["--select", "GML001", "--select", "GML003"], ["GML001", "GML003"]),
        (["--select", "GML003", "--extend-select", "GML001"], ["GML001", "GML003"]),
        (["--select", "GML0", "--ignore", "GML001"], ["GML003"]),
    ],
)
def test_selection_options(capsys, tmp_path, options, expected_codes):
    write(tmp_path / "bad.py", SYNTAX_ERROR)
    write(tmp_path / "latin.py", UNDECODABLE)
    _, out, _ = run(capsys, "--output-format", "json", *options)
    assert sorted({finding["code"] for finding in json.loads(out)}) == expected_codes


@pytest.mark.parametrize("selector", ["GML999", "gml001", "XYZ", "GM"])
def test_unknown_selector_exits_2_naming_it(capsys, tmp_path, selector):
    write(tmp_path / "ok.py", "x = 1\n")
    code, _, err = run(capsys, "--select", selector, "--exit-zero")
    assert code == 2
    assert f"gpumem-lint: error: command line: unknown rule selector '{selector}'" in err


def test_missing_path_exits_2_naming_it(capsys):
    code, _, err = run(capsys, "no/such/file.py")
    assert code == 2
    assert "gpumem-lint: error: no/such/file.py: no such file or directory" in err


def test_bad_option_value_exits_2(capsys):
    code, _, _ = run(capsys, "--output-format", "xml")
    assert code == 2


def test_no_python_files_exits_0_with_a_warning(capsys, tmp_path):
    (tmp_path / "empty").mkdir()
    code, _, err = run(capsys, "empty")
    assert code == 0
    assert "No Python files found" in err


def test_internal_error_exits_2_not_1(capsys, monkeypatch):
    def explode(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr("gpumem_lint.check_command.discover_files", explode)
    code, _, err = run(capsys, ".")
    assert code == 2
    assert "gpumem-lint: error: internal error: RuntimeError('boom')" in err


def test_version(capsys):
    code, out, _ = run(capsys, "--version")
    assert code == 0
    assert out.startswith("gpumem-lint ")


def test_rule_prints_its_page(capsys):
    code, out, _ = run(capsys, "rule", "GML001")
    assert code == 0
    assert out == render_rule_page(RULES_BY_CODE["GML001"])


def test_unknown_rule_code_exits_2(capsys):
    code, _, err = run(capsys, "rule", "GML999")
    assert code == 2
    assert "GML999" in err


def test_rules_json_lists_every_rule(capsys):
    code, out, _ = run(capsys, "rules", "--output-format", "json")
    assert code == 0
    entries = json.loads(out)
    assert [entry["code"] for entry in entries] == [rule.code for rule in ALL_RULES]
    for entry in entries:
        assert set(entry) == {"code", "name", "severity", "summary", "fix_title", "fix", "explanation"}
        assert entry["explanation"] == render_rule_page(RULES_BY_CODE[entry["code"]])
        assert entry["fix"] in ("safe", "unsafe", None)
    fixes = {entry["code"]: entry["fix"] for entry in entries}
    assert (fixes["GML001"], fixes["GML002"], fixes["GML106"]) == (None, "safe", "unsafe")


def test_rules_table_names_every_rule(capsys):
    code, out, _ = run(capsys, "rules")
    assert code == 0
    for rule in ALL_RULES:
        assert rule.code in out


def test_console_script_entry_point(tmp_path):
    write(tmp_path / "bad.py", SYNTAX_ERROR)
    result = subprocess.run(
        [sys.executable, "-m", "gpumem_lint", "--output-format", "concise", "bad.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1
    assert result.stdout.startswith("bad.py:2:7: GML001 ")


@pytest.mark.parametrize(("arguments", "code"), [(["bad.py"], 1), (["--select", "NOPE", "bad.py"], 2), (["ok.py"], 0)])
def test_the_program_exits_without_teardown_yet_says_everything(tmp_path, arguments, code):
    """`gpumem-lint` skips the interpreter's teardown (cli._exit_now): the report is still whole, and the exit code kept."""
    write(tmp_path / "bad.py", SYNTAX_ERROR)
    write(tmp_path / "ok.py", "x = 1\n")
    result = subprocess.run(
        [sys.executable, "-m", "gpumem_lint", "--output-format", "json", *arguments],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == code
    if code == 1:
        assert [d["code"] for d in json.loads(result.stdout)] == ["GML001"]  # flushed before the exit
    if code == 2:
        assert "unknown rule selector 'NOPE'" in result.stderr


def test_a_run_never_imports_pydantic(tmp_path):
    """typer 0.29 made every run import pydantic (74 ms of a 0.28 s start-up); pyproject.toml keeps typer below it."""
    write(tmp_path / "a.py", "import torch\nx = torch.zeros(3)\nx.add_(1)\n")
    probe = (
        "import sys\n"
        "from gpumem_lint.cli import main\n"
        "try:\n"
        "    main(['check', '--no-cache', 'a.py'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(name for name in sys.modules if name.split('.')[0] in ('pydantic', 'pydantic_core')))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert result.stdout.strip().splitlines()[-1] == "[]"
