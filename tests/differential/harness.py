"""Differential testing of the fixers: the original and the fixed code, run side by side.

A :class:`Case` is a module's source, the target to call (a function, or an
``nn.Module`` class built with ``init``) and an expression that builds the input
sets.  :func:`run_case` fixes the source (``--unsafe-fixes``), then runs both
versions on several seeded input sets, eager and compiled (``backend="eager"``),
and compares everything a user could observe:

- outputs: structure, dtypes, shapes, values, or the type of the exception
  raised; values by the rule ``dynalint verify`` uses (``torch.testing.assert_close``
  at the dtype's default tolerances, NaN and inf in the same places), and whether
  they are also bitwise equal (counted, not required);
- gradients of the floating-point inputs and of the parameters, ``None`` and
  zeros told apart;
- the inputs and the module state after each call (in-place updates),
  ``state_dict()`` and ``named_buffers()``;
- what the call printed, warned and logged;
- post-checks on modules: a dtype cast (``.double()``) and a few optimizer steps
  (SGD with momentum and weight decay, which moves a parameter whose gradient is
  zero but not one whose gradient is ``None``).

A difference is a failure unless the case names a *hazard*: a phrase of the
fixer's documentation that states the difference (``dynalint rule`` shows it).
"""
from __future__ import annotations

import contextlib
import io
import logging
import sys
import types
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from dynalint.fixers.support.base import all_fixers
from dynalint.verify.outputs import TOLERANCES, bitwise_equal
from dynalint.engine.fixing import FixResult, fix_source
from dynalint.analysis.program import Scope
from dynalint.config.settings import Settings


@dataclass(frozen=True)
class Case:
    name: str
    source: str
    target: str
    inputs: str
    """An expression building the list of input sets (tuples of call arguments); evaluated with
    ``torch`` and ``nan``/``inf`` in scope, after ``torch.manual_seed(seed)``."""
    fixer: str | None
    """The fixer expected to rewrite the case (None: no fixer may fire)."""
    init: str = "()"
    hazard: str | None = None
    """A phrase of the fixer's documentation that names the difference this case may show."""
    grad: bool = True
    """Also compare gradients (off for targets whose outputs are not differentiable)."""
    rtol: float | None = None
    atol: float | None = None
    """Tolerances instead of the dtype's defaults (None: the rule of ``dynalint verify``)."""
    compile_target: bool = True
    """False when the code compiles what it needs itself (``FixExample.compile_target``): the compiled
    run calls the target as it is."""


@dataclass
class Report:
    case: Case
    fixed: FixResult
    differences: list[str] = field(default_factory=list)
    compared: int = 0
    """Observations (one call of one seed, eager or compiled) compared with the original's."""
    bitwise: int = 0
    """Of those, the ones whose every tensor is bitwise equal to the original's."""

    @property
    def applied(self) -> list[str]:
        return [a.fixer for a in self.fixed.applied]


def fixer_doc(name: str) -> str:
    return next(f.reasoning for f in all_fixers() if f.name == name)


# --------------------------------------------------------------------------- loading and calling

_counter = [0]


def load(source: str) -> types.ModuleType:
    """A fresh module object running ``source`` (Dynamo needs its code, not a file)."""
    _counter[0] += 1
    name = f"dynalint_differential_{_counter[0]}"
    module = types.ModuleType(name)
    module.__file__ = f"<{name}>"
    sys.modules[name] = module
    torch.manual_seed(7)
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)
    return module


def build_inputs(case: Case, seed: int) -> list[tuple]:
    torch.manual_seed(seed)
    scope = {"torch": torch, "nan": float("nan"), "inf": float("inf")}
    return [tuple(s) for s in eval(case.inputs, scope)]


def _prepare(args: tuple, grad: bool) -> tuple:
    out = []
    for a in args:
        if isinstance(a, torch.Tensor):
            a = a.detach().clone()
            if grad and a.is_floating_point():
                a.requires_grad_(True)
        out.append(a)
    return tuple(out)


@dataclass
class Observation:
    output: Any = None
    error: str | None = None
    stdout: str = ""
    warnings: list[str] = field(default_factory=list)
    logs: list[str] = field(default_factory=list)
    inputs_after: list[Any] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)
    buffers: list[str] = field(default_factory=list)
    grads: dict[str, Any] = field(default_factory=dict)


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if not record.name.startswith("torch"):
            self.messages.append(f"{record.levelname}:{record.getMessage()}")


