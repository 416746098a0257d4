"""Command line: ``dynalint check|rules|rule``.

Exit status: 0 nothing found, 1 findings (or files that could not be checked),
2 usage or configuration error.
"""
from __future__ import annotations

import argparse
import difflib
import functools
import importlib
import os
import re
import sys
from typing import Sequence, TextIO

from dynalint import __version__
from dynalint.config.resolver import ConfigError, Configuration, resolve_args
from dynalint.core.diagnostics import Diagnostic
from dynalint.config.options import add_arguments
from dynalint.config.settings import CACHE_DIR_NAME
from dynalint.config.files import iter_python_files
from dynalint.adapters import console
from dynalint.adapters.console import fix_stdin, plural, summary
from dynalint.adapters.reporters import REPORTERS, statistics

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2
STDIN = "-"


class OutputError(Exception):
    """The report cannot be written (exit status 2)."""


class _Parser(argparse.ArgumentParser):
    _argv: list[str] = []

    def parse_args(self, args=None, namespace=None):  # type: ignore[no-untyped-def,override]
        self._argv = list(sys.argv[1:] if args is None else args)  # the error tip names the command used
        return super().parse_args(args, namespace)

    def error(self, message: str) -> None:  # keep argparse's exit status 2, with a shorter message
        self.print_usage(sys.stderr)
        hint = _suggestion(self, message, self._argv)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n" + (f"  tip: {hint}\n" if hint else ""))


def _suggestion(parser: argparse.ArgumentParser, message: str, argv: Sequence[str] = ()) -> str | None:
    """"did you mean --select?" for a mistyped option or command (as ruff suggests a similar argument);
    for an option another command takes, which commands take it."""
    choice = re.search(r"invalid choice: '([^']*)'", message)
    if choice:
        known = [c for a in parser._actions if a.choices for c in a.choices]
        close = difflib.get_close_matches(choice.group(1), [str(k) for k in known], n=1)
        return f"did you mean {close[0]!r}?" if close else None
    unknown = re.match(r"unrecognized arguments: (.*)", message)
    if not unknown:
        return None
    # the error is raised by the top-level parser: the options of the command used are looked up here
    commands = {name: command for a in parser._actions if isinstance(a, argparse._SubParsersAction)
                for name, command in a.choices.items()}
    used = next((w for w in argv if w in commands), None)

    def options_of(p: argparse.ArgumentParser) -> set[str]:
        return {o for a in p._actions for o in a.option_strings}

    own = options_of(parser) | (options_of(commands[used]) if used else set())
    if not used:
        for command in commands.values():
            own |= options_of(command)
    for word in unknown.group(1).split():
        if not word.startswith("--"):
            continue
        option = word.split("=")[0]
        elsewhere = sorted(name for name, command in commands.items() if option in options_of(command))
        if option not in own and elsewhere:
            return f"{option} is an option of {', '.join(elsewhere)}, not of {used}"
        close = difflib.get_close_matches(option, sorted(own), n=1, cutoff=0.7)
        if close:
            return f"did you mean {close[0]}? (unknown option {option})"
    return None


