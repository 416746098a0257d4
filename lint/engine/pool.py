"""Worker processes that live no longer than the process that started them.

A pool worker must never outlive its parent: killed or interrupted, the parent takes its
workers with it (:func:`dynalint.core.processes.die_with_parent`).  Workers ignore SIGINT, so a
Ctrl-C reaches the parent alone, which stops the pool and reports the interrupt once, without
a traceback per worker.
"""
from __future__ import annotations

import contextlib
import os
import signal
import threading
from concurrent.futures import InvalidStateError
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, TypeVar

from dynalint.core.processes import die_with_parent

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

T = TypeVar("T")
R = TypeVar("R")


def _initialise(parent: int, initializer: Callable[..., Any] | None, initargs: tuple) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(parent)
    if initializer is not None:
        initializer(*initargs)


@contextlib.contextmanager
def worker_pool(workers: int, initializer: Callable[..., Any] | None = None,
                initargs: tuple = ()) -> Iterator[ProcessPoolExecutor]:
    """A process pool whose workers die with this process.  Leaving the block by an exception (an
    interrupt) ends the workers at once instead of waiting for the work in flight.  (The executor's
    module, with :mod:`multiprocessing`, is imported here: a run in one process does without it.)"""
    from concurrent.futures import ProcessPoolExecutor

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
    _quiet_manager(pool)
    processes = list((getattr(pool, "_processes", None) or {}).values())
    for process in processes:
        with contextlib.suppress(Exception):
            process.terminate()
    manager = getattr(pool, "_executor_manager_thread", None)
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        with contextlib.suppress(Exception):
            process.join(timeout=5)
    if manager is not None:  # else, at exit, its closing of the wake-up pipe races the interpreter's
        manager.join(timeout=5)  # last write to it, and a traceback follows the interrupt


def _quiet_manager(pool: ProcessPoolExecutor) -> None:
    """The pool's manager thread, finding its workers gone, hands each pending task the error; on
    CPython before 3.12 it raises on a task already cancelled (an interrupted ``map`` cancels what it
    waited for), and the thread's traceback would follow the interrupt: that error is not shown."""
    manager = getattr(pool, "_executor_manager_thread", None)
    if manager is None:
        return
    previous = threading.excepthook

    def hook(args: "threading.ExceptHookArgs") -> None:
        if args.thread is manager and args.exc_type is not None and issubclass(args.exc_type, InvalidStateError):
            return
        previous(args)

    threading.excepthook = hook


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


def default_jobs() -> int:
    """Workers by default: one per CPU this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)
