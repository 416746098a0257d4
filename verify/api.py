"""Verification as a library: what ``dynalint verify``, ``dynalint fix --verify`` and the pytest plugin call.

Every measurement runs in its own worker process (see :mod:`dynalint.verify.isolation`);
this module only plans them, runs them in parallel and puts the results
together.  It does not import torch.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from dynalint.diagnostics import Diagnostic
from dynalint.engine import check_source, read_source
from dynalint.settings import Settings
from dynalint.verify.fixed import FixedSource, fixed_source, write_copy
from dynalint.verify.isolation import run_measurement
from dynalint.verify.prediction import Prediction, compare
from dynalint.verify.results import Measurement
from dynalint.verify.spec import MeasureSpec
from dynalint.verify.targets import INPUTS_CONVENTION, Ref, TargetError, parse_ref, same_file
from dynalint.verify.verdict import Verdict, improvement, judge

DEVICES = ("cpu", "cuda")


@dataclass
class Options:
    inputs: str | None = None
    """``FILE::FACTORY``; None: the target file's ``dynalint_inputs()``."""
    before_call: str | None = None
    """``FILE::FUNCTION`` called as ``f(i)`` (or ``f(i, target_name)``) before call ``i``."""
    devices: tuple[str, ...] = ("cpu",)
    mode: str = "eval"
    backend: str = "eager"
    timeout: float = 300.0
    fix: bool = True
    unsafe: bool = False
    what_if: bool = True
    seed: int = 0
    jobs: int = 1


@dataclass
class DeviceReport:
    device: str
    original: Measurement
    fixed: Measurement | None
    prediction: Prediction | None
    verdict: Verdict

    def to_json(self) -> dict[str, Any]:
        return {"device": self.device, "original": self.original.to_json(),
                "fixed": self.fixed.to_json() if self.fixed else None,
                "prediction": self.prediction.to_json() if self.prediction else None,
                "verdict": self.verdict.to_json()}


@dataclass
class TargetReport:
    target: str
    path: str
    name: str
    devices: list[DeviceReport] = field(default_factory=list)
    fixes: list[dict[str, Any]] = field(default_factory=list)
    fix_note: str | None = None
    fixed_path: str | None = None

    @property
    def problems(self) -> list[str]:
        return [p for d in self.devices for p in d.verdict.problems]

    def to_json(self) -> dict[str, Any]:
        return {"target": self.target, "path": self.path, "name": self.name, "fixes": self.fixes,
                "fix_note": self.fix_note, "devices": [d.to_json() for d in self.devices],
                "problems": self.problems}


@dataclass
class _FilePlan:
    path: str
    source: str
    diagnostics: list[Diagnostic]
    fixed: FixedSource | None
    fixed_path: str | None


def resolve_options_refs(options: Options) -> tuple[Ref | None, Ref | None]:
    inputs = parse_ref(options.inputs, what="--inputs") if options.inputs else None
    hook = parse_ref(options.before_call, what="--before-call") if options.before_call else None
    return inputs, hook


def make_spec(ref: Ref, variant: str, module_path: str, device: str, options: Options,
              settings: Settings, inputs: Ref | None, hook: Ref | None) -> MeasureSpec:
    config: dict[str, Any] = {"capture_scalar_outputs": settings.capture_scalar_outputs,
                              "capture_dynamic_output_shape_ops": settings.capture_dynamic_output_shape_ops}
    if settings.reorderable_logging_functions:
        config["reorderable_logging_functions"] = list(settings.reorderable_logging_functions)
    return MeasureSpec(
        target=str(ref), module_path=os.path.abspath(module_path), name=ref.name,
        origin_path=os.path.abspath(ref.path),
        inputs_path=None if inputs is None or same_file(inputs.path, ref.path) else os.path.abspath(inputs.path),
        inputs_name=inputs.name if inputs else INPUTS_CONVENTION,
        hook_path=None if hook is None or same_file(hook.path, ref.path) else os.path.abspath(hook.path),
        hook_name=hook.name if hook else None,
        variant=variant, device=device, mode=options.mode, backend=options.backend, dynamo_config=config,
        what_if=options.what_if, seed=options.seed, timeout=options.timeout)


def _plan_file(path: str, settings: Settings, options: Options, workdir: str) -> _FilePlan:
    source = read_source(path)
    diagnostics = check_source(source, path, settings)
    fixed, fixed_path = None, None
    if options.fix:
        fixed = fixed_source(source, path, settings, options.unsafe)
        if fixed.changed and fixed.source != source:
            fixed_path = write_copy(fixed.source, path, workdir)
    return _FilePlan(path, source, diagnostics, fixed, fixed_path)


def _fix_note(plan: _FilePlan, options: Options) -> str | None:
    if not options.fix:
        return "fixes not requested (--no-fix)"
    if plan.fixed is None:
        return None
    if plan.fixed.error:
        return plan.fixed.error
    if not plan.fixed_path:
        return "no fix applies to this file" + ("" if options.unsafe else " (unsafe fixes not requested)")
    return None


