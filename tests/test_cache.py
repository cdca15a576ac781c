"""The result cache: what it stores where, and when an entry may not be used."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gpumem_lint import runner, untriggered
from gpumem_lint.cache import Cache, content_hash
from gpumem_lint.cli import main
from gpumem_lint.diagnostics import Applicability, Diagnostic, Edit, Fix, Position, Severity
from gpumem_lint.rules import RULES_BY_CODE

HAZARD = """import torch

def augment(path):
    t = torch.load(path)
    original = t.numpy()
    t.mul_(2)
    return original.mean(), t.mean()
"""


@pytest.fixture(autouse=True)
def in_tmp(monkeypatch, tmp_path):
    for variable in ("GPUMEM_LINT_OUTPUT_FORMAT", "GPUMEM_LINT_CACHE_DIR"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(HAZARD)
    (tmp_path / "b.py").write_text("x = 1\n")


@pytest.fixture
def linted(monkeypatch) -> list[str]:
    """The display paths linted run after run: by the engine, or answered without it (`untriggered`)."""
    calls: list[str] = []
    real, real_answer = runner._run_job, untriggered.answer

    def counting(work):
        calls.append(work[0].display)
        return real(work)

    def answering(data, display, codes):
        found = real_answer(data, display, codes)
        if found is not None:
            calls.append(display)
        return found

    monkeypatch.setattr(runner, "_run_job", counting)
    monkeypatch.setattr(untriggered, "answer", answering)
    return calls


def run(capsys, *args: str) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(["--output-format", "json", *args])
    return exit_info.value.code, capsys.readouterr().out


def test_a_warm_run_lints_nothing_and_reports_the_same(capsys, linted):
    cold = run(capsys, ".")
    assert sorted(linted) == ["a.py", "b.py"]
    warm = run(capsys, ".")
    assert warm == cold
    assert sorted(linted) == ["a.py", "b.py"]


def test_cache_directory_is_tagged_and_ignores_itself(capsys, tmp_path):
    run(capsys, ".")
    directory = tmp_path / ".gpumem_lint_cache"
    assert (directory / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    assert (directory / ".gitignore").read_text().splitlines()[-1] == "*"


@pytest.mark.parametrize(
    ("change", "options", "relinted"),
    [
        pytest.param(lambda: Path("b.py").write_text("y = 2\n"), [], ["b.py"], id="edited file"),
        pytest.param(lambda: Path("b.py").touch(), [], [], id="touched, same content"),
        pytest.param(lambda: None, ["--select", "GML1"], ["a.py", "b.py"], id="other rules selected"),
    ],
)
def test_an_entry_is_used_only_for_the_same_content_and_rules(capsys, linted, change, options, relinted):
    run(capsys, ".")
    linted.clear()
    change()
    run(capsys, *options, ".")
    assert sorted(linted) == relinted


def test_no_cache_neither_reads_nor_writes(capsys, tmp_path, linted):
    run(capsys, "--no-cache", ".")
    run(capsys, "--no-cache", ".")
    assert not (tmp_path / ".gpumem_lint_cache").exists()
    assert len(linted) == 4


@pytest.mark.parametrize("how", ["option", "environment"])
def test_cache_dir_moves_the_cache(capsys, tmp_path, monkeypatch, how):
    elsewhere = tmp_path / "elsewhere"
    if how == "option":
        run(capsys, "--cache-dir", str(elsewhere), ".")
    else:
        monkeypatch.setenv("GPUMEM_LINT_CACHE_DIR", str(elsewhere))
        run(capsys, ".")
    assert (elsewhere / "CACHEDIR.TAG").is_file()
    assert not (tmp_path / ".gpumem_lint_cache").exists()


def test_clean_removes_the_cache(capsys, tmp_path):
    run(capsys, ".")
    with pytest.raises(SystemExit) as exit_info:
        main(["clean"])
    assert exit_info.value.code in (0, None)
    assert not (tmp_path / ".gpumem_lint_cache").exists()


def test_a_damaged_cache_is_ignored(capsys, tmp_path, linted):
    cold = run(capsys, ".")
    for results in (tmp_path / ".gpumem_lint_cache").rglob("*.json"):
        results.write_text('{"' + str(tmp_path / "a.py") + '": {"hash": 1}}')
    assert run(capsys, ".") == cold
    assert "a.py" in linted[2:]


def finding() -> Diagnostic:
    fix = Fix((Edit(Position(5, 25), Position(5, 25), ".copy()"),), Applicability.UNSAFE, "Append `.copy()`")
    return Diagnostic("a.py", Position(6, 5), Position(6, 14), "GML106", "n", "m", "h", Severity.WARNING, fix)


def test_an_entry_is_stale_when_a_dependency_changes(tmp_path):
    dependency = tmp_path / "helpers.py"
    dependency.write_text("import os\n")
    digest = content_hash(Path("a.py").read_bytes())
    cache = Cache(tmp_path / "cache", tmp_path)
    cache.store(tmp_path / "a.py", digest, ("GML106",), [finding()], {dependency})
    cache.save()
    assert Cache(tmp_path / "cache", tmp_path).lookup(tmp_path / "a.py", "a.py", digest, ("GML106",)) == [finding()]
    dependency.write_text("import os\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'\n")
    assert Cache(tmp_path / "cache", tmp_path).lookup(tmp_path / "a.py", "a.py", digest, ("GML106",)) is None
    dependency.unlink()
    assert Cache(tmp_path / "cache", tmp_path).lookup(tmp_path / "a.py", "a.py", digest, ("GML106",)) is None


def test_a_fix_run_leaves_the_cache_warm_for_the_fixed_content(capsys, tmp_path, linted):
    run(capsys, "--fix", "--unsafe-fixes", ".")
    assert "numpy().copy()" in (tmp_path / "a.py").read_text()
    linted.clear()
    code, out = run(capsys, ".")
    assert (code, out.strip(), linted) == (0, "[]", [])


@pytest.mark.skipif("GML301" not in RULES_BY_CODE, reason="needs a rule that follows first-party imports (GML3xx)")
def test_a_file_is_linted_again_when_a_module_it_imports_changes(capsys, tmp_path, linted):
    (tmp_path / "helpers.py").write_text("import torch\n\ntorch.cuda.init()\n")
    (tmp_path / "main.py").write_text('import os\n\nimport helpers\n\nos.environ["CUDA_VISIBLE_DEVICES"] = "1"\n')
    _, before = run(capsys, "main.py")
    assert "GML301" in before
    (tmp_path / "helpers.py").write_text("import os\n")
    linted.clear()
    _, after = run(capsys, "main.py")
    assert (linted, after.strip()) == (["main.py"], "[]")


def test_a_run_answered_from_the_cache_loads_neither_the_rules_nor_libcst(tmp_path):
    probe = (
        "import sys\n"
        "from gpumem_lint.cli import main\n"
        "try:\n"
        "    main(['check', '--output-format', 'concise', '.'])\n"
        "except SystemExit as done:\n"
        "    code = done.code\n"
        "loaded = sorted(name for name in sys.modules if name == 'libcst' or name.startswith('gpumem_lint.rules.gml'))\n"
        "print(code, loaded)\n"
    )
    runs = [
        subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path, check=False)
        for _ in "12"
    ]
    first, second = (run.stdout.strip().splitlines()[-1] for run in runs)
    assert first.startswith("1 [") and "'libcst'" in first  # linted: a.py has a finding
    assert second == "1 []"  # the same finding, from the cache alone
    assert "GML106" in runs[1].stdout


_COUNTING_SUMMARIES = (
    "import sys\n"
    "from gpumem_lint.cli import main\n"
    "from gpumem_lint.semantic import module_graph\n"
    "summarised = []\n"
    "real = module_graph._summarise\n"
    "def counting(path, *args):\n"
    "    summarised.append(path.name)\n"
    "    return real(path, *args)\n"
    "module_graph._summarise = counting\n"
    "try:\n"
    "    main(['check', '--output-format', 'concise', 'main.py'])\n"
    "except SystemExit as done:\n"
    "    code = done.code\n"
    "print(code, sorted(summarised))\n"
)


@pytest.mark.skipif("GML301" not in RULES_BY_CODE, reason="needs a rule that follows first-party imports (GML3xx)")
def test_an_edited_file_reuses_the_summaries_of_its_unchanged_imports(tmp_path):
    (tmp_path / "helpers.py").write_text("import torch\n\nimport deeper\n")
    (tmp_path / "deeper.py").write_text("import torch\n\ntorch.cuda.init()\n")
    main_py = 'import os\n\nimport helpers\n\nos.environ["CUDA_VISIBLE_DEVICES"] = "1"\n'
    (tmp_path / "main.py").write_text(main_py)

    def run_probe() -> tuple[str, str]:
        result = subprocess.run(
            [sys.executable, "-c", _COUNTING_SUMMARIES], capture_output=True, text=True, cwd=tmp_path, check=False
        )
        *report, last = result.stdout.strip().splitlines()
        return last, "\n".join(report)

    first, report = run_probe()
    assert first == "1 ['deeper.py', 'helpers.py']" and "GML301" in report
    (tmp_path / "main.py").write_text("# edited\n" + main_py)
    second, report = run_probe()
    assert second == "1 []" and "GML301" in report  # linted again, its imports' summaries from the cache
    (tmp_path / "deeper.py").write_text("import os\n")  # helpers' summary read deeper.py: both are stale
    (tmp_path / "main.py").write_text(main_py)
    third, report = run_probe()
    assert (third, report) == ("0 ['deeper.py', 'helpers.py']", "All checks passed!")
