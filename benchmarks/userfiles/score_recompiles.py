#!/usr/bin/env python
"""Score ``dynalint check`` recompile findings (``kind == "recompile"``, DYN2xx) against the recompile
causes ``label.py`` recorded from Dynamo's ``recompiles`` log.

A cause is one guarded value of one script: its kind (``python-value``: a guard on a Python number,
flag or attribute; ``stack-value``: a value from tensor data carried across a graph break;
``tensor-metadata``, ``global-state``, ``type-or-identity``: shapes, grad mode, other objects; a
size guard on a tensor that the frame resumed after a data-dependent break received, ``___stack0``,
counts as a ``stack-value`` on the break's line), the
guarded variable, and the script line Dynamo names for the guard. DYN2xx claims the first two kinds;
recall is measured over them, the others are counted apart (DYN208, a compiled function run in both
grad modes, matches a ``global-state`` cause when it sits on the ``def`` of a function Dynamo recompiled
on the grad mode; those are reported on their own line, not in the recall).

A finding matches a cause of its script when it is
  - on the cause's line, or in the same statement, and either claims the cause's kind (DYN204 a value
    carried across a break, the other codes a Python value) or names the guarded variable (``line``), or
  - names the guarded variable in backticks in its message (``name`` match: same last component,
    ``self.steps`` ~ ``L['self'].steps``; or the global a guard is rooted at, ``ema`` ~ ``G['ema'].x``;
    or the container whose element the guard reads, ``cfg`` ~ ``cfg['beta']``, ``size`` ~ ``size[0]``).
A finding matching no cause is a false alarm when its statement was traced by Dynamo (for a finding on
a ``def`` line: when the function's body was); otherwise it is not judged (that code never ran under
Dynamo). precision = matching findings / judged findings; recall = claimed causes matched / claimed causes.

Usage:
  python score_recompiles.py DIAGS.json [--labels labels.json] [--scorer score_zoo.py] [--json OUT] [-v]
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CLAIMED = ("python-value", "stack-value")
SCORED = ("ok", "compile_error")
NAME_RE = re.compile(r"`([A-Za-z_][\w.]*)(?:\(\))?`")
QUOTED_RE = re.compile(r"`([^`]+)`")
IDENT_RE = re.compile(r"[A-Za-z_]\w*")
# the kind of cause each code claims: a value from tensor data crossing a break, the grad mode, or a
# Python value
CODE_KINDS = {"DYN204": "stack-value", "DYN208": "global-state"}
DEFAULT_KIND = "python-value"


def load_module(name: str, path: Path):  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def scorer_path(explicit: str | None) -> str:
    """eval-zoo's ``score_zoo.py`` (its statement index and diagnostics loader), found as realcode finds it."""
    if explicit:
        return explicit
    return load_module("realcode_misses", HERE.parent / "realcode" / "misses.py").default_scorer()


