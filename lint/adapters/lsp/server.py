"""The ``dynalint lsp`` language server (pygls, stdio).

Each open Python document is checked on open and save, and shortly after
edits stop (debounced), always on the editor's unsaved text.  Settings come
from the configuration file found from the document's path, exactly as
``dynalint check`` finds it, with the command line's overrides on top.

A document is analysed as a file of its project, one :class:`dynalint.engine.session.Session`
per configuration: the other files as they are on disk hand it what their compiled
code passes, so the editor shows what ``dynalint check .`` shows.  Saving a file
checks again the other open documents of its project.

Analyses, fixes and "fix all" run in analysis processes (:mod:`dynalint.adapters.lsp.pool`),
never on this one: a libcst parse holds the interpreter lock for as long as it runs, so
a thread could not analyse a large file without stalling every answer.  While one
document's analysis takes long, the other documents are analysed, fixed and hovered by
the other process.  An analysis not yet started when a newer version arrives is skipped,
one that runs on is stopped (its process killed and replaced), and the results of one that
finished too late are dropped rather than published.  Each version is analysed once; a
quick-fix menu computes the fixes of the diagnostics in its range only, and "fix all" is
computed when the editor resolves that action (``codeAction/resolve``).

The analysis processes start, and load the engine (libcst, the rules, the fixers), once
the client is initialized, so ``initialize`` is answered without it.
"""
from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import sys
from typing import TYPE_CHECKING, Any, BinaryIO

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.workspace import TextDocument

from dynalint import __version__
from dynalint.adapters.lsp.kinds import FIX_ALL_KIND, FIX_ALL_UNSAFE_KIND, QUICKFIX
from dynalint.adapters.lsp.pool import WorkerPool
from dynalint.adapters.lsp.transport import DynalintProtocol, serve
from dynalint.adapters.lsp.worker import DaemonWorker, ProcessWorker, Report

if TYPE_CHECKING:
    from dynalint.adapters.lsp.actions import DocumentView

log = logging.getLogger("dynalint.adapters.lsp")

DEFAULT_DEBOUNCE_S = 0.3
PYTHON_SUFFIXES = (".py", ".pyi")
#: Saving one of these may change what the project's open documents report (with the Python files).
PROJECT_FILES = ("/pyproject.toml", "/setup.cfg", "/.gitignore")
MAX_SHOWN_ERRORS = 64
"""Error messages remembered as shown (each is shown once; a long session forgets the oldest)."""
#: What the server imports on a thread once the client is initialized: what turns an analysis into
#: diagnostics, actions and hover text (the analyses themselves run in the analysis processes).
ANSWER_MODULES = ("dynalint.adapters.lsp.convert", "dynalint.adapters.lsp.actions")