def observe(fn: Callable, module: torch.nn.Module | None, args: tuple, seed: int, grad: bool) -> Observation:
    obs = Observation()
    out = io.StringIO()
    handler = _Records()
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        with contextlib.redirect_stdout(out), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch.manual_seed(seed)
            try:
                obs.output = fn(*args)
            except Exception as e:  # the exception is part of the behaviour
                obs.error = type(e).__name__
        obs.warnings = [f"{w.category.__name__}:{w.message}" for w in caught  # torch's own (Dynamo's
                        if "torch" not in str(w.filename).replace("\\", "/").split("/")]  # about a break)
    finally:
        root.removeHandler(handler)
    obs.stdout = out.getvalue()
    obs.logs = handler.messages
    obs.inputs_after = [a.detach().clone() if isinstance(a, torch.Tensor) else a for a in args]
    if module is not None:
        obs.state = {k: v.detach().clone() for k, v in module.state_dict().items()}
        obs.buffers = [n for n, _ in module.named_buffers()]
    if grad and obs.error is None:
        obs.grads = _gradients(obs.output, args, module)
    return obs


def _float_leaves(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value] if value.is_floating_point() and value.requires_grad else []
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _float_leaves(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _float_leaves(v)]
    return []


def _gradients(output: Any, args: tuple, module: torch.nn.Module | None) -> dict[str, Any]:
    leaves = _float_leaves(output)
    params = list(module.named_parameters()) if module is not None else []
    for _, p in params:
        p.grad = None
    if not leaves:
        return {}
    try:
        total = sum(t.float().sum() for t in leaves)
        total.backward()
    except RuntimeError as e:
        return {"<backward>": type(e).__name__}
    grads: dict[str, Any] = {}
    for i, a in enumerate(args):
        if isinstance(a, torch.Tensor) and a.requires_grad:
            grads[f"arg{i}"] = None if a.grad is None else a.grad.detach().clone()
    for name, p in params:
        grads[name] = None if p.grad is None else p.grad.detach().clone()
    return grads


# --------------------------------------------------------------------------- comparing

