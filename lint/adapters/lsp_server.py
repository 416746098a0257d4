"""The ``dynalint lsp`` language server (pygls, stdio).

Each open Python document is checked on open and save, and shortly after
edits stop (debounced), always on the editor's unsaved text.  Settings come
from the configuration file found from the document's path, exactly as
``dynalint check`` finds it, with the command line's overrides on top.

A document is analysed as a file of its project, one :class:`dynalint.session.Session`
per configuration: the other files as they are on disk hand it what their compiled
code passes, so the editor shows what ``dynalint check .`` shows.  Saving a file
checks again the other open documents of its project.

Analyses run on one daemon thread, so the server keeps answering while a large
file is checked; an analysis not yet started when a newer version arrives is
skipped, and the results of one that finished too late are dropped rather than
published.  Each version is analysed once; a quick-fix menu computes the fixes
of the diagnostics in its range only, and "fix all" is computed when the editor
resolves that action (``codeAction/resolve``).

The engine (libcst, the rules, the fixers) is imported on the analysis thread
once the client is initialized, so ``initialize`` is answered without it.
"""
from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import os
import sys
from typing import TYPE_CHECKING, Any, BinaryIO, Callable, TypeVar

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path
from pygls.workspace import TextDocument

from dynalint import __version__
from dynalint.config import ConfigError, resolve_args
from dynalint.adapters.lsp_kinds import FIX_ALL_KIND, FIX_ALL_UNSAFE_KIND, QUICKFIX
from dynalint.adapters.lsp_transport import DynalintProtocol, serve
from dynalint.adapters.lsp_worker import DaemonWorker
from dynalint.settings import Settings

if TYPE_CHECKING:
    from dynalint.adapters.lsp_actions import DocumentView
    from dynalint.adapters.lsp_analysis import Checked
    from dynalint.incremental import Baselines
    from dynalint.session import Session

log = logging.getLogger("dynalint.adapters.lsp")
T = TypeVar("T")

DEFAULT_DEBOUNCE_S = 0.3
PYTHON_SUFFIXES = (".py", ".pyi")
#: Saving one of these may change what the project's open documents report (with the Python files).
PROJECT_FILES = ("/pyproject.toml", "/setup.cfg", "/.gitignore")
MAX_SESSIONS = 8
"""Sessions kept (one per configuration: editing the configuration file starts a new one)."""
#: What the analysis thread imports first (the engine, the rules, the fixers).
ENGINE_MODULES = ("dynalint.adapters.lsp_analysis", "dynalint.adapters.lsp_actions")


