#!/usr/bin/env python
"""What ``dynalint fix --unsafe-fixes`` does to the breaking runs of the real-code labels.

The labelled libraries' sources are copied; the labelled files (``files.txt``) are fixed in the copy
with ``dynalint fix --unsafe-fixes --scope all`` (the libraries compile nothing themselves: their users
do); then every run of ``labels.json`` that broke is run again by ``label.py``, once from the original
sources and once from the fixed copy (same seeds, weights and inputs), and compared:

- break lines before -> after (inside the libraries, one ``file:line`` each), runs fully fixed, runs
  that gained a break line;
- the fixed code's outputs against the original's, eager and compiled, by the rule PyTorch uses for
  compiled code (``assert_close`` at the dtype's default tolerances, NaN/inf at the same places, same
  shapes and dtypes), with the bitwise-equal count beside.  The original runs twice: a run whose two
  original runs already differ (random work whose draws depend on how Dynamo splits the graph) is
  counted as "unrepeatable" and its outputs are not judged.

The interpreter must import the libraries' run-time dependencies (``requirements-label.txt``); the
sources are put first on the runs' path::

    pip install --no-deps -r benchmarks/realcode/requirements-label.txt
    python benchmarks/realcode/fix.py --site DIR [--spec PREFIX ...] [--jobs N] [--keep] [-v]

``--site``: where the labelled sources are (default: ``REALCODE_SITE``, else the folder
``measure.sh`` installs them to).  A measurement script, not a test: it asserts nothing.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import label  # noqa: E402

DEFAULT_SITE = os.environ.get("REALCODE_SITE") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "dynalint-realcode", "site-packages")


def break_lines(record: dict) -> set[tuple[str, int]]:
    return {(b["file"], b["line"]) for b in record.get("breaks", []) if b.get("in_library")}


def breaking_runs(labels: list[dict], prefixes: list[str] | None) -> list[str]:
    """The labelled runs that broke inside a library (and completed at least one input set)."""
    return [r["spec"] for r in labels if r.get("status") in label.SCORED and break_lines(r)
            and (not prefixes or any(r["spec"].startswith(p) for p in prefixes))]


def fixed_copy(site: str, files: list[str], dest: str, verbose: bool) -> str:
    """A copy of the libraries' packages with their labelled files fixed; returns the copy's root."""
    root = os.path.join(dest, "site-packages")
    for package in sorted({f.split("/", 1)[0] for f in files}):
        src = os.path.join(site, package)
        if os.path.isdir(src):
            shutil.copytree(src, os.path.join(root, package), ignore=shutil.ignore_patterns("__pycache__"))
    targets = [os.path.join(root, f) for f in files if os.path.isfile(os.path.join(root, f))]
    done = subprocess.run([sys.executable, "-m", "dynalint", "fix", "--unsafe-fixes", "--exit-zero",
                           "--scope", "all", "-j", "1", *targets], capture_output=True, text=True)
    print(f"fixed {len(targets)} labelled files in a copy (exit {done.returncode})", file=sys.stderr)
    if verbose:
        print(done.stderr.strip()[-2000:], file=sys.stderr)
    return root


def same_outputs(fixed: str, original: str) -> tuple[bool, bool]:
    """(within ``assert_close``'s rule, bitwise equal) for the eager and the compiled outputs."""
    import torch

    from dynalint.verify.outputs import compare

    a, b = torch.load(fixed, weights_only=False), torch.load(original, weights_only=False)
    diffs = [compare(a[k], b[k]) for k in ("eager", "compiled")]
    return all(d.equal for d in diffs), all(d.equal and d.bitwise for d in diffs)


def run_all(specs: list[str], pythonpath: str, tmp: Path, timeout: float, jobs: int) -> dict[str, dict]:
    tmp.mkdir(parents=True, exist_ok=True)
    specs_path = str(HERE / "runspecs.py")

    def one(spec: str) -> dict:
        return label.launch(spec, timeout, tmp, specs_path, outputs=True, pythonpath=pythonpath)

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        return dict(zip(specs, ex.map(one, specs)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--site", default=DEFAULT_SITE, help="where the labelled libraries' sources are")
    ap.add_argument("--labels", default=str(HERE / "labels.json"))
    ap.add_argument("--files", default=str(HERE / "files.txt"))
    ap.add_argument("--spec", nargs="*", help="only runs starting with these prefixes")
    ap.add_argument("--timeout", type=float, default=240)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder (fixed copy, records, logs)")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    if not os.path.isdir(args.site):
        print(f"no sources at {args.site}: run benchmarks/realcode/measure.sh once, or pass --site", file=sys.stderr)
        return 2
    with open(args.labels) as fh:
        labels = json.load(fh)
    with open(args.files) as fh:
        files = [ln.strip() for ln in fh if ln.strip() and not ln.startswith("#")]
    specs = breaking_runs(labels, args.spec)
    tmp = Path(tempfile.mkdtemp(prefix="dynalint-realcode-fix-"))
    root = fixed_copy(args.site, files, str(tmp), args.verbose)
    before = run_all(specs, args.site, tmp / "before", args.timeout, args.jobs)
    again = run_all(specs, args.site, tmp / "again", args.timeout, args.jobs)
    after = run_all(specs, root, tmp / "after", args.timeout, args.jobs)

    per_lib: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    print(f"{'run':52} {'before':>6} {'after':>6}  outputs (fixed vs original)")
    for spec in specs:
        b, a = before[spec], after[spec]
        lib = per_lib[b.get("library") or spec.split(".", 1)[0]]
        if b.get("status") not in label.SCORED or "outputs" not in b:
            print(f"{spec:52} {'-':>6} {'-':>6}  original did not run: {b.get('status')}")
            lib["not run"] += 1
            continue
        nb = len(break_lines(b))
        lib["runs"] += 1
        lib["before"] += nb
        if a.get("status") not in label.SCORED or "outputs" not in a:
            print(f"{spec:52} {nb:6} {'-':>6}  fixed copy FAILED: {a.get('status')} {(a.get('error') or '')[:80]!r}")
            lib["after"] += nb
            lib["failed"] += 1
            continue
        na = len(break_lines(a))
        lib["after"] += na
        lib["fully fixed"] += na == 0
        lib["gained"] += na > nb
        r = again[spec]
        if r.get("status") not in label.SCORED or "outputs" not in r or not same_outputs(r["outputs"], b["outputs"])[0]:
            print(f"{spec:52} {nb:6} {na:6}  unrepeatable: two runs of the original differ")
            lib["unrepeatable"] += 1
            continue
        close, bitwise = same_outputs(a["outputs"], b["outputs"])
        lib["close"] += close
        lib["bitwise"] += bitwise
        print(f"{spec:52} {nb:6} {na:6}  {'bitwise' if bitwise else 'close' if close else 'DIFFER'}")
        if args.verbose:
            for f, ln in sorted(break_lines(a)):
                print(f"    left: {f}:{ln}")

    print()
    cols = ("runs", "before", "after", "fully fixed", "close", "bitwise", "unrepeatable", "gained", "failed",
            "not run")
    print(f"{'library':26}" + "".join(f"{c:>13}" for c in cols))
    total: dict[str, int] = defaultdict(int)
    for name, row in sorted(per_lib.items()):
        print(f"{name:26}" + "".join(f"{row[c]:13}" for c in cols))
        for c in cols:
            total[c] += row[c]
    print(f"{'all':26}" + "".join(f"{total[c]:13}" for c in cols))
    removed = total["before"] - total["after"]
    print(f"break lines {total['before']} -> {total['after']} ({100.0 * removed / max(total['before'], 1):.0f}% "
          f"removed); outputs within assert_close {total['close']}/"
          f"{total['runs'] - total['failed'] - total['unrepeatable']}, bitwise {total['bitwise']}")
    if args.keep:
        print(f"kept {tmp}", file=sys.stderr)
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
