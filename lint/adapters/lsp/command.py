"""``dynalint lsp``: the language server, for editors.

This module is imported by every ``dynalint`` command to build the parser, so
it must not import pygls: ``check`` works without the ``lsp`` extra.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Callable

EXIT_USAGE = 2
INSTALL_HINT = "dynalint: the language server needs pygls: pip install 'dynalint[lsp]'"


def register(subparsers: argparse._SubParsersAction, common_options: Callable) -> None:
    p = subparsers.add_parser("lsp", help="run the language server on standard input/output (for editors)",
                              description="Language server: diagnostics, quick-fixes, noqa actions and rule "
                                          "documentation on hover, for any editor with an LSP client.")
    p.add_argument("--debounce", type=float, default=None, metavar="SECONDS",
                   help="wait this long after the last edit before checking (default 0.3)")
    p.add_argument("--log-level", choices=("error", "warning", "info", "debug"), default="warning",
                   help="server log level, written to standard error (default: warning)")
    common_options(p)


def run(args: argparse.Namespace) -> int:
    """Serve the editor; ends the process with the exit status (0 after ``shutdown`` then ``exit``, else 1)."""
    try:
        from dynalint.adapters.lsp.server import DEFAULT_DEBOUNCE_S, build_server
    except ImportError as exc:
        if (exc.name or "").split(".")[0] not in ("pygls", "lsprotocol", "cattrs"):
            raise
        print(INSTALL_HINT, file=sys.stderr)
        return EXIT_USAGE
    debounce = DEFAULT_DEBOUNCE_S if args.debounce is None else args.debounce
    if debounce < 0:
        print("dynalint: --debounce must not be negative", file=sys.stderr)
        return EXIT_USAGE
    logging.basicConfig(stream=sys.stderr, level=args.log_level.upper(),
                        format="dynalint-lsp %(levelname)s %(name)s: %(message)s")
    protocol_out = sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print must not corrupt the protocol stream
    code = build_server(args, debounce).start_io(sys.stdin.buffer, protocol_out)
    # End the process now (the analysis processes were killed as the session ended): a thread still
    # waiting for input must not keep it alive, and an orderly interpreter exit takes time for nothing.
    for stream in (protocol_out, sys.stderr, sys.__stdout__):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)