class DynalintServer(LanguageServer):
    def __init__(self, args: argparse.Namespace, debounce: float = DEFAULT_DEBOUNCE_S) -> None:
        super().__init__("dynalint", __version__, protocol_cls=DynalintProtocol,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.args = args
        self.debounce = debounce
        self.checked: dict[str, Checked] = {}
        self.pending: dict[str, asyncio.Task] = {}
        self.background: set[asyncio.Task] = set()
        self.worker = DaemonWorker("dynalint-check")
        self.shown_errors: set[str] = set()
        self.sessions: dict[tuple[str, str, str], Session] = {}
        """One per configuration, used on the analysis thread only."""
        self.baselines: Baselines | None = None
        """The last analysis of each document, which answers an edit that changes no statement (on the
        analysis thread only)."""

    def start_io(self, stdin: BinaryIO | None = None,  # type: ignore[override]
                 stdout: BinaryIO | None = None) -> int:
        """Serve until ``exit`` or the end of input; the exit status (LSP: 0 after ``shutdown``, else 1)."""
        assert isinstance(self.protocol, DynalintProtocol)
        try:
            return asyncio.run(serve(self.protocol, stdin or sys.stdin.buffer, stdout or sys.stdout.buffer))
        except (BrokenPipeError, KeyboardInterrupt):
            return 1
        finally:
            self.worker.stop()
            self.shutdown()

    # -- running analyses -------------------------------------------------------------------------

    async def in_worker(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.wrap_future(self.worker.submit(fn, *args))

    def warm_up(self) -> None:
        for name in ENGINE_MODULES:
            self.worker.submit(importlib.import_module, name)

    def session(self, path: str | None) -> tuple[Session, str]:
        """On the analysis thread: the session of the configuration found from the document's path
        (as ``dynalint check`` finds it, the command line's overrides on top; one per configuration,
        so that an edited configuration file starts a new one), and the path to report the document
        under (relative to the configuration root)."""
        from dynalint.runner import CACHE_DIR_NAME
        from dynalint.session import Session

        start = path or self.workspace.root_path or os.getcwd()
        config = resolve_args(self.args, [start])
        key = (config.root, config.source.path if config.source else "", config.settings.fingerprint())
        session = self.sessions.get(key)
        if session is None:
            if len(self.sessions) >= MAX_SESSIONS:
                self.sessions.pop(next(iter(self.sessions)))
            session = self.sessions[key] = Session(config, cache_dir=os.path.join(config.root, CACHE_DIR_NAME))
        shown = path or start
        if path:
            relative = os.path.relpath(path, config.root)
            if not relative.startswith(".."):
                shown = relative
        return session, shown

    def _analyse(self, uri: str, version: int | None, text: str) -> Checked:
        """On the analysis thread: the document's session, then the one analysis call."""
        from dynalint.adapters.lsp_analysis import Checked, check_document
        from dynalint.incremental import Baselines

        if self.baselines is None:
            self.baselines = Baselines()
        path = to_fs_path(uri)
        path = os.path.abspath(path) if path else None
        try:
            session, shown = self.session(path)
        except ConfigError as exc:
            return Checked(version, text, path or uri, Settings(select=()), [],
                           error=f"dynalint: configuration error: {exc}")
        return check_document(version, text, path, shown, session, self.baselines)

    def _saved(self, uri: str, open_uris: list[str]) -> list[str]:
        """On the analysis thread, after ``uri`` was saved: the other open documents of its project, whose
        results may change (the saved file's entries into them, or the names they resolve into it).
        Their sessions find the project's files again (the save may have created one)."""
        path = to_fs_path(uri)
        if not path:
            return []
        path = os.path.abspath(path)
        roots = set()
        for session in self.sessions.values():
            session.refresh()
            if session.project_roots([path]):
                roots.add(session.root)
        others = []
        for other in open_uris:
            other_path = to_fs_path(other) if other != uri else None
            if other_path and any(_inside(os.path.abspath(other_path), root) for root in roots):
                others.append(other)
        return others

    async def analyse(self, doc: TextDocument) -> Checked:
        checked = await self.in_worker(self._analyse, doc.uri, doc.version, doc.source)
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
        from dynalint.adapters.lsp_convert import PositionMap, lsp_diagnostic

        positions = PositionMap(result.text, doc.position_codec)
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, version=result.version,
            diagnostics=[lsp_diagnostic(d, positions) for d in result.diagnostics]))

    def recheck_others(self, uri: str) -> None:
        """After a save: check again the other open documents whose results may depend on the file."""
        async def recheck() -> None:
            for other in await self.in_worker(self._saved, uri, list(self.workspace.text_documents)):
                doc = self.workspace.text_documents.get(other)
                if doc is not None and is_python(doc):
                    self.checked.pop(other, None)
                    self.schedule(other, 0.0)

        task = asyncio.get_running_loop().create_task(recheck())
        self.background.add(task)
        task.add_done_callback(self.background.discard)

    def schedule(self, uri: str, delay: float) -> None:
        """Check the document after ``delay``; a check already scheduled or queued is superseded."""
        previous = self.pending.pop(uri, None)
        if previous is not None:
            previous.cancel()  # cancels its queued analysis too; one already running is dropped when done
        task = asyncio.get_running_loop().create_task(self.check(uri, delay))
        self.pending[uri] = task
        task.add_done_callback(lambda t: self._finished(uri, t))

    def _finished(self, uri: str, task: asyncio.Task) -> None:
        if self.pending.get(uri) is task:
            del self.pending[uri]
        if not task.cancelled() and task.exception() is not None:
            log.error("checking %s failed: %s", uri, task.exception())

    def cancel_all(self) -> None:
        for task in [*self.pending.values(), *self.background]:
            task.cancel()
        self.pending.clear()

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

    def view(self, doc: TextDocument, checked: Checked, diagnostics: list, safeties: set[str],
             eager: bool) -> DocumentView:
        from dynalint.adapters.lsp_actions import DocumentView
        from dynalint.adapters.lsp_convert import PositionMap

        return DocumentView(uri=doc.uri, version=checked.version, text=checked.text,
                            positions=PositionMap(checked.text, doc.position_codec), diagnostics=diagnostics,
                            safeties=safeties, fixed_text=checked.fixed if eager else None,
                            document_changes=self.supports_document_changes())

    async def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction] | None:
        from dynalint.adapters.lsp_actions import code_actions, requested

        uri = params.text_document.uri
        doc = self.workspace.text_documents.get(uri)
        if doc is None or not is_python(doc):
            return None
        checked = await self.current(uri)
        if checked is None or self.workspace.text_documents.get(uri) is not doc \
                or doc.version != checked.version:
            return None  # edited while we computed: the editor asks again
        eager = not self.resolves_edits()
        view = self.view(doc, checked, checked.diagnostics, set(), eager)
        wanted = requested(view, params.range)
        view.diagnostics = _replaced(checked.diagnostics, await self.in_worker(checked.with_fixes, wanted))
        view.safeties = await self.in_worker(checked.safeties)
        if eager:  # a client that cannot resolve gets "fix all" with its edit, computed now
            await self.in_worker(checked.fix_all_texts)
        if doc.version != checked.version:
            return None
        return code_actions(view, params.range, params.context.only) or None

    async def resolve(self, action: types.CodeAction) -> types.CodeAction:
        """Compute the edit of a "fix all" action, on the document's current text."""
        from dynalint.adapters.lsp_actions import fix_all_request, resolve_fix_all

        request = fix_all_request(action)
        if request is None:
            return action
        uri, unsafe = request
        doc = self.workspace.text_documents.get(uri)
        checked = await self.current(uri) if doc is not None else None
        if doc is None or checked is None:
            return action
        await self.in_worker(checked.fixed, unsafe)
        return resolve_fix_all(self.view(doc, checked, checked.diagnostics, checked.safeties(), True),
                               action, unsafe)


