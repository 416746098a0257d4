"""What a cache entry may hold: a file of the cache is checked field by field before it is used.

The cache directory is written by earlier runs, other versions, other tools or a hostile
checkout; anything that is not exactly what :class:`dynalint.engine.runner.Cache` writes is a miss,
never a crash, a hang or a wrong result.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import stat
from typing import Any, Iterable

MAX_ENTRY_BYTES = 8 * 1024 * 1024
"""Larger files are not read (a link to ``/dev/zero`` or a huge file would exhaust memory)."""
MAGIC = b"dynalint-cache-1 "
TENSOR_FLAG_COUNT = 7
"""Flags of an encoded tensor (``dynalint.analysis.project.TENSOR_FLAGS``)."""
MAX_VALUE_DEPTH = 32
"""Deepest encoded value an entry may hold (analyses nest far less)."""

_KINDS = frozenset({"graph-break", "recompile", "error", "warning"})
_SAFETIES = frozenset({"safe", "unsafe"})


def digest(key: str, payload: bytes) -> bytes:
    """What seals an entry to its key: a file whose payload was changed, or that was stored under
    another key, no longer matches."""
    return hashlib.sha256(key.encode() + b"\0" + payload).hexdigest().encode()


def seal(key: str, payload: bytes) -> bytes:
    """The bytes of an entry file: a header line with the seal, then the JSON payload."""
    return MAGIC + digest(key, payload) + b"\n" + payload


def read_sealed(path: str, key: str) -> bytes | None:
    """The payload of the entry file at ``path`` if it is a regular file (links are not followed, a
    FIFO is never waited on), not too large and sealed for ``key``; else None."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_ENTRY_BYTES:
            return None
        chunks, size = [], 0
        while size <= MAX_ENTRY_BYTES:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > MAX_ENTRY_BYTES:
            return None
    except OSError:
        return None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    header, newline, payload = data.partition(b"\n")
    if not newline or header != MAGIC + digest(key, payload):
        return None
    return payload


def read_sealed_json(path: str, key: str) -> Any:
    """The decoded JSON payload of the sealed file at ``path`` (see :func:`read_sealed`), or None when
    it is missing, not sealed for ``key`` or not JSON; its shape is for the caller to check."""
    payload = read_sealed(path, key)
    if payload is None:
        return None
    try:
        return json.loads(payload)
    except (ValueError, RecursionError):
        return None


def valid_entry(data: Any) -> bool:
    """Whether decoded JSON has the exact shape of an entry (see :class:`dynalint.engine.runner.Entry`)."""
    return (isinstance(data, dict) and set(data) == {"diagnostics", "outgoing", "deps", "names", "view"}
            and isinstance(data["diagnostics"], list) and all(map(_valid_diagnostic, data["diagnostics"]))
            and _valid_outgoing(data["outgoing"]) and _valid_deps(data["deps"])
            and isinstance(data["names"], list) and all(isinstance(n, str) for n in data["names"])
            and isinstance(data["view"], str))


def _is_int(v: Any) -> bool:
    return type(v) is int and 0 <= v < 1 << 40


def _is_one_of(v: Any, names: frozenset[str]) -> bool:
    return isinstance(v, str) and v in names


def _is_str(v: Any, optional: bool = False) -> bool:
    return isinstance(v, str) or (optional and v is None)


def _valid_diagnostic(d: Any) -> bool:
    return (isinstance(d, dict)
            and all(_is_int(d.get(k)) for k in ("line", "column", "end_line", "end_column"))
            and _is_str(d.get("code")) and _is_one_of(d.get("kind"), _KINDS) and _is_str(d.get("message"))
            and all(_is_str(d.get(k), optional=True) for k in ("path", "gb_type", "gb_id", "hint"))
            and (d.get("fix") is None or _valid_fix(d["fix"])))


