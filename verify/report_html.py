"""A self-contained HTML page: the call stream as a timeline, before and after the fix.

Each call of the stream is one cell: served from the cache, compiled for the
first time, recompiled (with the guard that failed), run eagerly (frame
skipped or recompile limit hit) or raised; a mark under a cell says the call
met a graph break for the first time, a red frame and a cross that its outputs
were wrong (compiled against eager, or fixed against original).  No scripts, no external files: the page
can be attached to a bug report or a CI artefact as it is.
"""
from __future__ import annotations

import html
import os
from typing import Iterable

from dynalint.verify.api import DeviceReport, TargetReport
from dynalint.verify.report_text import recompile_causes, fixes_run, seconds
from dynalint.verify.results import CALL_STATUSES, Measurement
from dynalint.verify.targets import same_file
from dynalint.verify.verdict import mode_hint, slower_note

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em;color:#222;max-width:1200px}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:2em;border-bottom:1px solid #ddd}
code,pre{font:12px ui-monospace,monospace}pre{background:#f6f6f6;padding:.6em;overflow:auto}
table{border-collapse:collapse;margin:.5em 0}td,th{padding:2px 10px;text-align:right;border-bottom:1px solid #eee}
td:first-child,th:first-child{text-align:left}
.tl{display:flex;flex-wrap:wrap;gap:3px;margin:.3em 0 .8em}
.c{width:34px;text-align:center;font-size:11px;border-radius:3px;padding:3px 0 1px;color:#fff;position:relative}
.c small{display:block;height:12px;color:#b00020;font-weight:bold;background:#fff;border-radius:0 0 3px 3px}
.hit{background:#2e7d32}.compile{background:#1565c0}.recompile{background:#ef6c00}.eager{background:#757575}
.error{background:#b00020}.wrong{outline:3px solid #b00020;outline-offset:1px}.verdict{font-weight:bold}.confirmed{color:#2e7d32}.bad{color:#b00020}
.legend span{display:inline-block;padding:1px 8px;margin-right:6px;border-radius:3px;color:#fff;font-size:12px}
ul{margin:.2em 0}li{margin:.1em 0}
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _cell(m: Measurement, i: int) -> str:
    c = m.calls[i]
    tip = [f"call {i}: {c.status}", f"wall {seconds(c.wall_s)}"]
    if c.compile_s:
        tip.append(f"compile {seconds(c.compile_s)}")
    if c.guard_s is not None:
        tip.append(f"guards {seconds(c.guard_s)}")
    for r in c.recompiles:
        rec = m.recompiles[r]
        tip.append(f"recompile {rec.function} ({rec.category}): {rec.guards[0] if rec.guards else '?'}")
    for b in c.new_breaks:
        br = m.breaks[b]
        tip.append(f"graph break {os.path.basename(br.file)}:{br.line} {br.gb_type}")
    if c.error:
        tip.append(f"raised {c.error}")
    wrong = [(what, d) for what, d in (("compiled vs eager", c.compiled_vs_eager), ("vs original", c.vs_original))
             if d is not None and not d.equal]
    for what, d in wrong:
        tip.append(f"outputs differ ({what}): {d.note}")
    if not wrong and c.compiled_vs_eager is not None:
        tip.append("outputs equal" + (" (bitwise)" if c.compiled_vs_eager.bitwise else ""))
    mark = ("&#10007;" if wrong else "") + "&#9670;" * min(len(c.new_breaks), 3)
    return (f'<div class="c {_e(c.status)}{" wrong" if wrong else ""}" title="{_e(chr(10).join(tip))}">{i}'
            f'<small>{mark}</small></div>')


def _timeline(label: str, m: Measurement) -> str:
    if not m.calls:
        return f"<p><b>{_e(label)}</b>: {_e(m.status)}: {_e(m.message)}</p>"
    cells = "".join(_cell(m, i) for i in range(len(m.calls)))
    hr = "-" if m.hit_rate is None else f"{m.hit_rate:.0%}"
    return (f"<p><b>{_e(label)}</b>: {len(m.breaks)} graph breaks, {len(m.recompiles)} recompiles, "
            f"cache hit rate {hr}</p><div class='tl'>{cells}</div>")


def _details(m: Measurement) -> str:
    parts = []
    if m.status not in ("ok", "skipped"):
        parts.append(f"<p class='bad'>{_e(m.status)}: {_e(m.message)}</p>")
        hint = mode_hint(m)
        if hint:
            parts.append(f"<p>{_e(hint)}</p>")
        if m.traceback:
            parts.append(f"<pre>{_e(m.traceback)}</pre>")
    if m.breaks:
        items = "".join(
            f"<li><code>{_e(os.path.basename(b.file))}:{b.line}</code> in {_e(b.function)}: {_e(b.gb_type)}"
            f"{' ' + _e(b.gb_id) if b.gb_id else ''} (first at call {b.first_call})"
            f"{' &mdash; frame skipped' if b.frame_skipped else ''}<br><code>{_e(b.code)}</code>"
            f"<br><small>{_e(b.explanation)}</small></li>" for b in m.breaks)
        parts.append(f"<p>Graph breaks ({_e(m.variant)}):</p><ul>{items}</ul>")
    if m.recompiles:
        items = "".join(f"<li>call {r.call}: <code>{_e(r.function)}</code>, {_e(r.category)}: "
                        f"<code>{_e(r.guards[0] if r.guards else '?')}</code></li>" for r in m.recompiles)
        parts.append(f"<p>Recompiles ({_e(m.variant)}), with the guard that failed:</p><ul>{items}</ul>")
    c = m.cost
    if c is not None:
        parts.append(
            f"<p>Cost ({_e(m.variant)}): T<sub>avg</sub> = T<sub>guard</sub> {seconds(c.t_guard_s)} + T<sub>run</sub> "
            f"{seconds(c.t_run_s)} + f<sub>fail</sub> {c.f_fail:.2f} &times; T<sub>rebuild</sub> "
            f"{seconds(c.t_rebuild_s)} = {seconds(c.t_avg_model_s)}; measured {seconds(c.t_avg_measured_s)} per call; "
            f"compile {seconds(c.compile_s)}, run {seconds(c.run_s)}"
            f"{'; <b class=bad>recompile limit hit</b>' if c.limit_hit else ''}.</p>")
    for w in m.what_if:
        res = f"failed: {_e(w.error)}" if w.error else f"{w.recompiles} recompiles (saves {w.saved})" + (
            f", {w.breaks} break sites (saves {w.breaks_saved}), outputs "
            f"{'equal' if w.outputs_equal else 'differ'}" if w.remedy == "capture_flags" else "")
        parts.append(f"<p>What-if {_e(w.remedy)} on {_e(', '.join(w.dims))}: {res}</p>")
    return "".join(parts)


def _speed(d: DeviceReport) -> str:
    rows = [(label, m.bench) for label, m in (("original", d.original), ("fixed", d.fixed))
            if m is not None and m.bench is not None]
    if not rows:
        return ""
    body = "".join(f"<tr><td>{label}</td><td>{seconds(b.cold_s)}</td><td>{seconds(b.steady_s)}</td>"
                   f"<td>{seconds(b.eager_steady_s)}</td></tr>" for label, b in rows)
    s = d.speedup
    if s is not None:
        body += (f"<tr><td><b>original / fixed</b></td><td><b>{s['cold_start']:.2f}&times;</b></td>"
                 f"<td><b>{s['steady_state']:.2f}&times;</b></td><td></td></tr>")
    b = rows[0][1]
    note = slower_note(s, d.verdict.status)
    return (f"<p>Speed ({b.threads} threads; steady state: median of {b.calls} warm calls; cold start: first call, "
            f"compilation included, empty compiler cache):</p><table><tr><th></th><th>cold start</th>"
            f"<th>steady state</th><th>eager</th></tr>{body}</table>"
            + (f"<p class='bad'>{_e(note)}</p>" if note else ""))


def _device(r: TargetReport, d: DeviceReport) -> str:
    v = d.verdict
    cls = "confirmed" if v.status == "confirmed" else "bad" if v.problems else ""
    threads = f" &middot; {d.original.threads} threads" if d.original.threads else ""
    body = [f"<h3>{_e(d.device)} &middot; {_e(d.original.mode)} &middot; backend {_e(d.original.backend)}{threads}</h3>",
            f"<p class='verdict {cls}'>verdict: {_e(v.status)}</p>"
            f"<ul>{''.join(f'<li>{_e(x)}</li>' for x in v.reasons)}</ul>",
            _timeline("before (original)", d.original)]
    if d.fixed is not None:
        body.append(_timeline("after (fixed)", d.fixed))
    body.append(_details(d.original))
    if d.fixed is not None:
        body.append(_details(d.fixed))
    body.append(_speed(d))
    p = d.prediction
    if p is not None:
        body.append(f"<p>Static prediction: {len(p.confirmed)} confirmed, {len(p.not_confirmed)} not confirmed, "
                    f"{len(p.missed)} missed; recompiles predicted {'yes' if p.recompile_predicted else 'no'}, "
                    f"observed {'yes' if p.recompile_observed else 'no'}{_e(recompile_causes(p))}.</p>")
    return "".join(body)


def _fix_item(r: TargetReport, f: dict) -> str:
    where = "" if same_file(f.get("path") or r.path, r.path) else f"{_e(os.path.basename(f['path']))} "
    return f"<li>{where}line {f['line']} {_e(f['code'])} ({_e(f['safety'])}): {_e(f['description'])}</li>"


def render(reports: Iterable[TargetReport], title: str = "dynalint verify") -> str:
    legend = "".join(f"<span class='{s}'>{s}</span>" for s in CALL_STATUSES)
    sections = []
    for r in reports:
        ran, elsewhere = fixes_run(r)
        fixes = "".join(_fix_item(r, f) for f in ran)
        unrun = "".join(_fix_item(r, f) for f in elsewhere)
        sections.append(f"<h2><code>{_e(r.target)}</code></h2>"
                        + (f"<p>Fixes applied to a temporary copy:</p><ul>{fixes}</ul>" if fixes else "")
                        + (f"<p>Fixes in code this stream does not run (applied too; the measurement says nothing "
                           f"about them):</p><ul>{unrun}</ul>" if unrun else "")
                        + (f"<details><summary>the fixed source, as a diff</summary><pre>{_e(r.fixed_diff)}</pre>"
                           "</details>" if r.fixed_diff else "")
                        + (f"<p>No fixed variant: {_e(r.fix_note)}</p>" if r.fix_note else "")
                        + "".join(_device(r, d) for d in r.devices))
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{_e(title)}</title><style>{_CSS}</style>"
            f"</head><body><h1>{_e(title)}</h1><p class='legend'>Each cell is one call of the input stream: "
            f"{legend} &#9670; = a graph break met for the first time; <span class='c wrong' "
            f"style='color:#b00020;display:inline'>&#10007;</span> = outputs wrong (compiled against eager, or fixed "
            f"against original). Hover a cell for the details.</p>"
            + "".join(sections) + "</body></html>\n")


def write(path: str, reports: list[TargetReport]) -> None:
    """Write the page atomically (a temporary file next to it, then a rename)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(render(reports))
    os.replace(tmp, path)
