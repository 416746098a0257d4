"""Long runs of the differential accuracy fuzzer (tests/accuracy) against real Dynamo.

    python benchmarks/accuracy_fuzz.py --n 2000 --seed 1          # measure and report
    python benchmarks/accuracy_fuzz.py --n 80                     # the corpus the CI test draws
    python benchmarks/accuracy_fuzz.py --n 400 --seed 3 --save run3.json   # one chunk
    python benchmarks/accuracy_fuzz.py --report run*.json [--minimal] [--markdown FILE]

Prints graph-break precision/recall (line level) and recompile precision/recall (program
level) over the generated corpus, then the disagreements grouped by idiom, marking those that the
known-limits table explains.  ``--minimal`` re-measures each group's idiom alone and prints the
smallest program that still disagrees.  One process measures every program (Dynamo reset between);
``dynalint check`` runs once over the corpus.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir, "tests"))

from accuracy.compare import Disagreement, Result, Score  # noqa: E402
from accuracy.fuzz import groups, minimal_example, run_corpus, source_of  # noqa: E402
from accuracy.generate import Program, ProgramSpec, Snippet, build, draw_specs  # noqa: E402
from accuracy.known_limits import explain  # noqa: E402


def _save(path: str, seed: int, programs: list[Program], result: Result) -> None:
    data = {
        "seed": seed,
        "programs": {p.name: dataclasses.asdict(p.spec) for p in programs},
        "breaks": dataclasses.asdict(result.breaks),
        "recompiles": dataclasses.asdict(result.recompiles),
        "measured": result.measured,
        "invalid": result.invalid,
        "shadowed": result.shadowed,
        "breaks_by": {k: dataclasses.asdict(v) for k, v in result.breaks_by.items()},
        "recompiles_by": {k: dataclasses.asdict(v) for k, v in result.recompiles_by.items()},
        "disagreements": [dataclasses.asdict(d) for d in result.disagreements],
    }
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(data, fh)


def _spec(raw: dict) -> ProgramSpec:
    return ProgramSpec(**{**raw, "snippets": tuple(Snippet(**s) for s in raw["snippets"])})


def _add(total: Score, part: Score) -> None:
    for f in ("tp", "fp", "fn", "tn"):
        setattr(total, f, getattr(total, f) + getattr(part, f))


def production_table(result: Result) -> list[str]:
    """Precision and recall per production, breaks (lines) and recompiles (programs), as Markdown rows."""
    rows = ["| production | breaks P | breaks R | break lines (tp/fp/fn) | recompiles P | recompiles R "
            "| programs (tp/fp/fn/tn) |", "|---|---|---|---|---|---|---|"]
    for prod in sorted(set(result.breaks_by) | set(result.recompiles_by)):
        b, r = result.breaks_by.get(prod, Score()), result.recompiles_by.get(prod, Score())
        rows.append(f"| {prod} | {b.precision:.3f} | {b.recall:.3f} | {b.tp}/{b.fp}/{b.fn} "
                    f"| {r.precision:.3f} "
                    f"| {r.recall:.3f} | {r.tp}/{r.fp}/{r.fn}/{r.tn} |")
    return rows


def _load(paths: list[str]) -> tuple[list[Program], Result]:
    programs: list[Program] = []
    result = Result()
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        programs += [build(_spec(raw), name) for name, raw in data["programs"].items()]
        for attr in ("breaks", "recompiles"):
            _add(getattr(result, attr), Score(**data[attr]))
            for prod, raw in data.get(f"{attr}_by", {}).items():
                _add(getattr(result, f"{attr}_by")[prod], Score(**raw))
        result.measured += data["measured"]
        result.invalid += data["invalid"]
        result.shadowed += data.get("shadowed", 0)
        result.disagreements += [Disagreement(**{**d, "idiom": tuple(d["idiom"]) if d["idiom"] else None})
                                 for d in data["disagreements"]]
    return programs, result


def report(programs: list[Program], result: Result, minimal: bool, markdown: str | None) -> None:
    print(f"programs: {len(programs)} generated, {result.measured} measured, {len(result.invalid)} invalid")
    print(f"graph breaks (lines):     {result.breaks}")
    print(f"recompiles (programs):    {result.recompiles}")
    print(f"graph-break diagnostics on lines Dynamo skipped after an earlier break (not scored): {result.shadowed}")
    table = production_table(result)
    print("\n".join(table))
    md = ["# Disagreements with Dynamo found by the accuracy fuzzer", "",
          f"Written by `python benchmarks/accuracy_fuzz.py --report ...{' --minimal' if minimal else ''} --markdown` over "
          f"{result.measured} generated programs (torch 2.13, backend eager).", "",
          f"- graph breaks (lines): {result.breaks}",
          f"- recompiles (programs): {result.recompiles}",
          f"- graph-break diagnostics on lines Dynamo never traced after an earlier break (not scored): "
          f"{result.shadowed}",
          "",
          "Per production (a snippet's provenance, use, context and container, the program's entry, call "
          "style, number, capture flag; a break line counts for its snippet's productions and the program's, "
          "a program for all of its snippets'):", "", *table, "",
          "Kinds: `break-fp` a break reported where Dynamo has none, `break-fn` a break Dynamo has and "
          "`check` misses, `recompile-fn` a program Dynamo recompiles with no recompile hazard reported, "
          "`recompile-fp` the reverse. A group is the kind with the provenance of the value and (for "
          "breaks) its use; each shows the contexts and containers it was seen in, the known limit that "
          "explains it (`tests/accuracy/known_limits.py`) and the smallest program that still disagrees "
          "(the program of the group's idiom alone, when it reproduces; else the program it was found in).",
          ""]
    for key, items in groups(result, programs).items():
        reason = explain(items[0])
        details = "; ".join(sorted({d.detail for d in items}))[:160]
        where = (f"contexts {', '.join(sorted({d.idiom[2] for d in items if d.idiom}))}; "
                 f"containers {', '.join(sorted({d.idiom[3] for d in items if d.idiom}))}")
        title = " / ".join(k for k in key if k)
        unknown = "" if reason else "   ** not in the known-limits table **"
        print(f"{len(items):5d}  {title}  [{details}]{unknown}")
        print(f"         seen in {where}")
        md += [f"## {title} ({len(items)})", "", f"- detail (codes reported, or Dynamo's break type, "
               f"or the failing guard): {details}", f"- seen in {where}",
               f"- known limit: {reason}" if reason else "- not in the known-limits table", ""]
        if minimal:
            prog = minimal_example(key, items[0], programs)
            where = ", ".join(f"{d.file}:{d.line}" for d in result.disagreements if d.program == prog.name
                              and d.kind == key[0]) or "a disagreement of this group on the full program"
            print("\n".join("         " + ln for ln in source_of(prog).splitlines()))
            md += ["```python", source_of(prog).rstrip(), "```", "", f"({where})", ""]
    if markdown:
        with open(markdown, "w", encoding="utf-8") as fh:
            fh.write("\n".join(md))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=int(os.environ.get("DYNALINT_ACCURACY_N", "200")))
    ap.add_argument("--seed", type=int,
                    help="draw afresh from this seed (default: the corpus the CI test draws)")
    ap.add_argument("--save", help="write this chunk's results as JSON (merge them with --report)")
    ap.add_argument("--report", nargs="+", metavar="JSON", help="merge saved chunks and report")
    ap.add_argument("--minimal", action="store_true", help="re-measure each group alone (slower)")
    ap.add_argument("--markdown", help="also write the groups as Markdown to this file")
    args = ap.parse_args(argv)
    if args.report:
        programs, result = _load(args.report)
    else:
        t0 = time.perf_counter()
        specs = draw_specs(args.n, args.seed)
        programs, result = run_corpus(specs, prefix="ci" if args.seed is None else f"s{args.seed}")
        print(f"measured in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        if args.save:
            _save(args.save, args.seed, programs, result)
    report(programs, result, args.minimal, args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
