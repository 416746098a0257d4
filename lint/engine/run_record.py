"""Whole runs answered from the cache without loading the engine.

A run of ``check`` whose files, project and settings are all as they were when the same run last
completed gives the same report: its record (the diagnostics of each given file, as JSON) is
returned without importing libcst, the analysis or the rules, so that checking one file of a
project (an editor's save hook, pre-commit) costs the start of Python and a look at the files.

A record holds what the run depended on: the project's file list, the content of every file it
listed or read, and where the package folders (``__init__.py``) are, which decides every module's
name.  Anything else that changes results (dynalint's own code, the settings, the files asked for,
whether fixes are attached) is in its key.  Any difference makes it a miss, and the per-file cache
of :mod:`dynalint.engine.runner` answers what it can.
"""
from __future__ import annotations

import hashlib
import json
import os
from typing import Any, Iterable

from dynalint import __version__
from dynalint.engine.cache_entry import _valid_diagnostic, code_fingerprint, file_digest, read_sealed_json
from dynalint.core.diagnostics import Diagnostic, FileResult

RUNS_DIR = "runs"
"""The folder of the cache directory that holds the records."""


def run_key(paths: list[str], *, settings: str, root: str, with_fixes: bool, around: bool) -> str:
    """The key of a run of ``paths`` (as spelt: the report names them so) from the current folder;
    ``settings``: the fingerprint of the configuration's settings (per-file ignores included)."""
    h = hashlib.sha256()
    for part in ("run", __version__, code_fingerprint(), settings, root, os.path.realpath(os.getcwd()),
                 str(with_fixes), str(around), *paths):
        h.update(part.encode("utf-8", "surrogateescape") + b"\0")
    return h.hexdigest()


def record_path(cache_dir: str, key: str) -> str:
    return os.path.join(cache_dir, RUNS_DIR, key[:2], key[2:] + ".json")


def package_marks(paths: Iterable[str]) -> dict[str, bool]:
    """For each folder holding one of ``paths`` and each folder above it up to the first that is no
    package: whether it holds an ``__init__.py`` (what the files' module names are made of)."""
    marks: dict[str, bool] = {}
    for path in paths:
        directory = os.path.dirname(os.path.abspath(path))
        while directory not in marks:
            marks[directory] = os.path.isfile(os.path.join(directory, "__init__.py"))
            parent = os.path.dirname(directory)
            if not marks[directory] or parent == directory:
                break
            directory = parent
    return marks


def depended(listing: list[str], paths: list[str]) -> dict[str, str]:
    """The content digest of each file of the project's listing and of each file asked for."""
    return {p: file_digest(p) for p in dict.fromkeys([*listing, *map(os.path.abspath, paths)])}


def lookup(cache_dir: str, key: str, listing: list[str], paths: list[str]) -> list[FileResult] | None:
    """The results the record for ``key`` holds, if everything it depended on is as it was; else None."""
    data = read_sealed_json(record_path(cache_dir, key), key)
    if not _valid_record(data) or data["listing"] != listing \
            or data["marks"] != package_marks([*listing, *paths]):
        return None
    if any(file_digest(p) != digest for p, digest in data["files"].items()):
        return None
    results = [FileResult(path, [Diagnostic.from_json({**d, "path": path}) for d in found])
               for path, found in data["results"]]
    if [r.path for r in results] != paths:
        return None
    return results


def record(results: list[FileResult], listing: list[str], paths: list[str], files: dict[str, str]) -> bytes:
    """The payload of a record: ``files``, the digest of every file the run listed or read, taken
    before it read them."""
    return json.dumps({"results": [[r.path, [d.to_json() for d in r.diagnostics]] for r in results],
                       "listing": listing, "marks": package_marks([*listing, *paths]),
                       "files": files}).encode()


def _valid_record(data: Any) -> bool:
    return (isinstance(data, dict) and set(data) == {"results", "listing", "marks", "files"}
            and isinstance(data["results"], list)
            and all(isinstance(r, list) and len(r) == 2 and isinstance(r[0], str) and isinstance(r[1], list)
                    and all(map(_valid_diagnostic, r[1])) for r in data["results"])
            and isinstance(data["listing"], list) and all(isinstance(p, str) for p in data["listing"])
            and isinstance(data["marks"], dict) and all(isinstance(v, bool) for v in data["marks"].values())
            and isinstance(data["files"], dict)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in data["files"].items()))
