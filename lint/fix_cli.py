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
import os
import stat
import sys
import tempfile
import tokenize
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Callable, Iterator

from dynalint.config import ConfigError
from dynalint.engine import SourceError, check_source, decode_source
from dynalint.files import iter_python_files
from dynalint.fixing import FixResult, fix_source
from dynalint.runner import default_jobs, settings_for
from dynalint.settings import Settings

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


def register(subparsers: argparse._SubParsersAction, common_options: Callable) -> None:
    p = subparsers.add_parser("fix", help="rewrite graph breaks and recompile hazards that have a sound fix")
    p.add_argument("paths", nargs="*", default=["."], help="files or directories (default: .)")
    p.add_argument("--unsafe-fixes", action="store_true",
                   help="also apply fixes that are correct only under stated assumptions")
    p.add_argument("--diff", action="store_true",
                   help="print a unified diff and write nothing (exit 1 if anything would change)")
    p.add_argument("--verify", metavar="FILE::NAME", action="append", default=[],
                   help="apply only the fixes that real Dynamo confirms for these targets (repeatable)")
    p.add_argument("--inputs", metavar="FILE::FACTORY", help="input sets for --verify")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per verification run (default 120)")
    p.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                   help="parallel workers (default: number of CPUs)")
    p.add_argument("--exit-zero", action="store_true",
                   help="exit 0 even when findings remain (pre-commit then fails only on changed files)")
    p.add_argument("--quiet", "-q", action="store_true", help="no summary on stderr")
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
    inputs: str | None
    timeout: float


def run(args: argparse.Namespace) -> int:
    from dynalint.cli import settings_from_args

    settings, _ = settings_from_args(args, args.paths)
    files = list(iter_python_files(args.paths, settings.exclude, force_exclude=args.force_exclude))
    jobs = [_Job(p, settings_for(p, settings), args.unsafe_fixes, args.diff, tuple(args.verify), args.inputs,
                 args.timeout) for p in files]
    workers = args.jobs if args.jobs is not None else default_jobs()
    if args.verify:
        workers = 1  # verification runs its own subprocesses
    failures = fixer_errors = changed_files = total_applied = remaining = unsafe_left = 0
    for outcome in _map(_fix_one, jobs, workers):
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
                print(f"{outcome.path}:{fix.line}: {fix.code} fixed ({fix.safety}): {fix.description}",
                      file=sys.stderr)
            for d in result.remaining:
                print(f"{d.path}:{d.line}:{d.column}: {d.code} {d.message}", file=sys.stderr)
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


def _map(fn: Callable[[_Job], _Outcome], jobs: list[_Job], workers: int) -> Iterator[_Outcome]:
    if workers <= 1 or len(jobs) <= 1:
        yield from map(fn, jobs)
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        yield from pool.map(fn, jobs, chunksize=max(1, min(8, len(jobs) // (workers * 4) or 1)))


def _fix_one(job: _Job) -> _Outcome:
    """Worker: fix one file. Never raises."""
    source = None
    try:
        with open(job.path, "rb") as fh:
            data = fh.read()
        source = decode_source(data)
        if job.verify:
            from dynalint.verify.api import confirm_fixes

            result = confirm_fixes(job.path, list(job.verify), job.inputs, job.settings, job.unsafe, job.timeout)
        else:
            result = fix_source(source, job.path, job.settings, unsafe=job.unsafe)
        if result.source == source:
            return _Outcome(job.path, result)
        if job.diff:
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
