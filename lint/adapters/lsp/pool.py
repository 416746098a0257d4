"""The language server's analysis processes, and which one runs each call.

Each call concerns one document.  It goes to the process that answered for that document last (its
*home*: it keeps that document's analysis and baseline) when that process is free; when the home is
busy with another document, to any free process (one that has loaded the engine first), which
analyses the document's text first; when every process is busy, it waits for the first to be free.
So one document whose analysis takes a minute holds one process, and the other documents are
answered by the others.  A call for a document whose home is busy with that same document waits for
it (the result it computes is the one wanted).

A check of a document superseded by a newer edit (its task cancelled) is dropped if it has not
started; if it has, and is still running :data:`SUPERSEDE_AFTER_S` after it started, its process is
killed and replaced: a stale analysis of a huge file must not hold a process and gigabytes for a
result nobody will see, while a quick one finishes and keeps the process's caches.
"""
from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from dynalint.adapters.lsp.worker import ProcessWorker, WorkerGone

log = logging.getLogger("dynalint.adapters.lsp")

WORKERS = 2
"""Analysis processes: one for a document whose analysis takes long, one for the others."""
SUPERSEDE_AFTER_S = 1.0
"""How long a superseded analysis may go on before its process is killed (see the module doc)."""


@dataclass(eq=False)
class Call:
    """One call, waiting or running (``worker``, since ``started``); ``future`` holds its result."""

    uri: str
    method: str
    args: tuple[Any, ...]
    future: asyncio.Future
    supersedable: bool
    worker: ProcessWorker | None = None
    started: float = field(default=0.0)


class WorkerPool:
    """Runs calls on :data:`WORKERS` processes made by ``start`` (see the module doc); event loop only."""

    def __init__(self, start: Callable[[str], ProcessWorker], size: int = WORKERS,
                 supersede_after: float = SUPERSEDE_AFTER_S) -> None:
        self._start = start
        self.size = size
        self.supersede_after = supersede_after
        self.workers: list[ProcessWorker] = []
        self.running: dict[ProcessWorker, Call] = {}
        self.waiting: list[Call] = []
        self.home: dict[str, ProcessWorker] = {}
        self.started = 0
        """Processes started so far (a killed one is replaced by a new one)."""
        self.stopped = False

    def warm_up(self) -> None:
        """Start the processes now, so the first analyses do not wait for them to load the engine."""
        while len(self.workers) < self.size and not self.stopped:
            self.started += 1
            self.workers.append(self._start(f"dynalint-analysis-{self.started}"))

    async def run(self, uri: str, method: str, *args: Any, supersedable: bool = False) -> Any:
        """``Documents.<method>(*args)`` in a process chosen for ``uri``.  ``supersedable``: a check
        whose cancellation (a newer edit) may kill its process (see the module doc)."""
        if self.stopped:
            raise WorkerGone("the server is shutting down")
        self.warm_up()
        call = Call(uri, method, args, asyncio.get_running_loop().create_future(), supersedable)
        self.waiting.append(call)
        self._dispatch()
        try:
            return await asyncio.shield(call.future)
        except asyncio.CancelledError:
            self._abandon(call)
            raise

    def forget(self, uri: str) -> None:
        self.home.pop(uri, None)

    def stop(self) -> None:
        """Kill every process (an analysis under way is not waited for)."""
        self.stopped = True
        for worker in self.workers:
            worker.kill()
        for call in self.waiting:
            if not call.future.done():
                call.future.set_exception(WorkerGone("the server is shutting down"))
        self.waiting.clear()

    # -- scheduling ---------------------------------------------------------------------------------

    def _choose(self, call: Call) -> ProcessWorker | None:
        free = [w for w in self.workers if w not in self.running]
        home = self.home.get(call.uri)
        if home is not None and home in self.running and self.running[home].uri == call.uri \
                and not self.running[home].future.cancelled():
            return None  # the home is computing for this document: its answer is the one wanted
        if home in free:
            return home
        # a process that has loaded the engine first (a new one takes seconds), then one no other
        # document calls home, so documents keep their processes
        homes = set(self.home.values())
        free.sort(key=lambda w: (not w.ready, w in homes))
        return free[0] if free else None

    def _dispatch(self) -> None:
        for call in list(self.waiting):
            worker = self._choose(call)
            if worker is None:
                continue
            self.waiting.remove(call)
            self.running[worker] = call
            call.worker, call.started = worker, time.monotonic()
            done = worker.submit(call.method, *call.args)
            loop = asyncio.get_running_loop()
            done.add_done_callback(lambda f, c=call: loop.call_soon_threadsafe(self._finished, c, f))

    def _finished(self, call: Call, done: Any) -> None:
        worker = call.worker
        assert worker is not None
        if self.running.get(worker) is call:
            del self.running[worker]
        exc = done.exception()
        if isinstance(exc, WorkerGone):
            self._replace(worker)
        elif exc is None:
            self.home[call.uri] = worker
        if not call.future.done():
            if exc is not None:
                call.future.set_exception(exc)
            else:
                call.future.set_result(done.result())
        if not self.stopped:
            self._dispatch()

    def _replace(self, worker: ProcessWorker) -> None:
        """A process ended (killed, or it crashed): forget it and start another."""
        if worker not in self.workers:
            return
        self.workers.remove(worker)
        for uri in [u for u, w in self.home.items() if w is worker]:
            del self.home[uri]
        if not self.stopped:
            self.warm_up()

    def _abandon(self, call: Call) -> None:
        """The caller no longer waits for ``call``: drop it, or stop its process (see the module doc)."""
        if call in self.waiting:
            self.waiting.remove(call)
            call.future.cancel()
            return
        call.future.cancel()
        worker = call.worker
        if worker is None or not call.supersedable or self.running.get(worker) is not call:
            return
        delay = max(0.0, call.started + self.supersede_after - time.monotonic())
        asyncio.get_running_loop().call_later(delay, self._kill_if_running, call)

    def _kill_if_running(self, call: Call) -> None:
        worker = call.worker
        if worker is not None and self.running.get(worker) is call and not self.stopped:
            log.info("stopping a superseded analysis of %s", call.uri)
            worker.kill()  # its receiving thread sees the end, and the process is replaced
