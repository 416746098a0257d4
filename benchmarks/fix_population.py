#!/usr/bin/env python
"""What `dynalint fix --unsafe-fixes` does to a labelled population, split three ways, measured by Dynamo.

For each script of ``benchmarks/userfiles`` the break lines Dynamo logs for the original (from
``labels.json``) are compared with those of three variants, each relabelled with the same machinery
(``benchmarks/userfiles/label.py``'s ``run_one``, imported):

* ``rewrites``: ``fix --unsafe-fixes`` without the configuration fixes: the ``capture-flags`` and
  ``allow-rnn`` fixers are left out and ``full-range-loop`` rewrites its loop without patching the
  compile call;
* ``flags``: the original script run with ``capture_scalar_outputs`` and
  ``capture_dynamic_output_shape_ops`` on;
* ``both``: ``fix --unsafe-fixes`` as it is.

Per variant: break lines, whether the run is break-free, whether it gained a break line the original
did not have, whether it raised, and whether the outputs of the compiled callables equal the
original's (the original is rerun to record them): each call of what ``torch.compile`` returned (a
function's result, a compiled module's forward output) is kept with the name of what was compiled, and
so are the parameters and state of every optimizer the run made, at its end.  The calls of the callables
both runs compiled (by name) and the optimizer states are compared with ``torch.testing.assert_close``
and bitwise (``torch.equal``): a fix that compiles the first part of a training step only
(``eager-tail``'s split form) is judged by the weights it trains.  Tensors and Python numbers are
compared; a run whose calls differ in number or structure counts as not equal.  Each variant is also compared
with the original run eagerly (``torch.compile`` returning what it is given, the same calls recorded):
code that a fix moves out of the graph computes as eager code does, so where the compiled original
differs from eager in rounding (an optimizer step traced by Dynamo does), that column tells a fix that
changed the results from one that restored eager's.

With ``--inductor-timing``, the runs a column makes break-free are timed too: the original's compiled
steps under the default backend (Inductor) against the fixed script's steps of the same names
(:class:`StepTimer`: steady state, after the script's own run as warm-up), the original run eagerly as
the reference.

Usage:
  python benchmarks/fix_population.py [SCRIPT.py ...] [--work DIR] [--timeout 300] [--inductor-timing]
  python benchmarks/fix_population.py --report --work DIR [--inductor-timing]   # the tables again, no run
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
USERFILES = HERE / "userfiles"
VARIANTS = ("original", "rewrites", "flags", "both")
FLAGS = ("capture_scalar_outputs", "capture_dynamic_output_shape_ops")
#: the fixers whose fix is a Dynamo setting, not a rewrite (left out of ``rewrites``)
CONFIGURATION_FIXERS = ("capture-flags", "allow-rnn")


def load_labeller() -> Any:
    """userfiles' labeller module, loaded by path (benchmarks/ is not a package)."""
    spec = importlib.util.spec_from_file_location("userfiles_label", USERFILES / "label.py")
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


# --------------------------------------------------------------------------------------------------------
# Child side: one fix, or one labelled run.
# --------------------------------------------------------------------------------------------------------


def fix_file(path: str, variant: str) -> None:
    """``dynalint fix --unsafe-fixes`` on ``path`` in place; for ``rewrites``, without the configuration the
    fixers would add (the registry loses :data:`CONFIGURATION_FIXERS`; ``full-range-loop`` patches nothing)."""
    from dynalint.adapters.cli import main as cli_main

    if variant == "rewrites":
        from dynalint.fixers.support import base

        base.all_fixers()
        base._REGISTRY[:] = [f for f in base._REGISTRY if f.name not in CONFIGURATION_FIXERS]
        from dynalint.fixers import full_range_loop

        full_range_loop.patch_compile_calls = lambda *_a, **_k: set()  # type: ignore[assignment]
    try:
        cli_main(["fix", "--unsafe-fixes", "--jobs", "1", "--quiet", "--exit-zero", path])
    except SystemExit:
        pass


