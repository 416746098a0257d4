"""Checking many files as one project: rounds of per-file analyses that hand each other
entries, parallel workers, and a content-addressed cache."""
from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

from dynalint import __version__
from dynalint.analysis.project import SourceIndex
from dynalint.analysis.project import content_hash, join_encoded
from dynalint.cache_entry import read_sealed, seal, valid_entry
from dynalint.config import Configuration
from dynalint.diagnostics import Diagnostic
from dynalint.engine import FileResult, SourceError, analyse, io_error
from dynalint.notebooks import NotebookError, decode_file, is_notebook
from dynalint.pool import chunk_size, worker_pool
from dynalint.settings import CACHE_DIR_NAME, Settings  # noqa: F401 (also imported from here)
from dynalint.source import Collections, read_bytes


def settings_for(path: str, settings: Settings, root: str | None = None) -> Settings:
    """Settings with the per-file ignores that match ``path`` applied (patterns anchored at ``root``,
    the configuration file's directory; default: the current directory)."""
    return Configuration(settings, os.path.abspath(root or os.getcwd())).settings_for(path)


@functools.lru_cache(maxsize=None)
def code_fingerprint() -> str:
    """A digest of dynalint's own source files (computed once per process).

    The version string alone does not change between commits, so an upgraded
    checkout (a new pre-commit ``rev``, an editable install) would otherwise
    be served results computed by older rules.  Every module counts, sub-packages
    (``analysis/evaluator``) included.
    """
    return source_digest(_package_directories())


def _package_directories() -> list[str]:
    import dynalint.fixers
    import dynalint.rules

    return [os.path.dirname(os.path.abspath(package.__file__ or ""))
            for package in (dynalint, dynalint.rules, dynalint.fixers)]


def source_digest(directories: Iterable[str]) -> str:
    """A digest of the names and contents of every ``.py`` file under ``directories``, recursively."""
    h = hashlib.sha256()
    for directory in directories:
        h.update(directory.encode("utf-8", "surrogateescape") + b"\0\0")
        for dirpath, dirnames, filenames in os.walk(directory):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for name in sorted(n for n in filenames if n.endswith(".py")):
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, directory).encode("utf-8", "surrogateescape")
                try:
                    with open(full, "rb") as fh:
                        h.update(rel + b"\0" + fh.read() + b"\0")
                except OSError:
                    h.update(rel + b"\0?\0")
    return h.hexdigest()[:16]


@dataclass
class Entry:
    """What one analysis of one file produced (what the cache stores)."""

    diagnostics: list[Diagnostic]
    outgoing: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    """Functions of other files its compiled code reaches: path -> qualname -> arguments."""
    deps: dict[str, str] = field(default_factory=dict)
    """Other files the analysis read (path -> content hash): a change to one invalidates the entry."""


class Cache:
    """Analyses keyed by (file content, the entries other files hand it, settings, dynalint
    version and source, target torch), valid while the files they read are unchanged.

    Entries are small JSON files written atomically, so concurrent runs and
    interrupted runs never leave a corrupt entry behind.
    """

    def __init__(self, directory: str) -> None:
        self.directory = directory

    @staticmethod
    def key(data: bytes, settings: Settings, entries: str = "", path: str = "", modules: str = "") -> str:
        """``path``: the file's identity (its resolved path), so that two files with the same text
        in different packages, whose imports mean different modules, never share an entry.
        ``modules``: the digest of the checked modules (:func:`modules_digest`): what an import can
        resolve to differs between ``check pkg/m.py`` and ``check .``."""
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
        h.update(modules.encode())
        h.update(b"\0")
        h.update(data)
        return h.hexdigest()

    def _path(self, key: str) -> str:
        return os.path.join(self.directory, key[:2], key[2:] + ".json")

    def get(self, key: str, path: str) -> Entry | None:
        """The entry stored under ``key``, or None: anything but an intact entry written for this key
        (another shape, a truncated or edited file, a link, a FIFO, a huge file) is a miss."""
        payload = read_sealed(self._path(key), key)
        if payload is None:
            return None
        try:
            data = json.loads(payload)
        except (ValueError, RecursionError):
            return None
        if not valid_entry(data):
            return None
        for dep, digest in data["deps"].items():
            if _file_hash(dep) != digest:
                return None  # a file this analysis looked into has changed
        diagnostics = [Diagnostic.from_json({**d, "path": path}) for d in data["diagnostics"]]
        return Entry(diagnostics, data["outgoing"], data["deps"])

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
        target = self._path(key)
        subdir = os.path.dirname(target)
        if os.path.islink(self.directory) or os.path.islink(subdir):
            return None  # a checkout's link must not make dynalint write where it points
        created: list[str] = []
        try:
            created = _make_directories(subdir)
            payload = json.dumps({"diagnostics": [d.to_json() for d in entry.diagnostics],
                                  "outgoing": entry.outgoing, "deps": entry.deps}).encode()
            _put_file(subdir, os.path.basename(target), seal(key, payload))
        except OSError as exc:  # a cache that cannot be written only costs time
            _remove_empty(created)
            return _reason(exc)
        return None


