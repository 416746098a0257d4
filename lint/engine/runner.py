"""Checking many files as one project: rounds of per-file analyses that hand each other
entries, parallel workers, and a content-addressed cache."""
from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping

from dynalint import __version__
from dynalint.analysis.number_callers import forget_kept_uses
from dynalint.analysis.project import SourceIndex
from dynalint.analysis.project import join_encoded
from dynalint.engine.cache_entry import (  # noqa: F401 (cache_warnings, code_fingerprint: also imported from here)
    _note_trouble, _package_directories, cache_warnings, code_fingerprint, file_digest, read_sealed_json,
    seal, source_digest, valid_entry)
from dynalint.config.resolver import Configuration
from dynalint.core.diagnostics import Diagnostic
from dynalint.engine.pipeline import Analysis, FileResult, SourceError, analyse, io_error
from dynalint.engine.run_record import record_path
from dynalint.core.notebooks import NotebookError, decode_file, is_notebook
from dynalint.engine.pool import chunk_size, default_jobs, worker_pool  # noqa: F401 (also imported from here)
from dynalint.config.settings import CACHE_DIR_NAME, Settings  # noqa: F401 (also imported from here)
from dynalint.core.source import Collections, on_large_stack, read_bytes

if TYPE_CHECKING:  # pragma: no cover
    from dynalint.engine.fixing import FixProgress


def settings_for(path: str, settings: Settings, root: str | None = None) -> Settings:
    """Settings with the per-file ignores that match ``path`` applied (patterns anchored at ``root``,
    the configuration file's directory; default: the current directory)."""
    return Configuration(settings, os.path.abspath(root or os.getcwd())).settings_for(path)


@dataclass
class Entry:
    """What one analysis of one file produced (what the cache stores)."""

    diagnostics: list[Diagnostic]
    outgoing: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    """Functions of other files its compiled code reaches: path -> qualname -> arguments."""
    deps: dict[str, str] = field(default_factory=dict)
    """Other files the analysis read (path -> content hash): a change to one invalidates the entry."""
    names: list[str] = field(default_factory=list)
    """The module names the analysis asked the project about (see :class:`ProjectView`)."""
    view: str = ""
    """What those names meant then (:meth:`ProjectView.view`): a file added or removed that changes
    it (an import that now resolves, a module that moved) invalidates the entry, no other does."""


class Cache:
    """Analyses keyed by (file content, the entries other files hand it, settings, dynalint
    version and source, target torch), valid while the files they read are unchanged.

    Entries are small JSON files written atomically, so concurrent runs and
    interrupted runs never leave a corrupt entry behind.
    """

    def __init__(self, directory: str) -> None:
        self.directory = directory

    @staticmethod
    def key(data: bytes, settings: Settings, entries: str = "", path: str = "") -> str:
        """``path``: the file's identity (its resolved path), so that two files with the same text
        in different packages, whose imports mean different modules, never share an entry.  What
        its imports resolved to is not in the key: an entry records the module names it asked
        about (:class:`ProjectView`), and is used only while they resolve as they did."""
        h = hashlib.sha256()
        h.update(__version__.encode())
        h.update(b"\0")
        h.update(code_fingerprint().encode())
        h.update(b"\0")
        h.update(settings.fingerprint().encode())
        h.update(b"\0")
        h.update(entries.encode())
        h.update(b"\0")
        h.update(os.path.realpath(path).encode("utf-8", "surrogateescape") if path else b"")
        h.update(b"\0")
        h.update(data)
        return h.hexdigest()

    def _path(self, key: str) -> str:
        return os.path.join(self.directory, key[:2], key[2:] + ".json")

    def get(self, key: str, path: str) -> Entry | None:
        """The entry stored under ``key``, or None: anything but an intact entry written for this key
        (another shape, a truncated or edited file, a link, a FIFO, a huge file) is a miss."""
        data = read_sealed_json(self._path(key), key)
        if not valid_entry(data):
            return None
        for dep, digest in data["deps"].items():
            if file_digest(dep) != digest:
                return None  # a file this analysis looked into has changed
        diagnostics = [Diagnostic.from_json({**d, "path": path}) for d in data["diagnostics"]]
        return Entry(diagnostics, data["outgoing"], data["deps"], data["names"], data["view"])

    def prepare(self) -> str | None:
        """Create the cache directory with its tag files unless they are there; why it cannot be
        written (None: it can, as far as this shows).  Nothing is left half made: the files are
        written atomically, and the folders created for a cache that cannot be written are removed."""
        if os.path.islink(self.directory):
            return "it is a symbolic link, which dynalint does not write through"
        tags = {"CACHEDIR.TAG": b"Signature: 8a477f597d28d172789f06886806bc55\n# dynalint cache\n",
                ".gitignore": b"# created by dynalint: keep the cache out of version control\n*\n"}
        created: list[str] = []
        try:
            created = _make_directories(self.directory)
            for name, content in tags.items():
                if not os.path.exists(os.path.join(self.directory, name)):
                    _put_file(self.directory, name, content)
        except OSError as exc:
            if created:
                for name in tags:
                    _unlink_quietly(os.path.join(self.directory, name))
                _remove_empty(created)
            return _reason(exc)
        return None

    def put(self, key: str, entry: Entry) -> str | None:
        """Store ``entry`` under ``key``; why it could not be (None: stored, or deliberately not,
        through a link)."""
        payload = json.dumps({"diagnostics": [d.to_json() for d in entry.diagnostics],
                              "outgoing": entry.outgoing, "deps": entry.deps,
                              "names": entry.names, "view": entry.view}).encode()
        return self._store(self._path(key), key, payload)

    def put_run(self, key: str, payload: bytes) -> str | None:
        """Store the record of a whole run (:mod:`dynalint.engine.run_record`); why it could not be."""
        return self._store(record_path(self.directory, key), key, payload)

    def _store(self, target: str, key: str, payload: bytes) -> str | None:
        subdir = os.path.dirname(target)
        if os.path.islink(self.directory) or any(os.path.islink(d) for d in _folders_between(self.directory, subdir)):
            return None  # a checkout's link must not make dynalint write where it points
        created: list[str] = []
        try:
            created = _make_directories(subdir)
            _put_file(subdir, os.path.basename(target), seal(key, payload))
        except OSError as exc:  # a cache that cannot be written only costs time
            _remove_empty(created)
            return _reason(exc)
        return None