def _replaced(diagnostics: list, with_fixes: list) -> list:
    """``diagnostics`` with those in ``with_fixes`` replaced by their copies that carry a fix."""
    found = {d: d for d in with_fixes}
    return [found.get(d, d) for d in diagnostics]


def _inside(path: str, root: str) -> bool:
    try:
        return os.path.commonpath([path, root]) == root
    except ValueError:  # another drive
        return False


def is_python(doc: TextDocument) -> bool:
    return doc.language_id == "python" or (doc.path or "").endswith(PYTHON_SUFFIXES)


def build_server(args: argparse.Namespace, debounce: float = DEFAULT_DEBOUNCE_S) -> DynalintServer:
    server = DynalintServer(args, debounce)

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
        if uri in server.workspace.text_documents and is_python(server.workspace.get_text_document(uri)):
            server.checked.pop(uri, None)  # the configuration may have been what was saved
            server.schedule(uri, 0.0)
        if uri.endswith(PYTHON_SUFFIXES + PROJECT_FILES):
            server.recheck_others(uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        task = server.pending.pop(uri, None)
        if task is not None:
            task.cancel()
        server.checked.pop(uri, None)
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
        from dynalint.adapters.lsp_actions import hover_markdown
        from dynalint.adapters.lsp_convert import PositionMap, lsp_diagnostic

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
        server.worker.stop()

    return server
