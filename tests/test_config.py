"""Configuration: where it is found, how it is checked, how it merges with the CLI, and
how rule selectors resolve (ruff's semantics: later layers and more specific selectors win)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gpumem_lint.cli import main
from gpumem_lint.config import CliOverrides, ConfigError, SelectorLayer, load_settings
from gpumem_lint.rules import ALL_RULES
from gpumem_lint.selection import RuleSelection, resolve_codes

ALL_CODES = {rule.code for rule in ALL_RULES}
SYNTAX_ERROR = "def f(:\n    pass\n"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def pyproject(directory: Path, body: str) -> Path:
    return write(directory / "pyproject.toml", f"[tool.gpumem-lint]\n{body}\n")


def codes(settings) -> set[str]:
    return set(RuleSelection.from_settings(settings).codes)


def test_nearest_pyproject_with_the_table_is_used(tmp_path):
    pyproject(tmp_path / "proj", 'select = ["GML001"]')
    # A pyproject.toml without the table is passed over, as ruff does.
    write(tmp_path / "proj/src/pyproject.toml", "[project]\nname = 'x'\n")
    write(tmp_path / "proj/src/pkg/mod.py", "x = 1\n")
    settings = load_settings(["src/pkg/mod.py"], CliOverrides(), cwd=tmp_path / "proj")
    assert settings.config_file == tmp_path / "proj/pyproject.toml"
    assert settings.project_root == tmp_path / "proj"
    assert codes(settings) == {"GML001"}


def test_search_starts_at_the_first_path_not_the_cwd(tmp_path):
    pyproject(tmp_path / "other", 'ignore = ["GML001"]')
    write(tmp_path / "other/a.py", "x = 1\n")
    settings = load_settings(["other/a.py"], CliOverrides(), cwd=tmp_path)
    assert settings.config_file == tmp_path / "other/pyproject.toml"


def test_without_configuration_every_rule_runs_from_the_cwd(tmp_path):
    settings = load_settings([], CliOverrides(), cwd=tmp_path)
    assert settings.config_file is None
    assert settings.project_root == tmp_path
    assert codes(settings) == ALL_CODES


def test_explicit_config_file(tmp_path):
    config = pyproject(tmp_path / "conf", 'select = ["GML003"]')
    pyproject(tmp_path, 'select = ["GML001"]')
    settings = load_settings(["."], CliOverrides(), config_file=config, cwd=tmp_path)
    assert codes(settings) == {"GML003"}


def test_explicit_config_file_must_exist(tmp_path):
    with pytest.raises(ConfigError, match="missing.toml: configuration file not found"):
        load_settings(["."], CliOverrides(), config_file=tmp_path / "missing.toml", cwd=tmp_path)


def test_unknown_key_is_named_with_the_file(tmp_path):
    pyproject(tmp_path, 'selec = ["GML001"]')
    with pytest.raises(ConfigError) as error:
        load_settings(["."], CliOverrides(), cwd=tmp_path)
    assert str(error.value) == ("pyproject.toml: unknown key 'selec' in [tool.gpumem-lint] (did you mean 'select'?)")


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('select = "GML001"', "'select' in [tool.gpumem-lint] must be a list of strings, got a string"),
        ("ignore = [1]", "'ignore' in [tool.gpumem-lint] must be a list of strings"),
        ("extend-exclude = true", "'extend-exclude' in [tool.gpumem-lint] must be a list of strings"),
        ('per-file-ignores = ["x"]', "'per-file-ignores' in [tool.gpumem-lint] must be a table"),
        ('per-file-ignores = {"tests/*" = "GML001"}', "per-file-ignores entry 'tests/*'"),
        ('target-version = "3.13"', "'target-version' in [tool.gpumem-lint] must be a string such as \"py313\""),
        ("target-version = 313", "'target-version' in [tool.gpumem-lint] must be a string such as"),
    ],
)
def test_value_of_the_wrong_type_is_named_with_the_file(tmp_path, body, expected):
    pyproject(tmp_path, body)
    with pytest.raises(ConfigError) as error:
        load_settings(["."], CliOverrides(), cwd=tmp_path)
    assert str(error.value).startswith("pyproject.toml: ")
    assert expected in str(error.value)


def test_invalid_toml_is_a_config_error(tmp_path):
    write(tmp_path / "pyproject.toml", "[tool.gpumem-lint\n")
    with pytest.raises(ConfigError, match="pyproject.toml: invalid TOML"):
        load_settings(["."], CliOverrides(), cwd=tmp_path)


def test_unknown_selector_in_the_file_names_it_and_the_file(tmp_path):
    pyproject(tmp_path, 'ignore = ["GML0O1"]')
    settings = load_settings(["."], CliOverrides(), cwd=tmp_path)
    with pytest.raises(ConfigError) as error:
        RuleSelection.from_settings(settings)
    assert str(error.value) == "pyproject.toml [tool.gpumem-lint]: unknown rule selector 'GML0O1'"


def test_config_error_exits_2_on_the_command_line(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    pyproject(tmp_path, "select = 3")
    with pytest.raises(SystemExit) as exit_info:
        main(["--exit-zero", "."])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.startswith("gpumem-lint: error: pyproject.toml: 'select'")


@pytest.mark.parametrize(
    ("file", "cli", "expected"),
    [
        # The CLI's select replaces the file's.
        (SelectorLayer("file", select=("GML003",)), SelectorLayer("cli", select=("GML001",)), {"GML001"}),
        # The CLI's extend-select adds to the file's select.
        (
            SelectorLayer("file", select=("GML003",)),
            SelectorLayer("cli", extend_select=("GML001",)),
            {"GML001", "GML003"},
        ),
        # A later layer can re-enable what an earlier one ignored, and vice versa.
        (SelectorLayer("file", ignore=("GML001",)), SelectorLayer("cli", extend_select=("GML001",)), ALL_CODES),
        (SelectorLayer("file", select=("ALL",)), SelectorLayer("cli", ignore=("GML001",)), ALL_CODES - {"GML001"}),
    ],
)
def test_cli_layer_beats_file_layer(file, cli, expected):
    assert set(resolve_codes([file, cli])) == expected


@pytest.mark.parametrize(
    ("select", "ignore", "expected"),
    [
        (None, (), ALL_CODES),
        (("ALL",), ("GML001",), ALL_CODES - {"GML001"}),
        (("GML",), ("GML001",), ALL_CODES - {"GML001"}),
        # More specific beats less specific, whichever of select and ignore it is.
        (("GML001",), ("GML",), {"GML001"}),
        (("GML001", "GML003"), ("GML0",), {"GML001", "GML003"}),
        # At equal specificity, ignore wins.
        (("GML001",), ("GML001",), set()),
    ],
)
def test_selector_specificity(select, ignore, expected):
    layer = SelectorLayer("test", select=select, ignore=ignore)
    assert set(resolve_codes([layer])) == expected


def test_cli_options_override_the_file(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    pyproject(tmp_path, 'select = ["GML003"]')
    write(tmp_path / "bad.py", SYNTAX_ERROR)
    with pytest.raises(SystemExit) as exit_info:
        main(["--output-format", "json", "--select", "GML001"])
    assert exit_info.value.code == 1
    assert [finding["code"] for finding in json.loads(capsys.readouterr().out)] == ["GML001"]


def test_per_file_ignores(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    pyproject(
        tmp_path,
        '[tool.gpumem-lint.per-file-ignores]\n"tests/*.py" = ["GML001"]\n"conftest.py" = ["GML0"]\n',
    )
    for name in ("tests/bad.py", "src/bad.py", "src/deep/conftest.py", "tests/sub/bad.py"):
        write(tmp_path / name, SYNTAX_ERROR)
    with pytest.raises(SystemExit):
        main(["--output-format", "json"])
    reported = [finding["filename"] for finding in json.loads(capsys.readouterr().out)]
    # "tests/*.py" is anchored at the project root; "conftest.py" has no '/' so matches any basename.
    assert reported == ["src/bad.py", "tests/sub/bad.py"]


def test_per_file_ignores_are_relative_to_the_project_root(tmp_path):
    pyproject(tmp_path, '[tool.gpumem-lint.per-file-ignores]\n"pkg/gen.py" = ["ALL"]\n')
    settings = load_settings(["."], CliOverrides(), cwd=tmp_path / "pkg")
    selection = RuleSelection.from_settings(settings)
    assert selection.codes_for(tmp_path / "pkg/gen.py") == ()
    assert selection.codes_for(tmp_path / "pkg/other.py") == selection.codes


def test_settings_are_frozen(tmp_path):
    settings = load_settings(["."], CliOverrides(), cwd=tmp_path)
    with pytest.raises(AttributeError):
        settings.force_exclude = True


def test_extend_reads_the_base_first_and_the_extending_file_wins(tmp_path):
    pyproject(tmp_path, 'select = ["GML1", "GML3"]\nignore = ["GML107"]\nextend-exclude = ["legacy_*.py"]')
    (tmp_path / "pkg").mkdir()
    pyproject(tmp_path / "pkg", 'extend = "../pyproject.toml"\nextend-select = ["GML001"]\nignore = ["GML301"]')
    settings = load_settings(["."], CliOverrides(), cwd=tmp_path / "pkg")
    assert settings.project_root == tmp_path / "pkg"
    codes = RuleSelection.from_settings(settings).codes
    assert "GML001" in codes and "GML101" in codes and "GML302" in codes
    assert "GML107" not in codes and "GML301" not in codes and "GML201" not in codes
    assert settings.exclude[-1] == "legacy_*.py"


def test_extend_keeps_the_bases_paths_meaning_paths_under_it(tmp_path):
    (tmp_path / "gpumem-lint.toml").write_text(
        'extend-exclude = ["pkg/generated/", "other/"]\n[per-file-ignores]\n"pkg/tests/*.py" = ["ALL"]\n'
    )
    (tmp_path / "pkg").mkdir()
    pyproject(tmp_path / "pkg", 'extend = "../gpumem-lint.toml"')
    settings = load_settings(["."], CliOverrides(), cwd=tmp_path / "pkg")
    assert settings.exclude[-2:] == ("/generated/", "other/")
    selection = RuleSelection.from_settings(settings)
    assert selection.codes_for(tmp_path / "pkg/tests/test_a.py") == ()
    assert selection.codes_for(tmp_path / "pkg/src/a.py") == selection.codes


@pytest.mark.parametrize(
    ("extend", "message"),
    [
        ('"missing.toml"', "'extend' names missing.toml, which does not exist"),
        ('"pyproject.toml"', "'extend' makes a cycle"),
        ("3", "'extend' in [tool.gpumem-lint] must be a path"),
    ],
)
def test_bad_extend_is_a_config_error(tmp_path, extend, message):
    pyproject(tmp_path, f"extend = {extend}")
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_settings(["."], CliOverrides(), cwd=tmp_path)
