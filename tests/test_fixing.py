"""`--fix`, `--unsafe-fixes`, `--diff`, `--add-noqa`, standard input, and the promises behind
them: fixed files parse, a second run changes nothing, `# noqa` lines are left alone, files
keep their encoding and mode."""

from __future__ import annotations

import io
import os
import shutil
import stat
import sys
from pathlib import Path

import pytest

from gpumem_lint.autofix import fix_source, parses, write_fixed
from gpumem_lint.cli import main
from gpumem_lint.diagnostics import Applicability, Diagnostic, Edit, Fix, Position, Severity
from gpumem_lint.fixes import apply_fixes
from gpumem_lint.rules import ALL_RULES

REPO = Path(__file__).resolve().parent.parent

# GML106 offers an unsafe fix (`.copy()` after `t.numpy()`); GML002 a safe one (drop the code).
BRIDGE = """import torch

def augment(path):
    t = torch.load(path)
    original = t.numpy(){comment}
    t.mul_(2)
    return original.mean(), t.mean()
"""
STALE_NOQA = "import torch\n\nvalue = torch.zeros(3)  # noqa: GML107, E501\n"


@pytest.fixture(autouse=True)
def in_tmp(monkeypatch, tmp_path):
    for variable in ("GPUMEM_LINT_OUTPUT_FORMAT", "FORCE_COLOR", "NO_COLOR"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.chdir(tmp_path)


def run(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(["--no-cache", *args])
    out, err = capsys.readouterr()
    return exit_info.value.code, out, err


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(path.relative_to(root)): path.read_bytes() for path in sorted(root.rglob("*.py"))}


def test_fixing_every_fixture_leaves_parseable_files_and_is_idempotent(capsys, tmp_path):
    for name in ("hazards", "safe", "demo_project"):
        shutil.copytree(REPO / "fixtures" / name, tmp_path / name)
    original = snapshot(tmp_path)
    _, out, _ = run(capsys, "--fix", "--unsafe-fixes", "--output-format", "concise", "--select", "ALL", ".")
    fixed = snapshot(tmp_path)
    assert fixed != original, "the fixtures hold fixable findings"
    assert " fixed, " in out.splitlines()[-2] + out.splitlines()[-1]
    for name, data in fixed.items():
        assert parses(data.decode(), name), name
    _, out, _ = run(capsys, "--fix", "--unsafe-fixes", "--output-format", "concise", "--select", "ALL", ".")
    assert snapshot(tmp_path) == fixed
    assert " fixed, " not in out.splitlines()[-2] + out.splitlines()[-1]  # the summary: nothing fixed this time


def test_a_write_locked_by_an_import_moves_above_that_import(capsys, tmp_path):
    """train.py sets CUDA_VISIBLE_DEVICES after `from common import ...`, whose module-level code
    initialised CUDA: the write (an `if` holding only it) moves above that import."""
    shutil.copytree(REPO / "fixtures" / "hazards" / "env_project", tmp_path / "env_project")
    run(capsys, "--fix", "--unsafe-fixes", "--select", "GML301", "env_project")
    lines = (tmp_path / "env_project" / "train.py").read_text(encoding="utf-8").splitlines()
    write = lines.index('    os.environ["CUDA_VISIBLE_DEVICES"] = sys.argv[1]  # expect: GML301')
    assert lines[write - 1] == "if len(sys.argv) > 1:"
    assert write < lines.index("from common import BATCH_SIZE, DEVICE")
    code, _, _ = run(capsys, "--select", "GML301", "env_project")
    assert code == 0


@pytest.mark.parametrize(
    ("source", "options", "expected"),
    [
        pytest.param(STALE_NOQA, ["--fix"], STALE_NOQA.replace("GML107, E501", "E501"), id="safe fix"),
        pytest.param(BRIDGE.format(comment=""), ["--fix"], BRIDGE.format(comment=""), id="unsafe needs the option"),
        pytest.param(
            BRIDGE.format(comment=""),
            ["--fix", "--unsafe-fixes"],
            BRIDGE.format(comment="").replace("numpy()", "numpy().copy()"),
            id="unsafe fix",
        ),
        pytest.param(
            BRIDGE.format(comment="  # noqa: E501"),
            ["--fix", "--unsafe-fixes"],
            BRIDGE.format(comment="  # noqa: E501"),
            id="a noqa line is not touched",
        ),
    ],
)
def test_fix_writes_what_the_tier_allows(capsys, tmp_path, source, options, expected):
    (tmp_path / "a.py").write_text(source)
    run(capsys, *options, "a.py")
    assert (tmp_path / "a.py").read_text() == expected


@pytest.mark.parametrize(
    ("options", "expected_code"),
    [
        (["--fix"], 0),
        (["--fix", "--exit-non-zero-on-fix"], 1),
        (["--fix", "--exit-zero", "--exit-non-zero-on-fix"], 0),
        ([], 1),
    ],
)
def test_exit_code_after_fixing_everything(capsys, tmp_path, options, expected_code):
    (tmp_path / "a.py").write_text(STALE_NOQA)
    code, out, _ = run(capsys, *options, "a.py")
    assert code == expected_code
    if options:
        assert out.splitlines()[-1] == "Found 1 warning (1 fixed, 0 remaining)." or "--exit-zero" in options


def test_summary_counts_fixable_and_hidden_fixes(capsys, tmp_path):
    (tmp_path / "a.py").write_text(BRIDGE.format(comment="") + STALE_NOQA.replace("import torch\n\n", ""))
    _, out, _ = run(capsys, "--output-format", "concise", "a.py")
    assert out.splitlines()[-2:] == [
        "Found 2 warnings.",
        "[*] 1 fixable with the `--fix` option (1 hidden fix can be enabled with the `--unsafe-fixes` option).",
    ]
    assert " GML002 [*] unused" in out and " GML106 [*]" not in out


def test_summary_counts_errors_and_warnings_apart(capsys, tmp_path):
    (tmp_path / "a.py").write_text(STALE_NOQA)  # GML002 is a warning
    (tmp_path / "b.py").write_text("def f(:\n")  # GML001 an error
    _, out, _ = run(capsys, "--output-format", "concise", ".")
    assert "Found 1 error and 1 warning." in out.splitlines()


def test_diff_with_safe_and_unsafe_fixes_mentions_the_unsafe_ones(capsys, tmp_path):
    (tmp_path / "a.py").write_text(BRIDGE.format(comment="") + STALE_NOQA.replace("import torch\n\n", ""))
    code, _, err = run(capsys, "--diff", "a.py")
    assert code == 1
    assert "Would fix 1 warning (1 more fix with `--unsafe-fixes`)." in err
    _, _, err = run(capsys, "--diff", "--unsafe-fixes", "a.py")
    assert "Would fix 2 warnings." in err


def test_show_fixes_lists_what_was_fixed(capsys, tmp_path):
    (tmp_path / "a.py").write_text(STALE_NOQA)
    _, out, _ = run(capsys, "--fix", "--show-fixes", "a.py")
    assert "Fixed 1 warning:\n- a.py:\n    1 × GML002 (unused-suppression)\n" in out


def test_diff_prints_the_change_and_leaves_the_file(capsys, tmp_path):
    (tmp_path / "a.py").write_text(BRIDGE.format(comment=""))
    code, out, err = run(capsys, "--diff", "--unsafe-fixes", "a.py")
    assert code == 1
    assert (tmp_path / "a.py").read_text() == BRIDGE.format(comment="")
    assert "--- a.py\n+++ a.py\n" in out
    assert "-    original = t.numpy()\n+    original = t.numpy().copy()\n" in out
    assert "Would fix 1 warning." in err
    code, out, err = run(capsys, "--diff", "a.py")  # the only fix is unsafe
    assert (code, out) == (0, "")
    assert "Nothing would be fixed (1 more fix with `--unsafe-fixes`)." in err


def test_fix_keeps_encoding_bom_line_ends_and_mode(capsys, tmp_path):
    source = STALE_NOQA.replace("import torch\n", "# -*- coding: latin-1 -*-\nimport torch\nname = 'café'\n")
    latin = tmp_path / "latin.py"
    latin.write_bytes(source.replace("\n", "\r\n").encode("latin-1"))
    latin.chmod(0o750)
    bom = tmp_path / "bom.py"
    bom.write_bytes(b"\xef\xbb\xbf" + STALE_NOQA.encode())
    run(capsys, "--fix", ".")
    assert latin.read_bytes() == source.replace(", E501", "").replace("GML107", "E501").replace("\n", "\r\n").encode(
        "latin-1"
    )
    assert stat.S_IMODE(latin.stat().st_mode) == 0o750
    assert bom.read_bytes() == b"\xef\xbb\xbf" + STALE_NOQA.replace("GML107, E501", "E501").encode()
    assert [path.name for path in tmp_path.iterdir() if path.suffix == ".tmp"] == []


def test_fix_refuses_a_read_only_file_and_still_reports_it(capsys, tmp_path):
    source = tmp_path / "a.py"
    source.write_text(STALE_NOQA)
    source.chmod(0o444)
    code, out, err = run(capsys, "--fix", "--output-format", "concise", ".")
    assert code == 2
    assert "gpumem-lint: error: a.py: cannot write the fixes: the file is read-only" in err
    assert out.startswith("a.py:3:25: GML002 ")
    assert source.read_text() == STALE_NOQA
    assert stat.S_IMODE(source.stat().st_mode) == 0o444


needs_root = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="changes owners: needs root")
NOBODY = 65534


