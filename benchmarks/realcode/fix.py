#!/usr/bin/env python
"""What ``dynalint fix --unsafe-fixes`` and Dynamo's capture flags do to the breaking runs of the real-code labels.

The labelled libraries' sources are copied; the labelled files (``files.txt``) are fixed in the copy
with ``dynalint fix --unsafe-fixes --scope all`` (the libraries compile nothing themselves: their users
do, so the configuration fixers, which patch a compile call, change nothing there and the copy holds the
rewrites alone).  Then every run of ``labels.json`` that broke is run again by ``label.py`` (same seeds,
weights and inputs), each in its own process: the original twice, and three columns:

- ``rewrites``: from the fixed copy;
- ``flags``: from the original sources with ``capture_scalar_outputs`` and
  ``capture_dynamic_output_shape_ops`` on for the compiled calls (on top of the run's own settings);
- ``both``: from a second copy fixed with those flags declared (``fix --capture-scalar-outputs
  --capture-dynamic-output-shape-ops``: the rewrites a user who compiles with the flags gets, those that
  need the flags included), run with the flags on;
- ``verified``, in the report only: per run, ``both`` where Dynamo confirms it on that run (fewer break
  lines, none gained, no raise, outputs within ``assert_close``), else ``rewrites`` where it confirms those,
  else the original as it is: what a user who keeps only the remedies Dynamo confirms gets (``dynalint
  fix --verify`` for rewrites, ``dynalint verify``'s what-if for the flags).

Per column: break lines before -> after (inside the libraries, one ``file:line`` each; a line of the fixed
copy is mapped back to the original line it comes from), runs break-free, runs that raised (ended
otherwise than the original: a compile error, a crash, a timeout; their break lines count as unchanged),
runs that gained a break line neither original run had, and the outputs against the original's, eager and
compiled, by the rule PyTorch uses for compiled code (``assert_close`` at the dtype's default tolerances,
NaN/inf at the same places, same shapes and dtypes), with the bitwise-equal count beside.  A run whose two
original runs already differ (random work whose draws depend on how Dynamo splits the graph) is counted as
"unrepeatable" and its outputs are not judged.  Last, the break lines each column leaves, by Dynamo's
category (for a loop that broke, the break inside it too).

The interpreter must import the libraries' run-time dependencies (``requirements-label.txt``); the
sources are put first on the runs' path::

    pip install --no-deps -r benchmarks/realcode/requirements-label.txt
    python benchmarks/realcode/fix.py --site DIR [--spec PREFIX ...] [--max-wall S] [--jobs N] [--json OUT] [--keep]
    python benchmarks/realcode/fix.py --report OUT        # the tables again, from --json's rows

``--site``: where the labelled sources are (default: ``REALCODE_SITE``, else the folder
``measure.sh`` installs them to).  ``--max-wall S``: only the runs whose labelling took at most S seconds
(each run is made five times).  A measurement script, not a test: it asserts nothing.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

import label  # noqa: E402
from fix_population import FLAGS, original_lines  # noqa: E402

#: the columns: the fixed copy (rewrites), the original under Dynamo's capture flags, the fixed copy under them
COLUMNS = ("rewrites", "flags", "both")
#: the columns of the report: those run, and ``verified`` (per run, the remedy Dynamo confirms: see :func:`verified`)
REPORTED = (*COLUMNS, "verified")
#: each run of a spec: (from the fixed copy, with the capture flags); the original runs twice
VARIANTS = {"original": (False, False), "again": (False, False), "rewrites": (True, False),
            "flags": (False, True), "both": (True, True)}

DEFAULT_SITE = os.environ.get("REALCODE_SITE") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "dynalint-realcode", "site-packages")


def break_lines(record: dict) -> set[tuple[str, int]]:
    return {(b["file"], b["line"]) for b in record.get("breaks", []) if b.get("in_library")}


def breaking_runs(labels: list[dict], prefixes: list[str] | None) -> list[str]:
    """The labelled runs that broke inside a library (and completed at least one input set)."""
    return [r["spec"] for r in labels if r.get("status") in label.SCORED and break_lines(r)
            and (not prefixes or any(r["spec"].startswith(p) for p in prefixes))]


def capture_options() -> list[str]:
    """The ``fix`` options that declare :data:`FLAGS` (``--capture-scalar-outputs`` ...)."""
    return [f"--{flag.replace('_', '-')}" for flag in FLAGS]


def run_fix(root: str, targets: list[str], options: list[str],
            prefix: tuple[str, ...] = ()) -> "subprocess.CompletedProcess[str]":
    """``dynalint fix --unsafe-fixes`` of ``targets`` (the whole of ``root`` when none), run inside ``root``:
    with no file named, ``fix`` would take the current folder.  ``prefix``: a command to run it under (``nice``)."""
    return subprocess.run([*prefix, sys.executable, "-m", "dynalint", "fix", "--unsafe-fixes", "--exit-zero",
                           "--scope", "all", "-j", "1", *options, *(targets or [root])], capture_output=True,
                          text=True, cwd=root)


def fixed_copy(site: str, files: list[str], dest: str, verbose: bool, flags: bool = False) -> str:
    """A copy of the libraries' packages with their labelled files fixed; returns the copy's root.  ``flags``:
    fixed with Dynamo's capture flags declared (the copy the ``both`` column runs)."""
    # the copy's root is named ``site-packages``: the labeller places a break by the path under that name
    root = os.path.join(dest, "flags", "site-packages") if flags else os.path.join(dest, "site-packages")
    for package in sorted({f.split("/", 1)[0] for f in files}):
        src = os.path.join(site, package)
        if os.path.isdir(src):
            shutil.copytree(src, os.path.join(root, package), ignore=shutil.ignore_patterns("__pycache__"))
    targets = [os.path.join(root, f) for f in files if os.path.isfile(os.path.join(root, f))]
    done = run_fix(root, targets, capture_options() if flags else [])
    print(f"fixed {len(targets)} labelled files in a copy{' (flags declared)' if flags else ''} "
          f"(exit {done.returncode})", file=sys.stderr)
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


