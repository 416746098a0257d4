"""Writing a fixed file back without losing what the user had.

The new text goes where the file really is (through a symbolic link), keeps the file's
encoding, byte order mark, mode, owner (where this process may set it) and extended attributes,
and replaces the old content atomically (a temporary file in the same directory, then a rename),
except for a file with several hard links, which is rewritten in place so that the links stay
one file.  A file that changed since it was read is left alone (:class:`ChangedOnDisk`): the
user's edit wins over the fix.

A process killed outright (SIGKILL, which allows no cleanup) must leave nothing behind either.  The
new content is written to a file without a name (``O_TMPFILE``, where the file system has it), which
the kernel removes with its last descriptor; it gets a name only for the instant between ``linkat``
and the rename (a name cannot be linked over).  That name, and the temporary file where ``O_TMPFILE``
is missing, carries the writer's process id: the next write in the directory removes those whose
process is gone (:func:`write_atomically` returns them, for the caller to report).
"""
from __future__ import annotations

import contextlib
import errno
import io
import os
import re
import secrets
import signal
import stat
import threading
import time
import tokenize
from typing import Iterator

TEMPORARY_PREFIX = ".dynalint-"
_TEMPORARY = re.compile(r"\.dynalint-(\d+)-[0-9a-f]+\.tmp")
HOLD_VARIABLE = "DYNALINT_HOLD_WRITE"
"""``POINT:DIRECTORY`` makes a write stop at ``POINT`` (``written``: the content is complete, not yet
named; ``linked``: it has its temporary name, not yet renamed), create ``DIRECTORY/held-PID`` and
wait for ``DIRECTORY/release``: the seam through which tests stop a write at a point they choose."""


class ChangedOnDisk(OSError):
    """The file is no longer what was read: it was not written."""

    def __init__(self, path: str) -> None:
        super().__init__(f"{path}: changed on disk while it was being fixed; not fixed (run again)")
        self.path = path


def encode_like(text: str, original: bytes) -> bytes:
    """``text`` in the encoding (and with the byte order mark) of ``original``."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(original).readline)
    payload = text.encode("utf-8" if encoding == "utf-8-sig" else encoding)
    if original.startswith(b"\xef\xbb\xbf") and not payload.startswith(b"\xef\xbb\xbf"):
        payload = b"\xef\xbb\xbf" + payload
    return payload


def write_atomically(path: str, text: str, original: bytes) -> list[str]:
    """Replace the content of ``path``, read as ``original``, by ``text`` (see the module docstring).
    Raises :class:`ChangedOnDisk` when the file is no longer ``original``, OSError when it cannot be
    written; in both cases the file is as it was.  Returns the temporary files of killed writers
    that were removed from the file's directory (each directory is looked at once per process)."""
    payload = encode_like(text, original)
    real = os.path.realpath(path)
    removed = remove_stale_temporaries(os.path.dirname(real))
    with _signals_deferred():
        st = os.stat(real)
        if st.st_nlink > 1:
            _rewrite_in_place(real, payload, original)
        else:
            _replace(real, payload, original, st)
    return removed


_swept: set[str] = set()


def remove_stale_temporaries(directory: str) -> list[str]:
    """Remove the temporary files in ``directory`` whose writer is no longer running (killed between
    naming its temporary file and renaming it); returns their paths.  Once per directory and process:
    a writer of this process that is gone cannot have left one since."""
    if directory in _swept:
        return []
    _swept.add(directory)
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    removed = []
    for name in names:
        match = _TEMPORARY.fullmatch(name)
        if match is None or _running(int(match.group(1))):
            continue
        path = os.path.join(directory, name)
        with contextlib.suppress(OSError):
            if stat.S_ISREG(os.lstat(path).st_mode):
                os.unlink(path)
                removed.append(path)
    return removed


def stale_note(removed: list[str]) -> str | None:
    """What to tell the user of the temporary files :func:`write_atomically` removed (None: none)."""
    if not removed:
        return None
    return (f"removed {', '.join(map(os.path.basename, removed))}, left by a dynalint process that was "
            "killed while writing")


def _running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process, or no permission to ask: it exists
        return True
    return True


def _unchanged(path: str, original: bytes) -> bool:
    with open(path, "rb") as fh:
        return fh.read(len(original) + 1) == original