def _snapshot(value: Any) -> Any:
    """The tensors and numbers of a compiled call's result, detached copies (None for anything else)."""
    import torch
    from torch.utils._pytree import tree_flatten

    leaves, _ = tree_flatten(value)
    out = []
    for leaf in leaves:
        if isinstance(leaf, torch.Tensor):
            out.append(leaf.detach().clone())
        elif isinstance(leaf, (int, float, bool)):
            out.append(leaf)
        else:
            out.append(None)
    return out


def timer_path(outputs: str | Path) -> Path:
    """Where a timed run writes its step times: next to its outputs."""
    return Path(outputs).with_suffix(".timing.json")


class StepTimer:
    """Steady-state time of a script's steps, by replaying the calls the script made.

    A step is a callable the original script compiles, by name (``_callable_name``).  While the script
    runs, each call of a step is kept with its arguments and grad mode: a call of what ``torch.compile``
    returned, or, for a name the script does not compile (a fixed script whose ``train_step`` now runs
    its compiled part and then an eager tail), a call of the script's own function of that qualified
    name, seen by a trace function on the script's frames (its arguments read from the frame).  The
    script's run is the warm-up (compiles, recompiles); once it ends the kept calls are replayed in order,
    one pass more as warm-up (the state the run left can be new to the guards), then ``passes`` timed
    passes.  A step's time is the sum over its calls of the median over the timed passes: CPU time of
    the calling thread (``time.thread_time``, one thread: robust to a loaded machine) and wall time.
    Graphs Dynamo compiled during the timed passes are counted: a step that still compiles is not in a
    steady state."""

    def __init__(self, script: str, names: set[str] | None, passes: int = 20) -> None:
        self.script = str(Path(script).resolve())
        self.names = names  # None: every compiled callable
        self.passes = passes
        self.compiled_names: set[str] = set()
        self.stream: list[tuple[str, Any, tuple, dict, bool]] = []
        self.replaying = False
        self.depth = 0  # steps running: a module step called inside another step is not a step call
        self._functions: dict[Any, Any] = {}

    def called(self, name: str, fn: Any, args: tuple, kwargs: dict) -> None:
        """A call of a compiled callable (kept when it is a step and the script is running)."""
        import torch

        if not self.replaying and not self.depth and (self.names is None or name in self.names):
            self.stream.append((name, fn, tuple(args), dict(kwargs), torch.is_grad_enabled()))

    def start(self) -> None:
        if self.names is not None:
            sys.settrace(self._trace)

    def stop(self) -> None:
        sys.settrace(None)

    def _trace(self, frame: Any, event: str, _arg: Any) -> None:
        """A call of the script's function named as a step the script does not compile: kept."""
        code = frame.f_code
        if (event == "call" and code.co_filename == self.script and code.co_qualname in self.names
                and code.co_qualname not in self.compiled_names):
            fn = self._function(code)
            if fn is not None:
                import torch

                args, kwargs = _frame_arguments(frame)
                self.stream.append((code.co_qualname, fn, args, kwargs, torch.is_grad_enabled()))
        return None

    def _function(self, code: Any) -> Any:
        """The function object running ``code`` (None when there is not exactly one)."""
        if code not in self._functions:
            import gc
            import types

            fns = [r for r in gc.get_referrers(code) if isinstance(r, types.FunctionType)]
            self._functions[code] = fns[0] if len(fns) == 1 else None
        return self._functions[code]

    def replay(self) -> dict:
        """Per step: calls, CPU and wall seconds (sums of per-call medians), graphs compiled while timed."""
        import statistics
        import time

        import torch
        from torch._dynamo.utils import counters

        self.replaying = True
        times: list[list[tuple[float, float]]] = [[] for _ in self.stream]
        error = ""
        graphs = 0
        try:
            for n in range(self.passes + 1):
                before = counters["stats"].get("unique_graphs", 0)
                for i, (_name, fn, args, kwargs, grad) in enumerate(self.stream):
                    with torch.set_grad_enabled(grad):
                        cpu, wall = time.thread_time(), time.perf_counter()
                        fn(*args, **kwargs)
                        cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
                    if n:
                        times[i].append((cpu, wall))
                if n:
                    graphs += counters["stats"].get("unique_graphs", 0) - before
        except Exception as e:  # the run's times are not comparable then
            error = f"{type(e).__name__}: {str(e)[:300]}"
        steps: dict[str, dict] = {}
        for (name, *_), t in zip(self.stream, times):
            step = steps.setdefault(name, {"calls": 0, "cpu_s": 0.0, "wall_s": 0.0})
            step["calls"] += 1
            if t:
                step["cpu_s"] += statistics.median(c for c, _ in t)
                step["wall_s"] += statistics.median(w for _, w in t)
        return {"steps": steps, "passes": self.passes, "graphs_while_timed": graphs, "error": error}


