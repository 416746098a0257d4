"""Verification as a library: what ``dynalint verify``, ``dynalint fix --verify`` and the pytest plugin call.

Every measurement runs in its own worker process (see :mod:`dynalint.verify.isolation`);
this module only plans them, runs them (one at a time unless asked otherwise) and puts the results
together.  It does not import torch.
"""
from __future__ import annotations

import dataclasses
import difflib
import os
import shutil
import tempfile
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable

from dynalint.core.diagnostics import Diagnostic
from dynalint.config.resolver import ConfigError, Configuration, resolve
from dynalint.engine.pipeline import read_source
from dynalint.engine.session import Session
from dynalint.config.settings import Settings
from dynalint.core.text_lines import split_lines
from dynalint.verify.fixed import FixedSource, fixed_source, write_copy
from dynalint.verify.isolation import run_measurement, start_early
from dynalint.verify.prediction import Prediction, compare_files
from dynalint.verify.results import Measurement
from dynalint.verify.targets import Ref, same_file
from dynalint.verify.verdict import Verdict, judge
from dynalint.verify.options import (Options, default_jobs, make_spec, refs_for,  # noqa: F401  (re-exported)
                                     resolve_options_refs, threads_per_job)


@dataclass
class DeviceReport:
    device: str
    original: Measurement
    fixed: Measurement | None
    prediction: Prediction | None
    verdict: Verdict
    fixed_plans: list[Any] = field(default_factory=list, repr=False)
    """The other files the stream ran that the fixed variant imports fixed (see verify_targets)."""

    @property
    def speedup(self) -> dict[str, float] | None:
        """Original over fixed for cold start and steady state (above 1: the fix made it faster),
        from the benchmark phases of this run; None without both."""
        o = self.original.bench
        f = self.fixed.bench if self.fixed is not None else None
        if o is None or f is None or not f.cold_s or not f.steady_s:
            return None
        return {"cold_start": o.cold_s / f.cold_s, "steady_state": o.steady_s / f.steady_s}

    def to_json(self) -> dict[str, Any]:
        return {"device": self.device, "original": self.original.to_json(),
                "fixed": self.fixed.to_json() if self.fixed else None,
                "prediction": self.prediction.to_json() if self.prediction else None,
                "verdict": self.verdict.to_json(), "speedup": self.speedup}


@dataclass
class TargetReport:
    target: str
    path: str
    name: str
    devices: list[DeviceReport] = field(default_factory=list)
    fixes: list[dict[str, Any]] = field(default_factory=list)
    fix_note: str | None = None
    fixed_diff: str = ""
    """Unified diff of the fixed variant against the file (the user's file itself is not changed)."""

    @property
    def problems(self) -> list[str]:
        return [p for d in self.devices for p in d.verdict.problems]

    def to_json(self) -> dict[str, Any]:
        return {"target": self.target, "path": self.path, "name": self.name, "fixes": self.fixes,
                "fix_note": self.fix_note, "fixed_diff": self.fixed_diff,
                "devices": [d.to_json() for d in self.devices],
                "problems": self.problems}


@dataclass
class _FilePlan:
    path: str
    source: str
    diagnostics: list[Diagnostic]
    fixed: FixedSource | None
    fixed_path: str | None


def _session(refs: list[Ref], settings: Settings, workdir: str | None = None) -> Session:
    """The session of the targets' configuration root, with ``settings`` as its settings.  ``workdir``:
    the run's own folder, where the session caches the analyses its project passes make: the pass
    that plans one file then reads what an earlier one found in the files around it (the files a
    target's stream ran are planned one at a time, and each file's pass analyses the files that
    import it) instead of analysing them again."""
    try:
        config = resolve([r.path for r in refs])
    except ConfigError:
        config = Configuration(settings, os.getcwd())
    cache_dir = os.path.join(workdir, "analyses") if workdir is not None else None
    return Session(dataclasses.replace(config, settings=settings), cache_dir=cache_dir)


def _plan_file(path: str, session: Session, options: Options, workdir: str) -> _FilePlan:
    """What ``check`` reports in one file and what ``fix`` would make of it (the project around it included)."""
    source = read_source(path)
    diagnostics = session.check_buffer(path, source, keep=options.fix)  # the fix goes on from this analysis
    fixed, fixed_path = None, None
    if options.fix:
        fixed = fixed_source(source, path, session.config.settings_for(path), options.unsafe,
                             fix=lambda: session.fix_buffer(path, source, unsafe=options.unsafe))
        if fixed.changed and fixed.source != source:
            fixed_path = write_copy(fixed.source, path, workdir)
    return _FilePlan(path, source, diagnostics, fixed, fixed_path)


def _diff(plan: _FilePlan) -> str:
    if plan.fixed is None or not plan.fixed_path:
        return ""
    return "".join(difflib.unified_diff(split_lines(plan.source, keepends=True),
                                        split_lines(plan.fixed.source, keepends=True),
                                        fromfile=plan.path, tofile=f"{plan.path} (fixed)"))


