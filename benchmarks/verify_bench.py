#!/usr/bin/env python
"""What a fix buys in time: ``dynalint verify --backend inductor --bench`` over a set of targets.

For every target, original and fixed code are measured in the same run, one after the other:
cold start (the first call, compilation included, with an empty compiler cache) and steady state
(median of N warm calls), and their ratios (original / fixed; above 1 the fix made it faster).

``--overhead`` instead measures what verification itself costs: for each target, the wall and CPU
time of ``dynalint verify`` (a fresh process, as a user runs it) against a bare ``torch.compile`` and
run of the same input stream (hooks included) in a fresh process, both with the torch import
(``--repeat`` runs of each, interleaved, their medians), and where verify's time goes (the wait for
its first worker, the torch import included; each phase, its process start included; compilation;
the CPU time of each phase's process)::

    OMP_NUM_THREADS=1 python benchmarks/verify_bench.py --overhead [FILE::NAME --inputs F::G --before-call F::H]

Targets: the eval-public cases (``EXAMPLES`` protocol, as in ``verify_eval_public.py``) whose
fixes verify confirms with the eager backend (a quick first pass), and a few tiny random-weight
transformers models (``benchmarks/verify_models.py``), fixed with the unsafe fixes too, in every
file their forward runs.  Run it niced on a shared machine::

    OMP_NUM_THREADS=1 nice python benchmarks/verify_bench.py ../shared/eval-public/cases --limit 6 --calls 200
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from verify_eval_public import examples  # noqa: E402

from dynalint.config.settings import default_settings  # noqa: E402
from dynalint.verify.api import Options, TargetReport, verify_targets  # noqa: E402
from dynalint.verify.fixed import fixed_source  # noqa: E402
from dynalint.verify.report_text import seconds  # noqa: E402
from dynalint.verify.targets import Ref  # noqa: E402

MODELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "verify_models.py")
MODEL_TARGETS = ("tiny_bert", "tiny_gpt2", "tiny_llama")


def _options(inputs: str, hook: str | None, **kw) -> Options:
    return Options(inputs=inputs, before_call=hook, unsafe=True, what_if=False, jobs=1, **kw)


def eval_public_jobs(cases: str, limit: int, timeout: float) -> list[tuple[Ref, str, str | None]]:
    """Targets whose fixed variant verify confirms (eager backend), one per case file, at most ``limit``."""
    settings = default_settings()
    chosen = []
    for name in sorted(os.listdir(cases)):
        if not name.endswith(".py") or name.startswith("_"):
            continue
        path = os.path.join(cases, name)
        source = open(path, encoding="utf-8").read()
        if not fixed_source(source, path, settings, True).changed:
            continue
        targets, has_hook = examples(path)
        for target, factory in targets.items():
            if len(chosen) >= limit:
                return chosen
            hook = f"{path}::before_call" if has_hook else None
            r = verify_targets([Ref(path, target)], settings,
                               _options(f"{path}::{factory}", hook, timeout=timeout))[0]
            if r.devices[0].verdict.status == "confirmed":
                chosen.append((Ref(path, target), f"{path}::{factory}", hook))
                print(f"  chosen {name}::{target}", file=sys.stderr, flush=True)
                break
    return chosen


def bench(jobs: list[tuple[Ref, str, str | None]], calls: int, timeout: float) -> list[TargetReport]:
    reports = []
    for ref, inputs, hook in jobs:
        started = time.perf_counter()
        r = verify_targets([ref], default_settings(), _options(inputs, hook, backend="inductor",
                                                                bench_calls=calls, timeout=timeout))[0]
        print(f"  measured {os.path.basename(ref.path)}::{ref.name} in {time.perf_counter() - started:.0f} s",
              file=sys.stderr, flush=True)
        reports.append(r)
    return reports


def table(reports: list[TargetReport]) -> str:
    head = (f"{'target':44s} {'breaks':>7s} {'recomp':>7s} {'cold orig':>10s} {'cold fixed':>10s} {'cold x':>7s} "
            f"{'steady orig':>11s} {'steady fixed':>12s} {'steady x':>8s} {'eager':>9s}")
    lines = [head, "-" * len(head)]
    for r in reports:
        d = r.devices[0]
        o, f = d.original, d.fixed
        name = f"{os.path.basename(r.path)}::{r.name}"[:44]
        if o.bench is None or f is None or f.bench is None:
            why = o.message or (f.message if f is not None else r.fix_note or "no fixed variant")
            lines.append(f"{name:44s} {len(o.breaks):>3d}>{len(f.breaks) if f else len(o.breaks):<3d} "
                         f"{len(o.recompiles):>3d}>{len(f.recompiles) if f else len(o.recompiles):<3d} "
                         f"not timed: {why}")
            continue
        s = d.speedup or {}
        lines.append(
            f"{name:44s} {len(o.breaks):>3d}>{len(f.breaks):<3d} {len(o.recompiles):>3d}>{len(f.recompiles):<3d} "
            f"{seconds(o.bench.cold_s):>10s} {seconds(f.bench.cold_s):>10s} {s.get('cold_start', 0):>6.2f}x "
            f"{seconds(o.bench.steady_s):>11s} {seconds(f.bench.steady_s):>12s} {s.get('steady_state', 0):>7.2f}x "
            f"{seconds(f.bench.eager_steady_s):>9s}")
    return "\n".join(lines)


CASES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "verify_bench_cases")
#: (target, --inputs, --before-call) timed by --overhead when none is given: user-style files, the
#: input stream's state kept in a module global of the inputs file.
OVERHEAD_TARGETS = [(f"{CASES}/sampler.py::Denoiser", f"{CASES}/sampler_inputs.py::{factory}",
                     f"{CASES}/sampler_inputs.py::before_call") for factory in ("make_inputs", "make_long_inputs")]

#: A bare compile-and-run of the same stream: what a user's own script does (import torch, build the
#: inputs, torch.compile with verify's backend and Dynamo settings, call, exit), with verify's reading
#: of the input sets and hooks (the few dynalint modules that takes import no torch and cost ~0.05 s).
_BARE = """
import sys
from dynalint.config.settings import Settings
from dynalint.verify.options import Options, make_spec
from dynalint.verify.targets import parse_ref
target, inputs, hook = sys.argv[1], sys.argv[2] or None, sys.argv[3] or None
ref = parse_ref(target)
spec = make_spec(ref, "original", ref.path, "cpu", Options(), Settings(), inputs and parse_ref(inputs),
                 hook and parse_ref(hook))