def _frame_arguments(frame: Any) -> tuple[tuple, dict]:
    """The arguments a frame was called with, read from its locals at its ``call`` event."""
    import inspect

    code = frame.f_code
    names = code.co_varnames
    local = frame.f_locals
    args = [local[n] for n in names[:code.co_argcount]]
    kwargs = {n: local[n] for n in names[code.co_argcount:code.co_argcount + code.co_kwonlyargcount]}
    at = code.co_argcount + code.co_kwonlyargcount
    if code.co_flags & inspect.CO_VARARGS:
        args.extend(local[names[at]])
        at += 1
    if code.co_flags & inspect.CO_VARKEYWORDS:
        kwargs.update(local[names[at]])
    return tuple(args), kwargs


def label_one(script: str, record: str, outputs: str, flags: bool, uncompiled: bool = False,
              timer: StepTimer | None = None) -> None:
    """Label ``script`` with userfiles' ``run_one`` (its folder taken for the labelled one), keeping the
    outputs of the compiled callables, with the capture flags on when ``flags``; with ``uncompiled``,
    ``torch.compile`` returns what it is given (the eager reference, same calls recorded).  With a
    ``timer``, ``torch.compile`` keeps its default backend (Inductor) and the timer's steps are timed
    once the script has run (written next to ``outputs``, see :class:`StepTimer`)."""
    import torch

    lab = load_labeller()
    if hasattr(lab, "use_folder"):
        lab.use_folder(Path(script).resolve().parent)
    else:
        lab.HERE = Path(script).resolve().parent
    lab.SCRIPT_NAMES = {Path(script).name}
    calls: list[Any] = []
    eager = lab.force_eager_backend

    def recording_backend() -> None:
        compile_default = torch.compile
        eager()
        compile_eager = compile_default if timer else torch.compile

        def recording() -> bool:
            return timer is None or not timer.replaying

        def keep(compiled: Any, name: str) -> Any:
            if timer:
                timer.compiled_names.add(name)
            if isinstance(compiled, torch.nn.Module):
                if timer:
                    compiled.register_forward_pre_hook(
                        lambda m, a, k: timer.called(name, m, a, k), with_kwargs=True)
                compiled.register_forward_hook(
                    lambda _m, _i, o: calls.append((name, _snapshot(o))) if recording() else None)
                return compiled

            def call(*args: Any, **kwargs: Any) -> Any:
                if timer:
                    timer.called(name, compiled, args, kwargs)
                    timer.depth += 1
                try:
                    result = compiled(*args, **kwargs)
                finally:
                    if timer:
                        timer.depth -= 1
                if recording():
                    calls.append((name, _snapshot(result)))
                return result

            for attr in ("__name__", "__qualname__", "__doc__", "__wrapped__"):
                if hasattr(compiled, attr):
                    try:
                        setattr(call, attr, getattr(compiled, attr))
                    except (AttributeError, TypeError):
                        pass
            return call

        def compile_recording(model: Any = None, **kwargs: Any) -> Any:
            compiled = (lambda m: m) if uncompiled else (lambda m: compile_eager(m, **kwargs))
            if model is None:
                return lambda m: keep(compiled(m), _callable_name(m))
            return keep(compiled(model), _callable_name(model))

        torch.compile = compile_recording  # type: ignore[assignment]
        if flags:
            for flag in FLAGS:
                setattr(torch._dynamo.config, flag, True)
        if timer:
            timer.start()

    optimizers: list[Any] = []
    init = torch.optim.Optimizer.__init__

    def remembered(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        optimizers.append(self)

    torch.optim.Optimizer.__init__ = remembered  # type: ignore[method-assign]
    lab.force_eager_backend = recording_backend
    try:
        lab.run_one(script, record)
    finally:
        if timer:
            timer.stop()
        state = [_snapshot([[p for g in opt.param_groups for p in g["params"]], list(opt.state.values())])
                 for opt in optimizers]
        torch.save({"calls": calls, "state": state}, outputs)
    if timer:
        Path(timer_path(outputs)).write_text(json.dumps(timer.replay(), indent=1))


def _callable_name(compiled: Any) -> str:
    """What a compiled callable is called in the script: a function's or method's qualified name, a
    module's class name."""
    if isinstance(compiled, type) or not hasattr(compiled, "__qualname__"):
        return type(compiled).__name__
    return compiled.__qualname__


# --------------------------------------------------------------------------------------------------------
# Parent side
# --------------------------------------------------------------------------------------------------------


def _digest(path: Path, flags: bool, eager: bool = False, timing: list[str] | None = None) -> str:
    return hashlib.sha256(b"calls+state" + path.read_bytes() + (b"flags" if flags else b"")
                          + (b"eager" if eager else b"")
                          + (b"timing:" + ",".join(timing).encode() if timing is not None else b"")).hexdigest()[:16]


def labelled(script: Path, flags: bool, work: Path, timeout: float, eager: bool = False,
             timing: list[str] | None = None) -> tuple[dict, Path]:
    """The label record and the outputs file of ``script`` (run again only when its text changed).  With
    ``timing`` (step names; empty: every compiled callable), the run is compiled by Inductor (eagerly
    with ``eager``) and its steps are timed (:class:`StepTimer`, the times in :func:`timer_path`)."""
    key = _digest(script, flags, eager, timing)
    record, outputs = work / "runs" / f"{key}.json", work / "runs" / f"{key}.pt"
    if not record.exists():
        record.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
        env.pop("TORCH_LOGS", None)
        cmd = [sys.executable, str(Path(__file__).resolve()), "--label", str(script), "--record", str(record),
               "--outputs", str(outputs)] + (["--flags"] if flags else []) + (["--eager"] if eager else [])
        if timing is not None:
            cmd += ["--timing", ",".join(timing)]
        try:
            subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout, env=env,
                           cwd=str(script.parent))
        except subprocess.TimeoutExpired:
            pass
        if not record.exists():
            record.write_text(json.dumps({"status": "timeout_or_crash"}))
    return json.loads(record.read_text()), outputs


