"""Running a measurement in its own process, with a deadline, never losing the report.

Workers are forked by a shared zygote (see :mod:`dynalint.verify.zygote`) or,
if it cannot start, launched as ``python -m dynalint.verify.worker``.  A worker
that runs past its deadline is killed with its whole process group; one that
dies is reported with its signal and the end of its output.  Whatever the
worker checkpointed before that is kept.  This module does not import torch.
"""
from __future__ import annotations

import atexit
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from dynalint.verify.results import Measurement
from dynalint.verify.spec import PHASE_MARK, MeasureSpec
from dynalint.verify.tracebacks import is_user_file

#: Seconds allowed for the zygote to import torch before falling back to plain processes.
ZYGOTE_START_TIMEOUT = 120.0
_SIGNALS = {int(s) for s in signal.Signals}
_FRAME_RE = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>\S+)')


@dataclass
class _Job:
    pid: int | None = None
    exit: int | None = None
    signal: int = 0
    started: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)


class Zygote:
    """Parent side of the zygote protocol; thread-safe, one instance shared per process."""

    def __init__(self) -> None:
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        self._stderr = tempfile.TemporaryFile()
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "dynalint.verify.zygote", str(to_child_r), str(from_child_w)],
            pass_fds=(to_child_r, from_child_w), stdin=subprocess.DEVNULL, stdout=self._stderr,
            stderr=self._stderr, close_fds=True, start_new_session=True)
        os.close(to_child_r)
        os.close(from_child_w)
        self._lock = threading.Lock()
        self._jobs: dict[int, _Job] = {}
        self._next = 0
        self._ready = threading.Event()
        self.alive = True
        threading.Thread(target=self._read, name="dynalint-zygote", daemon=True).start()

    def wait_ready(self, timeout: float) -> bool:
        return self._ready.wait(timeout) and self.alive

    def _read(self) -> None:
        with os.fdopen(self._from_child, "rb") as pipe:
            for raw in pipe:
                try:
                    msg = json.loads(raw)
                except ValueError:
                    continue
                if msg.get("ready"):
                    self._ready.set()
                    continue
                job = self._jobs.get(msg.get("id", -1))
                if job is None:
                    continue
                if "pid" in msg:
                    job.pid = msg["pid"]
                    job.started.set()
                if "exit" in msg:
                    job.exit, job.signal = msg["exit"], msg.get("signal", 0)
                    job.done.set()
        self.alive = False
        self._ready.set()
        for job in list(self._jobs.values()):
            job.started.set()
            job.done.set()

    def start(self, spec_path: str) -> _Job:
        job = _Job()
        with self._lock:
            rid = self._next
            self._next += 1
            self._jobs[rid] = job
            os.write(self._to_child, (json.dumps({"id": rid, "spec": spec_path}) + "\n").encode())
        return job

    def close(self) -> None:
        try:
            os.close(self._to_child)
        except OSError:
            pass
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()


_shared: Zygote | None = None
_shared_lock = threading.Lock()


def _zygote() -> Zygote | None:
    """The process-wide zygote (started on first use); None if it cannot start here."""
    global _shared
    with _shared_lock:
        if _shared is not None and _shared.alive:
            return _shared
        if os.environ.get("DYNALINT_VERIFY_NO_ZYGOTE") or not hasattr(os, "fork"):
            return None
        z = Zygote()
        if not z.wait_ready(ZYGOTE_START_TIMEOUT):
            z.close()
            return None
        _shared = z
        atexit.register(z.close)
        return z


