#!/usr/bin/env python
"""What a fix buys in time: ``dynalint verify --backend inductor --bench`` over a set of targets.

For every target, original and fixed code are measured in the same run, one after the other:
cold start (the first call, compilation included, with an empty compiler cache) and steady state
(median of N warm calls), and their ratios (original / fixed; above 1 the fix made it faster).

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
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from verify_eval_public import examples  # noqa: E402

from dynalint.settings import default_settings  # noqa: E402
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cases", nargs="?", help="folder of eval-public case modules (omit to time the models only)")
    ap.add_argument("--limit", type=int, default=6, help="eval-public targets to time (default 6)")
    ap.add_argument("--calls", type=int, default=200, help="warm calls per steady-state median (default 200)")
    ap.add_argument("--no-models", action="store_true", help="skip the transformers models")
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--json", metavar="OUT", help="write every report as JSON")
    args = ap.parse_args(argv)

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