@needs_root
def test_fix_keeps_the_owner_of_a_file_it_may_write(capsys, tmp_path):
    source = tmp_path / "a.py"
    source.write_text(STALE_NOQA)
    source.chmod(0o666)
    os.chown(source, NOBODY, NOBODY)
    run(capsys, "--fix", ".")
    assert source.read_text() == STALE_NOQA.replace("GML107, E501", "E501")
    assert (source.stat().st_uid, source.stat().st_gid) == (NOBODY, NOBODY)


@needs_root
def test_another_user_cannot_have_a_file_it_may_not_write_replaced(tmp_path):
    """In a world-writable directory anyone may replace a file by renaming; --fix must not."""
    tmp_path.chmod(0o777)
    source = tmp_path / "a.py"
    source.write_text(STALE_NOQA)
    source.chmod(0o644)
    child = os.fork()
    if child == 0:  # the other user
        status = 1
        try:
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            write_fixed(source, b"changed\n")
        except PermissionError:
            status = 0
        finally:
            os._exit(status)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert source.read_text() == STALE_NOQA
    assert source.stat().st_uid == 0


def test_stdin_is_linted_under_its_given_name(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(STALE_NOQA.encode())))
    code, out, _ = run(capsys, "-", "--stdin-filename", "pkg/mod.py", "--output-format", "concise")
    assert code == 1
    assert out.startswith("pkg/mod.py:3:25: GML002 ")