def break_lines(record: dict) -> set[int]:
    return {b["line"] for b in record.get("breaks", []) if b.get("in_library")}


def original_lines(original: str, variant: str) -> dict[int, int]:
    """Line of ``variant`` -> line of ``original`` it comes from (a line a fix inserted, such as a
    decorator, maps to the original line after it), so that break lines of a fixed script compare."""
    import difflib

    a, b = original.splitlines(), variant.splitlines()
    out: dict[int, int] = {}
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        for j in range(j1, j2):
            out[j + 1] = min(i1 + (j - j1), max(i2 - 1, i1)) + 1 if tag != "insert" else i1 + 1
    return out


def compare(a: Path, b: Path) -> tuple[bool | None, bool | None]:
    """(close, bitwise) for two runs' recorded outputs; None when one of them recorded none.  The calls
    of the compiled callables both runs have (by name) are compared, and the parameters and state of
    their optimizers at the end: a fix that compiles part of a function instead of all of it
    (``eager-tail``'s split form) changes what is compiled, not what the training step computes."""
    import torch

    if not (a.exists() and b.exists()):
        return None, None
    xs, ys = torch.load(a, weights_only=False), torch.load(b, weights_only=False)
    shared = {name for name, _ in xs["calls"]} & {name for name, _ in ys["calls"]}
    if not shared and not (xs["state"] or ys["state"]):
        return None, None
    return _compare_values([out for name, out in xs["calls"] if name in shared] + xs["state"],
                           [out for name, out in ys["calls"] if name in shared] + ys["state"])


