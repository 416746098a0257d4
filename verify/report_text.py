"""The terminal report: a table per target (original against fixed), then what explains the numbers."""
from __future__ import annotations

import os
from typing import TextIO

from dynalint.verify.api import DeviceReport, TargetReport
from dynalint.verify.prediction import Prediction
from dynalint.verify.results import Measurement
from dynalint.verify.targets import same_file
from dynalint.verify.verdict import mode_hint, slower_note


def seconds(value: float | None) -> str:
    if value is None:
        return "-"
    if value < 1e-3:
        return f"{value * 1e6:.1f} µs"
    if value < 1:
        return f"{value * 1e3:.1f} ms"
    return f"{value:.2f} s"


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _err(m: Measurement) -> str:
    if m.max_abs == float("inf"):
        return "inf"
    return "0" if m.max_abs == 0 else f"{m.max_abs:.2g}"


def _outputs(m: Measurement) -> str:
    """Compiled against eager, and fixed against original: equal by the dtype's tolerance, with how many
    input sets were also bitwise equal; RAISED when only the compiled call raised."""
    if not m.calls:
        return "-"
    raised = any(c.compiled_vs_eager is not None and c.compiled_vs_eager.note.startswith("only the compiled")
                 for c in m.calls)
    parts = ["compiled RAISED" if raised else
             _equal("equal", m, "compiled_vs_eager") if m.outputs_equal else
             "DIFFER" if m.outputs_equal is False else "-"]
    if m.equal_to_original is not None:
        parts.append(_equal("= original", m, "vs_original") if m.equal_to_original else "!= ORIGINAL")
    return ", ".join(parts)


def _equal(word: str, m: Measurement, attr: str) -> str:
    same, n = m.bitwise_count(attr)
    return f"{word} (bitwise {'all' if same == n else f'{same}/{n}'})" if same else f"{word} (not bitwise)"


def _first_difference(m: Measurement) -> str | None:
    """The first input set whose outputs differ, and why (an exception only one side raised, a value)."""
    for attr, what in (("compiled_vs_eager", "compiled vs eager"), ("vs_original", "vs original")):
        for c in m.calls:
            d = getattr(c, attr)
            if d is not None and not d.equal:
                return f"{what}, input set {c.index}: {d.note or 'outputs differ'}"
    return None


def _row(label: str, m: Measurement) -> str:
    if m.status == "skipped":
        return f"  {label:<9} {m.status.upper()}: {m.message}"
    if m.status in ("timeout", "crash") or (m.status == "error" and not m.calls):
        return f"  {label:<9} {m.status.upper()} (below)"  # the message is written once, under the table
    if m.status == "error":  # calls raised: counts over the calls that ran are no counts of the stream
        outputs = _outputs(m)
        said = outputs if "RAISED" in outputs else "RAISED (below)"
        return f"  {label:<9} {'-':>6} {'-':>7} {'-':>11} {'-':>9} {'-':>10}  {said}"
    return (f"  {label:<9} {m.graph_count if m.graph_count is not None else '-':>6} {len(m.breaks):>7} "
            f"{len(m.recompiles):>11} {_rate(m.hit_rate):>9} {_err(m):>10}  {_outputs(m)}")


def _where(path: str, line: int, fixed: bool) -> str:
    return f"{os.path.basename(path)}:{line}" + (" (fixed)" if fixed else "")


def _breaks(m: Measurement, prediction: Prediction | None, fixed: bool) -> list[str]:
    out = []
    for i, b in enumerate(m.breaks):
        codes = sorted(set(prediction.site_codes.get(i, []))) if prediction is not None and not fixed else []
        note = f"  [predicted {', '.join(codes)}]" if codes else ""
        skipped = " (frame skipped: runs eagerly)" if b.frame_skipped else ""
        if b.uncertain:
            skipped += " (line uncertain: Dynamo's line table for the code it resumes is shifted here)"
        gb = f" {b.gb_id}" if b.gb_id else ""
        out.append(f"    {_where(b.file, b.line, fixed)} in {b.function}: {b.gb_type}{gb}{skipped}"
                   f"{'  `' + b.code + '`' if b.code else ''}{note}")
    return out


def _recompiles(m: Measurement) -> list[str]:
    return [f"    call {r.call}: {r.function}: {r.category}: {r.guards[0] if r.guards else '?'}"
            + (f"  `{r.user_code.split('#')[0].strip()}`" if r.user_code else "") for r in m.recompiles]


