"""The worker: runs one measurement in its own process and writes its result as JSON.

Every phase runs in a process of its own forked from this one (see
:mod:`dynalint.verify.phases`), so each starts from the same process state.
The result file is rewritten (atomically) after every phase, so a crash or a
timeout in a later phase still leaves what was measured before it, and the
progress file says which call was running.  User output goes to a log file,
and a hang dumps the stacks there shortly before the parent's deadline.

Run as ``python -m dynalint.verify.worker SPEC.json`` or forked by the zygote.
"""
from __future__ import annotations

import faulthandler
import json
import os
import sys
import time
from typing import Any, Callable

import torch
import torch._dynamo

from dynalint.core.processes import adopt_orphans, end_descendants
from dynalint.verify import bench, measure, outputs, phases, whatif
from dynalint.verify.stream import Stream
from dynalint.verify.results import Measurement
from dynalint.verify.spec import PHASE_MARK, MeasureSpec, usable_cores
from dynalint.verify.tracebacks import describe, user_traceback

#: Seconds before the deadline at which a hanging worker dumps its stacks.
DUMP_MARGIN = 1.0


def write_json(path: str, data: dict[str, Any]) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh, default=str)
    os.replace(tmp, path)


def _dynamo_config(spec: MeasureSpec) -> dict[str, Any]:
    config = {k: v for k, v in spec.dynamo_config.items() if k != "reorderable_logging_functions"}
    names = spec.dynamo_config.get("reorderable_logging_functions") or []
    if names:
        config["reorderable_logging_functions"] = {f for f in map(_resolve, names) if f is not None}
    return config


def _resolve(qualname: str) -> Any:
    import builtins
    import importlib

    if hasattr(builtins, qualname):
        return getattr(builtins, qualname)
    module, _, attr = qualname.rpartition(".")
    try:
        return getattr(importlib.import_module(module), attr) if module else None
    except (ImportError, AttributeError):
        return None


class ProgressFile:
    """The phase and call running, for the parent to read after a timeout or a crash.

    Written before every call of every phase, so it costs next to nothing: the file is opened once per
    measurement (each phase's process inherits the descriptor) and rewritten in place as one record of
    a fixed width.  Truncating and rewriting it instead takes a few milliseconds of wall time per call
    on file systems that flush a truncated file's data when it is closed."""

    WIDTH = 128

    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)

    def __call__(self, phase: str, call: int) -> None:
        record = f"{phase[:self.WIDTH - 24]}\t{call}".ljust(self.WIDTH - 1) + "\n"
        data = record.encode("utf-8", errors="replace")[:self.WIDTH]
        if hasattr(os, "pwrite"):
            os.pwrite(self.fd, data, 0)
        else:
            os.lseek(self.fd, 0, os.SEEK_SET)
            os.write(self.fd, data)

    def close(self) -> None:
        os.close(self.fd)


def measure_spec(spec: MeasureSpec, deadline: float | None = None, log: Any = None) -> Measurement:
    """Run every phase of one measurement, each in its own process, checkpointing the result after each."""
    progress = ProgressFile(spec.progress_path)  # called in the phase's process: the file tells the parent
    try:
        return _measure(spec, progress, deadline, log)
    finally:
        progress.close()