import torch
from dynalint.verify.stream import Stream
torch.set_num_threads(spec.threads)
stream = Stream(spec)
config = {k: v for k, v in spec.dynamo_config.items() if not isinstance(v, list)}  # as verify's phases set it
with torch.no_grad(), torch._dynamo.config.patch(**config):
    for i, call in enumerate(stream.calls):
        stream.before_call(i)
        _, fn = stream.instance(call, wrap=lambda obj: torch.compile(obj, backend=spec.backend))
        fn(*call.args, **call.kwargs)
"""


def _timed_process(cmd: list[str]) -> tuple[float, float, subprocess.CompletedProcess]:
    """(wall seconds, CPU seconds of the process and every process it waited for, the result)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


#: What --overhead times: the bare run, then verify as a user runs it, with and without the fixed
#: variant and the what-ifs.
VERIFY_RUNS = (("verify", ["--unsafe-fixes"]), ("verify --no-fix --no-what-if", ["--no-fix", "--no-what-if"]))


#: Prefix of the keys of :func:`_phase_seconds` that are CPU seconds (the others are wall seconds).
CPU = "cpu: "


def _phase_seconds(devices: dict) -> dict[str, float]:
    """Where verify's time went, from its JSON report: each variant's phases (wall, with their process
    start, and CPU of the phase's process) and compile time."""
    spent: dict[str, float] = {}
    for variant in ("original", "fixed"):
        m = devices.get(variant) or {}
        for phase, sec in (m.get("seconds") or {}).items():
            spent[f"{variant} {phase}"] = sec
        spent[f"{variant} compile"] = sum(c.get("compile_s") or 0 for c in m.get("calls", []))
        for phase, sec in (m.get("cpu_seconds") or {}).items():
            spent[f"{CPU}{variant} {phase}"] = sec
    return spent


def overhead(targets: list[tuple[str, str | None, str | None]], repeat: int) -> list[dict]:
    """Verify against a bare compile-and-run, per target: ``repeat`` runs of each, interleaved (so that
    a busy spell of a shared machine falls on all of them), their medians kept."""
    rows = []
    for target, inputs, hook in targets:
        hooks = (["--inputs", inputs] if inputs else []) + (["--before-call", hook] if hook else [])
        runs: dict[str, list[tuple[float, float]]] = {"bare": [], **{label: [] for label, _ in VERIFY_RUNS}}
        phases: dict[str, list[dict[str, float]]] = {label: [] for label, _ in VERIFY_RUNS}
        for _ in range(repeat):
            wall, cpu, done = _timed_process([sys.executable, "-c", _BARE, target, inputs or "", hook or ""])
            if done.returncode:
                raise SystemExit(f"the bare run of {target} failed:\n{done.stderr[-2000:]}")
            runs["bare"].append((wall, cpu))
            for label, extra in VERIFY_RUNS:
                wall, cpu, done = _timed_process([sys.executable, "-m", "dynalint", "verify", target, *hooks, *extra,
                                                  "--format", "json", "--quiet"])
                runs[label].append((wall, cpu))
                try:
                    devices = json.loads(done.stdout)["targets"][0]["devices"][0]
                except (ValueError, KeyError, IndexError):
                    raise SystemExit(f"verify {target} failed:\n{done.stderr[-2000:]}")
                phases[label].append(_phase_seconds(devices))
        median = {label: (_median([w for w, _ in r]), _median([c for _, c in r])) for label, r in runs.items()}
        seconds = {label: {k: _median([p.get(k, 0.0) for p in found])
                           for k in dict.fromkeys(k for p in found for k in p)}
                   for label, found in phases.items() if found}
        rows.append({"target": target, "inputs": inputs, "runs": runs, "median": median, "seconds": seconds})
    return rows


