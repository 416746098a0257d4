"""``dynalint fix``: rewrite predicted breaks and recompile hazards that have a sound fix.

Files are written atomically (a temporary file in the same directory, then a
rename), keeping their encoding, line endings and permissions.
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
from typing import Callable

from dynalint.config import ConfigError
from dynalint.engine import SourceError, decode_source
from dynalint.files import iter_python_files
from dynalint.fixing import FixResult, fix_source
from dynalint.runner import settings_for
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
    p.add_argument("--quiet", "-q", action="store_true", help="no summary on stderr")
    common_options(p)


def run(args: argparse.Namespace) -> int:
    from dynalint.cli import settings_from_args

    settings, _ = settings_from_args(args, args.paths)
    files = list(iter_python_files(args.paths, settings.exclude))
    failures = 0
    changed_files = 0
    total_applied = 0
    remaining = 0
    unsafe_left = 0
    for path in files:
        try:
            outcome = _fix_file(path, settings_for(path, settings), args)
        except (SourceError, OSError) as exc:
            failures += 1
            print(f"{path}: error: {exc}", file=sys.stderr)
            continue
        except Exception as exc:  # an internal error must not lose the other files
            failures += 1
            print(f"{path}: error: internal error while fixing ({type(exc).__name__}: {exc}); please report it",
                  file=sys.stderr)
            continue
        if outcome is None:
            continue
        result, changed = outcome
        total_applied += len(result.applied)
        changed_files += changed
        remaining += len(result.remaining)
        unsafe_left += result.unsafe_available
        if not args.quiet:
            for fix in result.applied:
                print(f"{path}:{fix.line}: {fix.code} fixed ({fix.safety}): {fix.description}", file=sys.stderr)
            for d in result.remaining:
                print(f"{d.path}:{d.line}:{d.column}: {d.code} {d.message}", file=sys.stderr)
    if not args.quiet:
        verb = "would fix" if args.diff else "fixed"
        line = f"dynalint: {verb} {total_applied} issue{'s' * (total_applied != 1)} in {changed_files} " \
               f"file{'s' * (changed_files != 1)}; {remaining} remain"
        if unsafe_left:
            line += f" ({unsafe_left} with an unsafe fix: use --unsafe-fixes)"
        print(line + ".", file=sys.stderr)
    if failures:
        return EXIT_FINDINGS
    if args.diff:
        return EXIT_FINDINGS if changed_files else EXIT_CLEAN
    return EXIT_FINDINGS if remaining else EXIT_CLEAN


def _fix_file(path: str, settings: Settings, args: argparse.Namespace) -> tuple[FixResult, bool] | None:
    with open(path, "rb") as fh:
        data = fh.read()
    source = decode_source(data)
    if args.verify:
        from dynalint.verify.api import confirm_fixes

        result = confirm_fixes(path, args.verify, args.inputs, settings, args.unsafe_fixes, args.timeout)
    else:
        result = fix_source(source, path, settings, unsafe=args.unsafe_fixes)
    if result.source == source:
        return result, False
    if args.diff:
        sys.stdout.writelines(difflib.unified_diff(
            source.splitlines(keepends=True), result.source.splitlines(keepends=True),
            fromfile=path, tofile=path))
        return result, True
    write_atomically(path, result.source, data)
    return result, True


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
