"""How fast ``dynalint check`` is, against the cost of parsing and against other linters.

On the same files, in one run, it reports:

- libcst parse only (in this process, one core): the floor any libcst-based tool pays;
- ``check`` in this process, one core, file by file (no project pass);
- the project pass in this process, one core (what ``dynalint check`` runs), on a copy of the files
  so that one of them can be edited;
- ``dynalint check --jobs N`` as a command, first run (empty cache) and cached run (with ``--process``:
  by CPU time of the whole process, against a parse loop in a process; the goals, one job: a first run
  at most 1.2x the parse loop, a cached re-run at most 0.02x);
- ``flake8`` with its default plugins only (pyflakes, pycodestyle, mccabe), ``--jobs N``;
- ``torchfix`` (if given with ``--torchfix``), ``--jobs N``.

In-process rows are CPU time of this process, medians of ``--repeat`` rounds (the machine may be
shared: CPU time, not wall clock).  Commands are timed by wall clock, including interpreter start-up;
``--process`` times whole ``dynalint check`` processes by CPU time instead, against a libcst parse loop
in a process of its own, medians of ``--repeat`` rounds.  Default files: the ``modeling_*.py`` files of
the installed ``transformers``.

    python benchmarks/bench_check.py --torchfix /tmp/torchfix-venv/bin/torchfix \\
        --flake8 /tmp/flake8-venv/bin/flake8

This is a measurement script, not a test: it asserts nothing.
"""
from __future__ import annotations

import argparse
import glob
import resource
import importlib.util
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Sequence

import libcst as cst

from dynalint.config.resolver import load_settings
from dynalint.engine.pipeline import SourceError, check_source, decode_source
from dynalint.engine.runner import check_files, settings_for

DEFAULT_FLAKE8_PLUGINS = {"mccabe", "pycodestyle", "pyflakes"}


@dataclass
class Row:
    name: str
    seconds: float | None
    note: str = ""


def transformers_modeling_files() -> list[str]:
    spec = importlib.util.find_spec("transformers")
    if spec is None or not spec.submodule_search_locations:
        return []
    root = list(spec.submodule_search_locations)[0]
    return sorted(glob.glob(os.path.join(root, "models", "*", "modeling_*.py")))


def read_all(paths: Sequence[str]) -> dict[str, str]:
    """Decoded sources (this also warms the page cache before any timing)."""
    out = {}
    for p in paths:
        try:
            with open(p, "rb") as fh:
                out[p] = decode_source(fh.read())
        except (OSError, SourceError) as exc:
            print(f"bench_check: {p}: skipped ({exc})", file=sys.stderr)
    return out


def parse_only(sources: dict[str, str]) -> None:
    for text in sources.values():
        try:
            cst.parse_module(text)
        except cst.ParserSyntaxError:
            pass


def check_in_process(sources: dict[str, str]) -> int:
    settings, _ = load_settings(list(sources))
    return sum(len(check_source(text, path, settings_for(path, settings))) for path, text in sources.items())


def parse_and_check(sources: dict[str, str]) -> tuple[float, float, int]:
    """Parse-only and check times, file by file in turn, so that load from other processes on the
    machine weighs on both alike; returns (parse seconds, check seconds, diagnostics)."""
    settings, _ = load_settings(list(sources))
    parse_s = check_s = 0.0
    found = 0
    for path, text in sources.items():
        file_settings = settings_for(path, settings)
        start = time.process_time()
        try:
            cst.parse_module(text)
        except cst.ParserSyntaxError:
            pass
        middle = time.process_time()
        found += len(check_source(text, path, file_settings))
        parse_s += middle - start
        check_s += time.process_time() - middle
    return parse_s, check_s, found


def copy_tree(paths: Sequence[str], target: str) -> list[str]:
    """Copy the files, with the package ``__init__.py`` files above them, under ``target``
    (module names and relative imports stay what they are)."""
    from dynalint.analysis.project import module_name_for

    out = []
    for p in paths:
        name = module_name_for(p)
        parts = name.split(".")
        dest = os.path.join(target, *parts[:-1], os.path.basename(p))
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        directory = os.path.dirname(dest)
        for _ in parts[:-1]:
            init = os.path.join(directory, "__init__.py")
            if not os.path.exists(init):
                open(init, "w").close()
            directory = os.path.dirname(directory)
        shutil.copyfile(p, dest)
        out.append(dest)
    return out