def _replace(real: str, payload: bytes, original: bytes, st: os.stat_result) -> None:
    directory = os.path.dirname(real)
    tmp = None
    try:
        fd = _unnamed_file(directory)
        if fd is not None:
            with os.fdopen(fd, "wb") as fh:
                _fill(fh, payload, real, original, st)
                with contextlib.suppress(OSError):  # else written again, under a name
                    tmp = _link(fh.fileno(), directory)
        if tmp is None:  # no O_TMPFILE here (or no way to name it): a named temporary file from the start
            fd, tmp = _named_file(directory)
            with os.fdopen(fd, "wb") as fh:
                _fill(fh, payload, real, original, st)
        _hold("linked")
        os.replace(tmp, real)
    except BaseException:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise


def _fill(fh: io.BufferedWriter, payload: bytes, real: str, original: bytes, st: os.stat_result) -> None:
    """Write ``payload`` for good, with the metadata of ``real``; raise if ``real`` changed meanwhile."""
    fh.write(payload)
    fh.flush()
    os.fsync(fh.fileno())
    _copy_metadata(real, fh.fileno(), st)
    if not _unchanged(real, original):
        raise ChangedOnDisk(real)
    _hold("written")


def _unnamed_file(directory: str) -> int | None:
    """A file without a name in ``directory``, open for writing; None where the file system (or the
    platform) has no ``O_TMPFILE`` or ``/proc`` to name it later."""
    flag = getattr(os, "O_TMPFILE", None)
    if flag is None or not os.path.isdir("/proc/self/fd"):
        return None
    try:
        return os.open(directory, flag | os.O_WRONLY | getattr(os, "O_CLOEXEC", 0), 0o600)
    except OSError as exc:
        if exc.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT):
            return None
        raise


def _temporary_name(directory: str) -> str:
    return os.path.join(directory, f"{TEMPORARY_PREFIX}{os.getpid()}-{secrets.token_hex(4)}.tmp")


def _named_file(directory: str) -> tuple[int, str]:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    while True:
        name = _temporary_name(directory)
        try:
            return os.open(name, flags, 0o600), name
        except FileExistsError:
            continue


def _link(fd: int, directory: str) -> str:
    """Give the unnamed file open as ``fd`` a temporary name in ``directory``."""
    while True:
        name = _temporary_name(directory)
        try:
            os.link(f"/proc/self/fd/{fd}", name, follow_symlinks=True)
            return name
        except FileExistsError:
            continue


def _hold(point: str) -> None:
    """Stop here while a test asks for it (:data:`HOLD_VARIABLE`)."""
    wanted = os.environ.get(HOLD_VARIABLE)
    if not wanted or wanted.partition(":")[0] != point:
        return
    control = wanted.partition(":")[2]
    with open(os.path.join(control, f"held-{os.getpid()}"), "w"):
        pass
    deadline = time.monotonic() + 120
    while not os.path.exists(os.path.join(control, "release")) and time.monotonic() < deadline:
        time.sleep(0.01)


def _rewrite_in_place(real: str, payload: bytes, original: bytes) -> None:
    """Rewrite a hard-linked file through its own inode (a rename would split the links)."""
    with open(real, "r+b") as fh:
        if fh.read(len(original) + 1) != original:
            raise ChangedOnDisk(real)
        fh.seek(0)
        fh.write(payload)
        fh.truncate()
        fh.flush()
        os.fsync(fh.fileno())


def _copy_metadata(source: str, target: int, st: os.stat_result) -> None:
    """Owner (where permitted), then mode (a change of owner clears set-id bits), then extended
    attributes (ACLs among them) of ``source`` onto the file open as ``target``."""
    if hasattr(os, "chown"):
        tst = os.stat(target)
        if (tst.st_uid, tst.st_gid) != (st.st_uid, st.st_gid):
            with contextlib.suppress(OSError):
                os.fchown(target, st.st_uid, st.st_gid)
    os.fchmod(target, stat.S_IMODE(st.st_mode))
    if not hasattr(os, "listxattr"):
        return
    try:
        names = os.listxattr(source)
    except OSError:
        return
    for name in names:
        with contextlib.suppress(OSError):  # not supported there, or not permitted (security.*)
            os.setxattr(target, name, os.getxattr(source, name))


_DEFERRED = (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGHUP", signal.SIGTERM))


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """An interrupt or termination that arrives during a write takes effect once it is done, so that
    no temporary file is left behind and no file is left half rewritten."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = {}
    for sig in dict.fromkeys(_DEFERRED):
        try:
            previous[sig] = signal.signal(sig, lambda signum, frame: received.append(signum))
        except (OSError, ValueError):
            pass
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
        for sig in dict.fromkeys(received):
            os.kill(os.getpid(), sig)
