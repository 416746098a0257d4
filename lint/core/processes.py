"""Keeping track of the processes a run starts: none may outlive the run.

``die_with_parent`` ends a worker when the process that started it ends (``PR_SET_PDEATHSIG`` on
Linux, and a watchdog thread elsewhere); ``adopt_orphans`` and ``end_descendants`` let a process
collect and end whatever its children left running (the processes user code forks or spawns,
daemons included, which become its children once their own parent has gone).
"""
from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import sys
import threading
import time

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
WATCH_INTERVAL = 0.5
"""Seconds between two looks of the watchdog at the parent."""


def _prctl(option: int, value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def die_with_parent(parent: int) -> None:
    """End this process when ``parent`` ends (call first thing in a worker)."""
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(WATCH_INTERVAL)
        os._exit(1)

    threading.Thread(target=watch, name="parent-watchdog", daemon=True).start()


def adopt_orphans() -> bool:
    """Make the descendants whose parent ends this process's children (Linux: a child subreaper),
    so that :func:`end_descendants` reaches them; False where that is not possible."""
    return _prctl(_PR_SET_CHILD_SUBREAPER, 1)


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (from ``/proc``; none where there is no ``/proc``)."""
    out = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 1 and int(fields[1]) == pid:
            out.append(int(name))
    return out


def end_descendants(rounds: int = 50) -> int:
    """Kill and reap every process below this one; returns how many there were.  A killed child's
    own children come up to this process (see :func:`adopt_orphans`) and go in the next round."""
    ended = 0
    me = os.getpid()
    for _ in range(rounds):
        found = children(me)
        if not found:
            break
        for pid in found:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        for pid in found:
            with contextlib.suppress(OSError):
                os.waitpid(pid, 0)
                ended += 1
    return ended