def function_spans(path: Path) -> list[tuple[int, int, int]]:
    """(def line, first body line, last line) of every function in ``path``."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return []
    return [
        (n.lineno, n.body[0].lineno, n.end_lineno or n.lineno)
        for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]


SUBSCRIPTED_RE = re.compile(r"(?:G\['(\w+)'\]|([A-Za-z_][\w.]*))\[")


def variable_parts(cause: dict) -> tuple[str | None, str | None, str | None]:
    """(last component, global root, container) of a cause's guarded variable; the container is the
    last component of what the guard indexes when it guards an element (``size`` of ``size[0] == 2``,
    ``cfg`` of ``cfg['beta'] == 0.0``, ``_factor`` of ``G['_factor'][0] == 1.0``): a finding naming
    the argument or global that holds the element names the cause."""
    var = cause.get("variable")
    if not var:
        return None, None, None
    guard = cause.get("example_guard", "")
    last = var.split(".")[-1]
    root = var.split(".")[0].split("[")[0] if guard.startswith("G[") else None
    m = SUBSCRIPTED_RE.match(guard)
    container = (m.group(1) or m.group(2)).split(".")[-1] if m else None
    return last, root, container


STACK_SIZE_RE = re.compile(r"tensor '___stack\d+' size mismatch")
RESUMED = "torch_dynamo_resume_in_"
DATA_DEPENDENT_BREAK = "Dynamic shape operator"


def stack_size_causes(rec: dict) -> tuple[list[dict], set[str]]:
    """Causes of a script's recompiles on the size of a tensor that a frame resumed after a
    data-dependent break received on its stack (``tensor '___stack0' size mismatch`` in
    ``torch_dynamo_resume_in_f_at_54``, where line 54 broke on a "Dynamic shape operator"): a value
    carried across the break, a ``stack-value`` on the break's line; one per resumed frame.  Also the
    guards they cover, whose ``tensor-metadata`` causes they replace."""
    data_dependent = {(b.get("file"), b.get("line")) for b in rec.get("breaks", [])
                      if b.get("gb_type") == DATA_DEPENDENT_BREAK}
    out: dict[tuple, dict] = {}
    for rc in rec.get("recompiles", []):
        where = (rc.get("file"), rc.get("firstlineno"))
        if not str(rc.get("function", "")).startswith(RESUMED) or where not in data_dependent:
            continue
        for g in rc.get("guard_failures", []):
            if STACK_SIZE_RE.match(g.get("guard", "")) and g.get("scope") == "script":
                c = out.setdefault(where, {"kind": "stack-value", "scope": "script", "variable": None,
                                           "file": where[0], "line": where[1], "source_line": "",
                                           "function": rc.get("function"), "example_guard": g["guard"],
                                           "count": 0, "guards": set()})
                c["count"] += 1
                c["guards"].add(g["guard"])
    covered = {guard for c in out.values() for guard in c.pop("guards")}
    return list(out.values()), covered


def script_causes(rec: dict) -> list[dict]:
    """The recompile causes of one script's record, stack tensors of data-dependent size as
    :func:`stack_size_causes` counts them."""
    extra, covered = stack_size_causes(rec)
    return [c for c in rec.get("recompile_causes", []) if c.get("scope") == "script"
            and not (c.get("kind") == "tensor-metadata" and c.get("example_guard") in covered)] + extra


def score(labels: list[dict], diags: list[dict], stmt_index: Any, folder: Path = HERE) -> dict:
    recs = [r for r in labels if r.get("status") in SCORED]
    scripts = {r["spec"] for r in recs}
    causes = [dict(c, id=i) for i, c in enumerate(c for r in recs for c in script_causes(r))]
    traced = {f: set(v) for r in recs for f, v in r.get("traced_lines", {}).items()}
    # the `def` lines of the functions that recompiled on the grad mode
    grad_mode = {(rc.get("file"), rc.get("firstlineno")) for r in recs for rc in r.get("recompiles", [])
                 if any(g.get("kind") == "global-state" for g in rc.get("guard_failures", []))}
    spans = {s: function_spans(folder / s) for s in scripts}

    findings: dict[tuple, dict] = {}
    for d in diags:
        if d.get("kind") != "recompile":
            continue
        name = Path(str(d.get("path", ""))).name
        if name not in scripts:
            continue
        key = (name, int(d["line"]), str(d.get("code", "")))
        e = findings.setdefault(key, {"file": name, "line": int(d["line"]), "code": key[2], "messages": []})
        e["messages"].append(str(d.get("message", "")))

    def matches(f: dict, c: dict) -> str | None:
        if c["file"] != f["file"]:
            return None
        last, root, container = variable_parts(c)
        names = {x for x in (last, container) if x}
        if c["kind"] == "global-state":
            claims = CODE_KINDS.get(f["code"]) == "global-state"
            return "line" if claims and (f["file"], f["line"]) in grad_mode else None
        if c.get("line") and stmt_index.stmt(f["file"], f["line"]) == stmt_index.stmt(f["file"], c["line"]):
            named = any(names & set(IDENT_RE.findall(q)) for m in f["messages"] for q in QUOTED_RE.findall(m))
            if named or CODE_KINDS.get(f["code"], DEFAULT_KIND) == c["kind"]:
                return "line"
        if names:
            for msg in f["messages"]:
                for n in NAME_RE.findall(msg):
                    if n.split(".")[-1] in names or (root and n == root):
                        return "name"
        return None

    def judged(f: dict) -> bool:
        s, e = stmt_index.stmt(f["file"], f["line"])
        tl = traced.get(f["file"], set())
        if any(x in tl for x in range(s, e + 1)):
            return True
        for d, b0, end in spans.get(f["file"], []):
            if d == f["line"]:
                return any(x in tl for x in range(b0, end + 1))
        return False

    tp, fp, unjudged = [], [], []
    matched: dict[int, set] = defaultdict(set)
    for key, f in sorted(findings.items()):
        hits = [(c, how) for c in causes if (how := matches(f, c))]
        for c, how in hits:
            matched[c["id"]].add(how)
        row = {k: f[k] for k in ("file", "line", "code")}
        row["message"] = f["messages"][0][:200]
        row["source"] = stmt_index.text(f["file"], f["line"])
        if hits:
            tp.append({**row, "matched": [f"{c['kind']}:{c.get('variable')}@{c.get('line')} ({how})"
                                          for c, how in hits]})
        elif judged(f):
            fp.append(row)
        else:
            unjudged.append(row)

    claimed = [c for c in causes if c["kind"] in CLAIMED]

    def block(sel: Any) -> dict:
        cl = [c for c in claimed if sel(c["file"])]
        hit = [c for c in cl if c["id"] in matched]
        strict = [c for c in cl if "line" in matched.get(c["id"], ())]
        t = [x for x in tp if sel(x["file"])]
        f = [x for x in fp if sel(x["file"])]
        return {
            "claimed_causes": len(cl),
            "matched_causes": len(hit),
            "matched_causes_by_line": len(strict),
            "findings": len(t) + len(f) + sum(1 for x in unjudged if sel(x["file"])),
            "tp_findings": len(t),
            "fp_findings": len(f),
            "unjudged_findings": sum(1 for x in unjudged if sel(x["file"])),
            "precision": len(t) / (len(t) + len(f)) if t or f else None,
            "recall": len(hit) / len(cl) if cl else None,
            "recall_line_only": len(strict) / len(cl) if cl else None,
        }

    other = defaultdict(int)
    for c in causes:
        if c["kind"] not in CLAIMED:
            other[c["kind"]] += 1
    library = sum(1 for r in recs for c in r.get("recompile_causes", []) if c.get("scope") != "script")
    fn = [
        {k: c.get(k) for k in ("file", "line", "kind", "variable", "example_guard", "source_line", "count")}
        for c in claimed if c["id"] not in matched
    ]
    return {
        **block(lambda f: True),
        "per_file": {s: block(lambda f, s=s: f == s) for s in sorted(scripts)},
        "unclaimed_causes_by_kind": dict(other),
        "library_internal_causes": library,
        "grad_mode_matched": sum(1 for c in causes if c["kind"] == "global-state" and c["id"] in matched),
        "details": {"tp": tp, "fp": fp, "fn": fn, "unjudged": unjudged},
    }


def fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def line_of(name: str, b: dict) -> str:
    return (
        f"{name:22s} causes={b['claimed_causes']:3d} matched={b['matched_causes']:3d} "
        f"(by line {b['matched_causes_by_line']:3d}) findings={b['findings']:3d} TP={b['tp_findings']:3d} "
        f"FP={b['fp_findings']:3d} unjudged={b['unjudged_findings']:3d} P={fmt(b['precision'])} "
        f"R={fmt(b['recall'])} R_line={fmt(b['recall_line_only'])}"
    )


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("diagnostics")
    ap.add_argument("--labels", default=str(HERE / "labels.json"))
    ap.add_argument("--scorer", help="eval-zoo's score_zoo.py (default: found under ../shared)")
    ap.add_argument("--json")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args(argv)
    sz = load_module("score_zoo", Path(scorer_path(a.scorer)))
    with open(a.labels) as fh:
        labels = json.load(fh)
    folder = Path(a.labels).resolve().parent  # the scripts sit beside their labels
    res = score(labels, sz.load_diagnostics(a.diagnostics), sz.StatementIndex(str(folder)), folder)
    print(line_of("ALL", res))
    for name, b in res["per_file"].items():
        print(line_of(name, b))
    print(f"causes DYN2xx does not claim: {res['unclaimed_causes_by_kind']}; "
          f"library-internal: {res['library_internal_causes']}; grad-mode causes DYN208 finds: "
          f"{res['grad_mode_matched']}/{res['unclaimed_causes_by_kind'].get('global-state', 0)}")
    if a.verbose:
        for x in res["details"]["tp"]:
            print(f"  TP  {x['file']}:{x['line']} {x['code']} {x['matched']} | {x['source'][:80]}")
        for x in res["details"]["fn"]:
            print(f"  FN  {x['file']}:{x['line']} {x['kind']} {x['variable']} [{x['example_guard'][:60]}] "
                  f"| {(x['source_line'] or '')[:80]}")
        for x in res["details"]["fp"]:
            print(f"  FP  {x['file']}:{x['line']} {x['code']} | {x['source'][:80]}")
        for x in res["details"]["unjudged"]:
            print(f"  UNJ {x['file']}:{x['line']} {x['code']} | {x['source'][:80]}")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(res, fh, indent=1)
    return res


if __name__ == "__main__":
    main()
