"""What a fix buys in time: cold start and steady-state latency of the compiled stream.

Run as a phase of its own (a fresh process, see :mod:`dynalint.verify.phases`)
for the original and for the fixed code in the same ``dynalint verify`` run, so
the two are measured on the same machine, one after the other, with the same
number of threads, and their ratio means something.

- **cold start**: the first call of the stream, compilation included, with an
  empty compiler cache (a fresh ``TORCHINDUCTOR_CACHE_DIR``): what the first
  step of a job pays;
- **steady state**: after one pass over the stream (every shape and path
  compiled), the median of N more calls cycling over the input sets: what
  each later step pays, guards and any recompile included;
- **eager**: the same N calls without ``torch.compile``, for scale.
"""
from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from typing import Any, Callable

import torch
import torch._dynamo

from dynalint.verify.results import Bench
from dynalint.verify.spec import MeasureSpec
from dynalint.verify.stream import Stream

Progress = Callable[[str, int], None]


def _timed(stream: Stream, i: int, wrap: Callable[[Any], Any] | None) -> float:
    call = stream.calls[i % len(stream.calls)]
    stream.before_call(i % len(stream.calls))
    _, fn = stream.instance(call, wrap=wrap)
    args, kwargs = stream.prepared_args(call)
    grad = torch.enable_grad() if stream.spec.mode == "train" else torch.no_grad()
    t0 = time.perf_counter()
    with grad:
        fn(*args, **kwargs)
    if stream.device.type == "cuda":
        torch.cuda.synchronize(stream.device)
    return time.perf_counter() - t0


def _steady(stream: Stream, wrap: Callable[[Any], Any] | None, calls: int, progress: Progress,
            phase: str, start: int = 0) -> float:
    n = len(stream.calls)
    for i in range(start, n):  # the warm-up pass: every input set once
        progress(phase, i)
        _timed(stream, i, wrap)
    times = []
    for k in range(calls):
        progress(phase, n + k)
        times.append(_timed(stream, n + k, wrap))
    return statistics.median(times)


def bench(spec: MeasureSpec, progress: Progress, config: dict[str, Any] | None = None,
          phase: str = "bench") -> Bench:
    """Cold start and steady state compiled, and steady state eager, for one variant; ``config``:
    ``torch._dynamo.config`` values the compiled calls run under (a what-if's settings)."""
    cache = tempfile.mkdtemp(prefix="dynalint-bench-cache-")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache
    os.environ["TRITON_CACHE_DIR"] = os.path.join(cache, "triton")
    try:
        torch._dynamo.reset()
        progress(phase, -1)
        stream = Stream(spec)
        wrap = lambda obj: torch.compile(obj, backend=spec.backend)  # noqa: E731
        progress(phase, 0)
        with torch._dynamo.config.patch(**(config or {})):
            cold = _timed(stream, 0, wrap)
            steady = _steady(stream, wrap, spec.bench_calls, progress, phase, start=1)
        torch._dynamo.reset()
        eager = _steady(Stream(spec), None, spec.bench_calls, progress, "bench eager")
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return Bench(cold_s=cold, steady_s=steady, eager_steady_s=eager, calls=spec.bench_calls,
                 threads=torch.get_num_threads())
