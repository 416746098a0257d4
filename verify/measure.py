"""One measurement: the stream run eagerly, then compiled, in a worker process.

The eager phase gives the reference outputs (timed without tracing); the coverage
phase the lines of the user's files that really ran; the compiled phase records, call by call, what Dynamo
did (cache hit, compile, recompile with its failing guards, eager fallback),
the graph breaks from Dynamo's own log, the guard-check time, the compile time
and the outputs against the eager ones.  Each phase runs in its own process (see
:mod:`dynalint.verify.phases`), from a fresh module and a reset Dynamo.
"""
from __future__ import annotations

import contextlib
import inspect
import linecache
import os
import re
import sys
import time
import types
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch._dynamo
from torch._dynamo.utils import counters

from dynalint.verify import cost, outputs
from dynalint.verify.break_lines import uncertain as uncertain_line
from dynalint.verify.guards import classify
from dynalint.verify.probe import DynamoLog, GraphBreak
from dynalint.verify.results import BreakSite, CallRecord, Measurement, OutputDiff, RecompileEvent
from dynalint.verify.spec import MeasureSpec
from dynalint.verify.stream import Call, Stream, tensor_leaves
from dynalint.verify.tracebacks import describe, is_user_file, user_traceback

Progress = Callable[[str, int], None]


@dataclass
class EagerRun:
    outputs: list[outputs.Leaves | None] = field(default_factory=list)
    errors: list[str | None] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    executed: dict[str, list[list[int]]] = field(default_factory=dict)
    """Lines that ran, per user file (real path)."""
    first_traceback: str = ""


def grad_mode(spec: MeasureSpec) -> contextlib.AbstractContextManager:
    return torch.enable_grad() if spec.mode == "train" else torch.no_grad()


def run_call(stream: Stream, i: int, call: Call, fn: Any, obj: Any) -> tuple[outputs.Leaves, float]:
    """Call once (timed); return the outputs with what the call left behind: in train mode the input
    and parameter gradients (``None`` kept apart from zeros), the module's state, the tensors it was
    given, and what it printed."""
    args, kwargs = stream.prepared_args(call)
    with outputs.capture_output() as printed:
        t0 = time.perf_counter()
        with grad_mode(stream.spec):
            out = fn(*args, **kwargs)
        if stream.device.type == "cuda":
            torch.cuda.synchronize(stream.device)  # kernels run asynchronously: time them to completion
        seconds = time.perf_counter() - t0
    leaves = outputs.flatten(out)
    if stream.spec.mode == "train":
        leaves.update(_backward(out, args, kwargs, obj))
    leaves.update(outputs.state_leaves(obj, printed.getvalue(), (args, kwargs)))
    return leaves, seconds


def _backward(out: Any, args: tuple, kwargs: dict, obj: Any) -> outputs.Leaves:
    losses = [t.float().sum() if not t.is_complex() else t.abs().sum()
              for _, t in tensor_leaves(out if isinstance(out, (tuple, list, dict)) else (out,))
              if t.requires_grad]
    grads: outputs.Leaves = {}
    if losses:
        torch.stack(losses).sum().backward()
    for path, t in tensor_leaves((args, kwargs)):
        if t.requires_grad:
            grads[f"grad:input{path}"] = None if t.grad is None else t.grad.detach().to("cpu", copy=True)
    if isinstance(obj, torch.nn.Module):
        for name, p in obj.named_parameters():
            if p.requires_grad:
                # None (never reached) and zeros differ: optimizers skip the first, decay the second
                grads[f"grad:{name}"] = None if p.grad is None else p.grad.detach().to("cpu", copy=True)
                p.grad = None
    return grads


def resolve_device(spec: MeasureSpec) -> str | None:
    """The device to measure on (``auto``: cuda when available, else cpu); None when it is not available."""
    if spec.device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if spec.device.startswith("cuda") and not torch.cuda.is_available():
        return None
    return spec.device


def eager_phase(spec: MeasureSpec, progress: Progress) -> tuple[EagerRun | None, str | None]:
    """(the eager run, the device it ran on); (None, None) when the device asked for is not available."""
    device = resolve_device(spec)
    if device is None:
        return None, None
    spec.device = device
    return run_eager(spec, progress), device


def run_eager(spec: MeasureSpec, progress: Progress) -> EagerRun:
    """The reference: every input set run without Dynamo, timed without any tracing."""
    progress("eager", -1)
    stream = Stream(spec)
    run = EagerRun()
    for i, call in enumerate(stream.calls):
        progress("eager", i)
        stream.before_call(i)
        try:
            obj, fn = stream.instance(call)
            leaves, seconds = run_call(stream, i, call, fn, obj)
            run.outputs.append(leaves)
            run.errors.append(None)
            run.seconds.append(seconds)
        except (Exception, SystemExit) as exc:  # sys.exit() in user code is an error too
            run.outputs.append(None)
            run.errors.append(describe(exc))
            run.seconds.append(0.0)
            run.first_traceback = run.first_traceback or user_traceback(exc)
    return run