class DynalintServer(LanguageServer):
    def __init__(self, args: argparse.Namespace, debounce: float = DEFAULT_DEBOUNCE_S) -> None:
        super().__init__("dynalint", __version__, protocol_cls=DynalintProtocol,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.args = args
        self.debounce = debounce
        self.checked: dict[str, Report] = {}
        """The last published analysis of each open document (its ``text``: the text analysed)."""
        self.pending: dict[str, asyncio.Task] = {}
        self.background: set[asyncio.Task] = set()
        self.pool = WorkerPool(self._start_worker)
        self.saves = 0
        """Saves so far: an analysis process drops what it kept and finds the projects' files again
        when this moved (what was saved may be the configuration, or a file the others import)."""
        self.shown_errors: dict[str, None] = {}
        """The error messages shown, oldest first."""

    def _start_worker(self, name: str) -> ProcessWorker:
        level = logging.getLogger().getEffectiveLevel()
        return ProcessWorker(name, (self.args, self.workspace.root_path), level)

    def start_io(self, stdin: BinaryIO | None = None,  # type: ignore[override]
                 stdout: BinaryIO | None = None) -> int:
        """Serve until ``exit`` or the end of input; the exit status (LSP: 0 after ``shutdown``, else 1)."""
        assert isinstance(self.protocol, DynalintProtocol)
        try:
            return asyncio.run(serve(self.protocol, stdin or sys.stdin.buffer, stdout or sys.stdout.buffer))
        except (BrokenPipeError, KeyboardInterrupt):
            return 1
        finally:
            self.pool.stop()
            self.shutdown()

    # -- running analyses -------------------------------------------------------------------------

    def warm_up(self) -> None:
        self.pool.warm_up()
        importer = DaemonWorker("dynalint-import")
        for name in ANSWER_MODULES:
            importer.submit(importlib.import_module, name)
        importer.stop()

    async def in_worker(self, uri: str, method: str, *args: Any, supersedable: bool = False) -> Any:
        """``Documents.<method>(*args)`` in an analysis process, told first which documents are open
        and how many saves it has to catch up with."""
        return await self.pool.run(uri, "call", method, list(self.workspace.text_documents), self.saves, args,
                                   supersedable=supersedable)

    async def analyse(self, doc: TextDocument, supersedable: bool = False) -> Report:
        text = doc.source
        report: Report = await self.in_worker(doc.uri, "report", doc.uri, doc.version, text,
                                              supersedable=supersedable)
        report.text = text
        if report.error is not None and report.error not in self.shown_errors:
            if len(self.shown_errors) >= MAX_SHOWN_ERRORS:
                del self.shown_errors[next(iter(self.shown_errors))]
            self.shown_errors[report.error] = None  # once: it would otherwise repeat on every keystroke
            self.window_show_message(types.ShowMessageParams(type=types.MessageType.Error,
                                                             message=report.error))
        return report

    async def check(self, uri: str, delay: float = 0.0) -> None:
        if delay:
            await asyncio.sleep(delay)
        doc = self.workspace.text_documents.get(uri)
        if doc is None:
            return
        result = await self.analyse(doc, supersedable=True)
        if self.workspace.text_documents.get(uri) is not doc or doc.version != result.version:
            return  # closed or edited meanwhile: a newer check is on its way
        self.checked[uri] = result
        from dynalint.adapters.lsp.convert import PositionMap, lsp_diagnostic

        positions = PositionMap(result.text, doc.position_codec)
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, version=result.version,
            diagnostics=[lsp_diagnostic(d, positions) for d in result.diagnostics]))

    def recheck_others(self, uri: str) -> None:
        """After a save: check again the other open documents whose results may depend on the file."""
        async def recheck() -> None:
            for other in await self.in_worker(uri, "saved", uri, list(self.workspace.text_documents)):
                doc = self.workspace.text_documents.get(other)
                if doc is not None and is_python(doc):
                    self.checked.pop(other, None)
                    self.schedule(other, 0.0)

        task = asyncio.get_running_loop().create_task(recheck())
        self.background.add(task)
        task.add_done_callback(self._background_done)

    def _background_done(self, task: asyncio.Task) -> None:
        self.background.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("checking the other open documents failed: %s", task.exception())

    def schedule(self, uri: str, delay: float) -> None:
        """Check the document after ``delay``; a check already scheduled, queued or running is superseded."""
        previous = self.pending.pop(uri, None)
        if previous is not None:
            previous.cancel()  # cancels its queued analysis too; one already running is stopped or dropped
        task = asyncio.get_running_loop().create_task(self.check(uri, delay))
        self.pending[uri] = task
        task.add_done_callback(lambda t: self._finished(uri, t))

    def _finished(self, uri: str, task: asyncio.Task) -> None:
        if self.pending.get(uri) is task:
            del self.pending[uri]
        if not task.cancelled() and task.exception() is not None:
            log.error("checking %s failed: %s", uri, task.exception())

    def closed(self, uri: str) -> None:
        task = self.pending.pop(uri, None)
        if task is not None:
            task.cancel()
        self.checked.pop(uri, None)
        self.pool.forget(uri)

    def cancel_all(self) -> None:
        for task in [*self.pending.values(), *self.background]:
            task.cancel()
        self.pending.clear()

    # -- code actions -------------------------------------------------------------------------------

    async def current(self, uri: str) -> Report | None:
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
        return checked

    def resolves_edits(self) -> bool:
        """Whether the client fills in an action's edit with ``codeAction/resolve``."""
        caps = self.client_capabilities
        action = caps.text_document.code_action if caps and caps.text_document else None
        support = action.resolve_support if action else None
        return bool(support and "edit" in support.properties)

    def supports_document_changes(self) -> bool:
        caps = self.client_capabilities
        ws = caps.workspace if caps else None
        edit = ws.workspace_edit if ws else None
        return bool(edit and edit.document_changes)

    def view(self, doc: TextDocument, checked: Report, diagnostics: list, safeties: set[str],
             fixed: dict[bool, str] | None) -> DocumentView:
        from dynalint.adapters.lsp.actions import DocumentView
        from dynalint.adapters.lsp.convert import PositionMap

        return DocumentView(uri=doc.uri, version=checked.version, text=checked.text,
                            positions=PositionMap(checked.text, doc.position_codec), diagnostics=diagnostics,
                            safeties=safeties, fixed_text=(lambda unsafe: fixed.get(unsafe, checked.text))
                            if fixed is not None else None,
                            document_changes=self.supports_document_changes())

    async def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction] | None:
        from dynalint.adapters.lsp.actions import code_actions, requested

        uri = params.text_document.uri
        doc = self.workspace.text_documents.get(uri)
        if doc is None or not is_python(doc):
            return None
        checked = await self.current(uri)
        if checked is None or self.workspace.text_documents.get(uri) is not doc \
                or doc.version != checked.version:
            return None  # edited while we computed: the editor asks again
        eager = not self.resolves_edits()
        view = self.view(doc, checked, checked.diagnostics, set(), None)
        wanted = requested(view, params.range)
        same = (uri, checked.version, checked.text)
        with_fixes = await self.in_worker(uri, "with_fixes", *same, wanted)
        view.diagnostics = _replaced(checked.diagnostics, with_fixes)
        view.safeties = await self.in_worker(uri, "safeties", *same)
        if eager:  # a client that cannot resolve gets "fix all" with its edit, computed now
            fixed = await self.in_worker(uri, "fix_all_texts", *same)
            view.fixed_text = lambda unsafe: fixed.get(unsafe, checked.text)
        if doc.version != checked.version:
            return None
        return code_actions(view, params.range, params.context.only) or None

    async def resolve(self, action: types.CodeAction) -> types.CodeAction:
        """Compute the edit of a "fix all" action, on the document's current text."""
        from dynalint.adapters.lsp.actions import fix_all_request, resolve_fix_all

        request = fix_all_request(action)
        if request is None:
            return action
        uri, unsafe = request
        doc = self.workspace.text_documents.get(uri)
        checked = await self.current(uri) if doc is not None else None
        if doc is None or checked is None:
            return action
        same = (uri, checked.version, checked.text)
        fixed = {unsafe: await self.in_worker(uri, "fixed", *same, unsafe)}
        return resolve_fix_all(self.view(doc, checked, checked.diagnostics, await self.in_worker(
            uri, "safeties", *same), fixed), action, unsafe)