def _folders_between(top: str, folder: str) -> list[str]:
    """The folders from below ``top`` down to ``folder`` (which is inside it)."""
    found = []
    while folder and os.path.abspath(folder) != os.path.abspath(top):
        found.append(folder)
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return found


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _make_directories(path: str) -> list[str]:
    """``os.makedirs(path, exist_ok=True)``, returning the folders it created, deepest last."""
    missing = []
    while path and not os.path.isdir(path):
        missing.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    created = []
    try:
        for folder in reversed(missing):
            try:
                os.mkdir(folder)
            except FileExistsError:
                if not os.path.isdir(folder):
                    raise NotADirectoryError(errno.ENOTDIR, f"{folder} is not a directory") from None
                continue
            created.append(folder)
    except OSError:
        _remove_empty(created)
        raise
    return created


def _remove_empty(created: list[str]) -> None:
    """Remove the folders of ``created`` (deepest last) that are still empty."""
    for folder in reversed(created):
        try:
            os.rmdir(folder)
        except OSError:
            return


def _put_file(directory: str, name: str, content: bytes) -> None:
    """Write ``directory/name`` atomically: a temporary file, removed if anything fails, then a rename."""
    fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(content)
        os.replace(tmp, os.path.join(directory, name))
    except BaseException:
        _unlink_quietly(tmp)
        raise


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


IMPORTERS_OF = "<importers>"
"""What :meth:`ProjectView.asked` records for a question about the modules that import a module."""


