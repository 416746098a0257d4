"""``dynalint fix --verify``: keep only the fixes that real Dynamo confirms on the user's targets.

Each fix the engine offers is applied alone to a temporary copy of the file
and the targets are measured over their input streams; a fix that lies in
code the streams never run is left out without a measurement.  Confirmed fixes
that do not overlap are combined and measured together, and later rounds find
the fixes that become possible only after earlier ones.  The targets may live
in another file that imports the fixed one: the fixed copy is imported in its
place.  The measurement of the original code is shared by the files of one
``fix`` run as long as the files it ran stay unchanged.
"""
from __future__ import annotations

import atexit
import dataclasses
import os
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from dynalint.core.diagnostics import Diagnostic, Fix
from dynalint.core.positions import LineMapping
from dynalint.engine.pipeline import read_source
from dynalint.config.settings import Settings
from dynalint.core.text_lines import source_lines
from dynalint.verify.fixed import write_copy
from dynalint.verify.isolation import run_measurement
from dynalint.verify.options import Options, default_jobs, make_spec, refs_for, resolve_options_refs
from dynalint.verify.results import Measurement
from dynalint.verify.targets import Ref, parse_ref
from dynalint.verify.verdict import improvement

#: Rounds of "find fixes, measure each, keep the confirmed ones" (later rounds see earlier fixes).
CONFIRM_ROUNDS = 3


@dataclass
class FixOutcome:
    """One fix judged on the targets: confirmed, or left out and why."""

    code: str
    line: int
    description: str
    safety: str
    confirmed: bool
    reasons: list[str]


@dataclass
class VerificationResult:
    """What ``confirm_fixes`` returns; reads like the fix engine's ``FixResult`` (``source``,
    ``applied``, ``remaining``, ``unsafe_available``, ``refused``, ``errors``) plus what the
    measurements decided."""

    source: str
    applied: list[Any] = field(default_factory=list)
    """The confirmed fixes, as the fix engine's ``AppliedFix`` records (code, fixer, description, safety, line)."""
    remaining: list[Diagnostic] = field(default_factory=list)
    unsafe_available: int = 0
    refused: list[Any] = field(default_factory=list)
    """Always empty: a fix the measurements left out is in ``rejected``, and its remaining finding
    says why (``fix left out: ...``)."""
    errors: list[Any] = field(default_factory=list)
    """Always empty: a fixer that raises offers no fix and is logged by the fix engine."""
    confirmed: list[FixOutcome] = field(default_factory=list)
    rejected: list[FixOutcome] = field(default_factory=list)
    before: list[Measurement] = field(default_factory=list)
    after: list[Measurement] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.applied)


@dataclass
class _Baseline:
    measurements: list[Measurement]
    outputs: list[str]
    stamps: dict[str, tuple[int, int]]
    """Real path -> (mtime_ns, size) of every user file the measurement ran: valid while unchanged."""


_baselines: dict[tuple, _Baseline] = {}
_baseline_dir: list[str] = []


def _stamp(path: str) -> tuple[int, int]:
    try:
        st = os.stat(path)
        return st.st_mtime_ns, st.st_size
    except OSError:
        return 0, -1


def _workdir() -> str:
    if not _baseline_dir:
        _baseline_dir.append(tempfile.mkdtemp(prefix="dynalint-baseline-"))
        atexit.register(shutil.rmtree, _baseline_dir[0], True)
    return _baseline_dir[0]