def _compare_values(xs: list, ys: list) -> tuple[bool, bool]:
    """(close, bitwise) for two lists of snapshots."""
    import torch

    if len(xs) != len(ys):
        return False, False
    close = bitwise = True
    for x, y in zip(xs, ys):
        if len(x) != len(y):
            return False, False
        for p, q in zip(x, y):
            if isinstance(p, torch.Tensor) and isinstance(q, torch.Tensor):
                try:
                    torch.testing.assert_close(q, p, equal_nan=True)
                except AssertionError:
                    close = False
                bitwise = bitwise and p.shape == q.shape and p.dtype == q.dtype and bool(
                    torch.equal(p, q) or (p.is_floating_point() and torch.equal(p.nan_to_num(), q.nan_to_num())
                                          and bool((p.isnan() == q.isnan()).all())))
            elif p != q and not (isinstance(p, float) and isinstance(q, float) and p != p and q != q):
                close = close and isinstance(p, float) and isinstance(q, float) and abs(p - q) <= 1e-5 + 1.3e-6 * abs(p)
                bitwise = False
    return close, bitwise


def measure(scripts: list[Path], work: Path, timeout: float) -> list[dict]:
    labels = {r["spec"]: r for r in json.loads((USERFILES / "labels.json").read_text())}
    rows = []
    for script in scripts:
        row: dict[str, Any] = {"script": script.name, "before": sorted(break_lines(labels.get(script.name, {})))}
        files = {}
        for variant in VARIANTS:
            folder = work / variant
            folder.mkdir(parents=True, exist_ok=True)
            target = folder / script.name
            shutil.copyfile(script, target)
            if variant in ("rewrites", "both"):
                subprocess.run([sys.executable, str(Path(__file__).resolve()), "--fix", str(target), "--variant",
                                variant], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout)
            files[variant] = target
        runs = {v: labelled(files[v], v == "flags", work, timeout) for v in VARIANTS}
        _, eager_out = labelled(files["original"], False, work, timeout, eager=True)
        base_record, base_out = runs["original"]
        row["original_vs_eager"] = compare(eager_out, base_out)
        row["original_rerun"] = sorted(break_lines(base_record))
        row["original_status"] = base_record.get("status")
        original_text = script.read_text()
        for variant in VARIANTS[1:]:
            record, out = runs[variant]
            to_original = original_lines(original_text, files[variant].read_text())
            lines = {to_original.get(line, line) for line in break_lines(record)}
            close, bitwise = compare(base_out, out)
            eager_close, eager_bitwise = compare(eager_out, out)
            row[variant] = {
                "changed": files[variant].read_bytes() != script.read_bytes() or variant == "flags",
                "breaks": sorted(lines),  # as lines of the original script
                "status": record.get("status"), "error": (record.get("error") or "")[:160],
                "break_free": not lines and record.get("status") == "ok",
                "gained": sorted(lines - set(row["original_rerun"])),
                "close": close, "bitwise": bitwise, "eager_close": eager_close, "eager_bitwise": eager_bitwise,
            }
        rows.append(row)
        print(table_row(row), flush=True)
    (work / "results.json").write_text(json.dumps(rows, indent=1))
    return rows


def _equality(close: bool | None, bitwise: bool | None) -> str:
    return "na" if close is None else ("bit" if bitwise else ("close" if close else "DIFF"))


def table_row(row: dict) -> str:
    cells = [f"{row['script']:20s} {len(row['before']):3d} {_equality(*row.get('original_vs_eager', (None, None))):5s}"]
    for variant in VARIANTS[1:]:
        v = row[variant]
        eq = _equality(v["close"], v["bitwise"])
        eager = _equality(v.get("eager_close"), v.get("eager_bitwise"))
        raised = "RAISED" if v["status"] != "ok" else ""
        cells.append(f"{len(v['breaks']):3d} {eq:5s} {eager:5s} +{len(v['gained'])} {raised:6s}")
    return " | ".join(cells)


