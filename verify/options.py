"""What a verification is asked to do, and the references it names: the options, the
``[TARGET=]FILE::NAME`` entries of ``--inputs``/``--before-call``, and the spec of one measurement.
Shared by the planning (:mod:`dynalint.verify.api`) and fix confirmation (:mod:`dynalint.verify.confirm`)."""
from __future__ import annotations

import os
from dataclasses import dataclass

from dynalint.config.options import dynamo_config
from dynalint.config.settings import Settings
from dynalint.verify.spec import MeasureSpec, usable_cores
from dynalint.verify.targets import INPUTS_CONVENTION, Ref, TargetError, parse_ref, same_file


@dataclass
class Options:
    inputs: str | list[str] | None = None
    """``FILE::FACTORY``, or several ``[TARGET=]FILE::FACTORY`` (see :func:`refs_for`); None: the target
    file's ``dynalint_inputs()``."""
    before_call: str | list[str] | None = None
    """``FILE::FUNCTION`` called as ``f(i)`` (or ``f(i, target_name)``) before call ``i``; per target as
    ``inputs``."""
    devices: tuple[str, ...] = ("cpu",)
    mode: str = "eval"
    backend: str = "eager"
    timeout: float = 300.0
    fix: bool = True
    unsafe: bool = False
    what_if: bool = True
    seed: int = 0
    jobs: int = 1
    threads: int = 0
    """torch CPU threads per measurement (0: the usable cores shared out between the jobs)."""
    bench_calls: int = 0
    """With N > 0, also time cold start and N steady-state calls of original and fixed (see bench)."""


def _per_target(values: str | list[str] | None, what: str) -> list[tuple[str | None, Ref]]:
    """``[TARGET=]FILE::NAME`` entries as (target key or None for every target, reference)."""
    if values is None:
        return []
    out = []
    for text in [values] if isinstance(values, str) else values:
        key, sep, rest = text.partition("=")
        if sep and (key.isidentifier() or "::" in key):
            out.append((key, parse_ref(rest, what=what)))
        else:
            out.append((None, parse_ref(text, what=what)))
    return out


def _matches(key: str, ref: Ref) -> bool:
    if "::" not in key:
        return key == ref.name
    path, _, name = key.rpartition("::")
    return name == ref.name and os.path.exists(path) and same_file(path, ref.path)


def refs_for(ref: Ref, options: Options) -> tuple[Ref | None, Ref | None]:
    """(input factory, before-call hook) of one target: the entry naming it (``Net=`` or
    ``model.py::Net=``), else the entry without a target, else None (the file's conventions)."""
    found = []
    for values, what in ((options.inputs, "--inputs"), (options.before_call, "--before-call")):
        entries = _per_target(values, what)
        mine = [r for k, r in entries if k is not None and _matches(k, ref)]
        common = [r for k, r in entries if k is None]
        found.append(mine[-1] if mine else common[-1] if common else None)
    return found[0], found[1]


def resolve_options_refs(options: Options, refs: list[Ref] | None = None) -> None:
    """Check every ``--inputs``/``--before-call`` entry (raises TargetError); one naming a target
    that is not verified is an error too."""
    for values, what in ((options.inputs, "--inputs"), (options.before_call, "--before-call")):
        for key, _ in _per_target(values, what):
            if key is not None and refs is not None and not any(_matches(key, r) for r in refs):
                raise TargetError(f"{what} {key}=...: {key!r} names none of the targets")


def threads_per_job(options: Options) -> int:
    """Threads each measurement uses: ``--threads``, else ``OMP_NUM_THREADS`` when set, else the usable
    cores shared out between the jobs, so that parallel measurements do not oversubscribe them."""
    if options.threads:
        return options.threads
    env = os.environ.get("OMP_NUM_THREADS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    return max(1, usable_cores() // max(1, options.jobs))


def make_spec(ref: Ref, variant: str, module_path: str, device: str, options: Options,
              settings: Settings, inputs: Ref | None, hook: Ref | None) -> MeasureSpec:
    config = dynamo_config(settings)
    return MeasureSpec(
        target=str(ref), module_path=os.path.abspath(module_path), name=ref.name,
        origin_path=os.path.abspath(ref.path),
        inputs_path=None if inputs is None or same_file(inputs.path, ref.path) else os.path.abspath(inputs.path),
        inputs_name=inputs.name if inputs else INPUTS_CONVENTION,
        hook_path=None if hook is None or same_file(hook.path, ref.path) else os.path.abspath(hook.path),
        hook_name=hook.name if hook else None,
        variant=variant, device=device, mode=options.mode, backend=options.backend, dynamo_config=config,
        what_if=options.what_if, seed=options.seed, timeout=options.timeout, threads=threads_per_job(options),
        bench_calls=options.bench_calls)


def default_jobs() -> int:
    """One measurement at a time: two timed at once share the cores, and their timings mean little."""
    return 1