_TROUBLE: dict[str, str] = {}
"""Cache directories that could not be written to, with why, not yet reported (:func:`cache_warnings`)."""
_NOTED: set[str] = set()
"""Cache directories whose trouble this process has noted already: each is reported once."""


def _note_trouble(directory: str, reason: str | None) -> bool:
    """Note that ``directory`` could not be written (when ``reason``); whether it could not."""
    if reason is not None and directory not in _NOTED:
        _NOTED.add(directory)
        _TROUBLE[directory] = reason
    return reason is not None


def cache_warnings() -> list[str]:
    """One message per cache directory that could not be written since the last call (results
    are right, only not kept)."""
    messages = [f"warning: cannot write the cache in {directory}: {reason}; results are not cached"
                for directory, reason in _TROUBLE.items()]
    _TROUBLE.clear()
    return messages


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


def modules_digest(project: SourceIndex) -> str:
    """A digest of the checked modules (name and resolved path of each): an analysis resolves imports
    among them, so adding or removing a checked file invalidates the entries."""
    h = hashlib.sha256()
    for name, path in sorted(project.paths.items()):
        h.update(name.encode() + b"\0" + os.path.realpath(path).encode("utf-8", "surrogateescape") + b"\0")
    return h.hexdigest()


_HASHES: dict[str, tuple[float, int, str]] = {}


def _file_hash(path: str) -> str:
    """Content hash of a file (memoised by modification time and size)."""
    try:
        st = os.stat(path)
        known = _HASHES.get(path)
        if known is not None and known[0] == st.st_mtime and known[1] == st.st_size:
            return known[2]
        with open(path, "rb") as fh:
            digest = content_hash(fh.read())
    except OSError:
        return "?"
    _HASHES[path] = (st.st_mtime, st.st_size, digest)
    return digest


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
    modules: str = ""
    """The digest of the checked modules (see :func:`modules_digest`)."""
    write_cache: bool = True
    """False when the cache is only read (it could not be written earlier in the run)."""


@dataclass
class _Outcome:
    result: FileResult
    outgoing: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    cache_error: str | None = None
    """Why the analysis could not be stored in the cache (the main process reports it once)."""


_WORKER_PROJECT: SourceIndex | None = None
"""The project index of a worker process of the pool (built once per process by its initializer)."""


def init_worker(paths: list[str]) -> None:
    """Pool initializer: the index of the project's files, for every job this process runs."""
    global _WORKER_PROJECT
    _WORKER_PROJECT = SourceIndex(paths)
    _WORKER_COLLECTIONS.start()


def worker_index() -> SourceIndex | None:
    """The index :func:`init_worker` built in this worker process."""
    return _WORKER_PROJECT


def _check_in_worker(job: _Job) -> _Outcome:
    try:
        return _check_one(job, _WORKER_PROJECT)
    finally:
        _WORKER_COLLECTIONS.done()


_WORKER_COLLECTIONS = Collections()