def report(rows: list[dict]) -> None:
    print("eq: outputs against the compiled original; eager: against the original run eagerly (the first "
          "column: the compiled original against it)")
    print(f"{'script':20s} {'bef':>3s} {'eager':5s} | " + " | ".join(f"{v:<24s}" for v in VARIANTS[1:]))
    print(f"{'':20s} {'':3s} {'':5s} | " + " | ".join(f"{'brk eq    eager gain':<24s}" for _ in VARIANTS[1:]))
    for row in rows:
        print(table_row(row))
    print(f"total break lines before {sum(len(r['before']) for r in rows)} "
          f"(original rerun {sum(len(r['original_rerun']) for r in rows)}); compiled original vs eager: close "
          f"{sum(bool(r.get('original_vs_eager', (0, 0))[0]) for r in rows)} / "
          f"bitwise {sum(bool(r.get('original_vs_eager', (0, 0))[1]) for r in rows)}")
    for variant in VARIANTS[1:]:
        vs = [r[variant] for r in rows]
        print(f"  {variant:9s} break lines {sum(len(v['breaks']) for v in vs):3d}, "
              f"break-free runs {sum(v['break_free'] for v in vs)}, "
              f"outputs close {sum(bool(v['close']) for v in vs)} / bitwise {sum(bool(v['bitwise']) for v in vs)} "
              f"(not comparable {sum(v['close'] is None for v in vs)}), "
              f"vs eager close {sum(bool(v.get('eager_close')) for v in vs)} / "
              f"bitwise {sum(bool(v.get('eager_bitwise')) for v in vs)}, "
              f"gained a break {sum(bool(v['gained']) for v in vs)}, raised {sum(v['status'] != 'ok' for v in vs)}, "
              f"scripts changed {sum(v['changed'] for v in vs)}")


def inductor_timing(rows: list[dict], work: Path, timeout: float) -> list[dict]:
    """For each run a column makes break-free: the steady-state times of the original's compiled steps
    (compiled by Inductor, and run eagerly) and of the fixed script's steps of the same names, compiled by
    Inductor (:class:`StepTimer`); written to ``timing.json``."""
    out = []
    for row in rows:
        columns = [v for v in VARIANTS[1:] if row[v]["break_free"]]
        if not columns:
            continue
        original = work / "original" / row["script"]
        times = {}
        for run, (path, flags, eager, names) in {"original": (original, False, False, []),
                                                 "eager": (original, False, True, [])}.items():
            record, outputs = labelled(path, flags, work, timeout, eager=eager, timing=names)
            times[run] = _timing(record, outputs)
        names = sorted(times["original"].get("steps", {}))
        for column in columns:
            record, outputs = labelled(work / column / row["script"], column == "flags", work, timeout,
                                       timing=names)
            fixed = _timing(record, outputs)
            fixed["break_lines"] = sorted(break_lines(record))
            out.append({"script": row["script"], "column": column, "steps": names, **times, "fixed": fixed})
    (work / "timing.json").write_text(json.dumps(out, indent=1))
    return out


def _timing(record: dict, outputs: Path) -> dict:
    """A timed run's step times, with its status (and an error when it raised or has no times)."""
    path = timer_path(outputs)
    timing = json.loads(path.read_text()) if path.exists() else {"steps": {}, "error": "no times written"}
    if record.get("status") != "ok":
        timing["error"] = timing.get("error") or f"{record.get('status')}: {(record.get('error') or '')[:160]}"
    return timing