def confirm_fixes(path: str, targets: list[str], inputs: str | list[str] | None, settings: Settings, unsafe: bool,
                  timeout: float, *, jobs: int | None = None, devices: Iterable[str] = ("cpu",),
                  mode: str = "eval", before_call: str | list[str] | None = None, project: Any = None,
                  entries: dict[str, Any] | None = None, kept: Callable[[str], Any] | None = None
                  ) -> VerificationResult:
    """Keep only the fixes of ``path`` that real Dynamo confirms on ``targets``.

    ``targets`` are ``FILE::NAME`` references (or bare ``NAME``s defined in ``path``); they may be
    in other files that import ``path``.  ``inputs`` is ``FILE::FACTORY``, or None for each target
    file's ``dynalint_inputs()``; several ``[TARGET=]FILE::FACTORY`` give targets their own (and
    ``before_call`` likewise).  ``mode`` is ``eval`` or ``train`` (gradients compared too); a
    ``devices`` entry ``auto`` is cuda when available, the CPU otherwise.  Each fix the engine offers (safe ones, plus unsafe ones when
    ``unsafe``) is applied alone to a temporary copy and every target is measured over its input
    stream in a worker process (``timeout`` seconds per measurement).  A fix is confirmed when,
    summed over the targets, graph breaks or recompiles went down and neither went up, and on every
    input set the fixed code's eager outputs equal the original's and its compiled outputs equal
    its eager ones.  The user's file is not written: ``source`` is the text to write (the original
    when nothing was confirmed), ``applied`` the confirmed fixes, ``rejected`` the others with the
    reasons.  ``project``/``entries``: the index of the files around ``path`` and what their
    compiled code hands it (see :meth:`dynalint.engine.session.Session.entries`), so the fixes offered
    are those ``dynalint fix`` makes; ``kept``: the analysis of a text of the file made already, if
    there is one (see :meth:`dynalint.engine.session.Session.kept`).  Each text is analysed once
    (the original, each text a confirmed fix makes).  Raises TargetError for a reference that names
    nothing.
    """
    from dynalint.engine.fixing import AppliedFix, apply_text_edits
    from dynalint.engine.fixing import diagnostics_with_fixes as with_fixes

    found: dict[str, list[Diagnostic]] = {}

    def diagnostics_with_fixes(text: str, p: str, s: Settings) -> list[Diagnostic]:
        if text not in found:
            found[text] = with_fixes(text, p, s, project=project, entries=entries,
                                     analysis=kept(text) if kept is not None else None)
        return found[text]

    refs = [parse_ref(t) if "::" in t else Ref(path, t) for t in targets]
    options = Options(inputs=inputs, before_call=before_call, timeout=timeout, unsafe=unsafe, fix=False,
                      what_if=False, devices=tuple(devices), mode=mode, jobs=jobs or default_jobs())
    resolve_options_refs(options, refs)
    pairs = [(ref, d) for ref in refs for d in options.devices]
    original = read_source(path)
    result = VerificationResult(original)

    def allowed(d: Diagnostic) -> bool:
        return d.fix is not None and (unsafe or d.fix.safety == "safe")

    def run_all(copy: str | None, reference: list[str] | None, save: list[str] | None) -> list[Measurement]:
        def one(i: int) -> Measurement:
            ref, device = pairs[i]
            in_file = os.path.realpath(ref.path) == os.path.realpath(path)
            module_path = copy if copy is not None and in_file else ref.path
            spec = make_spec(ref, "original" if copy is None else "fixed", module_path, device,
                             options, settings, *refs_for(ref, options))
            if copy is not None and not in_file:
                spec.substitutes = {os.path.abspath(path): copy}
            if reference is not None:
                spec.reference_outputs = reference[i] if os.path.exists(reference[i]) else None
            if save is not None:
                spec.save_outputs = save[i]
            return run_measurement(spec)
        with ThreadPoolExecutor(max_workers=options.jobs) as pool:
            return list(pool.map(one, range(len(pairs))))

    offered = [d for d in diagnostics_with_fixes(original, path, settings) if allowed(d)]
    if not offered:
        return _finish(result, original, path, settings, unsafe, diagnostics_with_fixes)
    key = (tuple(map(str, refs)), repr(inputs), repr(before_call), mode, options.devices, timeout,
           settings.fingerprint())
    base = _baselines.get(key)
    if base is None or any(_stamp(p) != s for p, s in base.stamps.items()):
        save = [os.path.join(_workdir(), f"{abs(hash(key))}-{i}.pt") for i in range(len(pairs))]
        measured = run_all(None, None, save)
        stamps = {p: _stamp(p) for m in measured for p in m.executed_files}
        stamps.update({os.path.realpath(r.path): _stamp(r.path) for r in refs})
        base = _baselines[key] = _Baseline(measured, save, stamps)
    result.before = result.after = base.measurements
    # "skipped": a device that is not here; a compile that failed is what a fix may mend
    bad = [m for m in base.measurements if m.status != "ok" and not m.compile_failed]
    if bad:
        reason = f"the original code cannot be measured: {bad[0].message}"
        result.rejected = [_outcome(d, False, [reason]) for d in offered]
        return _finish(result, original, path, settings, unsafe, diagnostics_with_fixes,
                       {_fix_key(original, d): reason for d in offered})

    workdir = tempfile.mkdtemp(prefix="dynalint-confirm-")
    try:
        current, current_path, current_m = original, os.path.realpath(path), base.measurements
        rejected_keys: dict[tuple[str, str, str], str] = {}
        for _ in range(CONFIRM_ROUNDS):
            ran = [tuple(r) for m in current_m for r in m.executed_files.get(current_path, [])]
            at_original = _at_original(original, current)
            trials = []
            for d in diagnostics_with_fixes(current, path, settings):
                if not allowed(d) or _fix_key(current, d) in rejected_keys:
                    continue
                if not _touches(d, ran):
                    reason = "it lies in code the targets' input streams do not run"
                    rejected_keys[_fix_key(current, d)] = reason
                    result.rejected.append(_outcome(at_original(d), False, [reason]))
                    continue
                text = apply_text_edits(current, _fix(d).edits)
                copy = write_copy(text, path, workdir)
                after = run_all(copy, base.outputs, None)
                ok, reasons = improvement(current_m, after)
                if not ok:
                    rejected_keys[_fix_key(current, d)] = "; ".join(reasons)
                    result.rejected.append(_outcome(at_original(d), False, reasons))
                else:
                    trials.append((d, text, copy, after, reasons))
            if not trials:
                break
            trials.sort(key=lambda t: _gain(current_m, t[3]), reverse=True)
            chosen: list[Any] = []
            taken: list[tuple[int, int]] = []
            for t in trials:
                spans = [(e.line, max(e.end_line, e.line + 1)) for e in _fix(t[0]).edits]
                if not any(a < d and c < b for a, b in spans for c, d in taken):
                    chosen.append(t)
                    taken.extend(spans)
            if len(chosen) == 1:
                _, current, copy, current_m, _ = chosen[0]
            else:
                combined = apply_text_edits(current, [e for t in chosen for e in _fix(t[0]).edits])
                copy = write_copy(combined, path, workdir)
                after = run_all(copy, base.outputs, None)
                if improvement(current_m, after)[0]:
                    current, current_m = combined, after
                else:
                    chosen = chosen[:1]
                    _, current, copy, current_m, _ = chosen[0]
            current_path = os.path.realpath(copy)
            for d, _, _, _, reasons in chosen:
                d = at_original(d)
                result.confirmed.append(_outcome(d, True, reasons))
                result.applied.append(AppliedFix(d.code, _fixer_name(d), _fix(d).description, _fix(d).safety, d.line,
                                                 d.column))
        result.after = current_m
        return _finish(result, current, path, settings, unsafe, diagnostics_with_fixes, rejected_keys)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _at_original(original: str, current: str) -> Callable[[Diagnostic], Diagnostic]:
    """A diagnostic found in ``current`` (the text earlier rounds' fixes rewrote) -> the same at its
    position in ``original``, the text the user wrote, where ``fix`` reports it; a line a rewrite
    replaced maps to the first line of what it replaced, at column 1."""
    if current == original:
        return lambda d: d
    mapping = LineMapping(original, current)

    def back(d: Diagnostic) -> Diagnostic:
        line, unchanged = mapping.original(d.line)
        return dataclasses.replace(d, line=line, column=d.column if unchanged else 1)

    return back


