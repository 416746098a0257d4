"""Checking many files as one project: rounds of per-file analyses that hand each other
entries, parallel workers, and a content-addressed cache."""
from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

from dynalint import __version__
from dynalint.analysis.project import Project as SourceProject
from dynalint.analysis.project import content_hash, join_encoded
from dynalint.config import Project
from dynalint.diagnostics import Diagnostic
from dynalint.engine import FileResult, SourceError, analyse, decode_source, io_error
from dynalint.settings import Settings
from dynalint.source import read_bytes

CACHE_DIR_NAME = ".dynalint_cache"


def settings_for(path: str, settings: Settings, root: str | None = None) -> Settings:
    """Settings with the per-file ignores that match ``path`` applied (patterns anchored at ``root``,
    the configuration file's directory; default: the current directory)."""
    return Project(settings, os.path.abspath(root or os.getcwd())).settings_for(path)


@functools.lru_cache(maxsize=None)
def code_fingerprint() -> str:
    """A digest of dynalint's own source files.

    The version string alone does not change between commits, so an upgraded
    checkout (a new pre-commit ``rev``, an editable install) would otherwise
    be served results computed by older rules.
    """
    import dynalint.analysis
    import dynalint.fixers
    import dynalint.rules

    h = hashlib.sha256()
    for package in (dynalint, dynalint.analysis, dynalint.rules, dynalint.fixers):
        directory = os.path.dirname(os.path.abspath(package.__file__ or ""))
        try:
            names = sorted(n for n in os.listdir(directory) if n.endswith(".py"))
        except OSError:
            continue
        for name in names:
            try:
                with open(os.path.join(directory, name), "rb") as fh:
                    h.update(name.encode() + b"\0" + fh.read() + b"\0")
            except OSError:
                h.update(name.encode() + b"\0?\0")
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
    def key(data: bytes, settings: Settings, entries: str = "") -> str:
        h = hashlib.sha256()
        h.update(__version__.encode())
        h.update(b"\0")
        h.update(code_fingerprint().encode())
        h.update(b"\0")
        h.update(settings.fingerprint().encode())
        h.update(b"\0")
        h.update(entries.encode())
        h.update(b"\0")
        h.update(data)
        return h.hexdigest()

    def _path(self, key: str) -> str:
        return os.path.join(self.directory, key[:2], key[2:] + ".json")

    def get(self, key: str, path: str) -> Entry | None:
        try:
            with open(self._path(key), encoding="utf-8") as fh:
                data = json.load(fh)
            diagnostics = [Diagnostic.from_json({**d, "path": path}) for d in data["diagnostics"]]
            outgoing, deps = data["outgoing"], data["deps"]
            if not isinstance(outgoing, dict) or not isinstance(deps, dict):
                return None
            for dep, digest in deps.items():
                if _file_hash(dep) != digest:
                    return None  # a file this analysis looked into has changed
            return Entry(diagnostics, outgoing, deps)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None

    def put(self, key: str, entry: Entry) -> None:
        target = self._path(key)
        try:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if not os.path.exists(os.path.join(self.directory, "CACHEDIR.TAG")):
                with open(os.path.join(self.directory, "CACHEDIR.TAG"), "w") as fh:
                    fh.write("Signature: 8a477f597d28d172789f06886806bc55\n# dynalint cache\n")
                with open(os.path.join(self.directory, ".gitignore"), "w") as fh:
                    fh.write("# created by dynalint: keep the cache out of version control\n*\n")
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target), suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({"diagnostics": [d.to_json() for d in entry.diagnostics],
                           "outgoing": entry.outgoing, "deps": entry.deps}, fh)
            os.replace(tmp, target)
        except OSError:
            pass  # a cache that cannot be written only costs time


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


@dataclass
class _Outcome:
    result: FileResult
    outgoing: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)


_PROJECT: SourceProject | None = None
"""The project of the worker process (set once per run, see :func:`set_project`)."""


def set_project(paths: list[str] | None) -> None:
    """Make ``paths`` the project of this process (a pool initializer; None forgets it)."""
    global _PROJECT
    _PROJECT = SourceProject(paths) if paths is not None else None


def current_project() -> SourceProject | None:
    """The project of this process, if one is set (see :func:`set_project`)."""
    return _PROJECT


