"""The worker: runs one measurement in its own process and writes its result as JSON.

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
from typing import Any

import torch
import torch._dynamo

from dynalint.verify import measure, outputs, whatif
from dynalint.verify.results import Measurement
from dynalint.verify.spec import MeasureSpec
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


def measure_spec(spec: MeasureSpec) -> Measurement:
    """Run every phase of one measurement, checkpointing the result after each."""
    m = Measurement(target=spec.target, variant=spec.variant, device=spec.device, mode=spec.mode,
                    backend=spec.backend, source_path=spec.module_path)

    where = {"call": -1}

    def progress(phase: str, call: int) -> None:
        m.phase, where["call"] = phase, call
        with open(spec.progress_path, "w", encoding="utf-8") as fh:
            fh.write(f"{phase}\t{call}\n")

    def checkpoint() -> None:
        write_json(spec.result_path, m.to_json())

    if spec.device.startswith("cuda") and not torch.cuda.is_available():
        m.status, m.message = "skipped", "CUDA is not available here (torch.cuda.is_available() is False)"
        m.phase = "done"
        return m
    try:
        with torch._dynamo.config.patch(**_dynamo_config(spec)):
            eager = measure.run_eager(spec, progress)
            m.executed_files = eager.executed
            m.executed = eager.executed.get(os.path.realpath(spec.module_path), [])
            failed = [(i, e) for i, e in enumerate(eager.errors) if e]
            if failed:
                m.status = "error"
                m.message = f"call {failed[0][0]} raised {failed[0][1]}" + (
                    f" ({len(failed)} of {len(eager.errors)} calls raised)" if len(failed) > 1 else "")
                m.traceback = eager.first_traceback
            if spec.save_outputs:
                outputs.save(spec.save_outputs, eager.outputs)
            checkpoint()
            calls = measure.run_compiled(spec, eager, m, progress)
            checkpoint()
            if spec.what_if and m.status == "ok" and any(r.category == "shape" for r in m.recompiles):
                m.what_if = whatif.what_if(spec, calls, len(m.recompiles), progress)
        m.phase = "done"
    except (Exception, SystemExit) as exc:  # loading the module, the inputs or an instance failed
        m.status = "error"
        when = f"call {where['call']} of the {m.phase} phase" if where["call"] >= 0 else \
            f"setting up the {m.phase or 'first'} phase (loading the module, its inputs or an instance)"
        m.message = f"{describe(exc)} while {when}"
        m.traceback = user_traceback(exc)
        m.phase = "done"
    return m


def run_in_this_process(spec: MeasureSpec) -> int:
    """Redirect output, arm the hang dump, measure, write the result; the exit status says if it got written."""
    log = open(spec.log_path, "a", encoding="utf-8", errors="replace")
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    faulthandler.enable(file=log, all_threads=True)
    if spec.timeout > 2 * DUMP_MARGIN:
        faulthandler.dump_traceback_later(spec.timeout - DUMP_MARGIN, file=log, exit=False)
    os.chdir(spec.cwd)
    os.environ.clear()
    os.environ.update(spec.env)
    sys.path[:] = spec.sys_path
    sys.dont_write_bytecode = True
    torch.set_num_threads(max(1, min(torch.get_num_threads(), int(os.environ.get("DYNALINT_VERIFY_THREADS", "4")))))
    started = time.perf_counter()
    m = measure_spec(spec)
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