def _measure(spec: MeasureSpec, progress: ProgressFile, deadline: float | None, log: Any) -> Measurement:
    m = Measurement(target=spec.target, variant=spec.variant, device=spec.device, mode=spec.mode,
                    backend=spec.backend, source_path=spec.module_path, threads=spec.threads)
    spent: dict[str, float] = {}  # seconds per phase (``m`` is replaced by the compiled phase's copy)
    cpu: dict[str, float] = {}  # CPU seconds of each phase's process

    def checkpoint() -> None:
        m.seconds.update(spent)
        m.cpu_seconds.update(cpu)
        write_json(spec.result_path, m.to_json())

    def phase(name: str, fn: Callable[[], Any]) -> Any:
        m.phase = name
        progress(name, -1)
        print(f"{PHASE_MARK}{name} phase", flush=True)  # into the output log, before the phase's own output

        def child() -> Any:
            torch.set_num_threads(spec.threads)
            with torch._dynamo.config.patch(**_dynamo_config(spec)):
                return fn()

        started = time.perf_counter()
        used: list[float] = []
        try:
            return phases.run(child, deadline=deadline, log=log, cpu=used)
        finally:
            spent[name] = spent.get(name, 0.0) + time.perf_counter() - started
            if used:
                cpu[name] = cpu.get(name, 0.0) + used[0]

    try:
        eager, device = phase("eager", lambda: measure.eager_phase(spec, progress))
        if device is None:
            m.status, m.phase = "skipped", "done"
            m.message = "CUDA is not available here (torch.cuda.is_available() is False): nothing was measured"
            m.seconds.update(spent)
            m.cpu_seconds.update(cpu)
            return m
        spec.device = m.device = device
        failed = [(i, e) for i, e in enumerate(eager.errors) if e]
        if failed:
            m.status = "error"
            m.message = f"call {failed[0][0]} raised {failed[0][1]}" + (
                f" ({len(failed)} of {len(eager.errors)} calls raised)" if len(failed) > 1 else "")
            m.traceback = eager.first_traceback
        if spec.save_outputs:
            outputs.save(spec.save_outputs, eager.outputs)
        if spec.coverage:
            m.executed_files = phase("coverage", lambda: measure.run_coverage(spec, progress))
            m.executed = m.executed_files.get(os.path.realpath(spec.module_path), [])
        checkpoint()
        m = phase("compiled", lambda: _compiled_phase(spec, eager, m, progress))
        checkpoint()
        if spec.what_if and m.status == "ok" and any(r.category == "shape" for r in m.recompiles):
            for remedy in whatif.REMEDIES:
                found = phase(f"what-if {remedy}", lambda: whatif.what_if(
                    spec, Stream(spec).calls, len(m.recompiles), remedy, progress))
                if found is not None:
                    m.what_if.append(found)
            checkpoint()
        if spec.what_if and m.status == "ok" and any(whatif.data_dependent(b) for b in m.breaks):
            found = phase("what-if capture_flags", lambda: whatif.capture_flags_what_if(
                spec, eager.outputs, len(m.breaks), len(m.recompiles), progress))
            if found is not None:
                m.what_if.append(found)
                if spec.bench_calls > 0 and found.error is None:  # timed like the variants
                    flags = {name: True for name in found.dims}
                    found.bench = phase("bench capture_flags", lambda: bench.bench(
                        spec, progress, flags, "bench capture_flags"))
            checkpoint()
        if spec.bench_calls > 0 and m.status == "ok":
            m.bench = phase("bench", lambda: bench.bench(spec, progress))
        m.phase = "done"
    except (Exception, SystemExit) as exc:  # loading the module, the inputs or an instance failed
        m.status = "error"
        call = _progress_call(spec.progress_path)  # written by the phase's process
        when = f"call {call} of the {m.phase} phase" if call >= 0 else \
            f"setting up the {m.phase or 'first'} phase (loading the module, its inputs or an instance)"
        if isinstance(exc, phases.PhaseDied):
            m.status = "crash"
            m.message = f"the worker died ({exc.how}) in the {m.phase} phase" + (f", call {call}" if call >= 0 else "")
        elif isinstance(exc, phases.PhaseError):
            m.message, m.traceback = f"{exc.description} while {when}", exc.traceback
        else:
            m.message = f"{describe(exc)} while {when}"
            m.traceback = user_traceback(exc)
        m.phase = "done"
    m.seconds.update(spent)
    m.cpu_seconds.update(cpu)
    return m


def _compiled_phase(spec: MeasureSpec, eager: measure.EagerRun, m: Measurement,
                    progress: Callable[[str, int], None]) -> Measurement:
    """The compiled run, which counts only if Dynamo really compiled it and not every call raised."""
    from torch._dynamo.utils import counters

    m = measure.run_compiled(spec, eager, m, progress)
    if m.status != "ok" or not m.calls:
        return m
    if counters["frames"]["total"] == 0 and any(c.error is None for c in m.calls):
        replaced = torch.compile is not _TORCH_COMPILE
        m.status = "error"
        how = (f"torch.compile was replaced (by {_name(torch.compile)}) while the target was imported"
               if replaced else "torch.compile evaluated no frame")
        m.message = f"Dynamo never ran: {how}, so nothing was verified"
    elif all(c.error is not None for c in m.calls):
        m.status = "error"
        m.message = f"every compiled call raised (call 0: {m.calls[0].error}); the eager calls did not"
        m.compile_failed = True
    return m


_TORCH_COMPILE = torch.compile
"""``torch.compile`` as torch defines it (user code may replace it at import)."""


def _name(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', type(obj).__name__)}"


def _progress_call(path: str) -> int:
    try:
        with open(path, encoding="utf-8") as fh:
            return int(fh.read().split("\t")[1])
    except (OSError, IndexError, ValueError):
        return -1


def run_in_this_process(spec: MeasureSpec) -> int:
    """Redirect output, arm the hang dump, measure, write the result; the exit status says if it got written."""
    log = open(spec.log_path, "a", encoding="utf-8", errors="replace")
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    faulthandler.enable(file=log, all_threads=True)
    deadline = time.monotonic() + spec.timeout
    if spec.timeout > 2 * DUMP_MARGIN and not phases.can_fork():
        faulthandler.dump_traceback_later(spec.timeout - DUMP_MARGIN, file=log, exit=False)
    os.chdir(spec.cwd)
    os.environ.clear()
    os.environ.update(spec.env)
    sys.path[:] = spec.sys_path
    sys.dont_write_bytecode = True
    spec.threads = spec.threads or usable_cores()
    started = time.perf_counter()
    adopt_orphans()  # what the target forks or spawns, daemons included, ends with the measurement
    try:
        m = measure_spec(spec, deadline, log)
    finally:
        end_descendants()
    faulthandler.cancel_dump_traceback_later()
    sys.stdout.flush()
    sys.stderr.flush()
    data = m.to_json()
    data["elapsed_s"] = time.perf_counter() - started
    write_json(spec.result_path, data)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    return run_in_this_process(MeasureSpec.load(args[0]))


if __name__ == "__main__":
    sys.exit(main())
