"""The ``dynalint lsp`` language server (pygls, stdio).

Each open Python document is checked on open and save, and shortly after
edits stop (debounced), always on the editor's unsaved text.  Settings come
from the configuration file found from the document's path, exactly as
``dynalint check`` finds it, with the command line's overrides on top.

Analyses run on one worker thread so the server keeps answering while a large
file is checked; results for a version the editor has already replaced are
dropped rather than published.  Each version is analysed once: diagnostics,
quick-fixes and the first round of "fix all" share that analysis.
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, TypeVar

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path
from pygls.workspace import TextDocument

from dynalint import __version__
from dynalint.config import ConfigError, resolve_args
from dynalint.diagnostics import Diagnostic
from dynalint.engine import Analysis, analyse
from dynalint.fixing import diagnostics_with_fixes, fix_source
from dynalint.adapters.lsp_actions import FIX_ALL_KIND, FIX_ALL_UNSAFE_KIND, DocumentView, code_actions, hover_markdown
from dynalint.adapters.lsp_convert import PositionMap, lsp_diagnostic
from dynalint.settings import Settings

log = logging.getLogger("dynalint.adapters.lsp")
T = TypeVar("T")

DEFAULT_DEBOUNCE_S = 0.3
PYTHON_SUFFIXES = (".py", ".pyi")


@dataclass
class Checked:
    """One analysed version of a document."""

    version: int | None
    text: str
    path: str
    settings: Settings
    diagnostics: list[Diagnostic]
    error: str | None = None
    """A configuration or internal error to show the user (once)."""
    analysis: Analysis | None = field(default=None, repr=False)
    with_fixes: list[Diagnostic] | None = None
    fixed: dict[bool, str] = field(default_factory=dict)


class DynalintServer(LanguageServer):
    def __init__(self, args: argparse.Namespace, debounce: float = DEFAULT_DEBOUNCE_S) -> None:
        super().__init__("dynalint", __version__,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.args = args
        self.debounce = debounce
        self.checked: dict[str, Checked] = {}
        self.pending: dict[str, asyncio.Task] = {}
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dynalint-check")
        self.shown_errors: set[str] = set()

    # -- running analyses -------------------------------------------------------------------------

    async def in_worker(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self.worker, fn, *args)

    def settings(self, path: str | None) -> tuple[Settings, str]:
        """Settings for a document, and the path to report it under (relative to the config root)."""
        start = path or self.workspace.root_path or os.getcwd()
        project = resolve_args(self.args, [start])
        shown = path or start
        if path:
            relative = os.path.relpath(path, project.root)
            if not relative.startswith(".."):
                shown = relative
        return project.settings_for(path or start), shown

    def _analyse(self, doc: TextDocument, version: int | None, text: str) -> Checked:
        path = to_fs_path(doc.uri)
        try:
            settings, shown = self.settings(path)
        except ConfigError as exc:
            return Checked(version, text, path or doc.uri, Settings(select=()), [],
                           error=f"dynalint: configuration error: {exc}")
        try:
            analysis = analyse(text, shown, settings, record_values=True)
        except Exception as exc:  # an analysis bug must not take the server down
            log.exception("checking %s failed", doc.uri)
            return Checked(version, text, shown, settings, [], error=(
                f"dynalint: internal error while checking {shown} ({type(exc).__name__}: {exc}); "
                "please report it"))
        return Checked(version, text, shown, settings, analysis.diagnostics, analysis=analysis)

    async def analyse(self, doc: TextDocument) -> Checked:
        checked = await self.in_worker(self._analyse, doc, doc.version, doc.source)
        if checked.error is not None and checked.error not in self.shown_errors:
            self.shown_errors.add(checked.error)  # once: it would otherwise repeat on every keystroke
            self.window_show_message(types.ShowMessageParams(type=types.MessageType.Error,
                                                             message=checked.error))
        return checked

    async def check(self, uri: str, delay: float = 0.0) -> None:
        if delay:
            await asyncio.sleep(delay)
        doc = self.workspace.text_documents.get(uri)
        if doc is None:
            return
        result = await self.analyse(doc)
        if self.workspace.text_documents.get(uri) is not doc or doc.version != result.version:
            return  # closed or edited meanwhile: a newer check is on its way
        self.checked[uri] = result
        positions = PositionMap(result.text, doc.position_codec)
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, version=result.version,
            diagnostics=[lsp_diagnostic(d, positions) for d in result.diagnostics]))

    def schedule(self, uri: str, delay: float) -> None:
        previous = self.pending.pop(uri, None)
        if previous is not None:
            previous.cancel()
        task = asyncio.get_running_loop().create_task(self.check(uri, delay))
        self.pending[uri] = task
        task.add_done_callback(lambda t: self._finished(uri, t))

    def _finished(self, uri: str, task: asyncio.Task) -> None:
        if self.pending.get(uri) is task:
            del self.pending[uri]
        if not task.cancelled() and task.exception() is not None:
            log.error("checking %s failed: %s", uri, task.exception())

    # -- code actions -------------------------------------------------------------------------------

    async def current(self, uri: str) -> Checked | None:
        """The analysis of the document's current text (run now if the debounced one is not done)."""
        doc = self.workspace.text_documents.get(uri)
        if doc is None:
            return None
        pending = self.pending.get(uri)
        if pending is not None:
            await asyncio.wait({pending})  # the check already on its way (or cancelled by a newer edit)
        checked = self.checked.get(uri)
        if checked is None or checked.version != doc.version or checked.text != doc.source:
            checked = await self.analyse(doc)
            if doc.version == checked.version:
                self.checked[uri] = checked
        if checked.with_fixes is None:
            checked.with_fixes = await self.in_worker(self._with_fixes, checked)
        return checked

    @staticmethod
    def _with_fixes(checked: Checked) -> list[Diagnostic]:
        try:
            return diagnostics_with_fixes(checked.text, checked.path, checked.settings, analysis=checked.analysis)
        except Exception:
            log.exception("computing fixes for %s failed", checked.path)
            return checked.diagnostics

    async def fixed_texts(self, checked: Checked, wanted: list[bool]) -> None:
        for unsafe in wanted:
            if unsafe not in checked.fixed:
                checked.fixed[unsafe] = await self.in_worker(self._fix_all, checked, unsafe)

    @staticmethod
    def _fix_all(checked: Checked, unsafe: bool) -> str:
        try:
            return fix_source(checked.text, checked.path, checked.settings, unsafe=unsafe,
                              analysis=checked.analysis).source
        except Exception:
            log.exception("fixing %s failed", checked.path)
            return checked.text

    def supports_document_changes(self) -> bool:
        caps = self.client_capabilities
        ws = caps.workspace if caps else None
        edit = ws.workspace_edit if ws else None
        return bool(edit and edit.document_changes)