def run_coverage(spec: MeasureSpec, progress: Progress) -> dict[str, list[list[int]]]:
    """The lines of the user's files that the stream runs, per real path (eagerly, under line tracing).

    A phase of its own, so that the tracing slows no call that is timed.
    """
    progress("coverage", -1)
    stream = Stream(spec)
    lines: dict[str, set[int]] = {}
    files: dict[str, str | None] = {}

    def trace(frame: types.FrameType, event: str, arg: Any) -> Any:
        name = frame.f_code.co_filename
        if name not in files:
            files[name] = os.path.realpath(name) if is_user_file(name) else None
        real = files[name]
        if real is None:
            return None
        seen = lines.setdefault(real, set())

        def local(frame: types.FrameType, event: str, arg: Any) -> Any:
            if event == "line":
                seen.add(frame.f_lineno)
            return local

        return local

    for i, call in enumerate(stream.calls):
        progress("coverage", i)
        stream.before_call(i)
        try:
            obj, fn = stream.instance(call)
            sys.settrace(trace)
            try:
                run_call(stream, i, call, fn, obj)
            finally:
                sys.settrace(None)
        except (Exception, SystemExit):  # the eager phase reports it
            pass
    return {path: _runs(sorted(found)) for path, found in lines.items()}


def _runs(lines: list[int]) -> list[list[int]]:
    """Sorted line numbers as [first, last] runs of consecutive lines."""
    out: list[list[int]] = []
    for ln in lines:
        if out and ln == out[-1][1] + 1:
            out[-1][1] = ln
        else:
            out.append([ln, ln])
    return out


def run_compiled(spec: MeasureSpec, eager: EagerRun, m: Measurement, progress: Progress) -> Measurement:
    """The stream through ``torch.compile``: fills ``m`` with breaks, recompiles, calls and the cost model."""
    torch._dynamo.reset()
    counters.clear()
    progress("compiled", -1)
    stream = Stream(spec)
    m.kind = stream.target.kind
    m.n_calls = len(stream.calls)
    metrics = torch._dynamo.utils.compilation_time_metrics
    compile_times = metrics.setdefault("_compile.compile_inner", [])
    wrap = lambda obj: torch.compile(obj, backend=spec.backend)  # noqa: E731
    reference = outputs.load(spec.reference_outputs) if spec.reference_outputs else None
    with DynamoLog(is_user=is_user_file) as log, cost.ResumeGuards() as resume:
        for i, call in enumerate(stream.calls):
            progress("compiled", i)
            stream.before_call(i)
            log.input_index = i
            rec = CallRecord(index=i, status="hit", wall_s=0.0)
            n_rec, n_comp, n_limit = len(log.recompiles), len(compile_times), len(log.limit_hits)
            frames0, graphs0 = counters["frames"]["total"], counters["stats"]["unique_graphs"]
            guard_verdict = "unknown"
            try:
                obj, fn = stream.instance(call, wrap=wrap)
                with grad_mode(spec):  # the guards include the grad mode
                    rec.guard_s, guard_verdict = cost.time_guards(stream, obj, call, resume)
                leaves, rec.wall_s = run_call(stream, i, call, fn, obj)
            except (Exception, SystemExit) as exc:
                leaves = None
                rec.error = describe(exc)
            rec.compile_s = float(sum(compile_times[n_comp:]))
            rec.graphs = counters["stats"]["unique_graphs"] - graphs0
            rec.recompiles = list(range(n_rec, len(log.recompiles)))
            frames = counters["frames"]["total"] - frames0
            limited = len(log.limit_hits) > n_limit  # gave up recompiling: this call ran eagerly
            rec.status = ("error" if rec.error else "eager" if limited else "recompile" if rec.recompiles else
                          "compile" if frames else "eager" if guard_verdict in ("fail", "none") else "hit")
            if i < len(eager.seconds) and eager.errors[i] is None:
                rec.eager_s = eager.seconds[i]
            _compare(rec, leaves, eager, reference, i)
            if i == 0:
                m.graph_count = rec.graphs
            m.calls.append(rec)
    m.breaks, m.recompiles = _breaks(log.breaks, m.calls), _recompiles(log.recompiles, stream)
    m.graphs_compiled = int(counters["stats"]["unique_graphs"])
    m.cost = cost.cost_model(m.calls, eager.seconds, bool(log.limit_hits))
    return m


