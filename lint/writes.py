"""Writing a fixed file back without losing what the user had.

The new text goes where the file really is (through a symbolic link), keeps the file's
encoding, byte order mark, mode, owner (where this process may set it) and extended attributes,
and replaces the old content atomically (a temporary file in the same directory, then a rename),
except for a file with several hard links, which is rewritten in place so that the links stay
one file.  A file that changed since it was read is left alone (:class:`ChangedOnDisk`): the
user's edit wins over the fix.
"""
from __future__ import annotations

import contextlib
import io
import os
import signal
import stat
import tempfile
import threading
import tokenize
from typing import Iterator


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


def write_atomically(path: str, text: str, original: bytes) -> None:
    """Replace the content of ``path``, read as ``original``, by ``text`` (see the module docstring).
    Raises :class:`ChangedOnDisk` when the file is no longer ``original``, OSError when it cannot be
    written; in both cases the file is as it was."""
    payload = encode_like(text, original)
    real = os.path.realpath(path)
    with _signals_deferred():
        st = os.stat(real)
        if st.st_nlink > 1:
            _rewrite_in_place(real, payload, original)
        else:
            _replace(real, payload, original, st)


def _unchanged(path: str, original: bytes) -> bool:
    with open(path, "rb") as fh:
        return fh.read(len(original) + 1) == original


def _replace(real: str, payload: bytes, original: bytes, st: os.stat_result) -> None:
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(real), prefix=".dynalint-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        _copy_metadata(real, tmp, st)
        if not _unchanged(real, original):
            raise ChangedOnDisk(real)
        os.replace(tmp, real)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


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


def _copy_metadata(source: str, target: str, st: os.stat_result) -> None:
    """Owner (where permitted), then mode (a change of owner clears set-id bits), then extended
    attributes (ACLs among them) of ``source`` onto ``target``."""
    if hasattr(os, "chown"):
        tst = os.stat(target)
        if (tst.st_uid, tst.st_gid) != (st.st_uid, st.st_gid):
            with contextlib.suppress(OSError):
                os.chown(target, st.st_uid, st.st_gid)
    os.chmod(target, stat.S_IMODE(st.st_mode))
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
