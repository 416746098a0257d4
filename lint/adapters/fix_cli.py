"""``dynalint fix``: rewrite predicted breaks and recompile hazards that have a sound fix.

Files are written atomically (a temporary file in the same directory, then a
rename), keeping their encoding, line endings and permissions.  Exit status: 0
nothing left, 1 findings remain (unless ``--exit-zero``) or something failed (a file
that could not be fixed, a fixer that raised: always), 2 usage or configuration error.
"""
from __future__ import annotations

import argparse
import difflib
import io
import json
import os
import stat
import sys
import tempfile
import tokenize
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from typing import Callable, Iterator

from dynalint.config import ConfigError, Project, resolve_args
from dynalint.engine import SourceError, check_source, decode_source
from dynalint.source import on_large_stack, read_bytes
from dynalint.files import iter_python_files
from dynalint.fixing import FixResult, fix_source
from dynalint.positions import LineMapping
from dynalint.runner import current_project, default_jobs, project_entries, set_project
from dynalint.settings import Settings

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


@dataclass
class _Outcome:
    """What fixing one file did (returned by a worker, reported by the main process)."""

    path: str
    result: FixResult | None = None
    changed: bool = False
    diff: str = ""
    error: str | None = None


@dataclass(frozen=True)
class _Job:
    path: str
    settings: Settings
    unsafe: bool
    diff: bool
    verify: tuple[str, ...]
    inputs: tuple[str, ...] | None
    timeout: float
    before_call: tuple[str, ...] | None = None
    devices: tuple[str, ...] = ("cpu",)
    mode: str = "eval"
    entries: str = ""
    """What the compiled code of the other files hands this one (canonical JSON, "" for nothing)."""


def run(args: argparse.Namespace) -> int:
    if "-" in args.paths:
        from dynalint.adapters.cli import _fix_stdin, _read_stdin

        name = args.stdin_filename or "-"
        project = resolve_args(args, [name] if name != "-" else ["."])
        return _fix_stdin(args, project, (name, _read_stdin()))
    from dynalint.verify.cli import devices_of, torch_available

    if args.verify and not torch_available():
        print("dynalint: fix --verify needs torch (pip install torch), which is not installed here", file=sys.stderr)
        return EXIT_USAGE
    project = resolve_args(args, args.paths)
    files = list(iter_python_files(args.paths, project, force_exclude=args.force_exclude))
    jobs = [_Job(p, project.settings_for(p), args.unsafe_fixes, args.diff, tuple(args.verify),
                 tuple(args.inputs) if args.inputs else None, args.timeout,
                 tuple(args.before_call) if args.before_call else None, devices_of(args.device), args.mode)
            for p in files]
    workers = args.jobs if args.jobs is not None else default_jobs()
    if args.verify:
        workers = 1  # verification runs its own subprocesses
    failures = fixer_errors = changed_files = total_applied = remaining = unsafe_left = 0
    for outcome in fix_outcomes(jobs, project, workers):
        if outcome.error is not None:
            failures += 1
            print(f"{outcome.path}: error: {outcome.error}", file=sys.stderr)
        for error in outcome.result.errors if outcome.result is not None else ():
            fixer_errors += 1
            print(error.message(), file=sys.stderr)
        result = outcome.result
        if result is None:
            continue
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
                print(f"{d.path}:{d.line}:{d.column}: {d.code} {d.message}", file=sys.stderr)
            for r in result.refused:
                print(f"{outcome.path}:{r.line}: {r.code} fix refused ({r.fixer}): {r.reason}", file=sys.stderr)
    if not args.quiet:
        verb = "would fix" if args.diff else "fixed"
        line = f"dynalint: {verb} {total_applied} issue{'s' * (total_applied != 1)} in {changed_files} " \
               f"file{'s' * (changed_files != 1)}; {remaining} remain"
        if unsafe_left:
            line += f" ({unsafe_left} with an unsafe fix: use --unsafe-fixes)"
        if failures:
            line += f"; {failures} file{'s' * (failures != 1)} could not be fixed"
        if fixer_errors:
            line += f"; {fixer_errors} fixer error{'s' * (fixer_errors != 1)}"
        print(line + ".", file=sys.stderr)
    if failures or fixer_errors:
        return EXIT_FINDINGS
    if args.diff:
        return EXIT_FINDINGS if changed_files else EXIT_CLEAN
    if args.exit_zero:
        return EXIT_CLEAN
    return EXIT_FINDINGS if remaining else EXIT_CLEAN


