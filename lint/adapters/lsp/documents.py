"""The engine side of the language server: what one analysis process knows about the open documents.

The server answers the editor on its own process and hands every analysis, fix and "fix all" to
analysis processes (:mod:`dynalint.adapters.lsp.pool`), each holding one :class:`Documents`.  A
libcst parse holds the interpreter lock for as long as it runs (tens of seconds on a file of
megabytes), so no thread of the answering process could analyse without stalling its answers.

Every call names the document by URI and hands its version and text, so any process can answer
for any document: the one that analysed this version last answers from what it kept, another
analyses the text first.  What a process keeps is bounded: the last analysed version of each
open document (the server says which documents are open with every call), one baseline per
document for answering edits quickly, and :data:`MAX_SESSIONS` sessions.

``python -m dynalint.adapters.lsp.documents LEVEL`` is the analysis process itself (:func:`main`);
:class:`dynalint.adapters.lsp.worker.ProcessWorker` starts it.
"""
from __future__ import annotations

import argparse
import logging
import os
import pickle
import queue
import sys
import threading
from typing import Any, BinaryIO, Iterable

from pygls.uris import to_fs_path

from dynalint.adapters.lsp.analysis import Checked, check_document
from dynalint.adapters.lsp.worker import Report, read_message, write_message
from dynalint.config.resolver import ConfigError, Configuration, resolve_args
from dynalint.core.diagnostics import Diagnostic
from dynalint.engine.incremental import Baselines
from dynalint.engine.runner import CACHE_DIR_NAME
from dynalint.engine.session import Session
from dynalint.config.settings import Settings
from dynalint.core.source import Collections

log = logging.getLogger("dynalint.adapters.lsp")

MAX_SESSIONS = 8
"""Sessions kept (one per configuration: editing the configuration file starts a new one)."""
MAX_CONFIGURATIONS = 64
"""Paths whose configuration is kept (see :meth:`Documents.session`)."""
EDITS_PER_COLLECTION = 20
"""Analyses after which the analysis process collects its garbage even if it has had no time to wait."""
CALLS = frozenset({"report", "with_fixes", "safeties", "fixed", "fix_all_texts", "saved"})
"""What the server may call."""


class Documents:
    """The analyses of one process (see the module doc); its methods run one at a time."""

    def __init__(self, args: argparse.Namespace, root: str | None = None,
                 collections: Collections | None = None) -> None:
        self.args = args
        self.root = root
        self.collections = collections
        """The process's garbage collections, when it makes them itself (:func:`_serve`): while it waits,
        not during an answer."""
        self.sessions: dict[tuple[str, str, str], Session] = {}
        self.baselines = Baselines()
        """The last analysis of each document, which answers an edit that changes no statement."""
        self.checked: dict[str, Checked] = {}
        """The last analysed version of each open document (its fixes are computed from it)."""
        self.saves = 0
        """How many saves the server had announced when this process last found the projects' files."""
        self.configurations: dict[str, Configuration] = {}
        """The configuration found from each document's path since the last save (finding it reads the
        configuration file and the installed torch's metadata: a few milliseconds on every edit)."""

    def call(self, method: str, open_uris: Iterable[str], saves: int, args: tuple[Any, ...]) -> Any:
        """What the server sends: :meth:`sync`, then one of :data:`CALLS`."""
        if method not in CALLS:
            raise ValueError(f"no such call: {method}")
        self.sync(open_uris, saves)
        return getattr(self, method)(*args)

    def sync(self, open_uris: Iterable[str], saves: int) -> None:
        """Forget the documents the editor closed; after a save, analyse every document again (the
        configuration or a file it imports may be what was saved) and find the projects' files again
        (the save may have created one)."""
        keep = set(open_uris)
        for uri in [u for u in self.checked if u not in keep]:
            gone = self.checked.pop(uri)
            self.baselines.drop(gone.path)
        if saves != self.saves:
            self.saves = saves
            self.checked.clear()
            self.configurations.clear()
            for session in self.sessions.values():
                session.refresh()

    def session(self, path: str | None) -> tuple[Session, str]:
        """The session of the configuration found from the document's path (as ``dynalint check``
        finds it, the command line's overrides on top; one per configuration, so that an edited
        configuration file starts a new one), and the path to report the document under (relative
        to the configuration root).  Found once per path until a save (the configuration file, or the
        file that says where it is, may be what was saved)."""
        start = path or self.root or os.getcwd()
        config = self.configurations.get(start)
        if config is None:
            config = resolve_args(self.args, [start])
            if len(self.configurations) >= MAX_CONFIGURATIONS:
                self.configurations.pop(next(iter(self.configurations)))
            self.configurations[start] = config
        key = (config.root, config.source.path if config.source else "", config.settings.fingerprint())
        session = self.sessions.get(key)
        if session is None:
            if len(self.sessions) >= MAX_SESSIONS:
                self.sessions.pop(next(iter(self.sessions)))
            cache_dir = os.path.join(config.root, CACHE_DIR_NAME)
            session = self.sessions[key] = Session(config, cache_dir=cache_dir)
        shown = path or start
        if path:
            relative = os.path.relpath(path, config.root)
            if not relative.startswith(".."):
                shown = relative
        return session, shown

    def analyse(self, uri: str, version: int | None, text: str) -> Checked:
        """This version of the document, analysed now (or the analysis kept of the same version and text)."""
        kept = self.checked.get(uri)
        if kept is not None and kept.version == version and kept.text == text:
            return kept
        path = _path(uri)
        try:
            session, shown = self.session(path)
        except ConfigError as exc:
            checked = Checked(version, text, path or uri, Settings(select=()), [],
                              error=f"dynalint: configuration error: {exc}")
        else:
            checked = check_document(version, text, path, shown, session, self.baselines)
        self.checked[uri] = checked
        if self.collections is not None:
            self.collections.done()
        return checked

    def idle(self) -> bool:
        """Nothing to answer: compute ahead what the first edit of a document just analysed in full would
        compute (:meth:`Baselines.prepare`), one document at a time, then collect the garbage of the
        analyses since the last collection; False when there is nothing left."""
        return self.baselines.prepare() or (self.collections is not None and self.collections.collect())

    def report(self, uri: str, version: int | None, text: str) -> Report:
        """What the server publishes of an analysis (the tree and the text stay here)."""
        checked = self.analyse(uri, version, text)
        return Report(checked.version, checked.diagnostics, checked.error)

    def with_fixes(self, uri: str, version: int | None, text: str,
                   wanted: list[Diagnostic]) -> list[Diagnostic]:
        return self.analyse(uri, version, text).with_fixes(wanted)

    def safeties(self, uri: str, version: int | None, text: str) -> set[str]:
        return self.analyse(uri, version, text).safeties()

    def fixed(self, uri: str, version: int | None, text: str, unsafe: bool) -> str:
        return self.analyse(uri, version, text).fixed(unsafe)

    def fix_all_texts(self, uri: str, version: int | None, text: str) -> dict[bool, str]:
        """The fixed text of each "fix all" on offer (for a client that cannot resolve actions)."""
        checked = self.analyse(uri, version, text)
        return {safety == "unsafe": checked.fixed(safety == "unsafe") for safety in checked.safeties()}

    def saved(self, uri: str, open_uris: list[str]) -> list[str]:
        """After ``uri`` was saved: the other open documents of its project, whose results may change
        (the saved file's entries into them, or the names they resolve into it)."""
        path = _path(uri)
        if not path:
            return []
        try:
            self.session(path)  # the saved file's own project, even if this process has not seen it yet
        except ConfigError:
            pass
        roots = {session.root for session in self.sessions.values() if session.project_roots([path])}
        others = []
        for other in open_uris:
            other_path = _path(other) if other != uri else None
            if other_path and any(_inside(other_path, root) for root in roots):
                others.append(other)
        return others


