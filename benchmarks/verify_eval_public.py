#!/usr/bin/env python
"""``dynalint verify`` over a folder of case modules that follow the ``EXAMPLES`` protocol.

Each case module defines its targets and ``EXAMPLES = {"Target": make_inputs}``
(and optionally ``before_call(i)``).  This script only adapts that protocol to
verify's options: for every target it passes ``--inputs CASE::make_inputs``
and ``--before-call CASE::before_call``, exactly as on the command line::

    dynalint verify cases/x.py::Target --inputs cases/x.py::make_inputs --before-call cases/x.py::before_call

It prints one line per target and the totals: graph-break sites and
recompiles before and after ``dynalint fix``, how many targets kept equal
outputs, and (when a ``labels.json`` from real Dynamo sits next to the cases)
how the measurements agree with it.

    python benchmarks/verify_eval_public.py ../shared/eval-public/cases [--safe-only] [--jobs N] [--json OUT]
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from dynalint.config.settings import default_settings
from dynalint.verify.api import Options, TargetReport, verify_targets
from dynalint.verify.targets import Ref


def examples(path: str) -> tuple[dict[str, str], bool]:
    """({target: factory name}, whether the module defines before_call), read without importing it."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    found: dict[str, str] = {}
    hook = False
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "before_call":
            hook = True
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "EXAMPLES" for t in node.targets) \
                and isinstance(node.value, ast.Dict):
            for k, v in zip(node.value.keys, node.value.values):
                if isinstance(k, ast.Constant) and isinstance(v, ast.Name):
                    found[k.value] = v.id
    return found, hook


def verify_one(path: str, target: str, factory: str, hook: bool, unsafe: bool, timeout: float) -> TargetReport:
    options = Options(inputs=f"{path}::{factory}", before_call=f"{path}::before_call" if hook else None,
                      unsafe=unsafe, timeout=timeout, jobs=1)
    return verify_targets([Ref(path, target)], default_settings(), options)[0]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cases", help="folder of case modules")
    ap.add_argument("--safe-only", action="store_true", help="measure with safe fixes only (default: unsafe too)")
    ap.add_argument("--jobs", type=int, default=max(1, min(4, os.cpu_count() or 1)))
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--json", metavar="OUT", help="write every report as JSON")
    args = ap.parse_args(argv)

    jobs = []
    for name in sorted(os.listdir(args.cases)):
        if name.endswith(".py") and not name.startswith("_"):
            path = os.path.join(args.cases, name)
            targets, hook = examples(path)
            jobs += [(path, t, f, hook) for t, f in targets.items()]
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        reports = list(pool.map(lambda j: verify_one(*j, not args.safe_only, args.timeout), jobs))
    elapsed = time.perf_counter() - started

    totals = dict(b0=0, b1=0, r0=0, r1=0, equal=0, compiled_equal=0, fixed=0, confirmed=0, errors=0)
    print(f"{'target':58s} {'brk':>7s} {'recomp':>7s} {'equal':>5s}  verdict")
    for r in reports:
        d = r.devices[0]
        o, f = d.original, d.fixed or d.original
        totals["b0"] += len(o.breaks)
        totals["b1"] += len(f.breaks)
        totals["r0"] += len(o.recompiles)
        totals["r1"] += len(f.recompiles)
        totals["fixed"] += d.fixed is not None
        totals["confirmed"] += d.verdict.status == "confirmed"
        totals["errors"] += o.status != "ok"
        same = o.status == "ok" and (d.fixed is None or (f.status == "ok" and f.equal_to_original is not False))
        totals["equal"] += same
        totals["compiled_equal"] += o.outputs_equal is not False and f.outputs_equal is not False
        name = f"{os.path.basename(r.path)}::{r.name}"
        print(f"{name[:58]:58s} {len(o.breaks):>3d}>{len(f.breaks):<3d} {len(o.recompiles):>3d}>{len(f.recompiles):<3d} "
              f"{'yes' if same else 'NO':>5s}  {d.verdict.status}{'' if o.ok else ': ' + o.message}")
    n = len(reports)
    print(f"\n{n} targets in {elapsed:.0f} s: graph-break sites {totals['b0']} -> {totals['b1']}, "
          f"recompiles {totals['r0']} -> {totals['r1']} (original -> fixed); "
          f"{totals['fixed']} targets had fixes, {totals['confirmed']} confirmed; "
          f"outputs equal (fixed vs original) for {totals['equal']}/{n}; "
          f"compiled equal to eager for {totals['compiled_equal']}/{n}; {totals['errors']} measurement errors.")
    labels = os.path.join(os.path.dirname(os.path.abspath(args.cases)), "labels.json")
    if os.path.exists(labels):
        _agreement(reports, labels)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump([r.to_json() for r in reports], fh, indent=1, default=str)
    return 0


def _agreement(reports: list[TargetReport], labels_path: str) -> None:
    """How the original's measurements agree with the labels (same breaks, same recompiling targets)."""
    labels = {(rec["file"], rec["target"]): rec for rec in json.load(open(labels_path, encoding="utf-8"))}
    same_lines = same_rec = n = 0
    diffs = []
    for r in reports:
        rec = labels.get((os.path.basename(r.path), r.name))
        if rec is None:
            continue
        n += 1
        o = r.devices[0].original
        here = os.path.realpath(r.path)
        lines = sorted({b.line for b in o.breaks if os.path.realpath(b.file) == here})
        same_lines += lines == rec["break_lines"]
        same_rec += bool(o.recompiles) == (rec["recompiles"] > 0)
        if lines != rec["break_lines"] or bool(o.recompiles) != (rec["recompiles"] > 0):
            diffs.append(f"  {rec['file']}::{rec['target']}: break lines {lines} vs labels {rec['break_lines']}, "
                         f"recompiles {len(o.recompiles)} vs {rec['recompiles']}")
    print(f"agreement with labels.json: same break lines for {same_lines}/{n} targets, "
          f"same recompile yes/no for {same_rec}/{n}")
    print("\n".join(diffs))


if __name__ == "__main__":
    sys.exit(main())
