#!/usr/bin/env python
"""How many labelled graph-break sites ``dynalint fix --unsafe-fixes`` removes, with equal outputs.

Copies an eval folder (``cases/``, ``label.py``, ``labels.json``) to a temporary
directory, fixes the copy's cases, relabels them with the folder's own
``label.py`` (real Dynamo), and compares each target's eager outputs before and
after the fix on the same seeded inputs (the labeller's protocol)::

    python benchmarks/fix_eval_public.py /work/shared/eval-public [--safe-only] [-v]

Prints the break sites before and after, and the targets whose outputs changed.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile


def _load_labeller(folder: str):
    spec = importlib.util.spec_from_file_location("_dynalint_labeller", os.path.join(folder, "label.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder")
    ap.add_argument("--safe-only", action="store_true")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    work = tempfile.mkdtemp(prefix="dynalint-fix-eval-")
    copy = os.path.join(work, "eval")
    shutil.copytree(args.folder, copy)
    os.chmod(copy, 0o755)
    for root, dirs, files in os.walk(copy):
        for d in dirs:
            os.chmod(os.path.join(root, d), 0o755)
        for f in files:
            os.chmod(os.path.join(root, f), 0o644)
    before = {(r["file"], r["target"]): r for r in json.load(open(os.path.join(copy, "labels.json")))}
    original = os.path.join(work, "original")
    shutil.copytree(os.path.join(copy, "cases"), original)
    cmd = [sys.executable, "-m", "dynalint", "fix"] + ([] if args.safe_only else ["--unsafe-fixes"])
    fixed = subprocess.run(cmd + [os.path.join(copy, "cases")], capture_output=True, text=True)
    if args.verbose:
        print(fixed.stdout[-4000:], fixed.stderr[-2000:])
    subprocess.run([sys.executable, "label.py"], cwd=copy, capture_output=True, text=True, check=True)
    after = {(r["file"], r["target"]): r for r in json.load(open(os.path.join(copy, "labels.json")))}
    labeller = _load_labeller(copy)
    changed = []
    for key in sorted(before):
        file, target = key
        outs_before, _ = labeller.run_eager(os.path.join(original, file), target)
        outs_after, _ = labeller.run_eager(os.path.join(copy, "cases", file), target)
        if len(outs_before) != len(outs_after) or not all(
                labeller.outputs_equal(a, b) for a, b in zip(outs_before, outs_after)):
            changed.append(key)
    sites_before = sum(len(r["break_lines"]) for r in before.values())
    sites_after = sum(len(after[k]["break_lines"]) for k in before if k in after)
    removed_equal = sum(max(0, len(before[k]["break_lines"]) - len(after[k]["break_lines"]))
                        for k in before if k in after and k not in changed)
    errors = [k for k in after if after[k]["errors"]]
    for k in changed:
        print(f"outputs changed: {k[0]}::{k[1]}")
    for k in errors:
        print(f"errors after fix: {k[0]}::{k[1]}: {after[k]['errors'][:1]}")
    if args.verbose:
        for k in sorted(before):
            if k in after and before[k]["break_lines"] != after[k]["break_lines"]:
                print(f"{k[0]}::{k[1]}: {before[k]['break_lines']} -> {after[k]['break_lines']}")
    print(f"break_sites_before={sites_before} break_sites_after={sites_after} "
          f"removed_with_equal_outputs={removed_equal} targets_changed={len(changed)} (fixed copy in {copy})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