def run_spec(spec: str, site: str, root: str, tmp: Path, timeout: float,
             specs_path: str = str(HERE / "runspecs.py"), flags_root: str | None = None) -> dict[str, dict]:
    """The runs of one spec, each in its own subprocess (:data:`VARIANTS`); none but the original's when
    the original does not run.  ``specs_path``: the run-spec module ``label.py`` builds the spec from;
    ``flags_root``: the copy fixed with the flags declared, which the ``both`` column runs (else ``root``)."""
    runs: dict[str, dict] = {}
    for variant, (fixed, flags) in VARIANTS.items():
        folder = tmp / variant
        folder.mkdir(parents=True, exist_ok=True)
        path = ((flags_root or root) if flags else root) if fixed else site
        runs[variant] = label.launch(spec, timeout, folder, specs_path, outputs=True,
                                     pythonpath=path, flags=FLAGS if flags else ())
        if variant == "original" and (runs[variant].get("status") not in label.SCORED
                                      or "outputs" not in runs[variant]):
            break
    return runs


class LineMap:
    """Line of a fixed file -> line of its original (a line a fix inserted maps to the original line after
    it), so that break lines of the fixed copy compare with the original's."""

    def __init__(self, site: str, root: str) -> None:
        self.site, self.root = site, root
        self.maps: dict[str, dict[int, int]] = {}

    def original(self, file: str, line: int) -> tuple[str, int]:
        if file not in self.maps:
            try:
                with open(os.path.join(self.site, file)) as a, open(os.path.join(self.root, file)) as b:
                    self.maps[file] = original_lines(a.read(), b.read())
            except OSError:
                self.maps[file] = {}
        return file, self.maps[file].get(line, line)


def category(brk: dict) -> str:
    """Dynamo's break type; for a loop that broke, the break inside it too."""
    gb = brk.get("gb_type") or ""
    under = brk.get("underlying_reason") or ""
    return f"{gb}: {under}" if gb == "graph break in loop" and under and under != gb else gb


def categorized(record: dict, to_original=None) -> dict[tuple[str, int], str]:
    """Break line (``file``, ``line``, mapped to the original's with ``to_original``) -> its category."""
    out: dict[tuple[str, int], str] = {}
    for b in record.get("breaks", []):
        if b.get("in_library"):
            key = to_original(b["file"], b["line"]) if to_original else (b["file"], b["line"])
            out.setdefault(key, category(b))
    return out