def timing_report(out: list[dict]) -> None:
    """Per break-free run: each step's calls and times (CPU seconds of the calling thread, medians summed),
    and the ratios original/fixed under Inductor and eager/fixed."""
    print("inductor steady state, CPU time of the calling thread (ms per pass over the calls the script made; "
          "wall in brackets); x = original compiled / fixed compiled")
    print(f"{'script':20s} {'column':8s} {'step':22s} {'calls':>5s} {'eager':>15s} {'original':>15s} "
          f"{'fixed':>15s} {'x':>6s} {'eager/fixed':>11s}")

    def cell(run: dict, step: str, key: str = "cpu_s") -> float | None:
        s = run.get("steps", {}).get(step)
        return s[key] if s and s["calls"] and not run.get("error") else None

    def ms(run: dict, step: str) -> str:
        cpu, wall = cell(run, step), cell(run, step, "wall_s")
        return "n/a" if cpu is None else f"{cpu * 1e3:6.1f} ({wall * 1e3:6.1f})"

    def ratio(a: float | None, b: float | None) -> str:
        return "n/a" if not a or not b else f"{a / b:.2f}"

    for r in out:
        for step in r["steps"] + ["(all)"]:
            runs = {k: r[k] for k in ("eager", "original", "fixed")}
            if step == "(all)":
                if len(r["steps"]) < 2:
                    continue
                runs = {k: {"error": v.get("error"), "steps": {"(all)": {
                    "calls": sum(v.get("steps", {}).get(s, {}).get("calls", 0) for s in r["steps"]),
                    "cpu_s": sum(v.get("steps", {}).get(s, {}).get("cpu_s", 0.0) for s in r["steps"]),
                    "wall_s": sum(v.get("steps", {}).get(s, {}).get("wall_s", 0.0) for s in r["steps"])}}}
                    for k, v in runs.items()}
                if any(not all(v.get("steps", {}).get(s, {}).get("calls") for s in r["steps"])
                       for v in (r["original"], r["fixed"])):
                    runs = {k: {"error": "a step has no calls"} for k in runs}
            calls = runs["original"].get("steps", {}).get(step, {}).get("calls", 0)
            print(f"{r['script']:20s} {r['column']:8s} {step[:22]:22s} {calls:5d} {ms(runs['eager'], step):>15s} "
                  f"{ms(runs['original'], step):>15s} {ms(runs['fixed'], step):>15s} "
                  f"{ratio(cell(runs['original'], step), cell(runs['fixed'], step)):>6s} "
                  f"{ratio(cell(runs['eager'], step), cell(runs['fixed'], step)):>11s}")
        notes = [f"{k}: {r[k]['error'].splitlines()[0][:150]}" for k in ("eager", "original", "fixed")
                 if r[k].get("error")]
        notes += [f"{k}: {r[k]['graphs_while_timed']} graphs compiled while timed"
                  for k in ("original", "fixed") if r[k].get("graphs_while_timed")]
        if r["fixed"].get("break_lines"):
            notes.append(f"fixed breaks under inductor at {r['fixed']['break_lines']}")
        for note in notes:
            print(f"{'':30s} {note}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="*", help="userfiles scripts (default: all ten)")
    ap.add_argument("--work", default="/tmp/fix-population")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--report", action="store_true")
    ap.add_argument("--fix")
    ap.add_argument("--variant")
    ap.add_argument("--label")
    ap.add_argument("--record")
    ap.add_argument("--outputs")
    ap.add_argument("--flags", action="store_true")
    ap.add_argument("--eager", action="store_true")
    ap.add_argument("--timing", help=argparse.SUPPRESS)  # child: the steps to time, comma-separated
    ap.add_argument("--inductor-timing", action="store_true",
                    help="also time the steps of the runs a column makes break-free, compiled by Inductor")
    a = ap.parse_args(argv)
    if a.fix:
        fix_file(a.fix, a.variant)
        return
    if a.label:
        timer = None
        if a.timing is not None:
            timer = StepTimer(a.label, set(a.timing.split(",")) if a.timing else None)
        label_one(a.label, a.record, a.outputs, a.flags, a.eager, timer)
        return
    work = Path(a.work)
    if a.report:
        rows = json.loads((work / "results.json").read_text())
        report(rows)
        if a.inductor_timing and (work / "timing.json").exists():
            timing_report(json.loads((work / "timing.json").read_text()))
        return
    lab = load_labeller()
    scripts = [Path(f).resolve() for f in a.files] if a.files else lab.scripts()
    rows = measure(scripts, work, a.timeout)
    report(rows)
    if a.inductor_timing:
        timing_report(inductor_timing(rows, work, a.timeout))


if __name__ == "__main__":
    main()
