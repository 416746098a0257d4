"""What the command line prints besides the report, and standard input: the summary line, and
``check --fix -`` / ``fix -`` (the fixed code on standard output).  Shared by ``check`` and ``fix``."""
from __future__ import annotations

import argparse
import sys
from collections import Counter

from dynalint.adapters.reporters import REPORTERS
from dynalint.config.resolver import Configuration
from dynalint.core.diagnostics import Diagnostic

EXIT_CLEAN, EXIT_FINDINGS = 0, 1


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' * (n != 1)}"


def summary(diagnostics: list[Diagnostic], files: int, errors: int, fixed: int = 0) -> str:
    counts = Counter(d.code if d.kind in ("error", "warning") else d.kind for d in diagnostics)
    breaks = plural(counts.pop("graph-break", 0), "graph break")
    removable = sum(d.kind == "graph-break" and d.remedy is not None for d in diagnostics)
    if removable:
        breaks += f" ({removable} removed by Dynamo's capture flags)"
    parts = [breaks, plural(counts.pop("recompile", 0), "recompile hazard")]
    words = {"DYN000": ("file", " not parsed"), "DYN001": ("file", " not read"), "DYN003": ("unused noqa code", "")}
    for code, n in sorted(counts.items()):
        noun, tail = words.get(code, (code, ""))
        parts.append(plural(n, noun) + tail)
    if errors:
        parts.append(plural(errors, "file") + " not checked")
    if fixed:
        parts.append(f"{fixed} fixed")
    return f"dynalint: {', '.join(parts)} in {plural(files, 'file')}."


def read_stdin() -> bytes:
    """Standard input, up to the size a file may have (an endless stream is refused, not read)."""
    from dynalint.config.resolver import ConfigError
    from dynalint.core.source import MAX_FILE_BYTES

    data = sys.stdin.buffer.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise ConfigError(f"standard input is larger than {MAX_FILE_BYTES} bytes (the limit of a file)")
    return data


def fix_stdin(args: argparse.Namespace, config: Configuration, stdin: tuple[str, bytes]) -> int:
    """``check --fix -`` and ``fix -``: the fixed code on standard output, what remains on standard
    error (as ruff)."""
    from dynalint.engine.pipeline import SourceError, decode_source

    path, data = stdin
    try:
        source = decode_source(data)
    except SourceError as exc:
        print(f"{path}: DYN001 {exc}", file=sys.stderr)
        sys.stdout.buffer.write(data)
        return EXIT_FINDINGS
    from dynalint.engine.session import Session  # the engine: not for --version, lsp
    from dynalint.core.source import on_large_stack

    result = on_large_stack(Session(config).fix_buffer, path, source, unsafe=args.unsafe_fixes)  # deep code
    sys.stdout.write(result.source)
    sys.stdout.flush()
    if getattr(args, "show_remaining", True):
        REPORTERS["text"](result.remaining, sys.stderr)
    if not args.quiet:
        print(summary(result.remaining, 1, 0, len(result.applied)), file=sys.stderr)
    return EXIT_FINDINGS if result.remaining and not args.exit_zero else EXIT_CLEAN