class ProjectView(SourceIndex):
    """The project index of a run, recording which module names each analysis asks about.

    What an analysis finds in other files depends on the set of checked modules only through the
    names it resolves: whether a name is a checked module or package, and which file holds it.
    Recording those names lets a cache entry survive a file added elsewhere in the project, and
    still be dropped when an import it made now resolves to the new file."""

    def __init__(self, paths: Iterable[str]) -> None:
        super().__init__(paths)
        self.asked: set[str] = set()
        """Module names the current analysis asked about (reset before each analysis)."""
        self._asked_under: dict[str, set[str]] = {}
        """The names resolving a qualified name asked in turn: an analysis that reuses the answer
        depends on them too."""

    def resolve(self, q: str, depth: int = 0) -> Any:
        known = self._asked_under.get(q)
        if known is not None:
            self.asked |= known
            return super().resolve(q, depth)
        outer, self.asked = self.asked, {q}
        try:
            return super().resolve(q, depth)
        finally:
            self._asked_under[q], self.asked = self.asked, outer | self.asked

    def load(self, name: str, path: str | None = None) -> Any:
        self.asked.add(name)
        return super().load(name, path)

    def importers_of(self, name: str) -> list[tuple[str, frozenset[str] | None]]:
        # the answer changes with the files that import ``name``, added, removed or edited elsewhere
        self.asked.add(IMPORTERS_OF + name)
        return super().importers_of(name)

    def view(self, names: Iterable[str], path: str) -> str:
        """A digest of what ``names`` mean in this project, seen from the file at ``path`` (its own
        module name decides its relative imports)."""
        h = hashlib.sha256((self.module_of(path) or "").encode("utf-8", "surrogateescape") + b"\0")
        for name in names:
            if name.startswith(IMPORTERS_OF):
                h.update(repr(sorted(SourceIndex.importers_of(self, name[len(IMPORTERS_OF):]), key=repr)).encode(
                    "utf-8", "surrogateescape") + b"\1")
                continue
            for q in (name, name.rpartition(".")[0]):
                target = self.paths.get(q)
                h.update("\0".join((q, str(q.split(".")[0] in self.tops),
                                     os.path.realpath(target) if target else "",
                                     self.packages.get(q, ""))).encode("utf-8", "surrogateescape") + b"\1")
        return h.hexdigest()


@dataclass(frozen=True)
class Kept:
    """What the fixes of a file go on from: the text the pass analysed, with the incoming entries
    (canonical JSON) it was analysed with, and the analysis itself (made in this process) or round
    one of the fix made from it (where the file was analysed, a worker process perhaps)."""

    source: str
    entries: str
    analysis: Analysis | None = None
    begun: FixProgress | None = None


@dataclass(frozen=True)
class _Job:
    path: str
    settings: Settings
    cache_dir: str | None
    entries: str = ""
    """Incoming entries of the file, as canonical JSON ("" for none)."""
    with_fixes: bool = False
    data: bytes | None = None
    """The file's content when it does not come from the file (standard input)."""
    write_cache: bool = True
    """False when the cache is only read (it could not be written earlier in the run)."""
    keep: bool = False
    """Keep the analysis itself, with its values, on the outcome (an analysis in this process that
    ``fix`` goes on from: see :func:`project_pass`)."""
    fix: bool | None = None
    """Make round one of the file's fix from its analysis (:func:`dynalint.engine.fixing.begin_fix`),
    with unsafe fixes or not; None: the file is not fixed next."""


@dataclass
class _Outcome:
    result: FileResult
    outgoing: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    cache_error: str | None = None
    """Why the analysis could not be stored in the cache (the main process reports it once)."""
    deps: dict[str, str] = field(default_factory=dict)
    """Other files the analysis read (path -> content hash)."""
    kept: Kept | None = None
    """The analysis itself, or round one of the fix, when the job asked for it (and it was not answered
    by the cache)."""


_WORKER_PROJECT: ProjectView | None = None
"""The project index of a worker process of the pool (built once per process by its initializer)."""


def init_worker(paths: list[str]) -> None:
    """Pool initializer: the index of the project's files, for every job this process runs."""
    global _WORKER_PROJECT
    _WORKER_PROJECT = ProjectView(paths)
    _WORKER_COLLECTIONS.start()


def worker_index() -> ProjectView | None:
    """The index :func:`init_worker` built in this worker process."""
    return _WORKER_PROJECT


def _check_in_worker(job: _Job) -> _Outcome:
    try:
        return _check_one(job, _WORKER_PROJECT)
    finally:
        _WORKER_COLLECTIONS.done()


_WORKER_COLLECTIONS = Collections(forget_kept_uses)


