"""The per-call cost model, measured: ``T_avg = T_guard + T_run + f_fail * T_rebuild``.

``T_guard`` is the time Dynamo's guards take to accept or reject a call (timed
by running the guard managers of the compiled code's cache entries on the
call's own arguments, the way the frame evaluator does, plus those of the
resume functions after graph breaks on the locals they were compiled for), ``T_run`` the time of
a call served from the cache, ``f_fail`` the share of calls after the first
that missed the cache and compiled (a guard failed, or a resume function after
a graph break met a new path), and ``T_rebuild`` the compile time such a call
paid.  The model is set against the measured mean time per call.
"""
from __future__ import annotations

import contextlib
import statistics
import sys
import time
import types
from typing import Any

import torch._dynamo
import torch._dynamo.guards
from torch._dynamo.eval_frame import _debug_get_cache_entry_list

from dynalint.verify.results import CallRecord, CostModel
from dynalint.verify.stream import Call, Stream, frame_locals, wrapped_chain

#: Name prefix of the code objects Dynamo generates to resume a frame after a graph break.
RESUME_PREFIX = "torch_dynamo_resume_in_"


def time_guards(stream: Stream, obj: Any, call: Call, resume: "ResumeGuards | None" = None,
                repeat: int = 3) -> tuple[float | None, str]:
    """(seconds to evaluate the cache entries' guards for this call, "pass"/"fail"/"none"/"unknown").

    The frame timed is the one the call enters that has cache entries: a decorated ``forward``
    is cached as its decorator's wrapper, not as the function inside.  The guards of the resume
    functions compiled after graph breaks are added (see :class:`ResumeGuards`).  "none": no code
    on the way in has a cache entry (its first call, or Dynamo skips the frame and runs it
    eagerly); "fail": no entry accepts the call (it will recompile, or run eagerly once the
    recompile limit is hit).
    """
    if not stream.spec.guard_timing:
        return None, "unknown"
    first, bound = stream.target.entry_function(obj)
    entries, fn = [], None
    for candidate in wrapped_chain(first):
        try:
            entries = _debug_get_cache_entry_list(candidate.__code__)
        except Exception:
            continue
        if entries:
            fn = candidate
            break
    if fn is None:
        return None, "none"
    args, kwargs = stream.prepared_args(call)
    f_locals = frame_locals(fn, bound, obj, args, kwargs)
    if f_locals is None:
        return None, "unknown"
    try:
        best, passed = _check_time(entries, f_locals, repeat)
    except Exception:
        return None, "unknown"
    if resume is not None:
        best += resume.seconds(repeat)
    return best, "pass" if passed else "fail"


def _check_time(entries: list[Any], f_locals: dict[str, Any], repeat: int) -> tuple[float, bool]:
    """Best time over ``repeat`` runs of the entries' guards, in cache order until one accepts."""
    best, passed = float("inf"), False
    for _ in range(repeat):
        t0 = time.perf_counter()
        passed = False
        for entry in entries:
            if entry.guard_manager.check(f_locals):
                passed = True
                break
        best = min(best, time.perf_counter() - t0)
    return best, passed


class ResumeGuards(contextlib.AbstractContextManager):
    """The guards of the resume functions Dynamo compiles after a graph break, kept to be timed.

    A resume function's frame starts inside the compiled code, so its locals cannot be built
    from the call's arguments; while active, this records the locals Dynamo compiled each resume
    function for (the ones it checks its new guards against), and :meth:`seconds` runs every resume
    function's cache entries on them the way the frame evaluator does.
    """

    def __init__(self) -> None:
        self.scopes: dict[types.CodeType, dict[str, Any]] = {}
        self._saved: Any = None

    def __enter__(self) -> "ResumeGuards":
        guards_mod = torch._dynamo.guards
        original = self._saved = guards_mod.profile_guard_manager
        scopes = self.scopes

        def profile(root: Any, local_scope: Any, *rest: Any) -> Any:
            try:
                code = sys._getframe(1).f_locals.get("f_code")
                if isinstance(code, types.CodeType) and code.co_name.startswith(RESUME_PREFIX):
                    scopes[code] = dict(local_scope)
            except Exception:  # never disturb Dynamo
                pass
            return original(root, local_scope, *rest)

        guards_mod.profile_guard_manager = profile
        return self

    def __exit__(self, *exc: object) -> None:
        torch._dynamo.guards.profile_guard_manager = self._saved

    def seconds(self, repeat: int = 3) -> float:
        total = 0.0
        for code, scope in self.scopes.items():
            try:
                entries = _debug_get_cache_entry_list(code)
                if entries:
                    total += _check_time(entries, scope, repeat)[0]
            except Exception:
                continue
        return total


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