def _check_one(job: _Job) -> _Outcome:
    """Worker: read, look up the cache, check. Never raises."""
    path, settings = job.path, job.settings
    data = job.data
    if data is None:
        try:
            data = read_bytes(path)
        except SourceError as exc:
            return _Outcome(FileResult(path, io_error(path, str(exc), settings)))
    cache = Cache(job.cache_dir) if job.cache_dir else None
    key = Cache.key(data + (b"\0fixes" if job.with_fixes else b""), settings, job.entries) if cache else ""
    if cache is not None:
        cached = cache.get(key, path)
        if cached is not None:
            return _Outcome(FileResult(path, cached.diagnostics), cached.outgoing)
    try:
        source = decode_source(data)
    except SourceError as exc:
        return _Outcome(FileResult(path, io_error(path, str(exc), settings)))
    project = _PROJECT
    entries = json.loads(job.entries) if job.entries else {}
    try:
        if project is not None:
            project.read = set()
        diagnostics, outgoing = _analyse(source, path, settings, project, entries, job.with_fixes)
    except Exception as exc:  # an analysis bug must not stop the run
        message = f"internal error while analysing ({type(exc).__name__}: {exc}); please report it"
        return _Outcome(FileResult(path, error=message))
    deps = {}
    if project is not None:
        deps = {p: _file_hash(p) for p in sorted(project.read) if os.path.abspath(p) != os.path.abspath(path)}
    if cache is not None:
        cache.put(key, Entry(diagnostics, outgoing, deps))
    return _Outcome(FileResult(path, diagnostics), outgoing)


def _analyse(source: str, path: str, settings: Settings, project: SourceProject | None,
             entries: dict[str, dict[str, Any]], with_fixes: bool
             ) -> tuple[list[Diagnostic], dict[str, dict[str, dict[str, Any]]]]:
    """Diagnostics of one file of the project (with their fixes when asked), and the entries its
    compiled code hands to other files."""
    try:
        analysis = analyse(source, path, settings, record_values=with_fixes, project=project, entries=entries)
        if with_fixes:
            from dynalint.fixing import diagnostics_with_fixes

            diagnostics = diagnostics_with_fixes(source, path, settings, analysis=analysis)
        else:
            diagnostics = analysis.diagnostics
    finally:
        if project is not None:
            project.release(path)
    outgoing = analysis.program.encoded_outgoing() if analysis.program is not None else {}
    return diagnostics, outgoing


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


MAX_ROUNDS = 4
"""Rounds of the project pass: a function reached from another file may reach a third one."""


def check_files(paths: Iterable[str], settings: Settings | Project, *, jobs: int = 1,
                cache_dir: str | None = None, with_fixes: bool = False,
                stdin: tuple[str, bytes] | None = None) -> Iterator[FileResult]:
    """Check the files as one project; results in the order of ``paths``.  ``with_fixes``:
    diagnostics carry their fixes.  ``stdin``: (shown path, content) of a file read from standard
    input, checked first (alone: it is no file of the project).

    Each file is analysed with the entries the compiled code of the other files hands it
    (functions they call, with the arguments they pass).  The first round analyses every file
    with none; later rounds re-analyse only the files whose incoming entries changed.
    """
    config = settings if isinstance(settings, Project) else Project(settings, os.getcwd())
    if stdin is not None:
        job = _Job(stdin[0], config.settings_for(stdin[0]), None, with_fixes=with_fixes, data=stdin[1])
        yield _check_one(job).result
    paths = list(paths)
    if not paths:
        return
    outcomes, _ = _project_pass(paths, config, jobs, cache_dir, with_fixes)
    for p in paths:
        yield outcomes[p].result


def project_entries(paths: list[str], settings: Settings | Project, *, jobs: int = 1,
                    cache_dir: str | None = None) -> dict[str, str]:
    """Each file's incoming entries once the project pass has settled (canonical JSON, by path):
    what ``fix`` analyses each file with, so that it sees what ``check`` sees."""
    config = settings if isinstance(settings, Project) else Project(settings, os.getcwd())
    if not paths:
        return {}
    return _project_pass(list(paths), config, jobs, cache_dir, False)[1]


def _project_pass(paths: list[str], config: Project, jobs: int, cache_dir: str | None, with_fixes: bool
                  ) -> tuple[dict[str, _Outcome], dict[str, str]]:
    """The rounds of the project pass: each file's outcome and its final incoming entries."""
    base = {p: config.settings_for(p) for p in paths}
    incoming: dict[str, str] = {}
    outcomes: dict[str, _Outcome] = {}
    pool = ProcessPoolExecutor(max_workers=jobs, initializer=set_project, initargs=(paths,)) \
        if jobs > 1 and len(paths) > 1 else None
    if pool is None:
        set_project(paths)
    try:
        # modules that others import first: their trees are still loaded when their importers
        # are analysed (the order of the results does not change)
        pending = SourceProject(paths).dependency_order(list(dict.fromkeys(paths)))
        for _ in range(MAX_ROUNDS):
            job_list = [_Job(p, base[p], cache_dir, incoming.get(p, ""), with_fixes) for p in pending]
            if pool is not None:
                chunk = max(1, min(16, len(job_list) // (jobs * 4) or 1))
                done = list(pool.map(_check_one, job_list, chunksize=chunk))
            else:
                done = [_check_one(job) for job in job_list]
            for job, outcome in zip(job_list, done):
                outcomes[job.path] = outcome
            new = _incoming(outcomes)
            pending = [p for p in outcomes if new.get(p, "") != incoming.get(p, "")]
            incoming = new
            if not pending:
                break
    finally:
        if pool is not None:
            pool.shutdown()
        else:
            set_project(None)
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