def _check_one(job: _Job, project: ProjectView | None = None) -> _Outcome:
    """Read, look up the cache, check (with ``project`` as the index of the other files). Never raises."""
    path, settings = job.path, job.settings
    data = job.data
    if data is None:
        try:
            data = read_bytes(path)
        except SourceError as exc:
            return _Outcome(FileResult(path, io_error(path, str(exc), settings)))
    cache = Cache(job.cache_dir) if job.cache_dir else None
    key = Cache.key(data + (b"\0fixes" if job.with_fixes else b""), settings, job.entries, path) if cache else ""
    if cache is not None:
        cached = cache.get(key, path)
        if cached is not None and (project.view(cached.names, path) if project is not None else "") == cached.view:
            return _Outcome(FileResult(path, cached.diagnostics), cached.outgoing, deps=cached.deps)
    try:
        source, notebook = decode_file(path, data)
    except (SourceError, NotebookError) as exc:
        return _Outcome(FileResult(path, io_error(path, str(exc), settings)))
    entries = json.loads(job.entries) if job.entries else {}
    try:
        if project is not None:
            project.read, project.asked = set(), set()
        diagnostics, outgoing, analysis, begun = _analyse(
            source, path, settings, project, entries, job.with_fixes, job.keep and notebook is None,
            job.fix if notebook is None else None)
    except Exception as exc:  # an analysis bug must not stop the run
        message = f"internal error while analysing ({type(exc).__name__}: {exc}); please report it"
        return _Outcome(FileResult(path, error=message))
    if notebook is not None:
        diagnostics = [notebook.map_back(d) for d in diagnostics]
    deps, names, view = {}, [], ""
    if project is not None:
        deps = {p: file_digest(p) for p in sorted(project.read) if os.path.abspath(p) != os.path.abspath(path)}
        names = sorted(project.asked)
        view = project.view(names, path)
    cache_error = None
    if cache is not None and job.write_cache:
        cache_error = cache.put(key, Entry(diagnostics, outgoing, deps, names, view))
    kept = Kept(source, job.entries, analysis, begun) if analysis is not None or begun is not None else None
    return _Outcome(FileResult(path, diagnostics), outgoing, cache_error, deps, kept)


def _analyse(source: str, path: str, settings: Settings, project: SourceIndex | None,
             entries: dict[str, dict[str, Any]], with_fixes: bool, keep: bool = False, fix: bool | None = None
             ) -> tuple[list[Diagnostic], dict[str, dict[str, dict[str, Any]]], Analysis | None, FixProgress | None]:
    """Diagnostics of one file of the project (with their fixes when asked), the entries its
    compiled code hands to other files, the analysis itself when ``keep`` (with its values), and round
    one of its fix when ``fix`` is not None (whether unsafe fixes apply)."""
    released = None
    try:
        analysis = analyse(source, path, settings, record_values=with_fixes or keep or fix is not None,
                           project=project, entries=entries)
        if with_fixes:
            from dynalint.engine.fixing import diagnostics_with_fixes

            diagnostics = diagnostics_with_fixes(source, path, settings, analysis=analysis)
        else:
            diagnostics = analysis.diagnostics
    finally:
        if project is not None:
            released = project.release(path)
    outgoing = analysis.program.calls.encoded_outgoing() if analysis.program is not None else {}
    begun = _begun(source, analysis, fix) if fix is not None else None
    if keep:
        return diagnostics, outgoing, analysis, begun  # its index is read again: not disposed
    if analysis.program is not None:
        analysis.program.let_go()
    if released is not None:
        released.dispose()
    return diagnostics, outgoing, None, begun


def _begun(source: str, analysis: Analysis, unsafe: bool) -> FixProgress | None:
    """Round one of the fix of ``source`` from its ``analysis``; None when it fails (the fix, made
    again from the start, reports what went wrong: the check of the file is not disturbed)."""
    from dynalint.engine.fixing import begin_fix

    try:
        return on_large_stack(begin_fix, source, analysis, unsafe)  # a rewrite walks the tree: deep code
    except Exception:
        return None


MIN_FILES_FOR_POOL = 4
"""Fewer files are analysed in this process: starting workers would cost more than it saves."""

MAX_ROUNDS = 4
"""Rounds of the project pass: a function reached from another file may reach a third one."""


def check_files(paths: Iterable[str], settings: Settings | Configuration, *, jobs: int = 1,
                cache_dir: str | None = None, with_fixes: bool = False,
                stdin: tuple[str, bytes] | None = None) -> Iterator[FileResult]:
    """Check exactly these files as one project; results in the order of ``paths``.  ``with_fixes``:
    diagnostics carry their fixes.  ``stdin``: (shown path, content) of a file read from standard
    input, checked first (alone: it is no file of the project).  (:class:`dynalint.engine.session.Session`
    adds the files of the project around them.)
    """
    config = settings if isinstance(settings, Configuration) else Configuration(settings, os.getcwd())
    if stdin is not None:
        job = _Job(stdin[0], config.settings_for(stdin[0]), None, with_fixes=with_fixes, data=stdin[1])
        yield _check_one(job).result
    paths = list(paths)
    if not paths:
        return
    outcomes, _ = project_pass(paths, config, jobs=jobs, cache_dir=cache_dir,
                               with_fixes=paths if with_fixes else ())
    for p in paths:
        yield outcomes[p].result


