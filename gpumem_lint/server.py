"""`gpumem-lint server`: a language server (pygls) for editors.

Diagnostics on open, change and save come from the same engine, configuration and cache as
`gpumem-lint check`, for the text in the editor; each finding offers its fix (when the rule has
one) and a "suppress with `# noqa: CODE`" action as quick fixes, and hovering over it shows the
rule's page. Positions are converted to the client's units (UTF-16 by default). A notebook's code
cells are linted together, in order, as `gpumem-lint check` lints an `.ipynb`, and each cell gets
its own findings.
"""

from __future__ import annotations

import os
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path
from pygls.workspace import TextDocument
from pygls.workspace.position_codec import ServerTextPosition, ServerTextRange

from gpumem_lint import __version__
from gpumem_lint.cache import Cache, content_hash
from gpumem_lint.check_command import cache_directory
from gpumem_lint.config import CliOverrides, ConfigError, display_path, load_settings
from gpumem_lint.diagnostics import Diagnostic, Edit, Position, Severity
from gpumem_lint.output.rule_links import rule_url
from gpumem_lint.selection import RuleSelection

SOURCE = "gpumem-lint"

server = LanguageServer(
    "gpumem-lint",
    __version__,
    notebook_document_sync=types.NotebookDocumentSyncOptions(
        notebook_selector=[types.NotebookDocumentFilterWithCells(cells=[types.NotebookCellLanguage("python")])]
    ),
)
#: The findings last published for each open document, by URI: what code actions and hovers answer from.
findings: dict[str, list[Diagnostic]] = {}


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: LanguageServer, params: types.DidOpenTextDocumentParams) -> None:
    publish(ls, params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: LanguageServer, params: types.DidChangeTextDocumentParams) -> None:
    publish(ls, params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: LanguageServer, params: types.DidSaveTextDocumentParams) -> None:
    publish(ls, params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: LanguageServer, params: types.DidCloseTextDocumentParams) -> None:
    findings.pop(params.text_document.uri, None)
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[]))


@server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
def notebook_did_open(ls: LanguageServer, params: types.DidOpenNotebookDocumentParams) -> None:
    publish_notebook(ls, params.notebook_document.uri)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
def notebook_did_change(ls: LanguageServer, params: types.DidChangeNotebookDocumentParams) -> None:
    publish_notebook(ls, params.notebook_document.uri)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
def notebook_did_save(ls: LanguageServer, params: types.DidSaveNotebookDocumentParams) -> None:
    publish_notebook(ls, params.notebook_document.uri)


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix])
)
def code_actions(ls: LanguageServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    document = ls.workspace.get_text_document(params.text_document.uri)
    actions = []
    for diagnostic in _touching(document, params.range):
        shown = _to_lsp(document, diagnostic)
        if diagnostic.fix is not None:
            edits = [_text_edit(document, edit) for edit in diagnostic.fix.edits]
            title = diagnostic.fix.title or diagnostic.help or "Apply the fix"
            unsafe = diagnostic.fix.applicability.value == "unsafe"
            label = f"{diagnostic.code}: {title}{' (unsafe)' if unsafe else ''}"
            actions.append(_action(label, document, edits, shown))
        noqa = _noqa_edit(document, diagnostic)
        if noqa is not None:
            label = f"{diagnostic.code}: suppress with `# noqa: {diagnostic.code}`"
            actions.append(_action(label, document, [noqa], shown))
    return actions


@server.feature(types.TEXT_DOCUMENT_HOVER)
def hover(ls: LanguageServer, params: types.HoverParams) -> types.Hover | None:
    from gpumem_lint.docs import render_rule_page
    from gpumem_lint.rules import RULES_BY_CODE

    document = ls.workspace.get_text_document(params.text_document.uri)
    point = types.Range(start=params.position, end=params.position)
    for diagnostic in _touching(document, point):
        rule = RULES_BY_CODE.get(diagnostic.code)
        if rule is not None:
            page = types.MarkupContent(kind=types.MarkupKind.Markdown, value=render_rule_page(rule))
            return types.Hover(contents=page, range=_range(document, diagnostic.start, diagnostic.end))
    return None


def publish(ls: LanguageServer, uri: str) -> None:
    document = ls.workspace.get_text_document(uri)
    _show(ls, document, lint_text(_path(uri), document.source))


def publish_notebook(ls: LanguageServer, uri: str) -> None:
    """Lint the code cells as one program and give each cell its findings."""
    from gpumem_lint.notebook import Cell, Notebook, mask, to_cells

    notebook = ls.workspace.get_notebook_document(notebook_uri=uri)
    if notebook is None:
        return
    cells, documents = [], {}
    for position, cell in enumerate(notebook.cells):
        if cell.kind is types.NotebookCellKind.Code:
            document = ls.workspace.get_text_document(cell.document)
            source = document.source if document.source.endswith("\n") else document.source + "\n"
            cells.append(Cell(position + 1, position, source, mask(source), document.source.endswith("\n")))
            documents[position + 1] = document
    joined = Notebook({}, tuple(cells))
    found = to_cells(joined, lint_text(_path(uri), joined.text, cache=False)) if cells else []
    for number, document in documents.items():
        _show(ls, document, [diagnostic for diagnostic in found if diagnostic.cell == number])


def _show(ls: LanguageServer, document: TextDocument, found: list[Diagnostic]) -> None:
    findings[document.uri] = found
    shown = [_to_lsp(document, diagnostic) for diagnostic in found]
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=document.uri, diagnostics=shown))