def project_runs(paths: Sequence[str]) -> tuple[float, float, float, int, str]:
    """The project pass (one core) on a copy: first run, cached re-run, re-run after editing one
    file (a statement added to its first function); returns seconds, diagnostics, edited file."""
    settings, _ = load_settings(list(paths))
    with tempfile.TemporaryDirectory(prefix="dynalint-bench-") as tmp:
        copies = copy_tree(paths, os.path.join(tmp, "src"))
        cache = os.path.join(tmp, "cache")

        def run() -> tuple[float, int]:
            start = time.process_time()
            found = sum(len(r.diagnostics) for r in check_files(copies, settings, jobs=1, cache_dir=cache))
            return time.process_time() - start, found

        first, found = run()
        cached, _ = run()
        edited = copies[len(copies) // 2]
        with open(edited, encoding="utf-8") as fh:
            text = fh.read()
        with open(edited, "w", encoding="utf-8") as fh:
            fh.write(text + "\n\ndef _edited(x):\n    return x\n")
        after_edit, _ = run()
    return first, cached, after_edit, found, os.path.relpath(edited, tmp)


def run_command(command: list[str], ok_codes: tuple[int, ...] = (0, 1)) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode not in ok_codes:
        tail = (proc.stderr.strip().splitlines() or [""])[-1][:120]
        return elapsed, f"exit {proc.returncode}: {tail}"
    return elapsed, ""


def flake8_note(flake8: str) -> str:
    """Empty if flake8 has only its default plugins, else which extra ones it runs."""
    try:
        version = subprocess.run([flake8, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"cannot run: {exc}"
    plugins = {name.strip() for name in re.findall(r"([\w.-]+): [\d.]+", version)}
    extra = sorted(plugins - DEFAULT_FLAKE8_PLUGINS)
    return f"also runs plugins {', '.join(extra)}: pass --flake8 from a clean environment" if extra else ""


def table(rows: list[Row], base: float, files: int, lines: int) -> str:
    out = [f"{files} files, {lines} lines", "",
           "| run | seconds | vs libcst parse only | note |", "|---|---:|---:|---|"]
    for r in rows:
        secs = f"{r.seconds:.2f}" if r.seconds is not None else "-"
        ratio = f"{r.seconds / base:.2f}x" if r.seconds is not None and base > 0 else "-"
        out.append(f"| {r.name} | {secs} | {ratio} | {r.note} |")
    return "\n".join(out)


PARSE_LOOP = "import sys, libcst\nfor p in sys.argv[1:]:\n    libcst.parse_module(open(p, 'rb').read())\n"
"""The floor of a whole process: start Python, import libcst, parse every file."""


def child_cpu(command: list[str], env: dict[str, str] | None = None) -> float:
    """CPU seconds (user + system) ``command`` and the processes it waited for took."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def process_runs(paths: list[str], jobs: int, repeat: int) -> int:
    """``--process``: whole processes, by CPU time: a libcst parse loop, ``check --no-cache``, a first
    run filling a cache, the cached re-run, and the cached re-run of one file (start-up cost).  Each
    round runs them all in turn, so that load from other processes weighs on each alike; the median
    of ``repeat`` rounds is reported, per row and for each row's ratio to the parse loop of its round.

    Every process finds the bytecode of the modules it imports, as an installed package has it (pip
    compiles it): with ``PYTHONDONTWRITEBYTECODE`` set, a package installed in editable mode would
    otherwise compile its sources again in each process, which libcst, compiled in site-packages,
    does not.  The bytecode is written once, by a first run of each command, under a temporary
    ``PYTHONPYCACHEPREFIX``."""
    dynalint = [sys.executable, "-m", "dynalint", "check", "-q", "--jobs", str(jobs)]
    names = ["libcst parse loop (one process)", "`check --no-cache`", "`check`, first run (empty cache)",
             "`check`, cached re-run", "`check` of one file, cached"]
    rounds: list[list[float]] = []
    with tempfile.TemporaryDirectory(prefix="dynalint-bench-bytecode-") as bytecode:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = bytecode
        child_cpu([sys.executable, "-c", PARSE_LOOP, paths[0]], env)
        child_cpu(dynalint + ["--no-cache", paths[0]], env)
        for _ in range(repeat):
            row = [child_cpu([sys.executable, "-c", PARSE_LOOP, *paths], env),
                   child_cpu(dynalint + ["--no-cache", *paths], env)]
            with tempfile.TemporaryDirectory(prefix="dynalint-bench-") as cache:
                row.append(child_cpu(dynalint + ["--cache-dir", cache, *paths], env))
                row.append(child_cpu(dynalint + ["--cache-dir", cache, *paths], env))
                child_cpu(dynalint + ["--cache-dir", cache, paths[0]], env)
                row.append(child_cpu(dynalint + ["--cache-dir", cache, paths[0]], env))
            rounds.append(row)
    print(f"{len(paths)} files, --jobs {jobs}; CPU seconds of the whole process (getrusage of children), "
          f"median of {repeat} rounds; bytecode cached")
    for i, name in enumerate(names):
        secs = statistics.median(r[i] for r in rounds)
        ratio = statistics.median(r[i] / r[0] for r in rounds)
        spread = " ".join(f"{r[i] / r[0]:.3f}" for r in rounds)
        print(f"  {name:<40s} {secs:8.3f} s  {ratio:7.3f}x the parse loop  (rounds: {spread})")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", nargs="+", metavar="FILE", help="files to check")
    parser.add_argument("--glob", metavar="PATTERN", help="glob of files to check (recursive ** allowed)")
    parser.add_argument("--jobs", type=int, default=2, help="workers for the command-line runs (default 2)")
    parser.add_argument("--flake8", default=shutil.which("flake8"), metavar="PATH",
                        help="flake8 executable (default: the one on PATH)")
    parser.add_argument("--torchfix", metavar="PATH", help="torchfix executable (skipped if not given)")
    parser.add_argument("--limit", type=int, metavar="N", help="only the first N files")
    parser.add_argument("--in-process-only", action="store_true", help="skip the command-line runs")
    parser.add_argument("--process", action="store_true",
                        help="only whole processes, by CPU time, against a libcst parse loop")
    parser.add_argument("--repeat", type=int, default=3, metavar="N",
                        help="rounds of the in-process and --process timings; medians are reported (default 3)")
    args = parser.parse_args(argv)

    if args.files:
        paths = list(args.files)
    elif args.glob:
        paths = sorted(glob.glob(args.glob, recursive=True))
    else:
        paths = transformers_modeling_files()
    paths = [p for p in paths if os.path.isfile(p)][: args.limit]
    if not paths:
        print("bench_check: no files (install transformers, or pass --files/--glob)", file=sys.stderr)
        return 2
    sources = read_all(paths)
    if not sources:
        print("bench_check: no readable files", file=sys.stderr)
        return 2
    paths = list(sources)
    if args.process:
        return process_runs(paths, args.jobs, max(1, args.repeat))
    lines = sum(t.count("\n") for t in sources.values())
    print(f"bench_check: {len(paths)} files; timing...", file=sys.stderr)

    parse_only({"warm-up": "x = 1\n"})  # imports and first-call costs are not per-file work
    check_in_process({"warm-up.py": "import torch\n\n@torch.compile\ndef f(x):\n    return x.item()\n"})

    rounds = []
    for _ in range(max(1, args.repeat)):
        base, single, found = parse_and_check(sources)
        first, cached, edited, found_project, edited_name = project_runs(paths)
        rounds.append((base, single, first, cached, edited))
    base, single, first, cached, edited = (statistics.median(r[i] for r in rounds) for i in range(5))
    single_x, first_x, cached_x, edited_x = (statistics.median(r[i] / r[0] for r in rounds) for i in range(1, 5))
    rows: list[Row] = []
    rows.append(Row("libcst parse only (in-process, 1 core)", base))
    rows.append(Row("dynalint check, file by file (in-process, 1 core)", single, f"{found} diagnostics"))
    rows.append(Row("project pass, first run (in-process, 1 core)", first, f"{found_project} diagnostics"))
    rows.append(Row("project pass, cached re-run (in-process, 1 core)", cached, ""))
    rows.append(Row("project pass, re-run after editing one file (in-process, 1 core)", edited, edited_name))
    summary = (f"\nin-process CPU time, median of {len(rounds)} rounds (ratios: median of each round's ratio)\n"
               f"dynalint check / libcst parse (1 core): {single_x:.2f}x\n"
               f"project pass / libcst parse (1 core): first {first_x:.2f}x, cached {cached_x:.3f}x, "
               f"after editing one file {edited_x:.3f}x")

    if args.in_process_only:
        print(table(rows, base, len(paths), lines))
        print(summary)
        return 0
    dynalint = [sys.executable, "-m", "dynalint", "check", "-q", "--jobs", str(args.jobs)]
    with tempfile.TemporaryDirectory(prefix="dynalint-bench-") as cache:
        cold, note = run_command(dynalint + ["--cache-dir", cache] + paths)
        rows.append(Row(f"`dynalint check --jobs {args.jobs}`, first run (empty cache)", cold, note))
        warm, note = run_command(dynalint + ["--cache-dir", cache] + paths)
        rows.append(Row(f"`dynalint check --jobs {args.jobs}`, cached run", warm,
                        note or f"{warm / cold:.1%} of the first run"))

    if args.flake8:
        note = flake8_note(args.flake8)
        secs, err = run_command([args.flake8, "--jobs", str(args.jobs)] + paths)
        rows.append(Row(f"`flake8 --jobs {args.jobs}` (default plugins)", secs,
                        "; ".join(x for x in (note, err) if x)))
    else:
        rows.append(Row("flake8", None, "not found"))

    if args.torchfix and os.path.exists(args.torchfix):
        secs, err = run_command([args.torchfix, "--jobs", str(args.jobs)] + paths)
        rows.append(Row(f"`torchfix --jobs {args.jobs}`", secs, err))
    else:
        rows.append(Row("torchfix", None, "skipped: pass --torchfix PATH (install it in a separate venv)"))

    print(table(rows, base, len(paths), lines))
    print(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
