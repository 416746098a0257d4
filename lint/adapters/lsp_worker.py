"""A single daemon thread that runs jobs in order, for the language server.

``concurrent.futures.ThreadPoolExecutor`` joins its threads when the interpreter exits, so
an analysis of a large file (or a read of input that never comes) would keep a server alive
after ``exit``.  A daemon thread ends with the process; a job not yet started when its future
is cancelled (a newer version of the document superseded it) is skipped.
"""
from __future__ import annotations

import queue
import threading
from concurrent.futures import Future
from typing import Any, Callable, Tuple, TypeVar

T = TypeVar("T")
Job = Tuple[Future, Callable[..., Any], Tuple[Any, ...]]


class DaemonWorker:
    def __init__(self, name: str) -> None:
        self._jobs: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[..., T], *args: Any) -> "Future[T]":
        future: Future = Future()
        self._jobs.put((future, fn, args))
        return future

    def stop(self) -> None:
        """Run no further jobs (the one running, if any, ends with the process)."""
        self._jobs.put(None)

    def _run(self) -> None:
        while (job := self._jobs.get()) is not None:
            future, fn, args = job
            if not future.set_running_or_notify_cancel():
                continue  # cancelled before it started
            try:
                future.set_result(fn(*args))
            except BaseException as exc:  # handed to whoever waits for the result
                future.set_exception(exc)