def is_python(doc: TextDocument) -> bool:
    return doc.language_id == "python" or (doc.path or "").endswith(PYTHON_SUFFIXES)


def build_server(args: argparse.Namespace, debounce: float = DEFAULT_DEBOUNCE_S) -> DynalintServer:
    server = DynalintServer(args, debounce)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: types.DidOpenTextDocumentParams) -> None:
        if is_python(server.workspace.get_text_document(params.text_document.uri)):
            server.schedule(params.text_document.uri, 0.0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: types.DidChangeTextDocumentParams) -> None:
        if is_python(server.workspace.get_text_document(params.text_document.uri)):
            server.schedule(params.text_document.uri, server.debounce)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        if uri in server.workspace.text_documents and is_python(server.workspace.get_text_document(uri)):
            server.checked.pop(uri, None)  # the configuration may have been what was saved
            server.schedule(uri, 0.0)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        task = server.pending.pop(uri, None)
        if task is not None:
            task.cancel()
        server.checked.pop(uri, None)
        server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL_KIND, FIX_ALL_UNSAFE_KIND]))
    async def code_action(params: types.CodeActionParams) -> list[types.CodeAction] | None:
        uri = params.text_document.uri
        doc = server.workspace.text_documents.get(uri)
        if doc is None or not is_python(doc):
            return None
        checked = await server.current(uri)
        if checked is None or checked.with_fixes is None:
            return None
        if server.workspace.text_documents.get(uri) is not doc or doc.version != checked.version:
            return None  # edited while we computed: the editor asks again
        safeties = {d.fix.safety for d in checked.with_fixes if d.fix is not None}
        await server.fixed_texts(checked, [s == "unsafe" for s in sorted(safeties)])
        view = DocumentView(uri=uri, version=checked.version, text=checked.text,
                            positions=PositionMap(checked.text, doc.position_codec),
                            diagnostics=checked.with_fixes, fixed_text=lambda unsafe: checked.fixed[unsafe],
                            document_changes=server.supports_document_changes())
        return code_actions(view, params.range, params.context.only) or None

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(params: types.HoverParams) -> types.Hover | None:
        uri = params.text_document.uri
        checked = server.checked.get(uri)
        doc = server.workspace.text_documents.get(uri)
        if checked is None or doc is None or doc.version != checked.version:
            return None
        positions = PositionMap(checked.text, doc.position_codec)
        at = params.position
        under = []
        for d in checked.diagnostics:
            r = lsp_diagnostic(d, positions).range
            if (r.start.line, r.start.character) <= (at.line, at.character) <= (r.end.line, r.end.character):
                under.append(d)
        text = hover_markdown(under)
        if text is None:
            return None
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text))

    @server.feature(types.SHUTDOWN)
    def shutdown(params: None) -> None:
        for task in server.pending.values():
            task.cancel()
        server.worker.shutdown(wait=False, cancel_futures=True)

    return server
