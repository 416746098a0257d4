"""``dynalint fix``: rewrite predicted breaks and recompile hazards that have a sound fix.

The options and the report; :mod:`dynalint.adapters.fix_files` does the work (imported when a
fix runs, so that ``dynalint --version`` and the language server start without the engine).
Exit status: 0 nothing left, 1 findings remain (unless ``--exit-zero``) or something failed (a file
that could not be fixed, a fixer that raised: always), 2 usage or configuration error.
"""
from __future__ import annotations

import argparse
import sys
from typing import Callable

from dynalint.config.resolver import ConfigError, resolve_args

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


def register(subparsers: argparse._SubParsersAction, common_options: Callable) -> None:
    p = subparsers.add_parser("fix", help="rewrite graph breaks and recompile hazards that have a sound fix")
    p.add_argument("paths", nargs="*", default=["."], help="files or directories (default: .; - reads "
                                                           "standard input and writes the fixed code)")
    p.add_argument("--stdin-filename", metavar="PATH",
                   help="the path of the code read from standard input (for configuration and output)")
    p.add_argument("--unsafe-fixes", action="store_true",
                   help="also apply fixes that are correct only under stated assumptions")
    p.add_argument("--diff", action="store_true",
                   help="print a unified diff and write nothing (exit 1 if anything would change)")
    p.add_argument("--verify", metavar="FILE::NAME", action="append", default=[],
                   help="apply only the fixes that real Dynamo confirms for these targets (repeatable)")
    p.add_argument("--inputs", metavar="[TARGET=]FILE::FACTORY", action="append",
                   help="input sets for --verify (repeat with TARGET= to give each target its own)")
    p.add_argument("--before-call", metavar="[TARGET=]FILE::FUNCTION", action="append",
                   help="for --verify: called as f(i) before call i (default: dynalint_before_call() if defined)")
    p.add_argument("--device", choices=("cpu", "cuda", "auto", "all"), default="cpu",
                   help="for --verify: where to measure (auto: cuda when available, else cpu; default: cpu)")
    p.add_argument("--mode", choices=("eval", "train"), default="eval",
                   help="for --verify: eval (no_grad) or train (gradients compared too); default: eval")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per verification run (default 120)")
    p.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                   help="parallel workers (default: number of CPUs)")
    p.add_argument("--exit-zero", action="store_true",
                   help="exit 0 even when findings remain (pre-commit then fails only on changed files)")
    p.add_argument("--quiet", "-q", action="store_true", help="no summary on stderr")
    p.add_argument("--show-remaining", action=argparse.BooleanOptionalAction, default=True,
                   help="list the findings no fix removed (default: on; the pre-commit hook leaves them "
                        "to `dynalint check`)")
    p.add_argument("--force-exclude", action="store_true",
                   help="apply `exclude` patterns to files named on the command line too")
    common_options(p)


def run(args: argparse.Namespace) -> int:
    if "-" in args.paths:
        from dynalint.adapters.console import fix_stdin, read_stdin

        name = args.stdin_filename or "-"
        config = resolve_args(args, [name] if name != "-" else ["."])
        return fix_stdin(args, config, (name, read_stdin()))
    from dynalint.adapters.fix_files import Job, fix_outcomes
    from dynalint.adapters.reporters import location
    from dynalint.config.files import iter_python_files
    from dynalint.engine.runner import cache_warnings, default_jobs
    from dynalint.verify.cli import devices_of, torch_available

    if args.verify and not torch_available():
        print("dynalint: fix --verify needs torch (pip install torch), which is not installed here", file=sys.stderr)
        return EXIT_USAGE
    config = resolve_args(args, args.paths)
    files = list(iter_python_files(args.paths, config, force_exclude=args.force_exclude))
    jobs = [Job(p, config.settings_for(p), args.unsafe_fixes, args.diff, tuple(args.verify),
                 tuple(args.inputs) if args.inputs else None, args.timeout,
                 tuple(args.before_call) if args.before_call else None, devices_of(args.device), args.mode)
            for p in files]
    workers = args.jobs if args.jobs is not None else default_jobs()
    if args.verify:
        workers = 1  # verification runs its own subprocesses
    failures = fixer_errors = changed_files = total_applied = remaining = unsafe_left = 0
    for outcome in fix_outcomes(jobs, config, workers):
        if outcome.error is not None:
            failures += 1
            print(f"{outcome.path}: error: {outcome.error}", file=sys.stderr)
        for error in outcome.result.errors if outcome.result is not None else ():
            fixer_errors += 1
            print(error.message(), file=sys.stderr)
        result = outcome.result
        if result is None:
            continue
        if outcome.note and not args.quiet:
            print(f"{outcome.path}: {outcome.note}", file=sys.stderr)
        if outcome.diff:
            sys.stdout.write(outcome.diff)
        total_applied += len(result.applied)
        changed_files += outcome.changed
        remaining += len(result.remaining)
        unsafe_left += result.unsafe_available
        if not args.quiet:
            for fix in result.applied:
                print(f"{outcome.path}:{fix.line}:{fix.column}: {fix.code} fixed ({fix.safety}): {fix.description}",
                      file=sys.stderr)
            for d in result.remaining if args.show_remaining else ():
                print(f"{location(d)}: {d.code} {d.message}", file=sys.stderr)
            for r in result.refused:
                print(f"{outcome.path}:{r.line}: {r.code} fix refused ({r.fixer}): {r.reason}", file=sys.stderr)
    for warning in cache_warnings():
        print(f"dynalint: {warning}", file=sys.stderr)
    if not args.quiet:
        verb = "would fix" if args.diff else "fixed"
        line = f"dynalint: {verb} {total_applied} issue{'s' * (total_applied != 1)} in {changed_files} " \
               f"file{'s' * (changed_files != 1)}; {remaining} remain"
        if unsafe_left:
            line += f" ({unsafe_left} with an unsafe fix: use --unsafe-fixes)"
            if not total_applied:
                line += (". Nothing safe to apply: every fix these findings have is unsafe (correct under "
                         "stated assumptions, see `dynalint rule CODE`); review them with --diff --unsafe-fixes")
        if failures:
            line += f"; {failures} file{'s' * (failures != 1)} could not be fixed"
        if fixer_errors:
            line += f"; {fixer_errors} fixer error{'s' * (fixer_errors != 1)}"
        print(line + ".", file=sys.stderr)
    if failures or fixer_errors:
        return EXIT_FINDINGS
    if args.diff and changed_files:
        return EXIT_FINDINGS
    if args.exit_zero:
        return EXIT_CLEAN
    return EXIT_FINDINGS if remaining else EXIT_CLEAN


__all__ = ["register", "run", "ConfigError"]