def _path(uri: str) -> str | None:
    path = to_fs_path(uri)
    return os.path.abspath(path) if path else None


def _inside(path: str, root: str) -> bool:
    try:
        return os.path.commonpath([path, root]) == root
    except ValueError:  # another drive
        return False


def _serve(stdin: BinaryIO, stdout: BinaryIO) -> None:
    """The analysis process: read calls on a thread (the end of input ends the process, even during an
    analysis), run them on the main thread in order, write each result."""
    calls: queue.SimpleQueue = queue.SimpleQueue()

    def read() -> None:
        try:
            while True:
                calls.put(read_message(stdin))
        except (EOFError, OSError, ValueError, pickle.UnpicklingError):
            pass
        os._exit(0)  # the server is gone: end now, not after the analysis under way

    threading.Thread(target=read, name="dynalint-worker-read", daemon=True).start()
    # (a collection walks every tree the process keeps, and at CPython's thresholds one falls inside most
    # answers to an edit: the process collects while it waits, and after EDITS_PER_COLLECTION analyses when
    # the editor leaves it no time)
    documents = Documents(*calls.get(), collections=Collections(every=EDITS_PER_COLLECTION).start())
    write_message(stdout, (None, True, "ready"))
    while True:
        try:
            while calls.empty() and documents.idle():
                pass
        except Exception:  # work ahead only: the calls still get their answers
            log.exception("preparing for the next edit failed")
        job_id, method, args = calls.get()
        try:
            result, ok = getattr(documents, method)(*args), True
        except Exception as exc:  # the server logs it; the process goes on
            log.exception("%s failed", method)
            result, ok = f"{type(exc).__name__}: {exc}", False
        write_message(stdout, (job_id, ok, result))


def main(argv: list[str]) -> None:
    """The analysis process (see :mod:`dynalint.adapters.lsp.worker`); ``argv``: the log level."""
    logging.basicConfig(stream=sys.stderr, level=int(argv[0]) if argv else logging.WARNING,
                        format="dynalint-lsp-worker %(levelname)s %(name)s: %(message)s")
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print must not corrupt the results
    _serve(stdin, stdout)


if __name__ == "__main__":
    main(sys.argv[1:])