def fix_outcomes(jobs: list[_Job], config: Project, workers: int) -> Iterator[_Outcome]:
    """Fix the files of ``jobs`` as one project, as ``check`` analyses them: each file with what the
    compiled code of the others hands it (functions they call, with their arguments)."""
    paths = [j.path for j in jobs]
    entries = project_entries(paths, config, jobs=workers)
    jobs = [replace(j, entries=entries.get(j.path, "")) for j in jobs]
    if workers <= 1 or len(jobs) <= 1:
        set_project(paths)
        try:
            yield from map(_fix_one, jobs)
        finally:
            set_project(None)
        return
    with ProcessPoolExecutor(max_workers=workers, initializer=set_project, initargs=(paths,)) as pool:
        yield from pool.map(_fix_one, jobs, chunksize=max(1, min(8, len(jobs) // (workers * 4) or 1)))


def _fix_one(job: _Job) -> _Outcome:
    """Worker: fix one file. Never raises."""
    source = None
    try:
        data = read_bytes(job.path)  # a regular file of bounded size, opened without blocking
        source = decode_source(data)
        if job.verify:
            from dynalint.verify.api import confirm_fixes

            result = confirm_fixes(job.path, list(job.verify), list(job.inputs) if job.inputs else None, job.settings,
                                   job.unsafe, job.timeout, devices=job.devices, mode=job.mode,
                                   before_call=list(job.before_call) if job.before_call else None)
        else:
            result = on_large_stack(fix_source, source, job.path, job.settings, unsafe=job.unsafe,  # deep code
                                    project=current_project(),
                                    entries=json.loads(job.entries) if job.entries else None)
        if result.source == source:
            return _Outcome(job.path, result)
        if job.diff:  # nothing is written: remaining findings are numbered as in the file on disk
            back = LineMapping(source, result.source)
            result.remaining = [_renumbered(d, back) for d in result.remaining]
            diff = "".join(difflib.unified_diff(source.splitlines(keepends=True),
                                                result.source.splitlines(keepends=True),
                                                fromfile=job.path, tofile=job.path))
            return _Outcome(job.path, result, True, diff)
        write_atomically(job.path, result.source, data)
        return _Outcome(job.path, result, True)
    except (SourceError, OSError) as exc:
        return _Outcome(job.path, error=str(exc))
    except Exception as exc:  # an internal error must not lose the other files
        return _Outcome(job.path, _unfixed(source, job),
                        error=f"internal error while fixing ({type(exc).__name__}: {exc}); "
                              "the file is left as it was. This is a bug in dynalint: please report it")


def _unfixed(source: str | None, job: _Job) -> FixResult | None:
    """What remains in a file that could not be fixed: its ``check`` diagnostics, when it can be checked."""
    if source is None:
        return None
    try:
        return FixResult(source, remaining=check_source(source, job.path, job.settings))
    except Exception:  # reported as the file's error already
        return None


def _renumbered(d, back: LineMapping):
    from dataclasses import replace

    line, unchanged = back.original(d.line)
    end_line = line + (d.end_line - d.line) if unchanged else line
    return replace(d, line=line, end_line=end_line, column=d.column if unchanged else 1,
                   end_column=d.end_column if unchanged else 1)


def write_atomically(path: str, text: str, original: bytes) -> None:
    """Write ``text`` in the original file's encoding (and BOM), then rename over it, keeping its mode."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(original).readline)
    bom = original.startswith(b"\xef\xbb\xbf")
    payload = text.encode("utf-8" if encoding == "utf-8-sig" else encoding)
    if bom and not payload.startswith(b"\xef\xbb\xbf"):
        payload = b"\xef\xbb\xbf" + payload
    directory = os.path.dirname(os.path.abspath(path))
    mode = stat.S_IMODE(os.stat(path).st_mode)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".dynalint-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


__all__ = ["register", "run", "write_atomically", "ConfigError"]
