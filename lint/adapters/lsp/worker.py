"""Workers of the language server: a daemon thread that runs jobs in order, and an analysis process.

``concurrent.futures.ThreadPoolExecutor`` joins its threads when the interpreter exits, so a read
of input that never comes would keep a server alive after ``exit``.  A :class:`DaemonWorker`'s
thread ends with the process; a job not yet started when its future is cancelled is skipped.

A :class:`ProcessWorker` is one analysis process (``python -m dynalint.adapters.lsp.documents``): it
holds a :class:`dynalint.adapters.lsp.documents.Documents` and runs the calls it is sent, one at a
time.  The server's process never analyses: a libcst parse holds the interpreter lock until it
ends, which would stall every answer for as long.  Calls and results travel as length-prefixed
pickles over the process's standard input and output (the process is the server's own child,
started from the same interpreter; its standard error is the server's, for its log).  The process
ends at once when its input ends (the server is gone) or when it is killed (its analysis was
superseded, or the server exits).
"""
from __future__ import annotations

import itertools
import logging
import pickle
import queue
import struct
import subprocess
import sys
import threading
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, BinaryIO, Callable, Tuple, TypeVar

T = TypeVar("T")
Job = Tuple[Future, Callable[..., Any], Tuple[Any, ...]]
_SIZE = struct.Struct("<Q")

log = logging.getLogger("dynalint.adapters.lsp")


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


@dataclass
class Report:
    """What the server publishes of one analysed version: its diagnostics, or the error to show."""

    version: int | None
    diagnostics: list
    error: str | None = None
    text: str = ""
    """The text analysed (filled in by the server, which sent it)."""


class WorkerGone(Exception):
    """The analysis process ended before answering (killed, or it crashed)."""


class WorkerError(Exception):
    """A call failed in the analysis process (the message is its exception, in one line)."""


def write_message(stream: BinaryIO, message: Any) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_SIZE.pack(len(data)) + data)
    stream.flush()


def read_message(stream: BinaryIO) -> Any:
    """The next message, or raises EOFError at the end of the stream."""
    head = stream.read(_SIZE.size)
    if len(head) < _SIZE.size:
        raise EOFError
    size = _SIZE.unpack(head)[0]
    data = stream.read(size)
    if len(data) < size:
        raise EOFError
    return pickle.loads(data)


class ProcessWorker:
    """The server's handle on one analysis process (see the module doc)."""

    def __init__(self, name: str, setup: tuple[Any, ...], log_level: int = logging.WARNING) -> None:
        self.name = name
        command = [sys.executable, "-m", "dynalint.adapters.lsp.documents", str(log_level)]
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self._futures: dict[int, Future] = {}
        self._lock = threading.Lock()
        self._ids = itertools.count()
        self._gone = False
        self.ready = False
        """Whether the process has loaded the engine (until then a call waits for it)."""
        self._sender = DaemonWorker(f"{name}-send")  # a large text waits for the pipe there, not here
        self._sender.submit(self._send, setup)
        threading.Thread(target=self._receive, name=f"{name}-receive", daemon=True).start()

    def submit(self, method: str, *args: Any) -> Future:
        """Call ``Documents.<method>(*args)`` in the process; the future holds its result."""
        future: Future = Future()
        future.set_running_or_notify_cancel()
        with self._lock:
            if self._gone:
                future.set_exception(WorkerGone(f"{self.name} has ended"))
                return future
            job_id = next(self._ids)
            self._futures[job_id] = future
        self._sender.submit(self._send, (job_id, method, args))
        return future

    def kill(self) -> None:
        """End the process now (a call under way fails with :class:`WorkerGone`)."""
        if self.proc.poll() is None:
            try:
                self.proc.kill()
            except OSError:
                pass
        self._sender.stop()

    def _send(self, message: Any) -> None:
        assert self.proc.stdin is not None
        try:
            write_message(self.proc.stdin, message)
        except (OSError, ValueError):
            self.kill()  # the process ended: the receiving thread fails what waits

    def _receive(self) -> None:
        assert self.proc.stdout is not None
        try:
            while True:
                job_id, ok, value = read_message(self.proc.stdout)
                if job_id is None:
                    self.ready = True
                    continue
                with self._lock:
                    future = self._futures.pop(job_id, None)
                if future is not None:
                    if ok:
                        future.set_result(value)
                    else:
                        future.set_exception(WorkerError(value))
        except (EOFError, OSError, ValueError, pickle.UnpicklingError):
            pass
        with self._lock:
            self._gone = True
            left, self._futures = list(self._futures.values()), {}
        for future in left:
            future.set_exception(WorkerGone(f"{self.name} has ended"))
        self.proc.wait()