def start_early() -> None:
    """Start the zygote (its torch import takes seconds) in the background, so that it overlaps the
    work done before the first measurement (checking and fixing the files)."""
    threading.Thread(target=_zygote, name="dynalint-zygote-start", daemon=True).start()


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _end_group(pgid: int) -> None:
    """Kill what is left in an ended worker's process group (what the target started).  The group id
    cannot have been reused while the group has members, so this never reaches another process."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass


def _run_worker(spec_path: str, timeout: float) -> tuple[str, int, int, float]:
    """("done" | "timeout" | "lost", exit code, signal, seconds until the worker started)."""
    started = time.perf_counter()
    z = _zygote()
    if z is not None:
        job = z.start(spec_path)
        if not job.started.wait(30) or job.pid is None:
            return "lost", -1, 0, time.perf_counter() - started
        waited = time.perf_counter() - started
        if job.done.wait(timeout):
            return ("done" if job.exit is not None else "lost"), job.exit or 0, job.signal, waited
        _kill_group(job.pid)
        job.done.wait(10)
        return "timeout", -1, signal.SIGKILL, waited
    proc = subprocess.Popen([sys.executable, "-m", "dynalint.verify.worker", spec_path], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        code = proc.wait(timeout + 10.0)  # the torch import is paid inside, give it room
        _end_group(proc.pid)
        return "done", code if code >= 0 else -1, -code if code < 0 else 0, 0.0
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)
        proc.wait()
        return "timeout", -1, signal.SIGKILL, 0.0


def run_measurement(spec: MeasureSpec) -> Measurement:
    """Measure in a worker process; always returns a Measurement, whatever happened to the worker."""
    workdir = tempfile.mkdtemp(prefix="dynalint-verify-")
    try:
        spec.result_path = spec.result_path or os.path.join(workdir, "result.json")
        spec.progress_path = os.path.join(workdir, "progress")
        spec.log_path = os.path.join(workdir, "output.log")
        spec_path = os.path.join(workdir, "spec.json")
        spec.dump(spec_path)
        started = time.perf_counter()
        outcome, code, sig, waited = _run_worker(spec_path, spec.timeout)
        m = _read_result(spec)
        m.seconds.update(start=waited, total=time.perf_counter() - started)
        log = _read(spec.log_path)
        if outcome == "timeout":
            phase, call = _progress(spec.progress_path)
            m.status = "timeout"
            where = f" in the {phase} phase" + (f", call {call}" if call >= 0 else "") if phase else ""
            m.message = f"timed out after {spec.timeout:g} s{where} (the worker was killed)"
            m.traceback = _hang_stack(log)
        elif outcome == "lost" or code != 0 or m.phase != "done":
            phase, call = _progress(spec.progress_path)
            m.status = "crash"
            how = f"signal {signal.Signals(sig).name}" if sig in _SIGNALS else f"exit status {code}"
            m.message = f"the worker died ({how}) in the {phase or 'start-up'} phase" + (
                f", call {call}" if call >= 0 else "")
            m.traceback = _hang_stack(log) or m.traceback
        if m.status == "crash" and not m.traceback:
            m.traceback = _hang_stack(log)  # a phase's process died: its fault handler wrote the stack
        keep_output(m, spec.log_path, log)
        return m
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def keep_output(m: Measurement, log_path: str, log: str) -> None:
    """Keep what the target, its hooks and torch wrote (the worker's output log, which goes with its
    temporary folder) in a file of its own, named in the report; when the measurement did not
    succeed, also the end of the last phase's output, which often says why."""
    lines = [ln for ln in log.splitlines() if not ln.startswith(PHASE_MARK)]
    if not any(ln.strip() for ln in lines):
        return
    kept = output_path(m.target, m.variant, m.device)
    try:
        os.makedirs(os.path.dirname(kept), exist_ok=True)
        shutil.copyfile(log_path, kept)
    except OSError:
        return
    m.output_path = kept
    m.output_lines = len(lines)
    if m.status != "ok":
        start = log.rfind(PHASE_MARK)
        last = (log[log.find("\n", start) + 1:] if start >= 0 else log).splitlines()
        dump = next((i for i, ln in enumerate(last) if ln.startswith(("Timeout (", "Fatal Python error"))), None)
        last = last[:dump]  # a stack dump is shown apart, trimmed to the user's frames
        m.log_tail = "\n".join(last[-OUTPUT_TAIL_LINES:]).rstrip("\n")


#: Lines of a failed measurement's output shown in the report.
OUTPUT_TAIL_LINES = 12


def output_path(target: str, variant: str, device: str) -> str:
    """Where the output of a target's measurement is kept: one file per target, variant and device,
    replaced by the next run (so runs do not pile files up)."""
    path, _, name = target.rpartition("::")
    digest = hashlib.sha1(os.path.realpath(path).encode()).hexdigest()[:8]
    slug = re.sub(r"[^\w.-]+", "_", f"{os.path.basename(path)}-{name}")[:60]
    return os.path.join(tempfile.gettempdir(), "dynalint-verify-output", f"{slug}-{digest}-{variant}-{device}.log")


def _read(path: str, tail: int = 256 * 1024) -> str:
    """The end of a text file (a worker's output can be huge; its last stack dump is at the end)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - tail))
            return fh.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def _read_result(spec: MeasureSpec) -> Measurement:
    try:
        with open(spec.result_path, encoding="utf-8") as fh:
            data: dict[str, Any] = json.load(fh)
        return Measurement.from_json(data)
    except (OSError, ValueError, TypeError, KeyError):
        return Measurement(target=spec.target, variant=spec.variant, device=spec.device, mode=spec.mode,
                           backend=spec.backend, source_path=spec.module_path)


def _progress(path: str) -> tuple[str, int]:
    parts = _read(path).strip().split("\t")
    if len(parts) == 2 and parts[1].lstrip("-").isdigit():
        return parts[0], int(parts[1])
    return "", -1


def _hang_stack(log: str) -> str:
    """The user frames of the last stack dump (faulthandler) in the worker's output, outermost first."""
    start = max(log.rfind("Timeout ("), log.rfind("Fatal Python error"))
    if start < 0:
        return ""
    frames = [m for m in _FRAME_RE.finditer(log, start) if is_user_file(m["file"])]
    if not frames:
        return ""
    return "Stack (user frames):\n" + "\n".join(
        f'  File "{m["file"]}", line {m["line"]}, in {m["func"]}' for m in reversed(frames[:8]))
