#!/usr/bin/env python
"""What ``dynalint fix --unsafe-fixes`` and Dynamo's capture flags do to eval-zoo's breaking runs.

The same measurement as ``realcode/fix.py`` (whose copy, runs, rows and tables this reuses), on eval-zoo's
population (torchvision 0.28.0, timm 1.0.31): the libraries' labelled files (eval-zoo's ``files.txt``)
are fixed in a copy with ``dynalint fix --unsafe-fixes --scope all``; each run of eval-zoo's ``labels.json``
that broke is rebuilt from its record (``zoo_specs.py``) and run by ``realcode/label.py`` five times, each
in its own process: the original twice, then the ``rewrites`` (fixed copy), ``flags`` (original under
``capture_scalar_outputs`` and ``capture_dynamic_output_shape_ops``) and ``both`` (a copy fixed with those
flags declared, run under them) columns.

eval-zoo's labels hold no code, so a rebuilt run is checked first: its original run must log every break
line the label records (``reproduced/labelled`` per run).  A run that misses one is listed apart and left
out of the totals; lines the rebuilt run logs beyond the label's are counted in its ``before``.

The sources must be importable by this interpreter (a CPU build of torchvision) from a folder named
``site-packages`` (break lines are placed by the path under it), their run-time dependencies (Pillow)
installed beside them or in the environment::

    S=$(mktemp -d)/site-packages && pip install --no-deps --target "$S" torchvision==0.28.0 timm==1.0.31 pillow \\
        --index-url https://download.pytorch.org/whl/cpu --extra-index-url https://pypi.org/simple
    python benchmarks/zoo_fix.py --site "$S" [--zoo ../shared/eval-zoo] [--spec PREFIX ...] [--timeout S]
                                 [--json OUT [--resume]] [--keep]
    python benchmarks/zoo_fix.py --check --site "$S"     # only the original of each run: does it reproduce?
    python benchmarks/zoo_fix.py --report OUT            # the tables again, from --json's rows

Runs go cheapest first (by the label's wall time), one at a time.  A measurement script, not a test.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE / "realcode"), str(HERE)]

import fix  # noqa: E402  (realcode/fix.py)
import label  # noqa: E402

SPECS_PATH = str(HERE / "zoo_specs.py")
DEFAULT_ZOO = str(HERE.parent.parent / "shared" / "eval-zoo")


def reproduction(labelled: dict, original: dict) -> dict:
    """How many of the label's break lines the rebuilt original logged, and which it missed or added."""
    want, got = fix.break_lines(labelled), fix.break_lines(original)
    return {"labelled": len(want), "reproduced": len(want & got),
            "missed": [f"{f}:{ln}" for f, ln in sorted(want - got)],
            "extra": [f"{f}:{ln}" for f, ln in sorted(got - want)]}


def reproduced(row: dict) -> bool:
    rep = row.get("reproduction") or {}
    return not row.get("not_run") and rep.get("reproduced") == rep.get("labelled")


def report(rows: list[dict]) -> None:
    """Per run, whether its original reproduced the label; then ``fix.py``'s tables over the runs that did."""
    print(f"{'run':44} {'reproduced':>10}  missed / extra")
    for row in rows:
        rep = row.get("reproduction") or {}
        text = (f"original did not run: {row.get('status')}" if row.get("not_run") else
                f"{'; '.join(rep.get('missed', [])) or '-'} / {'; '.join(rep.get('extra', [])) or '-'}")
        print(f"{row['spec']:44} {rep.get('reproduced', 0):>4}/{rep.get('labelled', 0):<5}  {text}")
    kept = [r for r in rows if reproduced(r)]
    left = [r["spec"] for r in rows if not reproduced(r)]
    print(f"\n{len(kept)} of {len(rows)} runs reproduce their label"
          + (f"; left out of the totals: {', '.join(left)}" if left else "") + "\n")
    fix.report(kept)
    raised = [(r["spec"], c, r[c].get("error_head") or r[c]["status"]) for r in kept for c in fix.COLUMNS
              if r[c]["raised"]]
    if raised:
        print("\nraised:")
        for spec, column, error in raised:
            print(f"  {spec:44} {column:9} {error[:150]}")