def judge(spec: str, runs: dict[str, dict], lines: LineMap, flags_lines: LineMap | None = None) -> dict:
    """One row: the original's break lines and, per column, what is left, whether the run raised, gained a
    break line, and kept the original's outputs (``close``, ``bitwise``; None when not judged).
    ``flags_lines``: the line map of the copy fixed with the flags declared (else ``lines``)."""
    b = runs["original"]
    row: dict = {"spec": spec, "library": b.get("library") or spec.split(".", 1)[0], "status": b.get("status")}
    if b.get("status") not in label.SCORED or "outputs" not in b:
        row["not_run"] = True
        return row
    before = categorized(b)
    again = runs["again"]
    repeatable = (again.get("status") == b.get("status") and "outputs" in again
                  and same_outputs(again["outputs"], b["outputs"])[0])
    known = set(before) | set(categorized(again))
    row.update(before=len(before), before_categories=sorted(before.values()), repeatable=repeatable)
    for column in COLUMNS:
        a = runs[column]
        fixed, flags = VARIANTS[column]
        mapped = (flags_lines or lines) if flags else lines
        raised = a.get("status") != b.get("status") or "outputs" not in a
        left = before if raised else categorized(a, mapped.original if fixed else None)
        close, bitwise = (None, None) if raised or not repeatable else same_outputs(a["outputs"], b["outputs"])
        row[column] = {
            "after": len(left), "categories": sorted(left.values()), "break_free": not left and not raised,
            "gained": [f"{f}:{ln}" for f, ln in sorted(set(left) - known)], "raised": raised,
            "status": a.get("status"), "error": (a.get("error") or "")[-300:], "close": close, "bitwise": bitwise,
        }
    return row


def confirmed(row: dict, column: str) -> bool:
    """Whether Dynamo confirms ``column``'s remedy on this run, as ``dynalint fix --verify`` confirms a fix (and
    ``dynalint verify`` a configuration): fewer break lines, none gained, no raise, outputs within
    ``assert_close`` of the original's (a run whose original is unrepeatable is never confirmed)."""
    c = row[column]
    return not c["raised"] and not c["gained"] and c["after"] < row["before"] and bool(c["close"])


def verified(row: dict) -> dict:
    """The ``verified`` column: ``both`` where Dynamo confirms it on the run, else ``rewrites`` where it
    confirms those, else the original left as it is (what a user who keeps only confirmed remedies gets)."""
    for column in ("both", "rewrites"):
        if confirmed(row, column):
            return {**row[column], "from": column}
    return {"after": row["before"], "categories": row["before_categories"], "break_free": False, "gained": [],
            "raised": False, "status": row["status"], "error": "", "close": True, "bitwise": True, "from": None}


def row_text(row: dict) -> str:
    if row.get("not_run"):
        return f"{row['spec']:44} original did not run: {row['status']}"
    cells = []
    for column in COLUMNS:
        c = row[column]
        outputs = ("RAISED " + str(c["status"]) if c["raised"] else "-" if c["close"] is None
                   else "bit" if c["bitwise"] else "close" if c["close"] else "DIFFER")
        cells.append(f"{c['after']:4} {outputs:7}{' +' + str(len(c['gained'])) if c['gained'] else ''}")
    note = "" if row["repeatable"] else "  (unrepeatable)"
    return f"{row['spec']:44} {row['before']:4} | " + " | ".join(f"{x:14}" for x in cells) + note