def lint_text(path: Path, text: str, cache: bool = True) -> list[Diagnostic]:
    """The findings in the editor's text of `path`, under the configuration of its project."""
    from gpumem_lint.engine import lint_source
    from gpumem_lint.rules import RULES_BY_CODE

    try:
        settings = load_settings([str(path)], CliOverrides())
        codes = RuleSelection.from_settings(settings).codes_for(path)
    except ConfigError as error:
        server.window_show_message(types.ShowMessageParams(type=types.MessageType.Error, message=str(error)))
        return []
    display = display_path(path, Path(os.path.abspath(Path.cwd())))
    rules = [RULES_BY_CODE[code] for code in codes]
    if not cache:
        return lint_source(text, display, rules)
    results = Cache(cache_directory(settings, None), settings.project_root)
    digest = content_hash(text.encode("utf-8", "surrogatepass"))
    cached = results.lookup(path, display, digest, codes)
    if cached is not None:
        return cached
    dependencies: set[Path] = set()
    found = lint_source(text, display, rules, dependencies)
    if _on_disk(path, digest):  # an unsaved edit is no state of the file worth keeping
        results.store(path, digest, codes, found, dependencies)
        results.save()
    return found


def _path(uri: str) -> Path:
    return Path(to_fs_path(uri) or uri)


def _on_disk(path: Path, digest: str) -> bool:
    try:
        return content_hash(path.read_bytes()) == digest
    except OSError:
        return False


def _to_lsp(document: TextDocument, diagnostic: Diagnostic) -> types.Diagnostic:
    return types.Diagnostic(
        range=_range(document, diagnostic.start, diagnostic.end),
        message=diagnostic.message + (f"\nhelp: {diagnostic.help}" if diagnostic.help else ""),
        severity=types.DiagnosticSeverity.Error
        if diagnostic.severity is Severity.ERROR
        else types.DiagnosticSeverity.Warning,
        code=diagnostic.code,
        code_description=types.CodeDescription(href=rule_url(diagnostic.code)),
        source=SOURCE,
    )


def _range(document: TextDocument, start: Position, end: Position) -> types.Range:
    """1-based rows and code-point columns as the client counts them."""
    return document.range_to_client_units(
        ServerTextRange(
            ServerTextPosition(start.row - 1, start.column - 1), ServerTextPosition(end.row - 1, end.column - 1)
        )
    )


def _touching(document: TextDocument, client_range: types.Range) -> list[Diagnostic]:
    """The findings whose span meets `client_range`."""
    wanted = document.range_from_client_units(client_range)
    meets = []
    for diagnostic in findings.get(document.uri, ()):
        start = ServerTextPosition(diagnostic.start.row - 1, diagnostic.start.column - 1)
        end = ServerTextPosition(diagnostic.end.row - 1, diagnostic.end.column - 1)
        if start <= wanted.end and wanted.start <= end:
            meets.append(diagnostic)
    return meets


def _text_edit(document: TextDocument, edit: Edit) -> types.TextEdit:
    return types.TextEdit(range=_range(document, edit.start, edit.end), new_text=edit.content)


def _noqa_edit(document: TextDocument, diagnostic: Diagnostic) -> types.TextEdit | None:
    """The line that `gpumem-lint --add-noqa` would comment for this finding, commented (or None
    when no line can take a comment, as inside a multi-line string)."""
    from gpumem_lint.add_noqa import add_noqa

    before = document.source.splitlines()
    after, count = add_noqa(document.source, [diagnostic])
    if not count:
        return None
    for row, (old, new) in enumerate(zip(before, after.splitlines()), start=1):
        if old != new:
            return _text_edit(document, Edit(Position(row, 1), Position(row, len(old) + 1), new))
    return None


def _action(
    title: str, document: TextDocument, edits: list[types.TextEdit], diagnostic: types.Diagnostic
) -> types.CodeAction:
    return types.CodeAction(
        title=title,
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[diagnostic],
        edit=types.WorkspaceEdit(changes={document.uri: edits}),
    )


def serve() -> None:
    server.start_io()