def save(rows: list[dict], path: str | None) -> None:
    """The rows so far (after each run, so that a stopped measurement keeps them)."""
    if path:
        with open(path, "w") as fh:
            json.dump(rows, fh, indent=1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--site", help="the libraries' sources, importable (a folder named site-packages)")
    ap.add_argument("--zoo", default=DEFAULT_ZOO, help="eval-zoo's folder (labels.json, files.txt)")
    ap.add_argument("--spec", nargs="*", help="only runs starting with these prefixes")
    ap.add_argument("--timeout", type=float, default=400, help="seconds per process (each run is made 5 times)")
    ap.add_argument("--check", action="store_true", help="run each original once and report its reproduction")
    ap.add_argument("--json", help="write the rows here (after each run, so a stopped measurement keeps them)")
    ap.add_argument("--report", metavar="JSON", help="print the tables of rows written by --json, run nothing")
    ap.add_argument("--resume", action="store_true",
                    help="keep the rows --json already holds and make only the runs it lacks")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder (fixed copy, records, logs)")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    if args.report:
        with open(args.report) as fh:
            report(json.load(fh))
        return 0
    if not args.site or not os.path.isdir(args.site):
        print(f"no sources at {args.site!r}: pass --site (see the module's docstring)", file=sys.stderr)
        return 2
    site = os.path.abspath(args.site)
    labels_path = os.path.join(args.zoo, "labels.json")
    if not os.path.isfile(labels_path) or not os.path.isfile(os.path.join(args.zoo, "files.txt")):
        print(f"no labels.json and files.txt in {args.zoo!r}: pass --zoo", file=sys.stderr)
        return 2
    with open(labels_path) as fh:
        records = {r["spec"]: r for r in json.load(fh)}
    with open(os.path.join(args.zoo, "files.txt")) as fh:
        files = [ln.strip() for ln in fh if ln.strip() and not ln.startswith("#")]
    os.environ["ZOO_LABELS"] = os.path.abspath(labels_path)  # read by zoo_specs.py in each run
    # the sources' folder stays on the path behind the fixed copy: the libraries' dependencies live there
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), site) if p)
    sys.path.append(site)  # the saved outputs unpickle here (tv_tensors)
    import zoo_specs  # built its specs from ZOO_LABELS, set above

    buildable = zoo_specs.SPECS
    specs = fix.breaking_runs(list(records.values()), args.spec)
    for name in [s for s in specs if s not in buildable]:
        print(f"{name}: no builder, not measured", file=sys.stderr)
    specs = sorted((s for s in specs if s in buildable), key=lambda s: records[s].get("process_wall_s") or 0)
    tmp = Path(tempfile.mkdtemp(prefix="dynalint-zoo-fix-"))
    rows: list[dict] = []
    if args.resume and args.json and os.path.exists(args.json):
        with open(args.json) as fh:
            rows = json.load(fh)
        specs = [s for s in specs if s not in {r["spec"] for r in rows}]
    if args.check:
        for spec in specs:
            run = label.launch(spec, args.timeout, tmp, SPECS_PATH, pythonpath=site)
            rows.append({"spec": spec, "status": run.get("status"), "not_run": run.get("status") not in label.SCORED,
                         "reproduction": reproduction(records[spec], run),
                         "error": (run.get("error") or "")[-300:]})
            print(f"{spec:44} {run.get('status')} {rows[-1]['reproduction']} {rows[-1]['error']}", file=sys.stderr,
                  flush=True)
            save(rows, args.json)
    else:
        root = fix.fixed_copy(site, files, str(tmp), args.verbose)
        flags_root = fix.fixed_copy(site, files, str(tmp), args.verbose, flags=True)
        lines, flags_lines = fix.LineMap(site, root), fix.LineMap(site, flags_root)
        print(f"{len(specs)} breaking runs, {len(fix.VARIANTS)} runs each", file=sys.stderr, flush=True)
        for spec in specs:
            runs = fix.run_spec(spec, site, root, tmp / spec.replace(":", "_"), args.timeout, SPECS_PATH,
                                flags_root=flags_root)
            row = fix.judge(spec, runs, lines, flags_lines)
            row["reproduction"] = reproduction(records[spec], runs["original"])
            for column in fix.COLUMNS:  # the exception's first line (the row keeps the traceback's end)
                if column in row and row[column]["raised"]:
                    row[column]["error_head"] = (runs[column].get("error") or "").split("\n", 1)[0][:300]
            rows.append(row)
            print(fix.row_text(row), row["reproduction"]["reproduced"], "/", row["reproduction"]["labelled"],
                  file=sys.stderr, flush=True)
            save(rows, args.json)
    if args.check:
        ok = sum(reproduced(r) for r in rows)
        print(f"{ok} of {len(rows)} runs reproduce their label")
    else:
        report(rows)
    if args.keep:
        print(f"kept {tmp}", file=sys.stderr)
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
