"""Verification as a library: what ``dynalint verify``, ``dynalint fix --verify`` and the pytest plugin call.

Every measurement runs in its own worker process (see :mod:`dynalint.verify.isolation`);
this module only plans them, runs them in parallel and puts the results
together.  It does not import torch.
"""
from __future__ import annotations

import difflib
import os
import shutil
import tempfile
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable

from dynalint.diagnostics import Diagnostic
from dynalint.engine import check_source, read_source
from dynalint.settings import Settings
from dynalint.verify.fixed import FixedSource, fixed_source, write_copy
from dynalint.verify.isolation import run_measurement
from dynalint.verify.prediction import Prediction, compare
from dynalint.verify.results import Measurement
from dynalint.verify.spec import MeasureSpec
from dynalint.verify.targets import INPUTS_CONVENTION, Ref, parse_ref, same_file
from dynalint.verify.verdict import Verdict, judge

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


def _diff(plan: _FilePlan) -> str:
    if plan.fixed is None or not plan.fixed_path:
        return ""
    return "".join(difflib.unified_diff(plan.source.splitlines(keepends=True),
                                        plan.fixed.source.splitlines(keepends=True),
                                        fromfile=plan.path, tofile=f"{plan.path} (fixed)"))


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
                fix_note=_fix_note(plan, options), fixed_diff=_diff(plan))
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
    prediction = compare(plan.diagnostics, original, plan.source) if original.status == "ok" else None
    fix_lines = [f.line for f in plan.fixed.applied] if plan.fixed else None
    return DeviceReport(device, original, fixed, prediction,
                        judge(original, fixed, _fix_note(plan, options), fix_lines))


def default_jobs() -> int:
    return max(1, min(4, os.cpu_count() or 1))


from dynalint.verify.confirm import FixOutcome, VerificationResult, confirm_fixes  # noqa: E402  (re-exported)

__all__ = ["Options", "TargetReport", "DeviceReport", "verify_targets", "confirm_fixes", "VerificationResult",
           "FixOutcome", "default_jobs"]