def test_stdin_fix_prints_the_fixed_source_and_reports_on_stderr(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(STALE_NOQA.encode())))
    code, out, err = run(capsys, "--fix", "--stdin-filename", "mod.py")
    assert code == 0
    assert out == STALE_NOQA.replace("GML107, E501", "E501")
    assert "Found 1 warning (1 fixed, 0 remaining)." in err


def test_stdin_fix_passes_undecodable_input_through_unchanged(capsysbinary, monkeypatch):
    data = b'import torch\nname = "caf\xe9"\n'  # Latin-1 in a UTF-8 file: GML003, nothing to fix
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    with pytest.raises(SystemExit) as exit_info:
        main(["--no-cache", "--fix", "--output-format", "concise", "-"])
    out, err = capsysbinary.readouterr()
    assert exit_info.value.code == 1
    assert out == data
    assert err.startswith(b"-:1:1: GML003 ")


def test_add_noqa_silences_every_finding_once(capsys, tmp_path):
    shutil.copytree(REPO / "fixtures" / "demo_project", tmp_path / "demo_project")
    _, before, _ = run(capsys, "--select", "ALL", "--output-format", "concise", "-q", ".")
    rows = {line.split(": ")[0].rsplit(":", 1)[0] for line in before.splitlines()}
    code, _, err = run(capsys, "--add-noqa", "--select", "ALL", ".")
    assert code == 0
    assert err.strip() == f"Added {len(rows)} noqa directives."
    for name, data in snapshot(tmp_path).items():
        assert parses(data.decode(), name), name
    code, out, _ = run(capsys, "--select", "ALL", "--output-format", "concise", ".")
    assert (code, out) == (0, "All checks passed!\n")
    _, _, err = run(capsys, "--add-noqa", "--select", "ALL", ".")
    assert err.strip() == "Added 0 noqa directives."