def _fix(d: Diagnostic) -> Fix:
    """The fix of a diagnostic that has one (the candidates were filtered on it)."""
    assert d.fix is not None
    return d.fix


def _outcome(d: Diagnostic, confirmed: bool, reasons: list[str]) -> FixOutcome:
    return FixOutcome(d.code, d.line, _fix(d).description, _fix(d).safety, confirmed, reasons)


def _touches(d: Diagnostic, ran: list[tuple[int, ...]]) -> bool:
    """Whether the diagnostic's statement or the fix's edits are on lines the streams ran."""
    spans = [(d.line, d.end_line)] + [(e.line, max(e.line, e.end_line - 1)) for e in _fix(d).edits] if d.fix else []
    return any(a <= hi and lo <= b for lo, hi in spans for a, b in ran)


def _fix_key(source: str, d: Diagnostic) -> tuple[str, str, str]:
    """A fix's identity across rounds (lines move when earlier fixes are applied)."""
    lines = source_lines(source)
    text = lines[d.line - 1].strip() if 0 < d.line <= len(lines) else ""
    return d.code, d.fix.description if d.fix else "", text


def _fixer_name(d: Diagnostic) -> str:
    """The fixer that made the diagnostic's fix (recorded on the fix)."""
    return _fix(d).fixer or d.code


def _gain(before: list[Measurement], after: list[Measurement]) -> int:
    return sum(len(m.breaks) + len(m.recompiles) for m in before) - sum(
        len(m.breaks) + len(m.recompiles) for m in after)


def _finish(result: VerificationResult, source: str, path: str, settings: Settings, unsafe: bool,
            diagnostics_with_fixes: Any, why: dict[tuple[str, str, str], str] | None = None) -> VerificationResult:
    """Fill in the final text and what remains; a remaining diagnostic whose fix was left out says why."""
    result.source = source
    remaining = diagnostics_with_fixes(source, path, settings)
    why = why or {}
    result.remaining = [dataclasses.replace(d, message=f"{d.message} (fix left out: {why[k]})")
                        if d.fix is not None and (k := _fix_key(source, d)) in why else d for d in remaining]
    if not unsafe:
        result.unsafe_available = sum(1 for d in result.remaining if d.fix is not None and d.fix.safety == "unsafe")
    return result