def verify_targets(refs: list[Ref], settings: Settings, options: Options,
                   on_report: Callable[[TargetReport], None] | None = None) -> list[TargetReport]:
    """Measure every target (original, and fixed when a fix applies) on every device requested."""
    inputs, hook = resolve_options_refs(options)
    workdir = tempfile.mkdtemp(prefix="dynalint-verify-")
    try:
        plans: dict[str, _FilePlan] = {}
        for ref in refs:
            if ref.realpath not in plans:
                plans[ref.realpath] = _plan_file(ref.path, settings, options, workdir)
        reports = []
        jobs = [(ref, device) for ref in refs for device in options.devices]

        def run_one(job: tuple[Ref, str]) -> DeviceReport:
            ref, device = job
            return _measure_pair(ref, device, plans[ref.realpath], settings, options, inputs, hook, workdir)

        with ThreadPoolExecutor(max_workers=max(1, options.jobs)) as pool:
            results = list(pool.map(run_one, jobs))
        by_job = dict(zip(jobs, results))
        for ref in refs:
            plan = plans[ref.realpath]
            report = TargetReport(
                target=str(ref), path=ref.path, name=ref.name,
                devices=[by_job[(ref, d)] for d in options.devices],
                fixes=[{"code": f.code, "line": f.line, "safety": f.safety, "description": f.description}
                       for f in (plan.fixed.applied if plan.fixed else [])],
                fix_note=_fix_note(plan, options), fixed_path=plan.fixed_path)
            reports.append(report)
            if on_report is not None:
                on_report(report)
        return reports
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _measure_pair(ref: Ref, device: str, plan: _FilePlan, settings: Settings, options: Options,
                  inputs: Ref | None, hook: Ref | None, workdir: str) -> DeviceReport:
    saved = os.path.join(workdir, f"outputs-{uuid.uuid4().hex}.pt")
    spec = make_spec(ref, "original", ref.path, device, options, settings, inputs, hook)
    spec.save_outputs = saved if plan.fixed_path else None
    original = run_measurement(spec)
    fixed = None
    if plan.fixed_path and original.status != "skipped":
        spec = make_spec(ref, "fixed", plan.fixed_path, device, options, settings, inputs, hook)
        spec.reference_outputs = saved if os.path.exists(saved) else None
        fixed = run_measurement(spec)
    prediction = compare(plan.diagnostics, original, plan.source) if original.executed else None
    fix_lines = [f.line for f in plan.fixed.applied] if plan.fixed else None
    return DeviceReport(device, original, fixed, prediction,
                        judge(original, fixed, _fix_note(plan, options), fix_lines))


# ---------------------------------------------------------------------------------------------
# dynalint fix --verify


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
    ``applied``, ``remaining``, ``unsafe_available``) plus what verification decided."""

    source: str
    applied: list[Any] = field(default_factory=list)
    """The confirmed fixes, as the fix engine's ``AppliedFix`` records (code, fixer, description, safety, line)."""
    remaining: list[Diagnostic] = field(default_factory=list)
    unsafe_available: int = 0
    confirmed: list[FixOutcome] = field(default_factory=list)
    rejected: list[FixOutcome] = field(default_factory=list)
    before: list[Measurement] = field(default_factory=list)
    after: list[Measurement] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.applied)


#: Rounds of "find fixes, verify each, keep the confirmed ones" (later rounds see earlier fixes).
CONFIRM_ROUNDS = 3