def _replaced(diagnostics: list, with_fixes: list) -> list:
    """``diagnostics`` with those in ``with_fixes`` replaced by their copies that carry a fix."""
    found = {d: d for d in with_fixes}
    return [found.get(d, d) for d in diagnostics]


def is_python(doc: TextDocument) -> bool:
    return doc.language_id == "python" or (doc.path or "").endswith(PYTHON_SUFFIXES)


def build_server(args: argparse.Namespace, debounce: float = DEFAULT_DEBOUNCE_S) -> DynalintServer:
    server = DynalintServer(args, debounce)

    @server.feature(types.INITIALIZE)
    def initialize(params: types.InitializeParams) -> None:
        # the workspace converts the positions of every edit: with pygls's codec, one character at a time
        from dynalint.adapters.lsp.convert import FastPositionCodec

        workspace = server.workspace
        workspace._position_codec = FastPositionCodec(workspace.position_encoding)

    @server.feature(types.INITIALIZED)
    def initialized(params: types.InitializedParams) -> None:
        server.warm_up()

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
        server.saves += 1  # the processes analyse again what they kept, and find the projects' files again
        if uri in server.workspace.text_documents and is_python(server.workspace.get_text_document(uri)):
            server.checked.pop(uri, None)  # the configuration may have been what was saved
            server.schedule(uri, 0.0)
        if uri.endswith(PYTHON_SUFFIXES + PROJECT_FILES):
            server.recheck_others(uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        server.closed(uri)
        server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[QUICKFIX, FIX_ALL_KIND, FIX_ALL_UNSAFE_KIND], resolve_provider=True))
    async def code_action(params: types.CodeActionParams) -> list[types.CodeAction] | None:
        return await server.code_actions(params)

    @server.feature(types.CODE_ACTION_RESOLVE)
    async def code_action_resolve(params: types.CodeAction) -> types.CodeAction:
        return await server.resolve(params)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(params: types.HoverParams) -> types.Hover | None:
        uri = params.text_document.uri
        checked = server.checked.get(uri)
        doc = server.workspace.text_documents.get(uri)
        if checked is None or doc is None or doc.version != checked.version:
            return None
        from dynalint.adapters.lsp.actions import hover_markdown
        from dynalint.adapters.lsp.convert import PositionMap, lsp_diagnostic

        positions = PositionMap(checked.text, doc.position_codec)
        at = params.position
        under = []
        for d in checked.diagnostics:
            if not positions.line(d.line) <= at.line <= positions.line(d.end_line):
                continue  # another line: no need to convert its positions
            r = lsp_diagnostic(d, positions).range
            if (r.start.line, r.start.character) <= (at.line, at.character) <= (r.end.line, r.end.character):
                under.append(d)
        text = hover_markdown(under)
        if text is None:
            return None
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text))

    @server.feature(types.SHUTDOWN)
    def shutdown(params: None) -> None:
        server.cancel_all()
        server.pool.stop()

    return server