def _fix_note(plans: list[_FilePlan], options: Options) -> str | None:
    """Why there is no fixed variant (None when there is one): the target's file first, then the files it ran."""
    if not options.fix:
        return "fixes not requested (--no-fix)"
    if any(p.fixed_path for p in plans):
        return None
    errors = [p.fixed.error for p in plans if p.fixed is not None and p.fixed.error]
    if errors:
        return errors[0]
    if plans[0].fixed is None:
        return None
    where = "this file" if len(plans) == 1 else "the files this target runs"
    return f"no fix applies to {where}" + ("" if options.unsafe else " (unsafe fixes not requested)")


def verify_targets(refs: list[Ref], settings: Settings, options: Options,
                   on_report: Callable[[TargetReport], None] | None = None) -> list[TargetReport]:
    """Measure every target (original, and fixed when a fix applies) on every device requested.

    Predictions and fixes are those of ``check`` and ``fix``: each file is analysed with the
    project of its configuration root around it (``settings`` in place of the configured ones).

    The fixed variant fixes the target's file and every other user file its stream ran (a helper
    imported from another file): the fixed copies are imported in place of the originals.
    """
    resolve_options_refs(options, refs)
    start_early()
    workdir = tempfile.mkdtemp(prefix="dynalint-verify-")
    try:
        session = _session(refs, settings, workdir)
        plans: dict[str, _FilePlan] = {}
        lock = threading.Lock()

        def plan(path: str) -> _FilePlan:
            real = os.path.realpath(path)
            with lock:
                if real not in plans:
                    plans[real] = _plan_file(path, session, options, workdir)
                return plans[real]

        for ref in refs:
            plan(ref.path)
        reports = []
        jobs = [(ref, device) for ref in refs for device in options.devices]

        def run_one(job: tuple[Ref, str]) -> DeviceReport:
            ref, device = job
            return _measure_pair(ref, device, plan, settings, options, workdir)

        with ThreadPoolExecutor(max_workers=max(1, options.jobs)) as pool:
            results = list(pool.map(run_one, jobs))
        by_job = dict(zip(jobs, results))
        for ref in refs:
            devices = [by_job[(ref, d)] for d in options.devices]
            used = _used_plans(devices, plan(ref.path))
            report = TargetReport(
                target=str(ref), path=ref.path, name=ref.name, devices=devices,
                fixes=[{"path": p.path, "code": f.code, "line": f.line, "safety": f.safety,
                        "description": f.description}
                       for p in used for f in (p.fixed.applied if p.fixed and p.fixed_path else [])],
                fix_note=_fix_note(used, options), fixed_diff="".join(_diff(p) for p in used))
            reports.append(report)
            if on_report is not None:
                on_report(report)
        return reports
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _used_plans(devices: list[DeviceReport], own: _FilePlan) -> list[_FilePlan]:
    """The target's own file first, then the other files its streams ran that have a fixed variant."""
    used = [own]
    for d in devices:
        for p in d.fixed_plans:
            if all(p is not u for u in used):
                used.append(p)
    return used


def _other_files(original: Measurement, ref: Ref) -> list[str]:
    """The user files other than the target's that the stream ran (where a fix may also apply)."""
    return sorted(p for p in original.executed_files
                  if p.endswith(".py") and os.path.isfile(p) and not same_file(p, ref.path))


def _comparable(original: Measurement) -> bool:
    """Whether a fixed variant has something to be compared against: not when the original was
    skipped, or failed before its first call (loading the module or its inputs, which the fixed
    variant would repeat, at the same cost, with the same message)."""
    return original.status == "ok" or (original.status != "skipped" and bool(original.calls))


def _measure_pair(ref: Ref, device: str, plan: Callable[[str], _FilePlan], settings: Settings,
                  options: Options, workdir: str) -> DeviceReport:
    inputs, hook = refs_for(ref, options)
    own = plan(ref.path)
    saved = os.path.join(workdir, f"outputs-{uuid.uuid4().hex}.pt")
    spec = make_spec(ref, "original", ref.path, device, options, settings, inputs, hook)
    spec.save_outputs = saved if options.fix else None
    original = run_measurement(spec)
    others = [plan(p) for p in _other_files(original, ref)] if options.fix and original.status == "ok" else []
    others = [p for p in others if p.fixed_path]
    fixed = None
    if (own.fixed_path or others) and _comparable(original):
        spec = make_spec(ref, "fixed", own.fixed_path or ref.path, device, options, settings, inputs, hook)
        spec.coverage = False  # the report reads which lines ran from the original
        spec.substitutes = {os.path.abspath(p.path): p.fixed_path for p in others if p.fixed_path}
        spec.reference_outputs = saved if os.path.exists(saved) else None
        fixed = run_measurement(spec)
    prediction = None
    if original.status == "ok":
        ran = [own] + [plan(p) for p in _other_files(original, ref)]
        prediction = compare_files([(p.path, p.diagnostics, p.source) for p in ran], original)
    fix_lines = [f.line for f in own.fixed.applied] if own.fixed and not others else None
    report = DeviceReport(device, original, fixed, prediction,
                          judge(original, fixed, _fix_note([own] + others, options), fix_lines))
    report.fixed_plans = others
    return report


from dynalint.verify.confirm import FixOutcome, VerificationResult, confirm_fixes  # noqa: E402  (re-exported)

__all__ = ["Options", "TargetReport", "DeviceReport", "verify_targets", "confirm_fixes", "VerificationResult",
           "FixOutcome", "default_jobs"]
