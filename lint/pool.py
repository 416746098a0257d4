"""Worker processes that live no longer than the process that started them.

A pool worker must never outlive its parent: killed or interrupted, the parent takes its
workers with it (``PR_SET_PDEATHSIG`` on Linux, and a watchdog thread that notices when the
parent is gone elsewhere).  Workers ignore SIGINT, so a Ctrl-C reaches the parent alone, which
stops the pool and reports the interrupt once, without a traceback per worker.
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
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Callable, Iterable, Iterator, TypeVar

T = TypeVar("T")
R = TypeVar("R")

_PR_SET_PDEATHSIG = 1
WATCH_INTERVAL = 0.5
"""Seconds between two looks of the watchdog at the parent."""


def _die_with(parent: int) -> None:
    """Make this process end when ``parent`` does."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass  # the watchdog below still ends the worker
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(WATCH_INTERVAL)
        os._exit(1)

    threading.Thread(target=watch, name="parent-watchdog", daemon=True).start()


def _initialise(parent: int, initializer: Callable[..., Any] | None, initargs: tuple) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with(parent)
    if initializer is not None:
        initializer(*initargs)


@contextlib.contextmanager
def worker_pool(workers: int, initializer: Callable[..., Any] | None = None,
                initargs: tuple = ()) -> Iterator[ProcessPoolExecutor]:
    """A process pool whose workers die with this process.  Leaving the block by an exception (an
    interrupt) ends the workers at once instead of waiting for the work in flight."""
    pool = ProcessPoolExecutor(max_workers=workers, initializer=_initialise,
                               initargs=(os.getpid(), initializer, initargs))
    try:
        yield pool
    except BaseException:
        _terminate(pool)
        raise
    else:
        pool.shutdown()


def _terminate(pool: ProcessPoolExecutor) -> None:
    processes = list((getattr(pool, "_processes", None) or {}).values())
    for process in processes:
        with contextlib.suppress(Exception):
            process.terminate()
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        with contextlib.suppress(Exception):
            process.join(timeout=5)


def chunk_size(items: int, workers: int, most: int) -> int:
    """Tasks per round trip: enough to amortise it, few enough to keep every worker busy."""
    return max(1, min(most, items // (workers * 4) or 1))


def parallel_map(function: Callable[[T], R], items: Iterable[T], workers: int, *, most: int = 16,
                 initializer: Callable[..., Any] | None = None, initargs: tuple = (),
                 finalizer: Callable[[], Any] | None = None) -> Iterator[R]:
    """``map(function, items)`` in a pool of ``workers`` processes (in this process when one worker
    or one item), results in order.  ``initializer(*initargs)`` prepares each process; in this
    process ``finalizer()`` undoes it at the end."""
    items = list(items)
    if workers <= 1 or len(items) <= 1:
        if initializer is not None:
            initializer(*initargs)
        try:
            yield from map(function, items)
        finally:
            if finalizer is not None:
                finalizer()
        return
    with worker_pool(workers, initializer, initargs) as pool:
        yield from pool.map(function, items, chunksize=chunk_size(len(items), workers, most))
