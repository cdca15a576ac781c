"""The bad-input battery: every odd file a real tree can hold gives a clear diagnostic or
the same findings as its plain twin, never a crash, and never stops the rest of a run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpumem_lint.cli import main
from gpumem_lint.engine import lint_bytes
from gpumem_lint.rules import ALL_RULES

# One GML103 finding at 7:9 (1-based); every layout variant below must keep it there.
HAZARD = """import torch

def smoothed(updates, decay):
    hidden = torch.zeros_like(updates[0])
    prev = hidden.detach()
    for u in updates:
        hidden.mul_(decay).add_(u)
    return hidden - prev
"""
FOUND = [(7, 9, "GML103")]


def inside_function(expression: str) -> bytes:
    """A deep expression where the analysis must walk it: in a function that writes in place."""
    return f"import torch\n\ndef f(t):\n    t.add_(1)\n    x = {expression}\n    return x\n".encode()


def findings(data: bytes) -> list[tuple[int, int, str]]:
    return [(d.start.row, d.start.column, d.code) for d in lint_bytes(data, "input.py", ALL_RULES)]


def messages(data: bytes) -> list[tuple[str, str]]:
    return [(d.code, d.message) for d in lint_bytes(data, "input.py", ALL_RULES)]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param(HAZARD.encode(), FOUND, id="plain"),
        pytest.param(b"\xef\xbb\xbf" + HAZARD.encode(), FOUND, id="utf-8 BOM"),
        pytest.param(HAZARD.replace("\n", "\r\n").encode(), FOUND, id="CRLF"),
        pytest.param(HAZARD.replace("\n", "\r").encode(), FOUND, id="CR only"),
        pytest.param(HAZARD.rstrip("\n").encode(), FOUND, id="no final newline"),
        pytest.param(
            HAZARD.replace("def ", "\fdef ").encode(),
            FOUND,
            id="form feed before a def",
        ),
        pytest.param(
            HAZARD.replace("    prev", "\f    prev").encode(),
            FOUND,
            id="form feed in indentation",
        ),
        pytest.param(
            b"# -*- coding: latin-1 -*-\n"
            + HAZARD.replace("import torch", "import torch  # caf\xe9").encode("latin-1"),
            [(8, 9, "GML103")],
            id="latin-1 cookie",
        ),
        pytest.param(
            # a codec a package registers at start-up (future-fstrings), over UTF-8 bytes
            b"# -*- coding: future_fstrings -*-\n" + HAZARD.encode(),
            [(8, 9, "GML103")],
            id="unknown codec cookie over UTF-8",
        ),
        pytest.param(
            HAZARD.replace("\n\n", "\n\n\t\n", 1).encode(),
            [(8, 9, "GML103")],
            id="stray tab on a blank line",
        ),
        pytest.param(b"#!/usr/bin/env python2\nprint 'usage: text2token.py'\n", [], id="a Python 2 script"),
        pytest.param(
            b"#!/usr/bin/python2.7\nimport torch\nx = torch.zeros(2)\nprint x.detach().add_(1)\n",
            [],
            id="a Python 2 script that names torch",
        ),
        pytest.param(b"", [], id="empty file"),
        pytest.param(b"\n\n# only a comment\n", [], id="only comments"),
        pytest.param(b"\xef\xbb\xbf", [], id="only a BOM"),
        pytest.param(
            (HAZARD + "BLOB = '''" + "x" * 10_000_000 + "'''\n").encode(),
            FOUND,
            id="10 MB file with a huge literal",
        ),
        pytest.param(inside_function("+".join(["t"] * 1000)), [], id="a thousand-term sum"),
        pytest.param(inside_function("t" + ".add(1)" * 300), [], id="a 300-call method chain"),
        pytest.param(
            inside_function("(" * 190 + "t" + ")" * 190),
            [],
            id="190 nested parentheses",
        ),
    ],
)
def test_odd_but_valid_files_give_the_findings_of_their_plain_twin(data, expected):
    assert findings(data) == expected


@pytest.mark.parametrize(
    ("data", "code", "fragment", "position"),
    [
        pytest.param(
            HAZARD.replace("    prev", "\tprev").encode(),
            "GML001",
            "tabs and spaces",
            (5, 1),
            id="mixed tabs",
        ),
        pytest.param(
            HAZARD.replace("(u)\n", "(u)\x00\n").encode(),
            "GML001",
            "null bytes",
            (1, 1),
            id="NUL",
        ),
        pytest.param(
            b"import torch\nname = '\xff\xfe'\n",
            "GML003",
            "cannot decode",
            (1, 1),
            id="not UTF-8",
        ),
        pytest.param(
            b"# coding: klingon\nimport torch\nname = '\xff\xfe'\n",
            "GML003",
            "unknown encoding",
            (1, 1),
            id="unknown cookie over bytes that are not UTF-8",
        ),
        pytest.param(
            b"#!/usr/bin/env python\nprint 'usage: text2token.py'\n",
            "GML001",
            "Missing parentheses",
            (2, 1),
            id="a Python 2 statement in a Python 3 script",
        ),
        pytest.param(
            b"import torch\ndef f(:\n",
            "GML001",
            "invalid syntax",
            (2, 7),
            id="syntax error",
        ),
        pytest.param(
            inside_function("[" * 600 + "]" * 600),
            "GML001",
            "too many nested parentheses",
            None,
            id="600 brackets",
        ),
        pytest.param(
            b"import torch\n" + b"".join(b" " * i + b"if t:\n" for i in range(120)) + b" " * 120 + b"pass\n",
            "GML001",
            "too many levels of indentation",
            None,
            id="120 nested blocks",
        ),
    ],
)
def test_files_python_refuses_are_one_clear_diagnostic(data, code, fragment, position):
    (diagnostic,) = lint_bytes(data, "input.py", ALL_RULES)
    assert diagnostic.code == code
    assert fragment in diagnostic.message
    if position is not None:
        assert (diagnostic.start.row, diagnostic.start.column) == position


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"import torch\ndef f(:\n", "invalid syntax"),
        (b"import torch\nx = torch.zeros(3\n", "'(' was never closed"),
        (b"x = 1\nif x\n    pass\n", "expected ':'"),
    ],
)
def test_invalid_syntax_is_reported_in_cpythons_words(data, message):
    (diagnostic,) = lint_bytes(data, "input.py", ALL_RULES)
    assert (diagnostic.code, diagnostic.message) == ("GML001", message)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\xff\xfe", "binary file, not Python source"),
        (b"\x7fELF\x02\x01\x01" + bytes(9) + b"\xe9\xff", "binary file, not Python source"),
        (b'name = "caf\xe9"\n', "cannot decode file as utf-8: byte 0xe9 on line 1"),
        (b'# coding: ascii\nx = 1\ny = "\xc3\xa9"\n', "cannot decode file as ascii: byte 0xc3 on line 3"),
    ],
)
def test_undecodable_files_say_why(data, message):
    (diagnostic,) = lint_bytes(data, "input.py", ALL_RULES)
    assert (diagnostic.code, diagnostic.message) == ("GML003", message)


def run(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(["--output-format", "concise", "--no-cache", *args])
    out, err = capsys.readouterr()
    return exit_info.value.code or 0, out, err


def test_paths_with_spaces_and_non_ascii_names(capsys, tree):
    directory = tree / "my project" / "données"
    directory.mkdir(parents=True)
    (directory / "modèle d'entraînement.py").write_text(HAZARD)
    code, out, _ = run(capsys, ".")
    assert code == 1
    assert out.splitlines()[0].startswith("my project/données/modèle d'entraînement.py:7:9: GML103 ")


def test_an_unreadable_file_is_reported_and_the_rest_still_linted(capsys, tree, monkeypatch):
    (tree / "a_locked.py").write_text("x = 1\n")
    (tree / "b_model.py").write_text(HAZARD)
    real_read_bytes = Path.read_bytes

    def read_bytes(path: Path) -> bytes:
        if path.name == "a_locked.py":
            raise PermissionError(13, "Permission denied", str(path))
        return real_read_bytes(path)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    code, out, _ = run(capsys, ".")
    lines = out.splitlines()
    assert code == 1
    assert lines[0] == "a_locked.py:1:1: GML003 cannot read file: Permission denied"
    assert lines[1].startswith("b_model.py:7:9: GML103 ")


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_dangling_and_looping_symlinks_do_not_stop_a_run(capsys, tree):
    (tree / "model.py").write_text(HAZARD)
    (tree / "dangling.py").symlink_to(tree / "missing.py")
    (tree / "loop").symlink_to(tree / "loop")
    (tree / "sub").mkdir()
    (tree / "sub" / "up").symlink_to(tree)
    code, out, _ = run(capsys, ".")
    assert code == 1
    findings = [line for line in out.splitlines() if line.count(":") >= 3]  # not the summary lines
    assert [line.split(":")[0] for line in findings] == ["model.py"]


def test_a_directory_named_like_a_python_file_is_walked(capsys, tree):
    (tree / "pkg.py").mkdir()
    (tree / "pkg.py" / "inner.py").write_text(HAZARD)
    code, out, _ = run(capsys, "pkg.py")
    assert code == 1
    assert out.startswith("pkg.py/inner.py:7:9: GML103 ")


def test_a_missing_path_exits_2_naming_it_and_the_other_files_are_still_reported(capsys, tree):
    (tree / "model.py").write_text(HAZARD)
    code, out, err = run(capsys, "--output-format", "concise", "model.py", "no/such/file.py")
    assert code == 2
    assert "gpumem-lint: error: no/such/file.py: no such file or directory" in err
    assert out.startswith("model.py:7:9: GML103 ")


def test_an_invalid_configuration_exits_2_naming_the_key(capsys, tree):
    (tree / "pyproject.toml").write_text('[tool.gpumem-lint]\nselect = ["GML1"]\nline-lenght = 3\n')
    (tree / "model.py").write_text(HAZARD)
    code, _, err = run(capsys, ".")
    assert code == 2
    assert "line-lenght" in err and "pyproject.toml" in err


def test_warnings_python_would_print_for_the_linted_code_are_not_printed(tree):
    (tree / "model.py").write_text(HAZARD + '\nKEY = "ab"[0, 1]\nassert (KEY, "never empty")\nX = 1 is 1\n')
    # A real process: pytest would capture warnings that a user's terminal would show.
    completed = subprocess.run(
        [sys.executable, "-m", "gpumem_lint", "--no-cache", "--output-format", "concise", "."],
        cwd=tree,
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 1
    assert completed.stdout.startswith("model.py:7:9: GML103 ")
    assert completed.stderr == ""