def _compare(rec: CallRecord, leaves: outputs.Leaves | None, eager: EagerRun,
             reference: list[outputs.Leaves | None] | None, i: int) -> None:
    expected = eager.outputs[i] if i < len(eager.outputs) else None
    eager_error = eager.errors[i] if i < len(eager.errors) else None
    if leaves is not None and expected is not None:
        rec.compiled_vs_eager = outputs.compare(leaves, expected)
    elif (leaves is None) != (expected is None):
        side, error = ("compiled", rec.error) if leaves is None else ("eager", eager_error)
        rec.compiled_vs_eager = OutputDiff(False, note=f"only the {side} call raised"
                                                       f"{': ' + error if error else ''}")
    elif rec.error and eager_error and _exception_type(rec.error) != _exception_type(eager_error):
        rec.compiled_vs_eager = OutputDiff(False, note=f"eager raised {eager_error}; compiled raised {rec.error}")
    if reference is not None:
        ref = reference[i] if i < len(reference) else None
        if expected is not None and ref is not None:
            rec.vs_original = outputs.compare(expected, ref)
        elif (expected is None) != (ref is None):
            rec.vs_original = OutputDiff(False, note="only one of original and fixed raised")


def _exception_type(described: str) -> str:
    """``ValueError`` of ``ValueError: bad shape (m.py:3 in f)`` (see tracebacks.describe)."""
    return re.split(r"[: ]", described, maxsplit=1)[0]


def _breaks(found: list[GraphBreak], calls: list[CallRecord]) -> list[BreakSite]:
    sites: list[BreakSite] = []
    seen: dict[tuple[str, int, str], int] = {}
    for c in calls:
        c.new_breaks = []
    for b in found:
        key = (os.path.realpath(b.file), b.line, b.gb_type)
        if key in seen:
            if b.frame_skipped:
                sites[seen[key]].frame_skipped = True
            continue
        seen[key] = len(sites)
        sites.append(BreakSite(file=b.file, line=b.line, function=b.function, gb_type=b.gb_type, gb_id=b.gb_id,
                               explanation=b.explanation, frame_skipped=b.frame_skipped,
                               first_call=b.input_index, code=_source_line(b.file, b.line),
                               uncertain=uncertain_line(b.file, b.line, b.function),
                               fundamental=b.fundamental))
        if 0 <= b.input_index < len(calls):
            calls[b.input_index].new_breaks.append(len(sites) - 1)
    return sites


def _source_line(path: str, line: int) -> str:
    return linecache.getline(path, line).strip()


def _recompiles(found: list[Any], stream: Stream) -> list[RecompileEvent]:
    obj = next(iter(stream.instances.values()), (None, None))[0]
    _, sig, bound = stream.target.code_and_signature(obj) if obj is not None or not stream.target.constructs \
        else (None, None, False)
    params = list(sig.parameters) if sig is not None else []
    locals_ = frozenset(params)
    self_names = frozenset(params[:1]) if bound else frozenset()
    rename = _wrapper_names(stream, obj, params)
    events = []
    for r in found:
        failures = [classify(g, locals_, self_names) for g in r.guard_failures]
        categories = [classify(rename(g), locals_, self_names).category for g in r.guard_failures]
        events.append(RecompileEvent(call=r.input_index, function=r.function, guards=[f.guard for f in failures],
                                     categories=categories,
                                     user_code=next((f.user_code for f in failures if f.user_code), "")))
    return events


def _wrapper_names(stream: Stream, obj: Any, params: list[str]) -> Callable[[str], str]:
    """Read a guard on a decorator's ``*args``/``**kwargs`` as one on the wrapped function's parameters.

    A decorated ``forward`` is compiled as the wrapper, so its guards name ``args[0]`` (the
    module) or ``kwargs['scale']``; classified as they are, they would read as "other".
    """
    if obj is None and stream.target.constructs:
        return lambda g: g
    entry, _ = stream.target.entry_function(obj)
    try:
        outer = inspect.signature(entry, follow_wrapped=False).parameters.values()
    except (TypeError, ValueError):
        return lambda g: g
    star = next((p.name for p in outer if p.kind is p.VAR_POSITIONAL), None)
    starstar = next((p.name for p in outer if p.kind is p.VAR_KEYWORD), None)
    if star is None or entry is inspect.unwrap(entry):
        return lambda g: g

    def positional(m: re.Match) -> str:
        k = int(m[1])
        return params[k] if k < len(params) else m[0]

    def rename(guard: str) -> str:
        guard = re.sub(rf"\b{re.escape(star)}\[(\d+)\]", positional, guard)
        if starstar:
            guard = re.sub(rf"\b{re.escape(starstar)}\[['\"](\w+)['\"]\]", lambda m: m[1], guard)
        return guard

    return rename
