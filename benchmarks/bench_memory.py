"""Peak memory of ``dynalint check`` on one file, for generated shapes of code, against the estimate
that decides whether a file is analysed (``max-file-memory``, :func:`dynalint.core.source.parse_memory`).

For each shape (one huge line of literals; many ordinary lines; nested brackets; nested calls;
long strings; comments; nn.Module classes with a compiled ``forward``) it generates a file whose
estimated parse memory is just under the limit, runs ``dynalint check --no-cache`` on it in a
fresh process and reports that process's peak resident memory (``wait4``'s ``ru_maxrss``) and
time, and whether the file was analysed.  Then it does the same for a file of each shape twice
over the limit (it must be refused quickly, at little memory) and for ordinary large files (a
2,000-line model file, and torch's ``_inductor/ir.py`` where torch is installed), which must be
analysed.  The goal: no process above 500 MB.

    python benchmarks/bench_memory.py [--limit MB] [--shapes line,lines,...] [--keep DIR]

``--parse-only`` reports, instead, libcst's own peak for each shape against the estimate (what the
cost model in :mod:`dynalint.core.source` was calibrated with).  This is a measurement script, not a
test: it asserts nothing.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
from typing import Callable

from dynalint.core.source import MAX_FILE_BYTES, MAX_FILE_MEMORY_MB, parse_memory


def _repeat(unit: Callable[[int], str], head: str = "", tail: str = "") -> Callable[[int], str]:
    """A generator of ``head + unit(0) + unit(1) + ... + tail`` with ``n`` units."""
    return lambda n: head + "".join(unit(i) for i in range(n)) + tail


MODEL_CLASS = textwrap.dedent("""
    class Block{i}(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.proj = nn.Linear(dim, dim)
            self.norm = nn.LayerNorm(dim)
            self.scale = dim ** -0.5

        def forward(self, x, mask=None):
            h = self.norm(x)
            h = self.proj(h) * self.scale
            if mask is not None:
                h = h.masked_fill(mask, 0.0)
            for _ in range(2):
                h = torch.relu(h) + x
            return h, {{"block": {i}, "shape": h.shape}}

""")

SHAPES: dict[str, Callable[[int], str]] = {
    "line": _repeat(lambda i: f'"key{i}": [{i}, {i * 2}.5, "v{i}"], ', "DATA = {", "}\n"),
    "lines": _repeat(lambda i: f"def f{i}(x, y):\n    z = x + y * {i}\n    if z > 3:\n        return [z, x, y]\n"
                               f"    return {{'a': z, 'b': {i}}}\n\n"),
    "brackets": _repeat(lambda i: "x = " + "[" * 60 + str(i) + "]" * 60 + "\n"),
    "calls": _repeat(lambda i: "x = " + "f(" * 40 + str(i) + ")" * 40 + "\n"),
    "strings": _repeat(lambda i: f'S{i} = "{"abcdefgh" * 100}"\n'),
    "comments": _repeat(lambda i: f"# {'comment words ' * 10}\nx{i} = {i}\n"),
    "model": _repeat(lambda i: MODEL_CLASS.format(i=i), "import torch\nimport torch.nn as nn\n\n\n"),
}


def sized(shape: str, budget: int) -> str:
    """The text of ``shape`` with the most units whose estimate stays within ``budget`` bytes (and
    that is not over the file size limit)."""
    make = SHAPES[shape]

    def fits(n: int) -> bool:
        text = make(n)
        return parse_memory(text) <= budget and len(text) <= MAX_FILE_BYTES

    low, high = 1, 2
    while fits(high):
        low, high = high, high * 2
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if fits(mid) else (low, mid)
    return make(low)


LAUNCHER = ("import resource, subprocess, sys, time\n"
            "start = time.monotonic()\n"
            "out = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT).stdout\n"
            "seconds = time.monotonic() - start\n"
            "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
            "sys.stdout.write(f'{peak} {seconds}\\n' + out.decode(errors='replace'))\n")
"""Runs the command and reports its peak from a fresh, small interpreter: Linux counts a child's peak
from the memory of the process that forked it (until its ``exec``), and this benchmark holds the
generated files."""


def check_process(path: str, limit: int) -> tuple[float, float, str]:
    """(peak MB, seconds, first line of the report) of ``dynalint check`` on ``path``."""
    command = [sys.executable, "-m", "dynalint", "check", "--no-cache", "-q", "--exit-zero",
               "--max-file-memory", str(limit), path]
    out = subprocess.run([sys.executable, "-c", LAUNCHER, *command], capture_output=True, text=True).stdout
    head, _, report = out.partition("\n")
    peak, seconds = head.split()
    first = next((line for line in report.splitlines() if line.strip()), "(no findings)")
    return int(peak) / 1024, float(seconds), first


PARSE_ONLY = ("import sys, libcst\n"
              "def peak():\n"
              "    with open('/proc/self/status') as fh:\n"
              "        return next(int(line.split()[1]) for line in fh if line.startswith('VmHWM:'))\n"
              "text = open(sys.argv[1], encoding='utf-8').read()\n"
              "before = peak()\n"
              "libcst.parse_module(text)\n"
              "print((peak() - before) / 1024)\n")


def parse_only(path: str) -> float:
    """libcst's own peak (MB over the interpreter's) for the file at ``path``."""
    out = subprocess.run([sys.executable, "-c", PARSE_ONLY, path], capture_output=True, text=True, check=True)
    return float(out.stdout)


def ordinary_files(directory: str) -> dict[str, str]:
    """Large files of the kind people write: a 2,000-line model file, and torch's biggest module."""
    files = {}
    model = os.path.join(directory, "model_2000_lines.py")
    with open(model, "w", encoding="utf-8") as fh:
        fh.write(SHAPES["model"](120))
    files["model file (2,000 lines)"] = model
    try:
        import importlib.util

        spec = importlib.util.find_spec("torch")
        if spec is not None and spec.origin:
            ir = os.path.join(os.path.dirname(spec.origin), "_inductor", "ir.py")
            if os.path.exists(ir):
                files["torch/_inductor/ir.py"] = ir
    except (ImportError, ValueError):
        pass
    return files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=MAX_FILE_MEMORY_MB, help="max-file-memory, MB")
    parser.add_argument("--shapes", default=",".join(SHAPES), help="comma-separated: " + ", ".join(SHAPES))
    parser.add_argument("--parse-only", action="store_true", help="libcst's peak against the estimate")
    parser.add_argument("--huge-mb", type=float, default=6.2,
                        help="size of the one-line file of literals checked last (0: none)")
    parser.add_argument("--keep", help="write the generated files here (default: a temporary folder)")
    args = parser.parse_args()
    directory = args.keep or tempfile.mkdtemp(prefix="dynalint-memory-")
    os.makedirs(directory, exist_ok=True)
    budget = args.limit << 20
    print(f"max-file-memory {args.limit} MB; peak resident memory of `dynalint check --no-cache` on one file")
    print(f"{'file':28s} {'size':>9s} {'estimate':>9s} {'peak':>8s} {'time':>7s}  report")
    rows = []
    for shape in args.shapes.split(","):
        for factor in (0.98, 2.0):
            text = sized(shape, int(budget * factor))
            label = "under" if parse_memory(text) <= budget else "over"
            path = os.path.join(directory, f"{shape}_{label}.py")
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
            rows.append((f"{shape} ({label} the limit)", path, text))
            if args.parse_only:
                break
    for name, path in ordinary_files(directory).items():
        with open(path, encoding="utf-8") as fh:
            rows.append((name, path, fh.read()))
    if args.huge_mb and not args.parse_only:
        path = os.path.join(directory, "huge_line.py")
        unit = len(SHAPES["line"](200_000)) / 200_000
        text = SHAPES["line"](int(args.huge_mb * 1e6 / unit))
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        rows.append((f"one line of {len(text) / 1e6:.1f} MB", path, text))
    for name, path, text in rows:
        estimate = parse_memory(text) / (1 << 20)
        size = f"{len(text) / 1e6:.2f} MB"
        if args.parse_only:
            peak = parse_only(path)
            print(f"{name:28s} {size:>9s} {estimate:8.0f}M {peak:7.0f}M  libcst parse only "
                  f"(peak/estimate {peak / estimate:.2f})", flush=True)
            continue
        peak, seconds, first = check_process(path, args.limit)
        message = first.split(": ", 1)[-1] if "DYN001" in first else first
        verdict = "refused" if "too large to analyse" in first else "analysed"
        print(f"{name:28s} {size:>9s} {estimate:8.0f}M {peak:7.0f}M {seconds:6.1f}s  {verdict}: {message[:90]}",
              flush=True)


if __name__ == "__main__":
    main()