def _common_options(p: argparse.ArgumentParser, command: str) -> None:
    """``--config`` and the configuration keys ``command`` takes (the table of :mod:`dynalint.config.options`)."""
    g = p.add_argument_group("rule selection and Dynamo settings (override the configuration file)")
    g.add_argument("--config", metavar="FILE", help="pyproject.toml or setup.cfg to read settings from")
    add_arguments(g, command)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="dynalint", description="Predict, fix and verify torch.compile graph breaks "
                                                  "and recompiles from source.")
    parser.add_argument("--version", action="version", version=f"dynalint {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    check = sub.add_parser("check", help="report graph breaks and recompile hazards")
    check.add_argument("paths", nargs="*", help="files or directories (default: .; - reads standard input, "
                                                "as does --stdin-filename without paths)")
    check.add_argument("--format", choices=sorted(REPORTERS), default="text", help="output format")
    check.add_argument("--output-file", "-o", metavar="FILE", help="write the report to FILE")
    check.add_argument("--statistics", action="store_true", help="print how often each code was found")
    check.add_argument("--stdin-filename", metavar="PATH",
                       help="the path of the code read from standard input (for configuration and output)")
    check.add_argument("--fix", action="store_true", help="apply fixes first (as `dynalint fix`), then report "
                                                          "what remains")
    check.add_argument("--unsafe-fixes", action="store_true", help="with --fix, apply unsafe fixes too")
    check.add_argument("--show-fixes", action="store_true",
                       help="mark fixable findings ([*] safe, [-] unsafe); with --fix, list the fixes made")
    check.add_argument("--add-noqa", action="store_true",
                       help="append `# noqa: CODE` to every line with a finding (writes the files)")
    check.add_argument("--show-files", action="store_true", help="list the files that would be checked, "
                                                                 "then exit")
    check.add_argument("--show-settings", action="store_true", help="print the resolved settings, then exit")
    check.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                       help="parallel workers (default: number of CPUs)")
    check.add_argument("--no-cache", action="store_true", help="do not read or write the result cache")
    check.add_argument("--cache-dir", metavar="DIR", help=f"cache location (default: ./{CACHE_DIR_NAME})")
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even when something is found")
    check.add_argument("--quiet", "-q", action="store_true", help="no summary line on stderr")
    check.add_argument("--force-exclude", action="store_true",
                       help="apply `exclude` patterns to files named on the command line too")
    _common_options(check, "check")

    sub.add_parser("rules", help="list the rules")
    rule = sub.add_parser("rule", help="show one rule's (or fixer's) documentation")
    rule.add_argument("code", help="rule code (DYN101), rule name (tensor-condition) or fixer name "
                                   "(masked-reduction)")
    for name, module in EXTENSION_COMMANDS.items():
        try:
            importlib.import_module(module).register(sub, functools.partial(_common_options, command=name))
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
    return parser


def cmd_check(args: argparse.Namespace) -> int:
    from dynalint.engine.cache_entry import cache_warnings
    from dynalint.engine.pool import default_jobs
    from dynalint.engine.session import Session  # the engine is loaded only when a file is analysed

    if not args.paths:
        args.paths = [STDIN] if args.stdin_filename else ["."]
    paths = [p for p in args.paths if p != STDIN]
    stdin_path = (args.stdin_filename or STDIN) if STDIN in args.paths else None
    named = paths + ([stdin_path] if stdin_path not in (None, STDIN) else [])
    config = resolve_args(args, named or ["."])
    if args.show_settings:
        sys.stdout.write(config.describe())
        return EXIT_CLEAN
    files = list(iter_python_files(paths, config, force_exclude=args.force_exclude))
    if stdin_path is not None and args.force_exclude and stdin_path != STDIN and config.excluded(stdin_path):
        stdin_path = None
    if args.show_files:
        for f in files + ([stdin_path] if stdin_path else []):
            print(f)
        return EXIT_CLEAN
    jobs = args.jobs if args.jobs is not None else default_jobs()
    if jobs < 1:
        raise ConfigError("--jobs must be at least 1")
    _refuse_checked_output(args.output_file, files + ([stdin_path] if stdin_path not in (None, STDIN) else []))
    stdin = (stdin_path, console.read_stdin()) if stdin_path is not None else None
    fixed = 0
    cache_dir = None if args.no_cache else (args.cache_dir or os.path.join(config.root, CACHE_DIR_NAME))
    if args.fix or args.add_noqa:
        if stdin is not None and args.fix:
            return fix_stdin(args, config, stdin)
        if args.fix:
            fixed = _fix_files(args, config, files, jobs, cache_dir)
    with_fixes = args.format == "json" or args.show_fixes
    diagnostics: list[Diagnostic] = []
    errors = 0
    session = Session(config, jobs=jobs, cache_dir=cache_dir)
    for result in session.check(files, with_fixes=with_fixes, stdin=stdin):
        if result.error:
            errors += 1
            print(f"{result.path}: error: {result.error}", file=sys.stderr)
        diagnostics.extend(result.diagnostics)
    for warning in cache_warnings():
        print(f"dynalint: {warning} (choose another place with --cache-dir, or --no-cache)", file=sys.stderr)
    if args.add_noqa:
        added, unwritten = add_noqa(diagnostics)
        print(f"dynalint: added {plural(added, 'noqa directive')}"
              + (f"; {plural(unwritten, 'file')} could not be written" if unwritten else "") + ".",
              file=sys.stderr)
        return EXIT_USAGE if unwritten else EXIT_CLEAN
    _write_report(args, diagnostics)
    if not args.quiet:
        print(summary(diagnostics, len(files) + (stdin is not None), errors, fixed), file=sys.stderr)
    if args.exit_zero:
        return EXIT_CLEAN
    return EXIT_FINDINGS if diagnostics or errors else EXIT_CLEAN


