"""The language server end to end, driven by pygls's own client over stdio: diagnostics on open
and change, a quick fix, the noqa action and the hover."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

pytest.importorskip("pygls")

from lsprotocol import types  # noqa: E402
from pygls.lsp.client import LanguageClient  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
# GML106 (numpy bridge, an unsafe fix) on line 6; GML002 (a stale noqa code, a safe fix) on line 9.
SOURCE = """import torch

def augment(path):
    t = torch.load(path)
    original = t.numpy()
    t.mul_(2)
    return original.mean(), t.mean()

value = torch.zeros(3)  # noqa: GML107, E501
"""


async def session(tmp_path: Path) -> dict:
    """Open, query and change one document; what the server answered."""
    client = LanguageClient("test-client", "1")
    published: list[types.PublishDiagnosticsParams] = []
    arrived = asyncio.Event()

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
        published.append(params)
        arrived.set()

    async def next_diagnostics() -> list[types.Diagnostic]:
        await asyncio.wait_for(arrived.wait(), timeout=60)
        arrived.clear()
        return published[-1].diagnostics

    await client.start_io(sys.executable, "-m", "gpumem_lint", "server", cwd=tmp_path)
    await client.initialize_async(
        types.InitializeParams(capabilities=types.ClientCapabilities(), root_uri=tmp_path.as_uri())
    )
    client.initialized(types.InitializedParams())
    (tmp_path / "model.py").write_text(SOURCE, encoding="utf-8")  # saved, so its result is cached
    uri = (tmp_path / "model.py").as_uri()
    item = types.TextDocumentItem(uri=uri, language_id="python", version=1, text=SOURCE)
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=item))
    opened = await next_diagnostics()
    document = types.TextDocumentIdentifier(uri=uri)

    def at(line: int, character: int) -> types.Range:
        return types.Range(start=types.Position(line, character), end=types.Position(line, character))

    actions = []
    for diagnostic in opened:
        actions += await client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=document,
                range=diagnostic.range,
                context=types.CodeActionContext(diagnostics=[diagnostic]),
            )
        )
    bridge = next(d for d in opened if d.code == "GML106")
    hovered = await client.text_document_hover_async(
        types.HoverParams(text_document=document, position=bridge.range.start)
    )
    nothing = await client.text_document_hover_async(types.HoverParams(text_document=document, position=at(1, 0).start))
    change = types.TextDocumentContentChangeWholeDocument(text=SOURCE.replace("t.mul_(2)", "t = t * 2"))
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2), content_changes=[change]
        )
    )
    changed = await next_diagnostics()
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    cached = (tmp_path / ".gpumem_lint_cache").is_dir()
    return {
        "opened": opened,
        "actions": actions,
        "hover": hovered,
        "nothing": nothing,
        "changed": changed,
        "cached": cached,
    }


@pytest.fixture(scope="module")
def answers(tmp_path_factory) -> dict:
    return asyncio.run(session(tmp_path_factory.mktemp("editor")))


def test_diagnostics_on_open_carry_code_severity_range_and_page(answers):
    by_code = {d.code: d for d in answers["opened"]}
    assert set(by_code) == {"GML106", "GML002"}
    bridge = by_code["GML106"]
    assert bridge.range.start == types.Position(line=5, character=4)  # 0-based: `t.mul_(2)` on line 6
    assert bridge.severity == types.DiagnosticSeverity.Warning
    assert bridge.source == "gpumem-lint"
    assert bridge.code_description.href.endswith("/rules/GML106.md")
    assert "\nhelp: " in bridge.message


def edits(action: types.CodeAction) -> list[types.TextEdit]:
    [(_, changes)] = action.edit.changes.items()
    return changes


def test_quick_fixes_and_a_noqa_action_are_offered(answers):
    titles = {action.title: action for action in answers["actions"]}
    assert set(titles) == {
        "GML002: Remove the unused code from the `# noqa` comment",
        "GML106: Append `.copy()` to `t.numpy()` (unsafe)",
        "GML106: suppress with `# noqa: GML106`",
    }  # GML002 is not suppressible with a noqa: it is about noqa comments
    [removal] = edits(titles["GML002: Remove the unused code from the `# noqa` comment"])
    line = SOURCE.splitlines()[8]
    start, end = removal.range.start.character, removal.range.end.character
    assert line[:start] + removal.new_text + line[end:] == "value = torch.zeros(3)  # noqa: E501"
    [copy] = edits(titles["GML106: Append `.copy()` to `t.numpy()` (unsafe)"])
    assert (copy.range.start, copy.new_text) == (types.Position(line=4, character=24), ".copy()")
    [noqa] = edits(titles["GML106: suppress with `# noqa: GML106`"])
    assert noqa.range.start.line == 5 and noqa.new_text == "    t.mul_(2)  # noqa: GML106"


def test_hover_on_a_finding_shows_its_rule_page(answers):
    assert answers["hover"].contents.kind == types.MarkupKind.Markdown
    assert answers["hover"].contents.value.startswith("# numpy-shared-memory-write (GML106)\n")
    assert answers["nothing"] is None


def test_diagnostics_follow_changes(answers):
    assert [d.code for d in answers["changed"]] == ["GML002"]


def test_the_saved_text_shares_the_command_lines_cache(answers):
    assert answers["cached"]


async def notebook_session(tmp_path: Path) -> dict[str, list[types.Diagnostic]]:
    """Open a notebook of three code cells (and a markdown one); the diagnostics of each cell."""
    client = LanguageClient("test-client", "1")
    published: dict[str, list[types.Diagnostic]] = {}
    arrived = asyncio.Event()

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
        published[params.uri] = params.diagnostics
        if len(published) == 3:
            arrived.set()

    await client.start_io(sys.executable, "-m", "gpumem_lint", "server", cwd=tmp_path)
    await client.initialize_async(
        types.InitializeParams(capabilities=types.ClientCapabilities(), root_uri=tmp_path.as_uri())
    )
    client.initialized(types.InitializedParams())
    uri = (tmp_path / "train.ipynb").as_uri()
    sources = [
        "import os\nimport torch\n%matplotlib inline",
        "# Data",
        "device = 'cuda' if torch.cuda.is_available() else 'cpu'\n!nvidia-smi",
        "os.environ['CUDA_VISIBLE_DEVICES'] = '1'",
    ]
    code, markup = types.NotebookCellKind.Code, types.NotebookCellKind.Markup
    kinds = [code, markup, code, code]
    cells = [types.NotebookCell(kind=kind, document=f"{uri}#cell{i}") for i, kind in enumerate(kinds, start=1)]
    items = [
        types.TextDocumentItem(uri=f"{uri}#cell{i}", language_id="python", version=1, text=text)
        for i, text in enumerate(sources, start=1)
        if kinds[i - 1] is code
    ]
    notebook = types.NotebookDocument(uri=uri, notebook_type="jupyter-notebook", version=1, cells=cells)
    client.notebook_document_did_open(
        types.DidOpenNotebookDocumentParams(notebook_document=notebook, cell_text_documents=items)
    )
    await asyncio.wait_for(arrived.wait(), timeout=60)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return {cell_uri.rsplit("#", 1)[1]: diagnostics for cell_uri, diagnostics in published.items()}


def test_a_notebooks_cells_are_one_program_each_with_its_findings(tmp_path):
    by_cell = asyncio.run(notebook_session(tmp_path))
    assert set(by_cell) == {"cell1", "cell3", "cell4"}
    assert not by_cell["cell1"] and not by_cell["cell3"]
    [late] = by_cell["cell4"]
    assert late.code == "GML301"
    assert late.range.start == types.Position(line=0, character=0)
    assert "at cell 3, line 1" in late.message
