"""A process that has imported torch once and forks one worker per measurement.

Importing ``torch._dynamo`` takes seconds; paying it once per ``dynalint
verify`` run instead of once per measurement keeps isolation (every
measurement is still its own process, killed on timeout, crashing alone)
without its cost.  The zygote never runs a tensor operation itself, so forking
it is safe, CUDA included (a worker initialises CUDA after the fork).

Protocol, one JSON object per line on two pipes: the parent writes
``{"id": N, "spec": PATH}``; the zygote answers ``{"ready": true}`` once, then
``{"id": N, "pid": P}`` when the worker starts and ``{"id": N, "exit": CODE,
"signal": SIG}`` when it ends.  When the parent goes away, the zygote kills
its workers and exits.
"""
from __future__ import annotations

import json
import os
import select
import signal
import sys
import traceback

import torch  # noqa: F401  (the point: import it once, before forking)
import torch._dynamo  # noqa: F401

from dynalint.core.processes import adopt_orphans, children
from dynalint.verify import phases, worker
from dynalint.verify.spec import MeasureSpec


def _send(fd: int, data: dict) -> None:
    os.write(fd, (json.dumps(data) + "\n").encode())


def _fork(request: dict, fd_in: int, fd_out: int) -> int:
    pid = os.fork()
    if pid == 0:  # the worker
        code = 70
        try:
            os.setpgid(0, 0)
            os.close(fd_in)
            os.close(fd_out)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            code = worker.run_in_this_process(MeasureSpec.load(request["spec"]))
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    try:
        os.setpgid(pid, pid)
    except OSError:
        pass  # the worker already did it (or already exited)
    return pid


def serve(fd_in: int, fd_out: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when workers stop
    adopt_orphans()  # what a killed worker's target left running comes here, and is ended
    running: dict[int, int] = {}
    pending = b""
    open_ = True
    _send(fd_out, {"ready": True})
    while open_ or running:
        ready, _, _ = select.select([fd_in] if open_ else [], [], [], 0.05)
        if ready:
            chunk = os.read(fd_in, 65536)
            if not chunk:
                open_ = False
                for pid in running:
                    _kill(pid)
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                request = json.loads(line)
                pid = _fork(request, fd_in, fd_out)
                running[pid] = request["id"]
                _send(fd_out, {"id": request["id"], "pid": pid})
        while running:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                running.clear()
                break
            if pid == 0:
                break
            rid = running.pop(pid, None)
            if rid is not None:
                _kill(pid)  # what the worker left in its group (its id is not reused while it has members)
                _end_strays(running)
            if rid is not None and open_:
                sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
                code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -sig
                try:
                    _send(fd_out, {"id": rid, "exit": code, "signal": sig})
                except OSError:
                    open_ = False


def _end_strays(running: dict[int, int]) -> None:
    """Kill the processes that came to the zygote when their worker ended (they are reaped with the
    workers)."""
    for pid in children(os.getpid()):
        if pid not in running:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def _kill(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


def warm_up() -> None:
    """Import what the first ``torch.compile`` of every phase would otherwise import in its own
    process (the compiler backends, AOTAutograd and their dependencies): once here, it is shared by
    every fork.  Imports only: no tensor operation runs here."""
    try:
        torch._dynamo.list_backends()  # imports every registered backend's module
    except Exception:  # noqa: BLE001  (then each phase imports them itself, as before)
        pass


def main() -> int:
    warm_up()
    phases.before_fork()  # every worker is forked from this state
    serve(int(sys.argv[1]), int(sys.argv[2]))
    return 0


def exit_now(code: int) -> None:
    """End the zygote without the interpreter's teardown: finalising torch's modules takes most of
    a second of CPU (and the parent waits for it), and the zygote has nothing to write or release
    once its workers have ended."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    exit_now(main())