def _refuse_checked_output(output_file: str | None, inputs: list[str]) -> None:
    """``-o model.py model.py`` would replace the checked source by the report: refuse it."""
    if not output_file:
        return
    try:
        target = os.stat(output_file)
    except OSError:
        return  # not there yet: it cannot be an input
    for path in inputs:
        try:
            st = os.stat(path)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) == (target.st_dev, target.st_ino):
            raise ConfigError(f"--output-file {output_file!r} is one of the files checked ({path!r}); "
                              "choose another name")


def _write_report(args: argparse.Namespace, diagnostics: list[Diagnostic]) -> None:
    """The report on standard output or ``--output-file``.  A file that cannot be opened or written
    (``/dev/full``, a full disk) is a usage error with its reason, not a traceback.  Paths that are
    not valid UTF-8 are written back as their original bytes."""
    name = args.output_file or "standard output"
    out: TextIO = sys.stdout
    try:
        if args.output_file:
            out = open(args.output_file, "w", encoding="utf-8", errors="surrogateescape")
        if args.statistics:
            statistics(diagnostics, out, args.format)
        elif args.show_fixes and args.format == "text":
            REPORTERS["text"](diagnostics, out, show_fixes=True)
        else:
            REPORTERS[args.format](diagnostics, out)
        out.flush()
        if out is not sys.stdout:
            out.close()
    except BrokenPipeError:
        raise
    except OSError as exc:
        if out is sys.stdout:
            _silence_stdout()
        else:
            try:
                out.close()
            except OSError:
                pass
        raise OutputError(f"cannot write the report to {name}: {exc.strerror or exc}") from None


