"""Every phase of a measurement in its own process, forked from the same clean state.

A phase (the eager reference, the line coverage, the compiled run, each what-if
rerun, the benchmark) runs user code, and user code changes the process:
``os.environ``, module globals of libraries, ``sys.modules``, the working
directory, torch's global settings and caches.  Reloading the user's module is
not enough (a hook that sets an environment variable in the eager phase would
change what the module reads at import in the compiled phase).  So the worker
never runs user code itself: it forks one child per phase, and every child
starts from the same state, the one the worker had before the first phase.

The child sends its result back pickled (tensors through ``torch.save``) in a
file, or what it raised as :class:`PhaseError`; a child that dies or is killed leaves no result and the phase raises
:class:`PhaseDied`.  Where ``fork`` does not exist the phase runs in this
process, with the environment and working directory restored afterwards.
"""
from __future__ import annotations

import faulthandler
import gc
import os
import signal
import sys
import tempfile
import time
from typing import Any, Callable, TypeVar

import torch

from dynalint.verify.tracebacks import describe, user_traceback

T = TypeVar("T")

#: Seconds before a phase's deadline at which a hanging child dumps its stacks.
DUMP_MARGIN = 1.0


class PhaseDied(RuntimeError):
    """The phase's process ended without a result (a crash, a signal, ``os._exit`` in user code)."""

    def __init__(self, how: str) -> None:
        super().__init__(f"the phase's process died ({how})")
        self.how = how


class PhaseError(Exception):
    """What the phase raised, as text: a traceback does not cross processes, so it is described
    (``describe``, ``user_traceback``) where it happened."""

    def __init__(self, description: str, traceback: str) -> None:
        super().__init__(description, traceback)  # both in args: that is what pickling keeps
        self.description = description
        self.traceback = traceback

    def __str__(self) -> str:
        return self.description


def can_fork() -> bool:
    return hasattr(os, "fork") and not os.environ.get("DYNALINT_VERIFY_NO_PHASE_FORK")


def before_fork() -> None:
    """Move every object this process holds out of the garbage collector's reach (``gc.freeze``).

    A process that has imported torch holds some 300,000 objects.  Without this, every full
    collection in a forked child (Dynamo allocates enough to run several per compilation) walks
    them all and writes to their headers, which copies the pages they share with the parent: about
    a fifth of a small target's compiled phase.  Frozen objects are left to reference counting
    alone, which costs nothing in the processes that fork (the zygote, a worker): they create few
    reference cycles."""
    gc.freeze()


def run(fn: Callable[[], T], *, deadline: float | None = None, log: Any = None,
        cpu: list[float] | None = None) -> T:
    """``fn()`` in a child forked from this process; returns its result or raises what it raised.

    ``deadline`` (a ``time.monotonic()`` value) arms the child's stack dump shortly before it,
    into ``log``; ``cpu`` gets the child's CPU seconds (user and system) appended.  The caller (the
    worker) must not have run tensor code before forking.
    """
    if not can_fork():
        return _in_process(fn)
    fd, path = tempfile.mkstemp(prefix="dynalint-phase-", suffix=".pt")
    os.close(fd)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        before_fork()
        pid = os.fork()
        if pid == 0:  # the child: run, save, leave without running the parent's atexit handlers
            code = 0
            try:
                if deadline is not None and log is not None:
                    left = deadline - time.monotonic() - DUMP_MARGIN
                    if left > 0:
                        faulthandler.enable(file=log, all_threads=True)
                        faulthandler.dump_traceback_later(left, file=log, exit=False)
                try:
                    outcome: tuple[str, Any] = ("ok", fn())
                except BaseException as exc:  # noqa: BLE001  (handed to the parent, which decides)
                    outcome = ("raised", PhaseError(describe(exc), user_traceback(exc)))
                torch.save(outcome, path)
            except BaseException:
                code = 70
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        _, status, usage = os.wait4(pid, 0)
        if cpu is not None:
            cpu.append(usage.ru_utime + usage.ru_stime)
        if os.path.getsize(path) == 0:
            if os.WIFSIGNALED(status):
                how = f"signal {signal.Signals(os.WTERMSIG(status)).name}"
            else:
                how = f"exit status {os.WEXITSTATUS(status)}"
            raise PhaseDied(how)
        kind, value = torch.load(path, weights_only=False)
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass
    if kind == "raised":
        raise value
    return value


def _in_process(fn: Callable[[], T]) -> T:
    env, cwd = dict(os.environ), os.getcwd()
    try:
        return fn()
    finally:
        os.environ.clear()
        os.environ.update(env)
        os.chdir(cwd)