def _cost(m: Measurement) -> str:
    c = m.cost
    if c is None:
        return ""
    text = (f"T_avg {seconds(c.t_avg_model_s)} = T_guard {seconds(c.t_guard_s)} + T_run {seconds(c.t_run_s)} + "
            f"f_fail {c.f_fail:.2f} x T_rebuild {seconds(c.t_rebuild_s)}; measured {seconds(c.t_avg_measured_s)}/call "
            f"(eager {seconds(c.eager_run_s)}); compile {seconds(c.compile_s)} vs run {seconds(c.run_s)}")
    if c.limit_hit:
        text += f"; HIT the recompile limit ({c.recompile_limit}): {c.eager_fallback_calls} calls ran eagerly"
    elif c.eager_fallback_calls:
        text += f"; {c.eager_fallback_calls} call(s) ran eagerly (frame skipped)"
    return text


def _speed(d: DeviceReport) -> list[str]:
    """Cold start and steady state of original and fixed, and their ratio (from --bench)."""
    rows = [(label, m.bench) for label, m in (("original", d.original), ("fixed", d.fixed))
            if m is not None and m.bench is not None]
    # the original under Dynamo's capture settings (the capture_flags what-if), timed the same way
    rows += [("flags", w.bench) for w in (d.original.what_if if d.original is not None else [])
             if w.remedy == "capture_flags" and w.bench is not None]
    if not rows:
        return []
    b = rows[0][1]
    out = [f"  speed ({b.threads} threads; cold start = first call incl. compilation, empty compiler cache; "
           f"steady state = median of {b.calls} warm calls):",
           f"  {'':<9} {'cold start':>11} {'steady':>11} {'eager':>11}"]
    out += [f"  {label:<9} {seconds(x.cold_s):>11} {seconds(x.steady_s):>11} {seconds(x.eager_steady_s):>11}"
            for label, x in rows]
    s = d.speedup
    if s is not None:
        out.append(f"  {'speedup':<9} {s['cold_start']:>10.2f}x {s['steady_state']:>10.2f}x   (original / fixed)")
    note = slower_note(s, d.verdict.status)
    if note:
        out.append(f"  note: {note}")
    return out


def _device(d: DeviceReport, fixes: bool, out: list[str]) -> None:
    o, f = d.original, d.fixed
    n = o.n_calls or len(o.calls)
    out.append(f"  [{d.device}, {o.mode}, backend {o.backend}{', ' + o.kind if o.kind else ''}"
               f"{f', {o.threads} thread' + 's' * (o.threads != 1) if o.threads else ''}"
               f"{f', {n} input set' + 's' * (n != 1) if n else ''}]")
    out.append(f"  {'':<9} {'graphs':>6} {'breaks':>7} {'recompiles':>11} {'hit rate':>9} {'max error':>10}  outputs")
    out.append(_row("original", o))
    if f is not None:
        out.append(_row("fixed", f))
    shown = d.verdict.reasons if d.verdict.status != "error" else []  # the error itself is shown below
    out.append(f"  verdict: {d.verdict.status}" + (f" ({'; '.join(shown)})" if shown else ""))
    for m in (o, f):
        if m is None:
            continue
        label = m.variant
        if m.status not in ("ok", "skipped"):
            out.append(f"  {label}: {m.status}: {m.message}")
            hint = mode_hint(m)
            if hint:
                out.append(f"  {hint}")
            if 'File "' in m.traceback:  # without a frame it only repeats the message
                out.extend("    " + ln for ln in m.traceback.splitlines())
            if m.log_tail:
                out.append(f"  the end of the output ({label}):")
                out.extend("    | " + ln for ln in m.log_tail.splitlines())
        if m.output_path:
            n = m.output_lines
            out.append(f"  output ({label}): {n} line{'s' * (n != 1)} written by the target, its hooks and torch, "
                       f"phase by phase, kept in {m.output_path}")
        difference = _first_difference(m) if m.status == "ok" else None
        if difference:
            out.append(f"  outputs ({label}): {difference}")
        if m.breaks:
            out.append(f"  graph breaks ({label}):")
            out.extend(_breaks(m, d.prediction, m.variant == "fixed"))
        if m.recompiles:
            out.append(f"  recompiles ({label}):")
            out.extend(_recompiles(m))
        cost = _cost(m) if any(c.status != "error" for c in m.calls) else ""
        if cost:
            out.append(f"  cost ({label}): {cost}")
        for w in m.what_if:
            if w.remedy == "capture_flags":
                res = f"FAILED: {w.error}" if w.error else (
                    f"{w.breaks} break sites (saves {w.breaks_saved}), {w.recompiles} recompiles "
                    f"(saves {w.saved}), outputs {'equal' if w.outputs_equal else 'DIFFER'}")
                out.append(f"  what-if ({label}): {' + '.join(w.dims)}: {res}")
                continue
            what = "mark_dynamic" if w.remedy == "mark_dynamic" else "pad to a multiple of 8"
            res = f"FAILED: {w.error}" if w.error else f"{w.recompiles} recompiles (saves {w.saved})"
            out.append(f"  what-if ({label}): {what} on {', '.join(w.dims)}: {res}")
    out.extend(_speed(d))
    p = d.prediction
    if p is not None:
        missed = ", ".join(f"{os.path.basename(b.file)}:{b.line}" for b in p.missed)
        not_conf = ", ".join(f"{x.line}:{x.code}" for x in p.not_confirmed)
        unsure = ", ".join(f"{x.line}:{x.code}" for x in p.uncertain)
        out.append(f"  prediction: {len(p.confirmed)} confirmed, {len(p.not_confirmed)} not confirmed"
                   f"{' (' + not_conf + ')' if not_conf else ''}, {len(p.missed)} missed"
                   f"{f', {len(p.uncertain)} uncertain ({unsure}: a break line there cannot be trusted)' if unsure else ''}"
                   f"{' (' + missed + ')' if missed else ''}; recompiles predicted "
                   f"{'yes' if p.recompile_predicted else 'no'}, observed {'yes' if p.recompile_observed else 'no'}"
                   f"{recompile_causes(p)}")