def _silence_stdout() -> None:
    """Drop what is still buffered for standard output (it cannot be written), so that the
    interpreter's final flush does not fail again."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _fix_files(args: argparse.Namespace, config: Configuration, files: list[str], jobs: int,
               cache_dir: str | None) -> int:
    """``check --fix``: fix the files as ``dynalint fix`` does; returns how many fixes were applied."""
    from dynalint.adapters import fix_files

    fix_jobs = [fix_files.Job(path=p, settings=config.settings_for(p), unsafe=args.unsafe_fixes, diff=False,
                              verify=(), inputs=None, timeout=0.0) for p in files]
    total = 0
    for outcome in fix_files.fix_outcomes(fix_jobs, config, jobs, cache_dir=cache_dir):
        if outcome.error is not None or outcome.result is None:
            print(f"{outcome.path}: error: {outcome.error}", file=sys.stderr)
            continue
        if outcome.note and not args.quiet:
            print(f"{outcome.path}: {outcome.note}", file=sys.stderr)
        total += len(outcome.result.applied)
        if args.show_fixes:
            for fix in outcome.result.applied:
                column = getattr(fix, "column", 1)
                print(f"{outcome.path}:{fix.line}:{column}: {fix.code} fixed ({fix.safety}): {fix.description}",
                      file=sys.stderr)
    return total


def add_noqa(diagnostics: list[Diagnostic]) -> tuple[int, int]:
    """Append ``# noqa: CODE`` where each rule finding is reported; returns how many codes were added
    and how many files could not be written."""
    from dynalint.core.source import SourceError, decode_source, read_bytes
    from dynalint.rules.base import get_rule
    from dynalint.core.suppress import CommentSites, apply_insertion
    from dynalint.core.writes import stale_note, write_atomically

    by_path: dict[str, list[Diagnostic]] = {}
    for d in diagnostics:
        if get_rule(d.code) is not None:
            by_path.setdefault(d.path, []).append(d)
    added = unwritten = 0
    for path, found in by_path.items():
        try:
            data = read_bytes(path)
            source = decode_source(data)
        except (OSError, SourceError) as exc:
            unwritten += 1
            print(f"{path}: error: {exc}", file=sys.stderr)
            continue
        text, here = source, 0
        for d in sorted(found, key=lambda d: (d.line, d.code)):
            ins = CommentSites(text).noqa(d.code, d.line, d.end_line)
            if ins is not None:
                new = apply_insertion(text, ins)
                here += new != text
                text = new
        if text == source:
            continue
        try:
            removed = write_atomically(path, text, data)
        except OSError as exc:
            unwritten += 1
            print(f"{path}: error: cannot write, no noqa directive added: {exc.strerror or exc}",
                  file=sys.stderr)
            continue
        if removed:
            print(f"{path}: {stale_note(removed)}", file=sys.stderr)
        added += here
    return added, unwritten


def cmd_rules(args: argparse.Namespace) -> int:
    from dynalint.rules.base import all_codes

    for rule in all_codes():
        print(f"{rule.code}  {rule.kind:<11s}  {rule.name:<30s}  {rule.summary}")
    return EXIT_CLEAN


def cmd_rule(args: argparse.Namespace) -> int:
    from dynalint.adapters.rules_reference import documentation
    from dynalint.fixers.support.base import all_fixers
    from dynalint.rules.base import all_codes, get_code

    wanted = args.code.strip().lower()
    rule = get_code(args.code) or next((r for r in all_codes() if r.name == wanted), None)
    fixer = next((f for f in all_fixers() if f.name == wanted), None)
    if rule is None and fixer is None:
        codes = ", ".join(r.code for r in all_codes())
        names = [r.name for r in all_codes()] + [f.name for f in all_fixers()]
        close = difflib.get_close_matches(wanted, names, n=1)
        tip = f"; did you mean {close[0]!r}?" if close else ""
        print(f"dynalint: unknown rule {args.code!r} (rules: {codes}; or a rule's or fixer's name){tip}",
              file=sys.stderr)
        return EXIT_USAGE
    print(documentation(rule if rule is not None else fixer))
    return EXIT_CLEAN


COMMANDS = {"check": cmd_check, "rules": cmd_rules, "rule": cmd_rule}

#: Subcommands implemented in their own modules.  Each module has
#: ``register(subparsers, common_options)`` (adds its parser; must not import torch or
#: pygls) and ``run(args) -> int``.
EXTENSION_COMMANDS = {
    "fix": "dynalint.adapters.fix_cli",
    "verify": "dynalint.verify.cli",
    "lsp": "dynalint.adapters.lsp.command",
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command of ``argv`` (default: this process's command line) and return its exit status.
    A ``check`` run from the process's own command line ends the process itself once its output is
    written (:func:`_end_process`)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    code = _run(args)
    if argv is None and args.command == "check":
        _end_process(code)
    return code


def _end_process(code: int) -> None:
    """End the process with ``code`` now, without the interpreter's teardown: freeing the trees and
    indexes a large run leaves alive, object by object, costs a twentieth of the run, and nothing is
    left to do (the report is written, the worker pool shut down, the cache entries closed).  Returns
    (the interpreter then ends as usual) when the output cannot be flushed."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    os._exit(code)


def _run(args: argparse.Namespace) -> int:
    """The exit status of the command ``args`` names (errors become messages and statuses)."""
    try:
        if args.command in EXTENSION_COMMANDS:
            return importlib.import_module(EXTENSION_COMMANDS[args.command]).run(args)
        return COMMANDS[args.command](args)
    except ConfigError as exc:
        print(f"dynalint: configuration error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OutputError as exc:
        print(f"dynalint: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("dynalint: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_FINDINGS