def test_add_noqa_never_puts_a_comment_after_a_line_continuation(capsys, tmp_path):
    source = BRIDGE.format(comment="").replace("t.mul_(2)", "t.mul_(2 \\\n           )")
    (tmp_path / "a.py").write_text(source)
    run(capsys, "--add-noqa", "a.py")
    assert (tmp_path / "a.py").read_text() == source.replace("           )", "           )  # noqa: GML106")
    code, _, _ = run(capsys, "a.py")
    assert code == 0


SNAPSHOT = """{imports}
def fit(model, optimizer, loader, epochs):
    best_state, best_loss = None, float("inf")
    for epoch in range(epochs):
        loss = train_one_epoch(model, loader, optimizer)
        if loss < best_loss:
            best_loss, best_state = loss, model.state_dict()
    model.load_state_dict(best_state)
"""


@pytest.mark.parametrize(
    ("imports", "fixed_imports", "call"),
    [
        pytest.param(
            "import argparse\nimport time\n",
            "import argparse\nimport copy\nimport time\n",
            "copy.deepcopy",
            id="sorted into the first block",
        ),
        pytest.param("import argparse\n", "import argparse\nimport copy\n", "copy.deepcopy", id="after the block"),
        pytest.param("import copy\n", "import copy\n", "copy.deepcopy", id="already imported"),
        pytest.param("from copy import deepcopy\n", "from copy import deepcopy\n", "deepcopy", id="deepcopy imported"),
        pytest.param(
            '"""Doc."""\nfrom __future__ import annotations\n',
            '"""Doc."""\nfrom __future__ import annotations\n\nimport copy\n',
            "copy.deepcopy",
            id="after docstring and __future__",
        ),
    ],
)
def test_state_dict_snapshot_fix_imports_copy_where_isort_would(imports, fixed_imports, call):
    outcome = fix_source(SNAPSHOT.format(imports=imports), "a.py", ALL_RULES, unsafe=True)
    expected = SNAPSHOT.format(imports=fixed_imports).replace("model.state_dict()", f"{call}(model.state_dict())")
    assert outcome.text == expected


def diagnostic(code: str, fix: Fix | None) -> Diagnostic:
    start = fix.edits[0].start if fix else Position(1, 1)
    return Diagnostic("a.py", start, start, code, "name", "message", None, Severity.ERROR, fix)


def edit(row: int, start: int, end: int, content: str) -> Edit:
    return Edit(Position(row, start), Position(row, end), content)