def overhead_table(rows: list[dict]) -> str:
    lines = []
    for row in rows:
        bare_wall, bare_cpu = row["median"]["bare"]
        name = os.path.basename(row["target"]) + (f" ({row['inputs'].rpartition('::')[2]})" if row["inputs"] else "")
        lines.append(f"{name}: bare torch.compile + run {bare_wall:.2f} s wall, "
                     f"{bare_cpu:.2f} s CPU (torch import included)")
        for label, _ in reversed(VERIFY_RUNS):
            wall, cpu = row["median"][label]
            lines.append(f"  {label:30s} {wall:6.2f} s wall ({wall / bare_wall:4.2f}x)  {cpu:6.2f} s CPU "
                         f"({cpu / bare_cpu:4.2f}x)")
            spent = row["seconds"].get(label, {})
            wall = {k: v for k, v in spent.items() if v and not k.startswith(CPU)}
            cpu = {k[len(CPU):]: v for k, v in spent.items() if v and k.startswith(CPU)}
            if wall:
                lines.append("    wall: " + ", ".join(f"{k} {v:.2f}" for k, v in wall.items()))
            if cpu:
                lines.append(f"    CPU of the phases: {sum(cpu.values()):.2f} = "
                             + ", ".join(f"{k} {v:.2f}" for k, v in cpu.items()))
        for label, r in row["runs"].items():
            lines.append(f"    runs of {label}: " + ", ".join(f"{w:.2f}/{c:.2f}" for w, c in r) + " (wall/CPU s)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cases", nargs="?", help="folder of eval-public case modules (omit to time the models only)")
    ap.add_argument("--limit", type=int, default=6, help="eval-public targets to time (default 6)")
    ap.add_argument("--calls", type=int, default=200, help="warm calls per steady-state median (default 200)")
    ap.add_argument("--no-models", action="store_true", help="skip the transformers models")
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--json", metavar="OUT", help="write every report as JSON")
    ap.add_argument("--overhead", nargs="?", const="", metavar="FILE::NAME",
                    help="time verify against a bare compile-and-run instead "
                         "(default: the sampler case, 12 and 50 steps)")
    ap.add_argument("--inputs", help="with --overhead FILE::NAME: its input factory")
    ap.add_argument("--before-call", help="with --overhead FILE::NAME: its before-call hook")
    ap.add_argument("--repeat", type=int, default=3,
                    help="with --overhead: runs of each, their medians kept (default 3)")
    args = ap.parse_args(argv)

    if args.overhead is not None:
        targets = [(args.overhead, args.inputs, args.before_call)] if args.overhead else OVERHEAD_TARGETS
        rows = overhead(targets, args.repeat)
        print(f"median of {args.repeat}; wall and CPU seconds (CPU: every process of the run); x = against bare")
        print(overhead_table(rows))
        if args.json:
            with open(args.json, "w", encoding="utf-8") as fh:
                json.dump(rows, fh, indent=1)
        return 0

    jobs = eval_public_jobs(args.cases, args.limit, args.timeout) if args.cases else []
    if not args.no_models:
        try:
            import transformers  # noqa: F401
            jobs += [(Ref(MODELS, t), f"{MODELS}::token_inputs", None) for t in MODEL_TARGETS]
        except ImportError:
            print("transformers is not installed: models skipped", file=sys.stderr)
    reports = bench(jobs, args.calls, args.timeout)
    threads = next((d.original.threads for r in reports for d in r.devices if d.original.threads), 0)
    print(f"inductor, cpu, {threads} thread{'s' * (threads != 1)}, one measurement at a time; cold = first call "
          f"incl. compilation (empty compiler cache); steady = median of {args.calls} warm calls; "
          f"x = original / fixed (above 1: the fix is faster); eager = fixed code without torch.compile")
    print(table(reports))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump([r.to_json() for r in reports], fh, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
