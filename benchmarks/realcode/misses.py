#!/usr/bin/env python
"""List the break lines `dynalint check` missed, and its false alarms, grouped by Dynamo's reason (Markdown).

    python misses.py DIAGS.json --site-packages DIR [--labels labels.json] [--scorer score_zoo.py]
                     [--title TEXT]

DIAGS.json is `dynalint check --format json` output on the files of ``files.txt``; matching is score_zoo's.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent


def load_scorer(path: str):  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("score_zoo", path)
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def default_scorer() -> str:
    for c in (
        os.environ.get("SCORE_ZOO"),
        HERE.parents[1] / ".." / "shared/eval-zoo/score_zoo.py",
        "/work/shared/eval-zoo/score_zoo.py",
    ):
        if c and Path(c).is_file():
            return str(c)
    raise SystemExit("score_zoo.py not found: pass --scorer or set SCORE_ZOO")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("diagnostics")
    ap.add_argument("--labels", default=str(HERE / "labels.json"))
    ap.add_argument("--site-packages", required=True)
    ap.add_argument("--scorer")
    ap.add_argument("--title", default="realcode misses")
    a = ap.parse_args(argv)
    sz = load_scorer(a.scorer or default_scorer())
    with open(a.labels) as fh:
        labels = json.load(fh)
    res = sz.score(labels, sz.load_diagnostics(a.diagnostics), site_packages=a.site_packages)
    gb: dict[tuple, set] = defaultdict(set)
    for r in labels:
        for b in r.get("breaks", []):
            if b.get("in_library"):
                gb[(b["file"], b["line"])].add(b["gb_type"])
    print(f"## {a.title}\n")
    print(
        f"break lines {res['real_break_locations']}, traced lines {res['traced_lines']}: "
        f"P={sz.fmt(res['precision'])} R={sz.fmt(res['recall'])} FP={res['fp']} "
        f"FA/1k={sz.fmt(res['false_alarms_per_1k_traced'], 2)}\n"
    )
    groups: dict[str, list] = defaultdict(list)
    for e in res["details"]["fn"]:
        groups[" / ".join(e["underlying"]) or "?"].append(e)
    print("### Missed break lines, by Dynamo's underlying reason\n")
    for reason, es in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        print(f"#### {reason} ({len(es)})\n")
        for e in es:
            kinds = ", ".join(sorted(gb.get((e["file"], e["line"]), set()) - {reason}))
            extra = f" [{kinds}]" if kinds else ""
            print(f"- `{e['file']}:{e['line']}` `{e['source'][:110]}`{extra} ({', '.join(e['specs'][:3])})")
        print()
    if res["details"]["fp"]:
        print("### False alarms (predicted break on a traced line that did not break)\n")
        for e in res["details"]["fp"]:
            print(
                f"- `{e['file']}:{e['line']}` {', '.join(e['codes'])} `{e['source'][:110]}` "
                f"({', '.join(e['traced_in'][:2])})"
            )
        print()


if __name__ == "__main__":
    main()