@pytest.mark.parametrize(
    ("fixes", "expected_text", "applied"),
    [
        pytest.param([[edit(1, 1, 2, "X")], [edit(1, 3, 4, "Y")]], "XbYd\n", 2, id="independent"),
        pytest.param([[edit(1, 1, 3, "X")], [edit(1, 2, 4, "Y")]], "Xcd\n", 1, id="overlap waits"),
        pytest.param([[edit(1, 2, 2, "X")], [edit(1, 2, 2, "Y")]], "aXbcd\n", 1, id="same insertion point waits"),
        pytest.param(
            [[edit(1, 1, 2, "X"), edit(1, 4, 5, "Z")], [edit(1, 3, 5, "Y")]], "XbcZ\n", 1, id="one fix, two edits"
        ),
        pytest.param([[edit(1, 1, 2, "X")], [edit(1, 2, 3, "Y")]], "XYcd\n", 2, id="adjacent"),
    ],
)
def test_apply_fixes_never_applies_colliding_edits(fixes, expected_text, applied):
    diagnostics = [diagnostic("GML999", Fix(tuple(edits), Applicability.SAFE)) for edits in fixes]
    result = apply_fixes("abcd\n", diagnostics, unsafe=False)
    assert (result.text, len(result.fixed)) == (expected_text, applied)


@pytest.mark.parametrize("arguments", [["-"], ["-", "--stdin-filename", "model.py"]])
def test_stdin_code_frame_quotes_the_text_linted_not_the_file_on_disk(capsys, monkeypatch, tmp_path, arguments):
    (tmp_path / "model.py").write_text("# an older version on disk\n" * 5)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(STALE_NOQA.encode())))
    code, out, _ = run(capsys, *arguments)
    assert code == 1
    assert "3 | value = torch.zeros(3)  # noqa: GML107, E501\n" in out
    assert "older version" not in out


def test_a_form_feed_above_does_not_move_a_statement_fix():
    """Python counts rows at \\n and \\r only; a fix that rebuilds its statement's line must too."""
    from gpumem_lint.autofix import fix_source
    from gpumem_lint.rules import ALL_RULES

    source = "x = [1,\x0c 2]\nimport torch\n\nw = torch.zeros(3, requires_grad=True)\nw.add_(1)\n"
    outcome = fix_source(source, "example.py", ALL_RULES, unsafe=True)
    assert outcome.broken == ()
    assert outcome.text.endswith("with torch.no_grad():\n    w.add_(1)\n")


_FORM_FEED_LINE = "x = 1  \x0c  # a form feed inside a row\n"


@pytest.mark.parametrize(
    "example",
    [
        example
        for rule in ALL_RULES
        for example in rule.INVALID
        if example.fixed is not None and example.code.startswith("\nimport")
    ],
    ids=lambda example: example.code.strip().splitlines()[-1][:40],
)
def test_fixes_count_rows_as_python_does(example):
    """A form feed is inside a row for Python and libcst, a line break for str.splitlines: a fix that
    moved or indented rows by splitlines edited the wrong ones (found by test_generated_programs)."""
    source = _FORM_FEED_LINE + example.code
    fixed = fix_source(source, "example.py", ALL_RULES, unsafe=True)
    assert not fixed.broken
    assert fixed.text == _FORM_FEED_LINE + example.fixed


def test_an_env_fix_reads_dotted_imports_of_other_modules():
    """`import urllib.request` beside `import os` (opacus's tutorials): no internal error, and the
    late write moves above the CUDA allocation."""
    source = (
        "import urllib.request\nimport os\n\nimport torch\n\n"
        'model = torch.nn.Linear(2, 2).to("cuda")\nos.environ["CUDA_LAUNCH_BLOCKING"] = "1"\n'
    )
    fixed = fix_source(source, "tutorial.py", ALL_RULES, unsafe=True)
    assert not fixed.broken
    assert fixed.text == (
        "import urllib.request\nimport os\n\nimport torch\n\n"
        'os.environ["CUDA_LAUNCH_BLOCKING"] = "1"\nmodel = torch.nn.Linear(2, 2).to("cuda")\n'
    )
