"""Checking many files: parallel workers and a content-addressed cache."""
from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Iterable, Iterator

from dynalint import __version__
from dynalint.config import Project
from dynalint.diagnostics import Diagnostic
from dynalint.engine import FileResult, SourceError, check_source, decode_source, io_error
from dynalint.settings import Settings

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


class Cache:
    """Results keyed by (file content, settings, dynalint version and source, target torch).

    Entries are small JSON files written atomically, so concurrent runs and
    interrupted runs never leave a corrupt entry behind.
    """

    def __init__(self, directory: str) -> None:
        self.directory = directory

    @staticmethod
    def key(data: bytes, settings: Settings) -> str:
        h = hashlib.sha256()
        h.update(__version__.encode())
        h.update(b"\0")
        h.update(code_fingerprint().encode())
        h.update(b"\0")
        h.update(settings.fingerprint().encode())
        h.update(b"\0")
        h.update(data)
        return h.hexdigest()

    def _path(self, key: str) -> str:
        return os.path.join(self.directory, key[:2], key[2:] + ".json")

    def get(self, key: str, path: str) -> list[Diagnostic] | None:
        try:
            with open(self._path(key), encoding="utf-8") as fh:
                data = json.load(fh)
            return [Diagnostic.from_json({**d, "path": path}) for d in data]
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, key: str, diagnostics: list[Diagnostic]) -> None:
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
                json.dump([d.to_json() for d in diagnostics], fh)
            os.replace(tmp, target)
        except OSError:
            pass  # a cache that cannot be written only costs time


@dataclass(frozen=True)
class _Job:
    path: str
    settings: Settings
    cache_dir: str | None
    with_fixes: bool = False
    data: bytes | None = None
    """The file's content when it does not come from the file (standard input)."""


def _check_one(job: _Job) -> FileResult:
    """Worker: read, look up the cache, check. Never raises."""
    path, settings = job.path, job.settings
    data = job.data
    if data is None:
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError as exc:
            return FileResult(path, io_error(path, f"cannot read: {exc.strerror or exc}", settings))
    cache = Cache(job.cache_dir) if job.cache_dir else None
    key = Cache.key(data + (b"\0fixes" if job.with_fixes else b""), settings) if cache else ""
    if cache is not None:
        cached = cache.get(key, path)
        if cached is not None:
            return FileResult(path, cached)
    try:
        source = decode_source(data)
    except SourceError as exc:
        return FileResult(path, io_error(path, str(exc), settings))
    try:
        if job.with_fixes:
            from dynalint.fixing import diagnostics_with_fixes

            diagnostics = diagnostics_with_fixes(source, path, settings)
        else:
            diagnostics = check_source(source, path, settings)
    except Exception as exc:  # an analysis bug must not stop the run
        return FileResult(path, error=f"internal error while analysing ({type(exc).__name__}: {exc}); "
                                      "please report it")
    if cache is not None:
        cache.put(key, diagnostics)
    return FileResult(path, diagnostics)


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


def check_files(paths: Iterable[str], settings: Settings | Project, *, jobs: int = 1,
                cache_dir: str | None = None, with_fixes: bool = False,
                stdin: tuple[str, bytes] | None = None) -> Iterator[FileResult]:
    """Results in the order of ``paths``.  ``with_fixes``: diagnostics carry their fixes.
    ``stdin``: (shown path, content) of a file read from standard input, checked first."""
    project = settings if isinstance(settings, Project) else Project(settings, os.getcwd())
    job_list = [_Job(p, project.settings_for(p), cache_dir, with_fixes) for p in paths]
    if stdin is not None:
        job_list.insert(0, _Job(stdin[0], project.settings_for(stdin[0]), None, with_fixes, stdin[1]))
    if jobs <= 1 or len(job_list) <= 1:
        for job in job_list:
            yield _check_one(job)
        return
    chunk = max(1, min(16, len(job_list) // (jobs * 4) or 1))
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        yield from pool.map(_check_one, job_list, chunksize=chunk)