def confirm_fixes(path: str, targets: list[str], inputs: str | None, settings: Settings, unsafe: bool,
                  timeout: float, *, jobs: int | None = None, devices: Iterable[str] = ("cpu",)
                  ) -> VerificationResult:
    """Keep only the fixes of ``path`` that real Dynamo confirms on ``targets``.

    ``targets`` are names defined in ``path`` (``NAME`` or ``path::NAME``); ``inputs`` is
    ``FILE::FACTORY`` or None for the file's ``dynalint_inputs()``.  Each fix the engine offers
    (safe ones, plus unsafe ones when ``unsafe``) is applied alone to a temporary copy and every
    target is measured over its input stream, in a worker process with ``timeout`` seconds per
    measurement.  A fix is confirmed when, summed over the targets, graph breaks or recompiles
    went down and neither went up, and on every input set the fixed code's eager outputs equal
    the original's and its compiled outputs equal its eager ones.  Confirmed fixes that do not
    overlap are then combined (and the combination measured again); fixes that become possible
    only after others are found in a later round.  The user's file is not written: the result's
    ``source`` is the text to write (the original when nothing was confirmed), ``applied`` the
    confirmed fixes, ``rejected`` the others with their reasons.  Raises TargetError for a
    target or input reference that names nothing.
    """
    from dynalint.fixing import AppliedFix, apply_text_edits, diagnostics_with_fixes

    refs = []
    for t in targets:
        ref = parse_ref(t) if "::" in t else Ref(path, t)
        if not same_file(ref.path, path):
            raise TargetError(f"target {t!r} is not in {path}: fix --verify measures targets of the fixed file")
        refs.append(ref)
    options = Options(inputs=inputs, timeout=timeout, unsafe=unsafe, fix=False, what_if=False,
                      devices=tuple(devices), jobs=jobs or default_jobs())
    inputs_ref, hook = resolve_options_refs(options)
    original = read_source(path)
    workdir = tempfile.mkdtemp(prefix="dynalint-confirm-")
    result = VerificationResult(original)
    try:
        pairs = [(ref, d) for ref in refs for d in options.devices]
        saved = {pair: os.path.join(workdir, f"ref-{i}.pt") for i, pair in enumerate(pairs)}

        def measure(source_path: str, variant: str) -> list[Measurement]:
            def one(pair: tuple[Ref, str]) -> Measurement:
                spec = make_spec(pair[0], variant, source_path, pair[1], options, settings, inputs_ref, hook)
                if variant == "original":
                    spec.save_outputs = saved[pair]
                else:
                    spec.reference_outputs = saved[pair] if os.path.exists(saved[pair]) else None
                return run_measurement(spec)
            with ThreadPoolExecutor(max_workers=options.jobs) as pool:
                return list(pool.map(one, pairs))

        def allowed(d: Diagnostic) -> bool:
            return d.fix is not None and (unsafe or d.fix.safety == "safe")

        current = original
        rejected_keys: set[tuple[str, str, str]] = set()
        result.before = current_m = measure(path, "original")
        if any(m.status not in ("ok", "skipped") for m in current_m):
            bad = next(m for m in current_m if m.status not in ("ok", "skipped"))
            for d in filter(allowed, diagnostics_with_fixes(original, path, settings)):
                result.rejected.append(FixOutcome(d.code, d.line, d.fix.description, d.fix.safety, False,
                                                  [f"the original code cannot be measured: {bad.message}"]))
            return _finish(result, current, path, settings, unsafe, diagnostics_with_fixes)
        for _ in range(CONFIRM_ROUNDS):
            candidates = [d for d in diagnostics_with_fixes(current, path, settings)
                          if allowed(d) and _fix_key(current, d) not in rejected_keys]
            if not candidates:
                break
            trials = []
            for d in candidates:
                text = apply_text_edits(current, d.fix.edits)
                after = measure(write_copy(text, path, workdir), "fixed")
                ok, reasons = improvement(current_m, after)
                trials.append((d, text, after, ok, reasons))
            good = [t for t in trials if t[3]]
            for d, _, _, ok, reasons in trials:
                if not ok:
                    rejected_keys.add(_fix_key(current, d))
                    result.rejected.append(FixOutcome(d.code, d.line, d.fix.description, d.fix.safety, False, reasons))
            if not good:
                break
            good.sort(key=lambda t: _gain(current_m, t[2]), reverse=True)
            chosen, taken = [], []
            for t in good:
                spans = [(e.line, max(e.end_line, e.line + 1)) for e in t[0].fix.edits]
                if any(a < d and c < b for a, b in spans for c, d in taken):
                    continue
                chosen.append(t)
                taken.extend(spans)
            combined = apply_text_edits(current, [e for t in chosen for e in t[0].fix.edits])
            after = chosen[0][2] if len(chosen) == 1 else measure(write_copy(combined, path, workdir), "fixed")
            if len(chosen) > 1 and not improvement(current_m, after)[0]:
                chosen, combined, after = chosen[:1], chosen[0][1], chosen[0][2]
            for d, _, _, _, reasons in chosen:
                outcome = FixOutcome(d.code, d.line, d.fix.description, d.fix.safety, True, reasons)
                result.confirmed.append(outcome)
                result.applied.append(AppliedFix(d.code, _fixer_name(d.code), d.fix.description, d.fix.safety, d.line))
            current, current_m = combined, after
        result.after = current_m
        return _finish(result, current, path, settings, unsafe, diagnostics_with_fixes)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _fix_key(source: str, d: Diagnostic) -> tuple[str, str, str]:
    """A fix's identity across rounds (lines move when earlier fixes are applied)."""
    lines = source.splitlines()
    text = lines[d.line - 1].strip() if 0 < d.line <= len(lines) else ""
    return d.code, d.fix.description if d.fix else "", text


def _fixer_name(code: str) -> str:
    from dynalint.fixers.base import fixers_for

    found = fixers_for(code)
    return found[0].name if found else code


def _gain(before: list[Measurement], after: list[Measurement]) -> int:
    return sum(len(m.breaks) + len(m.recompiles) for m in before) - sum(
        len(m.breaks) + len(m.recompiles) for m in after)


def _finish(result: VerificationResult, source: str, path: str, settings: Settings, unsafe: bool,
            diagnostics_with_fixes: Callable[..., list[Diagnostic]]) -> VerificationResult:
    result.source = source
    final = diagnostics_with_fixes(source, path, settings)
    result.remaining = final
    if not unsafe:
        result.unsafe_available = sum(1 for d in final if d.fix is not None and d.fix.safety == "unsafe")
    return result


def default_jobs() -> int:
    return max(1, min(4, os.cpu_count() or 1))