def recompile_causes(p: Prediction) -> str:
    """Where the observed recompiles came from against where they were predicted, as sets: matched
    (in both), missed (observed, not predicted), extra (predicted in code that ran, not observed).
    Nothing when every observed cause was predicted and every prediction observed."""
    if not p.unpredicted_recompiles and not (p.extra_recompiles and p.recompile_observed):
        return ""
    parts = [f"{what} {', '.join(where)}" for what, where in (
        ("matched", p.matched_recompiles), ("missed", p.unpredicted_recompiles), ("extra", p.extra_recompiles))
        if where]
    return f"; causes: {'; '.join(parts)}"


def fixes_run(r: TargetReport) -> tuple[list[dict], list[dict]]:
    """The report's fixes that lie in code the stream ran, and the others (which it says nothing about)."""
    ran_files = r.devices[0].original.executed_files if r.devices else {}

    def ran(fx: dict) -> bool:
        runs = ran_files.get(os.path.realpath(fx.get("path") or r.path))
        return not ran_files or any(a <= fx["line"] <= b for a, b in runs or [])

    return [fx for fx in r.fixes if ran(fx)], [fx for fx in r.fixes if not ran(fx)]


def write(reports: list[TargetReport], out: TextIO) -> None:
    for r in reports:
        lines = [r.target]
        mine, elsewhere = fixes_run(r)
        for fx in mine:
            where = "" if same_file(fx.get("path") or r.path, r.path) else f"{os.path.basename(fx['path'])} "
            lines.append(f"  fix: {where}line {fx['line']} {fx['code']} ({fx['safety']}): {fx['description']}")
        if elsewhere:
            n = len(elsewhere)
            lines.append(f"  ({n} other fix{'es' * (n != 1)} in these files, in code this stream does not run)")
        if r.fix_note:
            lines.append(f"  no fixed variant: {r.fix_note}")
        for d in r.devices:
            _device(d, bool(r.fixes), lines)
        out.write("\n".join(lines) + "\n\n")


#: How a measurement that yielded no counts ended, in words.
_FAILED = {"error": "raised", "timeout": "timed out", "crash": "crashed"}


def summary(reports: list[TargetReport]) -> str:
    """One line: the verdicts, and breaks and recompiles before and after over the targets where
    both ran; a variant that raised (or timed out, or crashed) has no counts to compare, and is
    named instead."""
    counts: dict[str, int] = {}
    b0 = b1 = r0 = r1 = compared = 0
    failed = []
    for r in reports:
        for d in r.devices:
            counts[d.verdict.status] = counts.get(d.verdict.status, 0) + 1
            final = d.fixed if d.fixed is not None else d.original
            broken = [m for m in (d.original, d.fixed) if m is not None and m.status in _FAILED]
            if broken:
                where = f" on {d.device}" if len(r.devices) > 1 else ""
                failed.append(f"the {broken[0].variant} code of {r.target}{where} {_FAILED[broken[0].status]}")
                continue
            if d.original.status != "ok":
                continue
            compared += 1
            b0 += len(d.original.breaks)
            r0 += len(d.original.recompiles)
            b1 += len(final.breaks)
            r1 += len(final.recompiles)
    parts = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
    text = f"dynalint: {len(reports)} target{'s' * (len(reports) != 1)} ({parts})"
    if compared:
        text += f"; graph breaks {b0} -> {b1}, recompiles {r0} -> {r1} (original -> fixed)"
    if failed:
        text += f"; {', '.join(failed)}: no counts to compare"
    return text + "."
