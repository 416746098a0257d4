"""Command line: ``dynalint check|rules|rule``.

Exit status: 0 nothing found, 1 findings (or files that could not be checked),
2 usage or configuration error.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Any, Sequence

from dynalint import __version__
from dynalint.config import ConfigError, apply, load_settings, parse_options
from dynalint.files import iter_python_files
from dynalint.reporters import REPORTERS
from dynalint.runner import CACHE_DIR_NAME, check_files, default_jobs
from dynalint.settings import Settings

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # keep argparse's exit status 2, with a shorter message
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _common_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("rule selection and Dynamo settings (override the configuration file)")
    g.add_argument("--select", metavar="CODES", help="comma-separated codes or prefixes to report (DYN1,DYN201)")
    g.add_argument("--ignore", metavar="CODES", help="comma-separated codes or prefixes not to report")
    g.add_argument("--extend-select", metavar="CODES", help="codes added to the configured selection")
    g.add_argument("--extend-ignore", metavar="CODES", help="codes added to the configured ignores")
    g.add_argument("--scope", choices=("auto", "compiled", "all"),
                   help="which functions count as compiled (default: auto)")
    g.add_argument("--target-torch", metavar="VERSION",
                   help="torch version to predict for (default: the installed torch, else 2.13)")
    g.add_argument("--capture-scalar-outputs", action=argparse.BooleanOptionalAction, default=None,
                   help="mirror torch._dynamo.config.capture_scalar_outputs")
    g.add_argument("--capture-dynamic-output-shape-ops", action=argparse.BooleanOptionalAction, default=None,
                   help="mirror torch._dynamo.config.capture_dynamic_output_shape_ops")
    g.add_argument("--config", metavar="FILE", help="pyproject.toml or setup.cfg to read settings from")
    g.add_argument("--exclude", metavar="PATTERNS", help="comma-separated glob patterns of paths to skip")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="dynalint", description="Predict, fix and verify torch.compile graph breaks "
                                                  "and recompiles from source.")
    parser.add_argument("--version", action="version", version=f"dynalint {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    check = sub.add_parser("check", help="report graph breaks and recompile hazards")
    check.add_argument("paths", nargs="*", default=["."], help="files or directories (default: .)")
    check.add_argument("--format", choices=sorted(REPORTERS), default="text", help="output format")
    check.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                       help="parallel workers (default: number of CPUs)")
    check.add_argument("--no-cache", action="store_true", help="do not read or write the result cache")
    check.add_argument("--cache-dir", metavar="DIR", help=f"cache location (default: ./{CACHE_DIR_NAME})")
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even when something is found")
    check.add_argument("--quiet", "-q", action="store_true", help="no summary line on stderr")
    check.add_argument("--force-exclude", action="store_true",
                       help="apply `exclude` patterns to files named on the command line too")
    _common_options(check)

    sub.add_parser("rules", help="list the rules")
    rule = sub.add_parser("rule", help="show one rule's documentation")
    rule.add_argument("code", help="rule code, e.g. DYN101")
    for module in EXTENSION_COMMANDS.values():
        try:
            importlib.import_module(module).register(sub, _common_options)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
    return parser


def settings_from_args(args: argparse.Namespace, paths: list[str]) -> tuple[Settings, str | None]:
    """Settings from the configuration file, then the command-line overrides."""
    settings, source = load_settings(paths, args.config)
    overrides: dict[str, Any] = {}
    for flag, key in (("select", "select"), ("ignore", "ignore"), ("extend_select", "extend-select"),
                      ("extend_ignore", "extend-ignore"), ("scope", "scope"), ("target_torch", "target-torch"),
                      ("capture_scalar_outputs", "capture-scalar-outputs"),
                      ("capture_dynamic_output_shape_ops", "capture-dynamic-output-shape-ops"),
                      ("exclude", "exclude")):
        value = getattr(args, flag, None)
        if value is not None:
            overrides[key] = value
    if overrides:
        settings = apply(settings, parse_options(overrides, "command line"))
    root = os.path.dirname(source.path) if source is not None else os.getcwd()
    return settings, root


def cmd_check(args: argparse.Namespace) -> int:
    settings, root = settings_from_args(args, args.paths)
    files = list(iter_python_files(args.paths, settings.exclude, force_exclude=args.force_exclude))
    missing = [p for p in args.paths if not os.path.exists(p)]
    for p in missing:
        print(f"dynalint: {p}: no such file or directory", file=sys.stderr)
    files = [f for f in files if f not in missing]
    jobs = args.jobs if args.jobs is not None else default_jobs()
    if jobs < 1:
        raise ConfigError("--jobs must be at least 1")
    cache_dir = None if args.no_cache else (args.cache_dir or os.path.join(root or ".", CACHE_DIR_NAME))
    diagnostics = []
    errors = len(missing)
    for result in check_files(files, settings, jobs=jobs, cache_dir=cache_dir):
        if result.error:
            errors += 1
            print(f"{result.path}: error: {result.error}", file=sys.stderr)
        diagnostics.extend(result.diagnostics)
    REPORTERS[args.format](diagnostics, sys.stdout)
    sys.stdout.flush()
    if not args.quiet:
        breaks = sum(d.kind == "graph-break" for d in diagnostics)
        recompiles = sum(d.kind == "recompile" for d in diagnostics)
        other = len(diagnostics) - breaks - recompiles
        parts = [f"{breaks} graph break{'s' * (breaks != 1)}", f"{recompiles} recompile hazard{'s' * (recompiles != 1)}"]
        if other:
            parts.append(f"{other} file{'s' * (other != 1)} not parsed")
        if errors:
            parts.append(f"{errors} file{'s' * (errors != 1)} not checked")
        print(f"dynalint: {', '.join(parts)} in {len(files)} file{'s' * (len(files) != 1)}.", file=sys.stderr)
    if args.exit_zero:
        return EXIT_CLEAN
    return EXIT_FINDINGS if diagnostics or errors else EXIT_CLEAN


def cmd_rules(args: argparse.Namespace) -> int:
    from dynalint.rules.base import all_rules

    for rule in all_rules():
        print(f"{rule.code}  {rule.kind:<11s}  {rule.name:<30s}  {rule.summary}")
    return EXIT_CLEAN


def cmd_rule(args: argparse.Namespace) -> int:
    from dynalint.rules.base import all_rules, get_rule

    rule = get_rule(args.code)
    if rule is None:
        codes = ", ".join(r.code for r in all_rules())
        print(f"dynalint: unknown rule {args.code!r} (rules: {codes})", file=sys.stderr)
        return EXIT_USAGE
    print(rule.documentation())
    from dynalint.fixers.base import fixers_for

    for fixer in fixers_for(rule.code):  # what each fix proves, refuses, and the hazards it leaves
        print("#" + fixer.documentation())
    return EXIT_CLEAN


COMMANDS = {"check": cmd_check, "rules": cmd_rules, "rule": cmd_rule}

#: Subcommands implemented in their own modules.  Each module has
#: ``register(subparsers, common_options)`` (adds its parser; must not import torch or
#: pygls) and ``run(args) -> int``.
EXTENSION_COMMANDS = {
    "fix": "dynalint.fix_cli",
    "verify": "dynalint.verify.cli",
    "lsp": "dynalint.lsp",
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        if args.command in EXTENSION_COMMANDS:
            return importlib.import_module(EXTENSION_COMMANDS[args.command]).run(args)
        return COMMANDS[args.command](args)
    except ConfigError as exc:
        print(f"dynalint: configuration error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("dynalint: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FINDINGS