def project_pass(paths: list[str], config: Configuration, *, jobs: int = 1, cache_dir: str | None = None,
                 with_fixes: Iterable[str] = (), index: list[str] | None = None,
                 project: ProjectView | None = None, keep: Iterable[str] = (),
                 fixing: Mapping[str, bool] | None = None) -> tuple[dict[str, _Outcome], dict[str, str]]:
    """Analyse ``paths`` as one program: each file's outcome and its settled incoming entries
    (canonical JSON, by path).  ``index``: the files whose definitions names resolve to (default:
    ``paths``); ``with_fixes``: the files whose diagnostics carry their fixes; ``project``: the index
    of those files already built (and still true to them; a :class:`ProjectView`, or another is built),
    for the analyses run in this process; ``keep``: the files whose last analysis, made with their
    settled entries, is kept on their outcome (:attr:`_Outcome.kept`) for the fixes to go on from, so
    that ``fix`` does not analyse them again (they are analysed in this process, the others in the
    worker processes when there are any); ``fixing``: the files fixed next, each with whether unsafe
    fixes apply, whose outcome keeps round one of the fix made from their last analysis wherever it
    was made (:attr:`Kept.begun`: the fix goes on from it, in any process).

    Each file is analysed with the entries the compiled code of the other files hands it
    (functions they call, with the arguments they pass).  The first round analyses every file
    with none; later rounds re-analyse only the files whose incoming entries changed.
    """
    paths = list(dict.fromkeys(paths))
    index = [p for p in dict.fromkeys(index if index is not None else paths) if not is_notebook(p)]
    fixes = set(with_fixes)
    base = {p: config.settings_for(p) for p in paths}
    incoming: dict[str, str] = {}
    outcomes: dict[str, _Outcome] = {}
    workers = min(jobs, len(paths) // 2)  # a worker costs its start (imports): at least two files each
    project = project if isinstance(project, ProjectView) else ProjectView(index)
    pooled = workers > 1 and len(paths) >= MIN_FILES_FOR_POOL
    keeps = set(keep)
    fixing = fixing or {}
    with worker_pool(workers, init_worker, (index,)) if pooled else contextlib.nullcontext() as pool:
        # modules that others import first: their trees are still loaded when their importers
        # are analysed (the order of the results does not change)
        unwritable = bool(cache_dir) and _note_trouble(cache_dir, Cache(cache_dir).prepare())
        pending = project.dependency_order(paths)
        for _ in range(MAX_ROUNDS):
            job_list = [_Job(p, base[p], cache_dir, incoming.get(p, ""), p in fixes,
                             write_cache=not unwritable, keep=p in keeps, fix=fixing.get(p)) for p in pending]
            # a kept analysis is made in this process, whatever the others (the fixes go on from it here)
            away = [j for j in job_list if not j.keep] if pool is not None else []
            done: dict[str, _Outcome] = {}
            if away:
                done.update(zip((j.path for j in away),
                                pool.map(_check_in_worker, away, chunksize=chunk_size(len(away), workers, 16))))
            here = [j for j in job_list if j.path not in done]
            if here:
                with Collections(forget_kept_uses) as collections:
                    for job in here:
                        done[job.path] = _check_one(job, project)
                        collections.done()
            for job in job_list:
                outcome = outcomes[job.path] = done[job.path]
                if cache_dir and _note_trouble(cache_dir, outcome.cache_error):
                    unwritable = True  # not tried again in the next rounds
            new = _incoming(outcomes)
            pending = [p for p in outcomes if new.get(p, "") != incoming.get(p, "")]
            incoming = new
            if not pending:
                break
        for p in pending:  # the rounds ran out: their last analysis is not of the settled entries
            outcomes[p].kept = None
    return outcomes, incoming


def _incoming(outcomes: dict[str, _Outcome]) -> dict[str, str]:
    """Each file's incoming entries (as canonical JSON), joined over the files that call into it."""
    merged: dict[str, dict[str, dict[str, Any]]] = {}
    by_abs = {os.path.abspath(p): p for p in outcomes}
    for outcome in outcomes.values():
        for target, functions in outcome.outgoing.items():
            path = by_abs.get(os.path.abspath(target))
            if path is None:
                continue
            for qualname, params in functions.items():
                into = merged.setdefault(path, {}).setdefault(qualname, {})
                for name, code in params.items():
                    into[name] = code if name not in into else join_encoded(into[name], code)
    return {p: json.dumps(v, sort_keys=True, separators=(",", ":")) for p, v in merged.items()}