def _valid_fix(f: Any) -> bool:
    return (isinstance(f, dict) and _is_one_of(f.get("applicability"), _SAFETIES)
            and _is_str(f.get("message"))
            and _is_str(f.get("fixer"), optional=True) and isinstance(f.get("edits"), list)
            and all(_valid_edit(e) for e in f["edits"]))


def _valid_edit(e: Any) -> bool:
    return (isinstance(e, dict) and _is_str(e.get("content"))
            and all(isinstance(e.get(k), dict) and _is_int(e[k].get("row")) and _is_int(e[k].get("column"))
                    for k in ("location", "end_location")))


def _valid_outgoing(o: Any) -> bool:
    """path -> qualname -> parameter -> encoded value."""
    return isinstance(o, dict) and all(
        isinstance(path, str) and isinstance(functions, dict) and all(
            isinstance(qualname, str) and isinstance(params, dict) and all(
                isinstance(name, str) and _valid_value(value, 0) for name, value in params.items())
            for qualname, params in functions.items())
        for path, functions in o.items())


def _valid_entries(entries: Any, depth: int) -> bool:
    """``[[key, encoded value], ...]``: a dict's keys or a record's fields with their values."""
    return isinstance(entries, list) and all(
        isinstance(e, list) and len(e) == 2 and isinstance(e[0], str) and _valid_value(e[1], depth) for e in entries)


def _valid_value(v: Any, depth: int) -> bool:
    """An encoded value (``dynalint.analysis.project.encode_value``, or True once joined)."""
    if isinstance(v, bool):
        return True
    if not isinstance(v, list) or not v or depth > MAX_VALUE_DEPTH:
        return False
    tag, rest = v[0], v[1:]
    if tag == "T":  # the flags, then the module and name of a tensor subclass when known
        flags, made = rest[:TENSOR_FLAG_COUNT], rest[TENSOR_FLAG_COUNT:]
        return len(flags) == TENSOR_FLAG_COUNT and all(x in (0, 1) and type(x) is int for x in flags) \
            and len(made) in (0, 2) and all(isinstance(x, str) for x in made)
    if tag == "P":
        return len(rest) == 1 and rest[0] in (0, 1) and type(rest[0]) is int
    if tag in ("N", "S", "U"):
        return not rest
    if tag == "D":
        return len(rest) == 2 and _valid_value(rest[0], depth + 1) and (rest[1] is None
                                                                         or _valid_entries(rest[1], depth + 1))
    if tag == "R":
        return len(rest) == 3 and all(isinstance(x, str) for x in rest[:2]) and _valid_entries(rest[2], depth + 1)
    if tag == "L":
        return (len(rest) == 2 and (rest[0] is None or _valid_value(rest[0], depth + 1))
                and (rest[1] is None or (isinstance(rest[1], list)
                                         and all(_valid_value(i, depth + 1) for i in rest[1]))))
    if tag == "M":
        return len(rest) == 2 and all(isinstance(x, str) for x in rest)
    return False


def _valid_deps(d: Any) -> bool:
    return isinstance(d, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in d.items())


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
    """The folders of dynalint's packages, found without importing them (a cached run loads no rule)."""
    found = []
    for package in ("dynalint", "dynalint.rules", "dynalint.fixers"):
        spec = importlib.util.find_spec(package)
        locations = list(spec.submodule_search_locations or []) if spec is not None else []
        found.append(os.path.abspath(locations[0]) if locations else "")
    return found


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


_HASHES: dict[str, tuple[float, int, str]] = {}


def file_digest(path: str) -> str:
    """Content hash of a file (memoised by modification time and size); "?" when it cannot be read."""
    try:
        st = os.stat(path)
        known = _HASHES.get(path)
        if known is not None and known[0] == st.st_mtime and known[1] == st.st_size:
            return known[2]
        with open(path, "rb") as fh:
            digest = hashlib.sha256(fh.read()).hexdigest()[:24]
    except OSError:
        return "?"
    _HASHES[path] = (st.st_mtime, st.st_size, digest)
    return digest


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