def same(a: Any, b: Any, rtol: float | None, atol: float | None) -> str | None:
    """Why two observed values differ (None when they are the same); floating-point values by the
    dtype's tolerance (``TOLERANCES``) unless ``rtol``/``atol`` are given."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            return f"{type(a).__name__} vs {type(b).__name__}"
        if a.dtype != b.dtype:
            return f"dtype {a.dtype} vs {b.dtype}"
        if a.shape != b.shape:
            return f"shape {tuple(a.shape)} vs {tuple(b.shape)}"
        a, b = a.detach(), b.detach()
        if a.is_floating_point() or a.is_complex():
            default_rtol, default_atol = TOLERANCES.get(a.dtype, TOLERANCES[torch.float32])
            r = default_rtol if rtol is None else rtol
            t = default_atol if atol is None else atol
            if not torch.allclose(a, b, rtol=r, atol=t, equal_nan=True):
                x, y = a.double(), b.double()
                return f"values differ (max abs diff {(x - y).abs().nan_to_num().max().item():.3g})"
            return None
        return None if torch.equal(a, b) else "values differ"
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if type(a) is not type(b) or len(a) != len(b):
            return f"{type(a).__name__}[{len(a)}] vs {type(b).__name__}[{len(b)}]"
        for i, (x, y) in enumerate(zip(a, b)):
            why = same(x, y, rtol, atol)
            if why:
                return f"[{i}]: {why}"
        return None
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return f"keys {sorted(a)} vs {sorted(b)}"
        for k in a:
            why = same(a[k], b[k], rtol, atol)
            if why:
                return f"[{k!r}]: {why}"
        return None
    if isinstance(a, float) and isinstance(b, float):
        return same(torch.tensor(a, dtype=torch.float64), torch.tensor(b, dtype=torch.float64), rtol, atol)
    if type(a) is not type(b):
        return f"{type(a).__name__} vs {type(b).__name__}"
    return None if a == b else f"{a!r} vs {b!r}"


def bitwise(a: Any, b: Any) -> bool:
    """Every tensor in ``a`` identical bit for bit to the one in ``b`` (the rest equal)."""
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return bitwise_equal(a, b)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(bitwise(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(bitwise(a[k], b[k]) for k in a)
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (a != a and b != b)
    return type(a) is type(b) and a == b


def same_bits(before: Observation, after: Observation) -> bool:
    """The outputs (or exceptions), gradients, state and inputs after the call are bitwise equal."""
    return before.error == after.error and bitwise(before.output, after.output) and \
        bitwise(before.grads, after.grads) and bitwise(before.state, after.state) and \
        bitwise(before.inputs_after, after.inputs_after)


def compare(before: Observation, after: Observation, case: Case, where: str) -> list[str]:
    out = []
    checks = [("exception", before.error, after.error)]
    if before.error is None and after.error is None:
        checks.append(("output", before.output, after.output))
    checks += [("stdout", before.stdout, after.stdout), ("warnings", before.warnings, after.warnings),
               ("logs", before.logs, after.logs),
               ("inputs after the call", before.inputs_after, after.inputs_after),
               ("state_dict", before.state, after.state), ("named_buffers", before.buffers, after.buffers),
               ("gradients", before.grads, after.grads)]
    for what, a, b in checks:
        why = same(a, b, case.rtol, case.atol)
        if why:
            out.append(f"{where}: {what}: {why}")
    return out


# --------------------------------------------------------------------------- one case

def _target(module: types.ModuleType, case: Case) -> tuple[Callable, torch.nn.Module | None]:
    obj = getattr(module, case.target)
    if isinstance(obj, type):
        torch.manual_seed(0)
        instance = obj(*eval(case.init, {"torch": torch}))
        return instance, instance
    return obj, None


def run_stream(source: str, case: Case, seed: int, compiled: bool) -> tuple[list[Observation], Any]:
    """Every input set of one seed through a fresh copy of the code; the module (if any) for post-checks.
    Code that compiles what it needs itself (not ``case.compile_target``) runs with Dynamo off when not
    ``compiled``: eager is the reference, also for code that fails to compile as written.  (Not for the
    others: ``torch.cond`` run eagerly needs Dynamo.)"""
    torch._dynamo.reset()
    config = torch._dynamo.config
    # a capture flag the code sets in its header stays local to this run
    local = {"capture_scalar_outputs": config.capture_scalar_outputs,
             "capture_dynamic_output_shape_ops": config.capture_dynamic_output_shape_ops}
    if not compiled and not case.compile_target:
        local["disable"] = True
    with config.patch(**local):
        module = load(source)
        fn, instance = _target(module, case)
        call = torch.compile(fn, backend="eager") if compiled and case.compile_target else fn
        observations = []
        for args in build_inputs(case, seed):
            observations.append(observe(call, instance, _prepare(args, case.grad), seed, case.grad))
    return observations, instance


def post_checks(before: torch.nn.Module, after: torch.nn.Module, case: Case, seed: int) -> list[str]:
    """A dtype cast and a few optimizer steps, on the modules the streams left behind."""
    diffs = []
    args = build_inputs(case, seed)[0]
    for m in (before, after):
        m.double()
    cast = [observe(m, m, _prepare(tuple(a.double() if isinstance(a, torch.Tensor) and a.is_floating_point()
                                         else a for a in args), False), seed, False) for m in (before, after)]
    diffs += compare(cast[0], cast[1], case, "after .double()")
    for m in (before, after):
        m.float()
    steps = []
    for m in (before, after):
        params = [p for p in m.parameters()]
        if not params:
            return diffs
        opt = torch.optim.SGD(params, lr=0.1, momentum=0.9, weight_decay=0.01)
        for _ in range(3):
            opt.zero_grad(set_to_none=True)
            obs = observe(m, m, _prepare(args, True), seed, True)
            if obs.error is not None:
                break
            opt.step()
        steps.append({k: v.detach().clone() for k, v in m.state_dict().items()})
    why = same(steps[0], steps[1], case.rtol, case.atol)
    if why:
        diffs.append(f"after 3 optimizer steps: {why}")
    return diffs


#: Over the cases run in this process: (cases fixed, observations compared, bitwise equal ones,
#: cases bitwise equal on every observation); printed at the end of the test session.
TALLY = {"cases": 0, "compared": 0, "bitwise": 0, "bitwise_cases": 0}


def tally(report: Report) -> None:
    if report.compared:
        TALLY["cases"] += 1
        TALLY["compared"] += report.compared
        TALLY["bitwise"] += report.bitwise
        TALLY["bitwise_cases"] += report.bitwise == report.compared


def run_case(case: Case, seeds: tuple[int, ...], compiled_seeds: tuple[int, ...]) -> Report:
    fixed = fix_source(case.source, f"{case.name}.py", Settings(scope=Scope.ALL), unsafe=True)
    report = Report(case, fixed)
    if fixed.source == case.source:
        return report
    for seed in seeds:
        ref, ref_module = run_stream(case.source, case, seed, compiled=False)
        new, new_module = run_stream(fixed.source, case, seed, compiled=False)
        for i, (a, b) in enumerate(zip(ref, new)):
            report.differences += compare(a, b, case, f"eager seed {seed} call {i}")
            report.compared += 1
            report.bitwise += same_bits(a, b)
        if ref_module is not None and new_module is not None:
            report.differences += post_checks(ref_module, new_module, case, seed)
        if seed in compiled_seeds:
            compiled, _ = run_stream(fixed.source, case, seed, compiled=True)
            for i, (a, b) in enumerate(zip(ref, compiled)):
                report.differences += compare(a, b, case, f"compiled seed {seed} call {i}")
                report.compared += 1
                report.bitwise += same_bits(a, b)
    tally(report)
    return report
