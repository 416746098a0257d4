"""The per-call cost model, measured: ``T_avg = T_guard + T_run + f_fail * T_rebuild``.

``T_guard`` is the time Dynamo's guards take to accept or reject a call (timed
by running the guard managers of the compiled code's cache entries on the
call's own arguments, the way the frame evaluator does), ``T_run`` the time of
a call served from the cache, ``f_fail`` the share of calls after the first
that missed the cache and compiled (a guard failed, or a resume function after
a graph break met a new path), and ``T_rebuild`` the compile time such a call
paid.  The model is set against the measured mean time per call.
"""
from __future__ import annotations

import statistics
import time
from typing import Any

import torch._dynamo
from torch._dynamo.eval_frame import _debug_get_cache_entry_list

from dynalint.verify.results import CallRecord, CostModel
from dynalint.verify.stream import Call, Stream


def time_guards(stream: Stream, obj: Any, call: Call, repeat: int = 3) -> tuple[float | None, str]:
    """(seconds to evaluate the cache entries' guards for this call, "pass"/"fail"/"none"/"unknown").

    "none": the code has no cache entry (its first call, or Dynamo skips the frame and runs it
    eagerly); "fail": no entry accepts the call (it will recompile, or run eagerly once the
    recompile limit is hit).
    """
    if not stream.spec.guard_timing:
        return None, "unknown"
    code, sig, bound = stream.target.code_and_signature(obj)
    if code is None or sig is None:
        return None, "unknown"
    try:
        entries = _debug_get_cache_entry_list(code)
    except Exception:
        return None, "unknown"
    if not entries:
        return None, "none"
    args, kwargs = stream.prepared_args(call)
    try:
        bound_args = sig.bind(obj, *args, **kwargs) if bound else sig.bind(*args, **kwargs)
        bound_args.apply_defaults()
        f_locals = dict(bound_args.arguments)
        best, passed = float("inf"), False
        for _ in range(repeat):
            t0 = time.perf_counter()
            passed = False
            for entry in entries:
                if entry.guard_manager.check(f_locals):
                    passed = True
                    break
            best = min(best, time.perf_counter() - t0)
    except Exception:
        return None, "unknown"
    return best, "pass" if passed else "fail"


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def cost_model(calls: list[CallRecord], eager_seconds: list[float], limit_hit: bool) -> CostModel:
    later = [c for c in calls if c.index > 0 and c.status != "error"]
    hits = [c for c in later if c.status == "hit"]
    t_guard = _mean([c.guard_s for c in later if c.guard_s is not None])
    t_run = _mean([c.wall_s - (c.guard_s or 0.0) for c in hits])
    if t_run is None:
        t_run = _mean([max(c.wall_s - c.compile_s, 0.0) for c in later])
    rebuilds = [c for c in later if c.status in ("recompile", "compile")]
    f_fail = len(rebuilds) / len(later) if later else 0.0
    t_rebuild = _mean([c.compile_s for c in rebuilds])
    model = None
    if t_run is not None:
        model = (t_guard or 0.0) + t_run + f_fail * (t_rebuild or 0.0)
    eager_later = eager_seconds[1:] or eager_seconds
    return CostModel(
        t_guard_s=t_guard, t_run_s=t_run, f_fail=f_fail, t_rebuild_s=t_rebuild, t_avg_model_s=model,
        t_avg_measured_s=_mean([c.wall_s for c in later]),
        compile_s=sum(c.compile_s for c in calls), run_s=sum(max(c.wall_s - c.compile_s, 0.0) for c in calls),
        eager_run_s=_mean([s for s in eager_later if s > 0]),
        recompile_limit=int(torch._dynamo.config.recompile_limit), limit_hit=limit_hit,
        eager_fallback_calls=sum(c.status == "eager" for c in calls),
    )
