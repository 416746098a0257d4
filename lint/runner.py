"""Checking many files: parallel workers and a content-addressed cache."""
from __future__ import annotations

import fnmatch
import functools
import hashlib
import json
import os
import tempfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Iterable, Iterator

from dynalint import __version__
from dynalint.diagnostics import Diagnostic
from dynalint.engine import FileResult, SourceError, check_source, decode_source
from dynalint.settings import Settings

CACHE_DIR_NAME = ".dynalint_cache"


def settings_for(path: str, settings: Settings) -> Settings:
    """Settings with the per-file ignores that match ``path`` applied."""
    if not settings.per_file_ignores:
        return settings
    norm = path.replace(os.sep, "/")
    extra: list[str] = []
    for pattern, codes in settings.per_file_ignores:
        if fnmatch.fnmatch(norm, pattern) or fnmatch.fnmatch(norm, f"*/{pattern}") or \
                fnmatch.fnmatch(os.path.basename(norm), pattern):
            extra.extend(codes)
    return settings.with_changes(ignore=settings.ignore + tuple(extra)) if extra else settings


@functools.lru_cache(maxsize=None)
def code_fingerprint() -> str:
    """A digest of dynalint's own source files.

    The version string alone does not change between commits, so an upgraded
    checkout (a new pre-commit ``rev``, an editable install) would otherwise
    be served results computed by older rules.
    """
    import dynalint.analysis
    import dynalint.rules

    h = hashlib.sha256()
    for package in (dynalint, dynalint.analysis, dynalint.rules):
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


def _check_one(job: _Job) -> FileResult:
    """Worker: read, look up the cache, check. Never raises."""
    path, settings = job.path, job.settings
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        return FileResult(path, error=f"cannot read: {exc.strerror or exc}")
    cache = Cache(job.cache_dir) if job.cache_dir else None
    key = Cache.key(data, settings) if cache else ""
    if cache is not None:
        cached = cache.get(key, path)
        if cached is not None:
            return FileResult(path, cached)
    try:
        source = decode_source(data)
    except SourceError as exc:
        return FileResult(path, error=str(exc))
    try:
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


def check_files(paths: Iterable[str], settings: Settings, *, jobs: int = 1,
                cache_dir: str | None = None) -> Iterator[FileResult]:
    """Results in the order of ``paths``."""
    job_list = [_Job(p, settings_for(p, settings), cache_dir) for p in paths]
    if jobs <= 1 or len(job_list) <= 1:
        for job in job_list:
            yield _check_one(job)
        return
    chunk = max(1, min(16, len(job_list) // (jobs * 4) or 1))
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        yield from pool.map(_check_one, job_list, chunksize=chunk)