def report(rows: list[dict]) -> None:
    """Per library and in all, per column: break lines left, runs break-free, runs that raised or gained a
    break line, outputs within ``assert_close`` and bitwise equal; then the break categories left."""
    ran = [r for r in rows if not r.get("not_run")]
    for r in ran:
        r["verified"] = verified(r)
    print(f"{'run':44} {'bef':>4} | " + " | ".join(f"{c:14}" for c in COLUMNS))
    for row in rows:
        print(row_text(row))
    print()
    print(f"{'library':26} {'runs':>4} {'before':>6} " + " ".join(
        f"{c + ' ' + k:>13}" for c in REPORTED for k in ("left", "free")))
    groups = sorted({r["library"] for r in ran})
    for name in [*groups, "all"]:
        sel = [r for r in ran if name in ("all", r["library"])]
        print(f"{name:26} {len(sel):4} {sum(r['before'] for r in sel):6} " + " ".join(
            f"{v:13}" for c in REPORTED for v in (sum(r[c]["after"] for r in sel),
                                                 sum(r[c]["break_free"] for r in sel))))
    total = sum(r["before"] for r in ran)
    judged = sum(r["repeatable"] for r in ran)
    unrepeatable = f" ({len(ran) - judged} unrepeatable: two runs of the original differ)" if judged < len(ran) else ""
    print(f"\n{len(ran)} breaking runs ({len(rows) - len(ran)} not run), {total} break lines; outputs judged on "
          f"{judged}{unrepeatable}")
    for column in REPORTED:
        cs = [r[column] for r in ran]
        left = sum(c["after"] for c in cs)
        print(f"  {column:9} {total} -> {left} ({100.0 * (total - left) / max(total, 1):.0f}% removed), "
              f"break-free {sum(c['break_free'] for c in cs)}/{len(cs)} "
              f"({100.0 * sum(c['break_free'] for c in cs) / max(len(cs), 1):.0f}%), "
              f"raised {sum(c['raised'] for c in cs)}, gained a break {sum(bool(c['gained']) for c in cs)}, "
              f"outputs close {sum(bool(c['close']) for c in cs)}/{sum(c['close'] is not None for c in cs)} "
              f"bitwise {sum(bool(c['bitwise']) for c in cs)}")
    print(f"\n{'break lines by category':70} {'before':>6} " + " ".join(f"{c:>8}" for c in REPORTED))
    counts = {k: Counter(x for r in ran for x in (r["before_categories"] if k == "before" else r[k]["categories"]))
              for k in ("before", *REPORTED)}
    for cat, n in counts["before"].most_common():
        print(f"{cat[:70]:70} {n:6} " + " ".join(f"{counts[c][cat]:8}" for c in REPORTED))
    for c in REPORTED:
        new = set(counts[c]) - set(counts["before"])
        if new:
            print(f"  new in {c}: " + ", ".join(f"{k} {counts[c][k]}" for k in sorted(new)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--site", default=DEFAULT_SITE, help="where the labelled libraries' sources are")
    ap.add_argument("--labels", default=str(HERE / "labels.json"))
    ap.add_argument("--files", default=str(HERE / "files.txt"))
    ap.add_argument("--spec", nargs="*", help="only runs starting with these prefixes")
    ap.add_argument("--max-wall", type=float, default=0,
                    help="only runs whose labelling took at most this many seconds (a quicker subset)")
    ap.add_argument("--timeout", type=float, default=240)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--json", help="write the rows here (after each run, so a stopped measurement keeps them)")
    ap.add_argument("--report", metavar="JSON", help="print the tables of rows written by --json, run nothing")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder (fixed copy, records, logs)")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    if args.report:
        with open(args.report) as fh:
            report(json.load(fh))
        return 0
    if not os.path.isdir(args.site):
        print(f"no sources at {args.site}: run benchmarks/realcode/measure.sh once, or pass --site", file=sys.stderr)
        return 2
    with open(args.labels) as fh:
        labels = json.load(fh)
    with open(args.files) as fh:
        files = [ln.strip() for ln in fh if ln.strip() and not ln.startswith("#")]
    specs = breaking_runs(labels, args.spec)
    if args.max_wall:
        wall = {r["spec"]: r.get("process_wall_s") or 0 for r in labels}
        specs = [s for s in specs if wall[s] <= args.max_wall]
    tmp = Path(tempfile.mkdtemp(prefix="dynalint-realcode-fix-"))
    root = fixed_copy(args.site, files, str(tmp), args.verbose)
    flags_root = fixed_copy(args.site, files, str(tmp), args.verbose, flags=True)
    lines, flags_lines = LineMap(args.site, root), LineMap(args.site, flags_root)
    print(f"{len(specs)} breaking runs, {len(VARIANTS)} runs each", file=sys.stderr, flush=True)
    rows: list[dict] = []
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
        for spec, runs in zip(specs, ex.map(lambda s: run_spec(s, args.site, root, tmp / s.replace(":", "_"),
                                                               args.timeout, flags_root=flags_root), specs)):
            rows.append(judge(spec, runs, lines, flags_lines))
            print(row_text(rows[-1]), file=sys.stderr, flush=True)
            if args.json:
                with open(args.json, "w") as fh:
                    json.dump(rows, fh, indent=1)
    report(rows)
    if args.keep:
        print(f"kept {tmp}", file=sys.stderr)
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