def _check_one(job: _Job, project: SourceIndex | None = None) -> _Outcome:
    """Read, look up the cache, check (with ``project`` as the index of the other files). Never raises."""
    path, settings = job.path, job.settings
    data = job.data
    if data is None:
        try:
            data = read_bytes(path)
        except SourceError as exc:
            return _Outcome(FileResult(path, io_error(path, str(exc), settings)))
    cache = Cache(job.cache_dir) if job.cache_dir else None
    key = Cache.key(data + (b"\0fixes" if job.with_fixes else b""), settings, job.entries, path,
                    job.modules) if cache else ""
    if cache is not None:
        cached = cache.get(key, path)
        if cached is not None:
            return _Outcome(FileResult(path, cached.diagnostics), cached.outgoing)
    try:
        source, notebook = decode_file(path, data)
    except (SourceError, NotebookError) as exc:
        return _Outcome(FileResult(path, io_error(path, str(exc), settings)))
    entries = json.loads(job.entries) if job.entries else {}
    try:
        if project is not None:
            project.read = set()
        diagnostics, outgoing = _analyse(source, path, settings, project, entries, job.with_fixes)
    except Exception as exc:  # an analysis bug must not stop the run
        message = f"internal error while analysing ({type(exc).__name__}: {exc}); please report it"
        return _Outcome(FileResult(path, error=message))
    if notebook is not None:
        diagnostics = [notebook.map_back(d) for d in diagnostics]
    deps = {}
    if project is not None:
        deps = {p: _file_hash(p) for p in sorted(project.read) if os.path.abspath(p) != os.path.abspath(path)}
    cache_error = None
    if cache is not None and job.write_cache:
        cache_error = cache.put(key, Entry(diagnostics, outgoing, deps))
    return _Outcome(FileResult(path, diagnostics), outgoing, cache_error)


def _analyse(source: str, path: str, settings: Settings, project: SourceIndex | None,
             entries: dict[str, dict[str, Any]], with_fixes: bool
             ) -> tuple[list[Diagnostic], dict[str, dict[str, dict[str, Any]]]]:
    """Diagnostics of one file of the project (with their fixes when asked), and the entries its
    compiled code hands to other files."""
    released = None
    try:
        analysis = analyse(source, path, settings, record_values=with_fixes, project=project, entries=entries)
        if with_fixes:
            from dynalint.fixing import diagnostics_with_fixes

            diagnostics = diagnostics_with_fixes(source, path, settings, analysis=analysis)
        else:
            diagnostics = analysis.diagnostics
    finally:
        if project is not None:
            released = project.release(path)
    outgoing = analysis.program.encoded_outgoing() if analysis.program is not None else {}
    if released is not None:
        released.dispose()
    return diagnostics, outgoing


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


MIN_FILES_FOR_POOL = 4
"""Fewer files are analysed in this process: starting workers would cost more than it saves."""

MAX_ROUNDS = 4
"""Rounds of the project pass: a function reached from another file may reach a third one."""


def check_files(paths: Iterable[str], settings: Settings | Configuration, *, jobs: int = 1,
                cache_dir: str | None = None, with_fixes: bool = False,
                stdin: tuple[str, bytes] | None = None) -> Iterator[FileResult]:
    """Check exactly these files as one project; results in the order of ``paths``.  ``with_fixes``:
    diagnostics carry their fixes.  ``stdin``: (shown path, content) of a file read from standard
    input, checked first (alone: it is no file of the project).  (:class:`dynalint.session.Session`
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
                 project: SourceIndex | None = None) -> tuple[dict[str, _Outcome], dict[str, str]]:
    """Analyse ``paths`` as one program: each file's outcome and its settled incoming entries
    (canonical JSON, by path).  ``index``: the files whose definitions names resolve to (default:
    ``paths``); ``with_fixes``: the files whose diagnostics carry their fixes; ``project``: the index
    of those files already built (and still true to them), for the analyses run in this process.

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
    project = project if project is not None else SourceIndex(index)
    pooled = workers > 1 and len(paths) >= MIN_FILES_FOR_POOL
    with worker_pool(workers, init_worker, (index,)) if pooled else contextlib.nullcontext() as pool:
        # modules that others import first: their trees are still loaded when their importers
        # are analysed (the order of the results does not change)
        modules = modules_digest(project) if cache_dir else ""
        unwritable = bool(cache_dir) and _note_trouble(cache_dir, Cache(cache_dir).prepare())
        pending = project.dependency_order(paths)
        for _ in range(MAX_ROUNDS):
            job_list = [_Job(p, base[p], cache_dir, incoming.get(p, ""), p in fixes, modules=modules,
                             write_cache=not unwritable) for p in pending]
            if pool is not None:
                done = list(pool.map(_check_in_worker, job_list,
                                     chunksize=chunk_size(len(job_list), workers, 16)))
            else:
                done = []
                with Collections() as collections:
                    for job in job_list:
                        done.append(_check_one(job, project))
                        collections.done()
            for job, outcome in zip(job_list, done):
                outcomes[job.path] = outcome
                if cache_dir and _note_trouble(cache_dir, outcome.cache_error):
                    unwritable = True  # not tried again in the next rounds
            new = _incoming(outcomes)
            pending = [p for p in outcomes if new.get(p, "") != incoming.get(p, "")]
            incoming = new
            if not pending:
                break
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
