"""``dynalint verify``: measure targets with real Dynamo, as written and as ``dynalint fix`` would rewrite them.

Exit status: 0 everything verified (fixes confirmed, no break, recompile,
error or output difference left); 1 problems found or a fix not confirmed;
2 usage errors, or ``--device cuda`` where no GPU is available (nothing measured).
torch is imported only by the worker processes, never here.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
from typing import Any, Callable

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE = 0, 1, 2


def register(subparsers: argparse._SubParsersAction, common_options: Callable[[argparse.ArgumentParser], None]
             ) -> None:
    p = subparsers.add_parser(
        "verify", help="measure graph breaks, recompiles and outputs with real Dynamo, before and after fixes",
        description="Compile each target with torch.compile over a stream of input sets, in a worker process, "
                    "for the code as it is and as `dynalint fix` would rewrite it (in a temporary copy).")
    p.add_argument("targets", nargs="+", metavar="FILE::NAME",
                   help="a function, an nn.Module class, or a factory returning a module")
    add_measure_options(p)
    p.add_argument("--backend", default="eager",
                   help="torch.compile backend (default: eager; inductor to time what compiled code buys)")
    p.add_argument("--timeout", type=float, default=300.0, metavar="SECONDS",
                   help="limit per measurement process (default: 300)")
    p.add_argument("--format", choices=("text", "json"), default="text", help="report format on stdout")
    p.add_argument("--html", metavar="FILE", help="also write a self-contained HTML timeline report")
    p.add_argument("--no-fix", action="store_true", help="measure the code as it is only")
    p.add_argument("--unsafe-fixes", action="store_true", help="include the fixes that hold under stated assumptions")
    p.add_argument("--no-what-if", action="store_true", help="skip the dynamic-shape and padding reruns")
    p.add_argument("--seed", type=int, default=0, help="seed of every random generator (default: 0)")
    p.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                   help="measurements run in parallel (default: 1, so timings do not share the cores)")
    p.add_argument("--threads", type=int, default=0, metavar="N",
                   help="torch CPU threads per measurement (default: OMP_NUM_THREADS if set, else the usable cores "
                        "shared out between the jobs)")
    p.add_argument("--bench", type=int, nargs="?", const=20, default=0, metavar="N",
                   help="also time cold start (first call, compilation included, empty compiler cache) and "
                        "steady state (median of N warm calls, default 20) of original and fixed")
    p.add_argument("--quiet", "-q", action="store_true", help="no summary line on stderr")
    common_options(p)


def add_measure_options(p: argparse.ArgumentParser) -> None:
    """The options that say how targets are measured (shared with ``fix --verify``)."""
    p.add_argument("--inputs", metavar="[TARGET=]FILE::FACTORY", action="append",
                   help="a function returning a list of input sets (default: the target file's dynalint_inputs()); "
                        "repeat with TARGET= (a NAME or FILE::NAME) to give each target its own")
    p.add_argument("--before-call", metavar="[TARGET=]FILE::FUNCTION", action="append",
                   help="called as f(i) before call i (default: dynalint_before_call() if defined); "
                        "per target as --inputs")
    p.add_argument("--device", choices=("cpu", "cuda", "auto", "all"), default="cpu",
                   help="where to run: cuda fails when no GPU is available, auto takes cuda when there is one "
                        "and the CPU otherwise, all measures on both (default: cpu)")
    p.add_argument("--mode", choices=("eval", "train"), default="eval",
                   help="eval: module.eval() under no_grad (default); train: inputs require grad, backward pass")


def devices_of(choice: str) -> tuple[str, ...]:
    return ("cpu", "cuda") if choice == "all" else (choice,)


def torch_available() -> bool:
    """Whether torch can be imported here (checked without importing it)."""
    import importlib.util

    try:
        return importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):
        return False


def cuda_missing(reports: list[Any], device: str) -> str | None:
    """The message when ``--device cuda`` measured nothing because no GPU is available, else None."""
    if device != "cuda":
        return None
    skipped = [d for r in reports for d in r.devices if d.original.status == "skipped"]
    if not skipped:
        return None
    return (f"dynalint: --device cuda: {skipped[0].original.message}; use --device auto to measure on the CPU "
            f"when there is no GPU")


def _finite(value: Any) -> Any:
    """JSON without NaN/Infinity (not valid JSON): non-finite floats become strings."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _torch_version() -> str | None:
    import importlib.metadata

    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return None


def run(args: argparse.Namespace) -> int:
    from dynalint.config.resolver import resolve_args
    from dynalint.core.source import SourceError, read_source
    from dynalint.verify.isolation import start_early
    from dynalint.verify.options import Options, default_jobs, refs_for, resolve_options_refs
    from dynalint.verify.targets import INPUTS_CONVENTION, TargetError, check_defined, parse_ref, top_level_names

    if _torch_version() is None or not torch_available():
        print("dynalint: verify needs torch (pip install torch)", file=sys.stderr)
        return EXIT_USAGE
    if args.timeout <= 0 or (args.jobs is not None and args.jobs < 1) or args.threads < 0 or args.bench < 0:
        print("dynalint: --timeout, --jobs, --threads and --bench must be positive", file=sys.stderr)
        return EXIT_USAGE
    options = Options(inputs=args.inputs, before_call=args.before_call, devices=devices_of(args.device),
                      mode=args.mode, backend=args.backend, timeout=args.timeout, fix=not args.no_fix,
                      unsafe=args.unsafe_fixes, what_if=not args.no_what_if, seed=args.seed,
                      jobs=args.jobs or default_jobs(), threads=args.threads, bench_calls=args.bench)
    try:
        refs = [parse_ref(t) for t in args.targets]
        resolve_options_refs(options, refs)
        for ref in refs:
            source = read_source(ref.path)
            check_defined(ref, source)
            names = top_level_names(source)
            inputs, hook = refs_for(ref, options)
            if inputs is None and names is not None and INPUTS_CONVENTION not in names:
                raise TargetError(f"{ref.path} defines no {INPUTS_CONVENTION}(): add one or pass "
                                  f"--inputs FILE::FACTORY")
            for what, given in (("--inputs", inputs), ("--before-call", hook)):
                if given is not None:
                    check_defined(given, read_source(given.path), what=what)
    except (TargetError, SourceError) as exc:
        print(f"dynalint: {exc}", file=sys.stderr)
        return EXIT_USAGE
    settings = resolve_args(args, [r.path for r in refs]).settings
    # The usage is sound: the worker processes' torch import starts now, while the analysis and the
    # fixers (libcst, the rules) are imported and the files planned here.
    start_early()
    from dynalint import __version__
    from dynalint.verify import report_text
    from dynalint.verify.api import verify_targets

    reports = verify_targets(refs, settings, options)
    if args.format == "json":
        data = {"dynalint": __version__, "torch": _torch_version(), "targets": [r.to_json() for r in reports]}
        json.dump(_finite(data), sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        report_text.write(reports, sys.stdout)
    sys.stdout.flush()
    if args.html:
        from dynalint.verify import report_html

        try:
            report_html.write(args.html, reports)
        except OSError as exc:
            print(f"dynalint: cannot write {args.html}: {exc.strerror or exc}", file=sys.stderr)
            return EXIT_PROBLEMS
    if not args.quiet:
        print(report_text.summary(reports), file=sys.stderr)
        if args.html:
            print(f"dynalint: wrote {os.path.abspath(args.html)}", file=sys.stderr)
    missing = cuda_missing(reports, args.device)
    if missing:
        print(missing, file=sys.stderr)
        return EXIT_USAGE
    return EXIT_PROBLEMS if any(r.problems for r in reports) else EXIT_OK
