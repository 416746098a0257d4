#!/usr/bin/env python
"""Which remedy removes each kind of graph break: a rewrite (a fixer), a configuration (Dynamo's
capture flags), both, or nothing, measured with real Dynamo; writes ``docs/remedies.md``.

Each kind of break Dynamo reports on the labelled populations (``benchmarks/realcode/labels.json``,
``../shared/eval-zoo/labels.json``, ``../shared/eval-realworld/labels.json``: the ``gb_type`` of every
break Dynamo logged there) gets small programs written like the lines that break there.  Each
program is compiled (``backend="eager"``) and run over its input sets four times:

- as written;
- as written, under ``capture_scalar_outputs`` and ``capture_dynamic_output_shape_ops``;
- rewritten by ``dynalint fix --unsafe-fixes`` without its capture-flags fixer (the rewrites alone);
- rewritten with the flags declared (the rewrites that need them made too), under the flags.

For each, the graph-break sites Dynamo logged in the program's file, their types, and whether every
call's outputs equal the eager outputs of the program as written.  A remedy *removes* the breaks when
none is left and the outputs are equal; *fewer* when some are left.  The population counts are the
breaks of each type in the label files found.  Run (about a minute)::

    OMP_NUM_THREADS=1 nice python benchmarks/remedies.py [--output docs/remedies.md] [--json OUT]
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import json
import logging
import os
import platform
import re
import sys
import tempfile
import textwrap
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Iterator

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
POPULATIONS = {
    "realcode": os.path.join(HERE, "realcode", "labels.json"),
    "eval-zoo": os.path.join(ROOT, "..", "shared", "eval-zoo", "labels.json"),
    "eval-realworld": os.path.join(ROOT, "..", "shared", "eval-realworld", "labels.json"),
}
FLAGS = ("capture_scalar_outputs", "capture_dynamic_output_shape_ops")


@dataclass(frozen=True)
class Program:
    """A small program like the code that breaks in the populations: ``f`` over the input sets."""

    name: str
    category: str
    """The Dynamo break type it stands for (as the labels name it)."""
    body: str
    """Module source defining ``f`` (``torch`` imported)."""
    inputs: str
    """Python expression: a list of argument tuples."""


PROGRAMS = [
    Program(".item() into a Python number", "Unsupported Tensor.item() call with capture_scalar_outputs=False", """
        def f(x: torch.Tensor):
            n = x.abs().max().item()
            return x / n
    """, "[(torch.randn(6),), (torch.randn(6) * 3,)]"),
    Program("float(t) of a 0-d tensor", "Unsupported Tensor.item() call with capture_scalar_outputs=False", """
        def f(x: torch.Tensor, s: torch.Tensor):
            scale = 2 ** float(s.log2().round())
            return x * scale
    """, "[(torch.randn(4), torch.tensor(3.0)), (torch.randn(4), torch.tensor(9.0))]"),
    Program("a number from tensor data indexing a Python list", "Unsupported Tensor.item() call with "
            "capture_scalar_outputs=False", """
        SIZES = [2, 3, 4]

        def pick(k, x):
            index = int(x.abs().argmax().item()) % len(k)
            return k[index]

        def f(x: torch.Tensor):
            keep = torch.nonzero(x > 0).squeeze(-1)
            return x.index_select(0, keep).sum() * pick(SIZES, x)
    """, "[(torch.randn(6),), (torch.randn(6),)]"),
    Program(".tolist() of a float tensor", "Tensor.tolist() with non-integer tensor", """
        def f(x: torch.Tensor, scales: torch.Tensor):
            s1, s2 = scales.tolist()
            return x * s1 + s2
    """, "[(torch.randn(4), torch.tensor([2.0, 0.5])), (torch.randn(4), torch.tensor([1.5, -1.0]))]"),
    Program(".tolist() of an integer tensor, as slice bounds", "Data dependent operator", """
        def f(x: torch.Tensor, bounds: torch.Tensor):
            i, j = bounds.tolist()
            return x[i:j].sum()
    """, "[(torch.randn(6), torch.tensor([1, 4])), (torch.randn(6), torch.tensor([0, 5]))]"),
    Program(".tolist() of an integer tensor, as reduction dims", "Data dependent operator", """
        def f(x: torch.Tensor):
            dims = torch.arange(1, x.dim()).tolist()
            return x.sum(dims)
    """, "[(torch.randn(2, 3, 4),), (torch.randn(3, 3, 4),)]"),
    Program("index read at a data-dependent position", "Data dependent operator", """
        def f(x: torch.Tensor):
            return x[x.argmax()] * x
    """, "[(torch.randn(5),), (torch.randn(5),)]"),
    Program("torch.where(cond)[0] then index", "Dynamic shape operator", """
        def f(boxes: torch.Tensor, scores: torch.Tensor):
            keep = torch.where(scores > 0.5)[0]
            return boxes[keep].sum(0)
    """, "[(torch.randn(6, 4), torch.rand(6)), (torch.randn(6, 4), torch.rand(6))]"),
    Program("reduction over a boolean mask", "Dynamic shape operator", """
        def f(x: torch.Tensor):
            return x[x > 0].sum()
    """, "[(torch.randn(8),), (torch.randn(8),)]"),
    Program("torch.unique", "Dynamic shape operator", """
        def f(labels: torch.Tensor):
            return torch.unique(labels).float().sum()
    """, "[(torch.tensor([1, 2, 2, 5]),), (torch.tensor([3, 3, 3, 1]),)]"),
    Program("torch.bincount", "Dynamic shape operator", """
        def f(x: torch.Tensor):
            return torch.bincount(x, minlength=4).float()
    """, "[(torch.tensor([0, 1, 1, 3]),), (torch.tensor([2, 2, 0, 1]),)]"),
    Program("F.ctc_loss", "Dynamic shape operator", """
        import torch.nn.functional as F

        def f(logits: torch.Tensor, targets: torch.Tensor, lengths: torch.Tensor, target_lengths: torch.Tensor):
            return F.ctc_loss(logits.log_softmax(2), targets, lengths, target_lengths) * 2
    """, "[(torch.randn(6, 2, 5), torch.tensor([[1, 2], [3, 3]]), torch.tensor([6, 5]), torch.tensor([2, 1]))] * 2"),
    Program("torch.linalg.lstsq", "Dynamic shape operator", """
        def f(a: torch.Tensor, b: torch.Tensor):
            return torch.linalg.lstsq(a, b).solution * 2
    """, "[(torch.randn(5, 3), torch.randn(5, 2)), (torch.randn(5, 3), torch.randn(5, 2))]"),
    Program("if on a tensor, both branches tensor code", "Data-dependent branching", """
        def f(x: torch.Tensor):
            if x.sum() > 0:
                y = x * 2
            else:
                y = x - 1
            return y
    """, "[(torch.ones(4),), (-torch.ones(4),)]"),
    Program("if on .any() guarding a fix-up", "Data-dependent branching", """
        def f(x: torch.Tensor):
            if torch.isnan(x).any():
                x = torch.nan_to_num(x)
            return x * 2
    """, "[(torch.tensor([1.0, float('nan')]),), (torch.ones(2),)]"),
    Program("if on .any() guarding a warning", "Data-dependent branching", """
        import warnings

        def f(x: torch.Tensor):
            y = x.clamp(-1, 1)
            if (y != x).any():
                warnings.warn("values outside [-1, 1] were clipped")
            return y * 2
    """, "[(torch.tensor([0.5, 3.0]),), (torch.zeros(2),)]"),
    Program("if on tensor data raising a formatted RuntimeError", "Data-dependent branching", """
        def f(x: torch.Tensor):
            if (x < 0).any():
                raise RuntimeError(f"negative values in {tuple(x.shape)}")
            return x.sqrt()
    """, "[(torch.ones(4),), (torch.rand(3),)]"),
    Program("assert on tensor data", "Data-dependent branching", """
        def f(x: torch.Tensor):
            assert torch.isfinite(x).all(), "non-finite values"
            return x * 2
    """, "[(torch.randn(4),), (torch.randn(4),)]"),
    Program("if on a captured number", "Data-dependent branching", """
        def f(x: torch.Tensor):
            n = x.sum().item()
            if n > 0:
                return x * n
            return x
    """, "[(torch.ones(3),), (-torch.ones(3),)]"),
    Program(".item() in a loop", "graph break in loop", """
        def f(x: torch.Tensor):
            total = 0.0
            for i in range(x.shape[0]):
                total = total + x[i].sum().item()
            return x * total
    """, "[(torch.randn(3, 4),), (torch.randn(3, 4),)]"),
    Program("torch.where(...)[0] in a loop", "graph break in loop", """
        def f(x: torch.Tensor, levels: torch.Tensor):
            out = []
            for level in range(3):
                idx = torch.where(levels == level)[0]
                out.append(x[idx].sum())
            return torch.stack(out)
    """, "[(torch.randn(6), torch.tensor([0, 1, 2, 0, 1, 2])), (torch.randn(6), torch.tensor([0, 0, 1, 1, 2, 2]))]"),
    Program("branch on tensor data in a loop", "graph break in loop", """
        def f(x: torch.Tensor):
            out = torch.zeros_like(x[0])
            for i in range(x.shape[0]):
                if x[i].sum() > 0:
                    out = out + x[i]
            return out
    """, "[(torch.randn(3, 4),), (torch.randn(3, 4),)]"),
]


@dataclass
class Run:
    """One variant of a program, measured."""

    breaks: list[str] = field(default_factory=list)
    """``line: gb_type`` of each break site in the program's file."""
    equal: bool = False
    """Every call's outputs equal the eager outputs of the program as written."""
    error: str = ""
    fixers: list[str] = field(default_factory=list)

    @property
    def removed(self) -> bool:
        return not self.error and not self.breaks and self.equal


@dataclass
class Result:
    program: Program
    original: Run
    flags: Run
    rewrite: Run | None
    """None when no fixer rewrites the program."""
    both: Run | None


@contextlib.contextmanager
def without_fixer(name: str) -> Iterator[None]:
    """The fix engine without one fixer (the rewrites alone, without the capture-flags fixer)."""
    from dynalint import fixers
    from dynalint.fixers.support import base

    fixers.load()
    kept = list(base._REGISTRY)
    base._REGISTRY[:] = [f for f in kept if f.name != name]
    try:
        yield
    finally:
        base._REGISTRY[:] = kept


def source_of(program: Program) -> str:
    return "import torch\n\n" + textwrap.dedent(program.body).strip("\n") + "\n"


def rewritten(source: str, flags: bool = False) -> tuple[str, list[str]]:
    """``source`` fixed by ``fix --unsafe-fixes`` without the capture-flags fixer; ``flags``: with the flags
    declared, as for a user who compiles with them (the rewrites that need them made too)."""
    from dynalint.config.settings import default_settings
    from dynalint.engine.fixing import fix_source

    settings = default_settings().with_changes(entry_points=("*f",),  # `f` is what is compiled
                                               **{flag: True for flag in FLAGS if flags})
    with without_fixer("capture-flags"):
        result = fix_source(source, "program.py", settings, unsafe=True)
    return result.source, sorted({a.fixer for a in result.applied})


def measure(source: str, inputs: str, directory: str, expected: list[Any] | None, flags: bool) -> tuple[Run, list]:
    """Compile ``f`` of ``source`` and run it over the inputs (flags on or off); eager outputs too."""
    import torch

    from dynalint.verify.outputs import compare, flatten
    from dynalint.verify.probe import dynamo_config, load_module_from_source, observe

    settings = {flag: flags for flag in FLAGS}
    run = Run()
    with dynamo_config(**settings):
        module = load_module_from_source(source, directory=directory)
        torch.manual_seed(0)  # the same input sets for every variant
        input_sets = eval(inputs, {"torch": torch})  # the table's own expressions
        eager = [module.f(*args) for args in input_sets]
        seen = observe(module.f, input_sets)
    run.error = "; ".join(e for e in seen.errors if e)
    path = os.path.realpath(module.__file__)
    run.breaks = sorted({f"{b.line}: {b.gb_type}" for b in seen.breaks if os.path.realpath(b.file) == path})
    reference = expected if expected is not None else eager
    run.equal = not run.error and len(seen.outputs) == len(reference) and all(
        compare(flatten(got), flatten(want)).equal for got, want in zip(seen.outputs, reference))
    return run, eager


def measure_program(program: Program, work: str) -> Result:
    source = source_of(program)
    d = tempfile.mkdtemp(dir=work)
    original, eager = measure(source, program.inputs, d, None, False)
    flags, _ = measure(source, program.inputs, d, eager, True)
    fixed, fixers = rewritten(source)
    rewrite = both = None
    if fixed != source:
        rewrite, _ = measure(fixed, program.inputs, d, eager, False)
        rewrite.fixers = fixers
    fixed, fixers = rewritten(source, flags=True)
    if fixed != source:
        both, _ = measure(fixed, program.inputs, d, eager, True)
        both.fixers = fixers
    elif rewrite is not None:
        both = flags  # with the flags declared no rewrite is made: the code as written, under the flags
    return Result(program, original, flags, rewrite, both)


LOOP = "graph break in loop"


def underlying(brk: dict) -> str:
    """The break inside a loop that made Dynamo skip the frame (the labels keep Dynamo's reason)."""
    m = re.search(r"Graph break encountered:\n\n(.*?)\n", brk.get("reason") or "")
    return m.group(1).strip() if m else "(not recorded)"


def populations() -> tuple[dict[str, collections.Counter], dict[str, int], dict[str, collections.Counter]]:
    """Break counts by ``gb_type`` in each label file found, the records of each, and the breaks in
    loops by the break inside the loop."""
    counts: dict[str, collections.Counter] = {}
    records: dict[str, int] = {}
    in_loops: dict[str, collections.Counter] = {}
    for name, path in POPULATIONS.items():
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        items = [r for r in data if isinstance(r, dict)] if isinstance(data, list) else []
        records[name] = len(items)
        breaks = [b for r in items for b in (r.get("breaks") or []) if isinstance(b, dict)]
        counts[name] = collections.Counter(b.get("gb_type") or "(none)" for b in breaks)
        in_loops[name] = collections.Counter(underlying(b) for b in breaks if b.get("gb_type") == LOOP)
    return counts, records, in_loops


def verdict(result: Result) -> str:
    """What removes the program's breaks."""
    if not result.original.breaks:
        return "no break"
    rewrite = result.rewrite is not None and result.rewrite.removed
    flags = result.flags.removed
    if rewrite and flags:
        return "both"
    if rewrite:
        return "rewrite"
    if flags:
        return "configuration"
    if result.both is not None and result.both.removed:
        return "rewrite + configuration together"
    fewer = [r for r in (result.flags, result.rewrite, result.both)
             if r is not None and not r.error and r.equal and len(r.breaks) < len(result.original.breaks)]
    return "fewer breaks, none removes all" if fewer else "nothing"


def cell(run: Run | None, original: Run) -> str:
    if run is None:
        return "no fixer applies"
    if run.error:
        return f"error: {run.error[:80]}"
    text = "no break" if not run.breaks else "; ".join(_short(b) for b in run.breaks)
    if run.breaks == original.breaks and run is not original:
        text = "unchanged"
    if not run.equal:
        text += " (outputs differ)"
    return text


def _short(brk: str) -> str:
    line, _, gb = brk.partition(": ")
    return f"line {line}: {gb}"


def render(results: list[Result], counts: dict[str, collections.Counter], records: dict[str, int],
           in_loops: dict[str, collections.Counter], seconds: float) -> str:
    import torch

    out = ["# Remedies: rewrite, configuration, both or nothing", "",
           "<!-- generated by benchmarks/remedies.py: do not edit by hand -->", "",
           f"Measured with torch {torch.__version__} (Dynamo, `backend=\"eager\"`), Python {platform.python_version()}, "
           f"in {seconds:.0f} s. Each program is compiled and run over its input sets as written, under "
           "`torch._dynamo.config.capture_scalar_outputs` and `capture_dynamic_output_shape_ops` (*flags*), "
           "rewritten by `dynalint fix --unsafe-fixes` without its capture-flags fixer (*rewrite*: the fixers "
           "named), and rewritten with the flags declared (the rewrites that need them made too) and run "
           "under them (*both*). A cell lists the graph-break sites Dynamo logged in "
           "the program (line: type), and says when the outputs differ from eager ones of the program as "
           "written. A remedy removes the breaks when none is left and every output is equal.", "",
           "The capture-flags fixer (`dynalint fix --unsafe-fixes`) turns the *flags* remedy on for the compile "
           "call of the file that reaches the break; `dynalint verify` reruns a measured stream with the flags "
           "(the `capture_flags` what-if) and `fix --verify` keeps a fix only when Dynamo confirms it.", "",
           "## By break type", ""]
    names = list(counts)
    header = "| Dynamo break type | " + " | ".join(f"{n} breaks" for n in names) + " | programs | removed by |"
    out += [header, "|" + "---|" * (len(names) + 3)]
    by_category: dict[str, list[Result]] = collections.defaultdict(list)
    for r in results:
        by_category[r.program.category].append(r)
    for category, rs in by_category.items():
        verdicts = "; ".join(f"{r.program.name}: **{verdict(r)}**" for r in rs)
        nums = " | ".join(str(counts[n].get(category, 0)) for n in names)
        out.append(f"| {category} | {nums} | {len(rs)} | {verdicts} |")
    out += ["", "Populations: " + ", ".join(f"{n} ({records[n]} records, {sum(counts[n].values())} breaks)"
                                            for n in names) + ". Other break types there (a skipped function, "
            "a reconstruction failure, NumPy or ndarray use, iterators...) are not data-dependent: the capture "
            "flags do not apply to them.", ""]
    if any(in_loops.values()):
        verdicts = {r.program.category: [] for r in results}
        for r in results:
            verdicts[r.program.category].append(verdict(r))
        out += [f"### {LOOP}, by the break inside the loop", "",
                "Dynamo skips the whole frame of a loop that breaks and logs the break inside it too (the "
                "programs above log only that one, with the frame skipped); the loop's break goes when that one "
                "does:", "",
                "| break inside the loop | " + " | ".join(f"{n}" for n in names) + " | its programs above |",
                "|" + "---|" * (len(names) + 2)]
        total: collections.Counter = collections.Counter()
        for n in names:
            total.update(in_loops.get(n, {}))
        for inner, _ in total.most_common():
            seen = "; ".join(sorted(set(verdicts.get(inner, [])))) or "not measured"
            out.append(f"| {inner} | " + " | ".join(str(in_loops.get(n, {}).get(inner, 0)) for n in names)
                       + f" | {seen} |")
        out.append("")
    out += ["## Programs", ""]
    for r in results:
        out += [f"### {r.program.name}", "", f"Stands for: {r.program.category}.", "", "```python",
                source_of(r.program).rstrip(), "```", "",
                f"- as written: {cell(r.original, r.original)}",
                f"- flags: {cell(r.flags, r.original)}",
                f"- rewrite{' (' + ', '.join(r.rewrite.fixers) + ')' if r.rewrite is not None else ''}: "
                f"{cell(r.rewrite, r.original)}",
                f"- both{' (' + ', '.join(r.both.fixers) + ')' if r.both and r.both.fixers else ''}: "
                f"{cell(r.both, r.original)}",
                f"- removed by: **{verdict(r)}**", ""]
    return "\n".join(out).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", default=os.path.join(ROOT, "docs", "remedies.md"), help="the page to write")
    parser.add_argument("--json", help="also write the measurements as JSON")
    args = parser.parse_args(argv)
    logging.getLogger("torch._dynamo").setLevel(logging.ERROR)
    start = time.perf_counter()
    results = []
    with tempfile.TemporaryDirectory(prefix="dynalint-remedies-") as work:
        for program in PROGRAMS:
            result = measure_program(program, work)
            results.append(result)
            print(f"{program.name:45s} {verdict(result)}", file=sys.stderr, flush=True)
    counts, records, in_loops = populations()
    page = render(results, counts, records, in_loops, time.perf_counter() - start)
    with open(args.output, "w", encoding="utf-8") as fh:
        fh.write(page)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump([{**asdict(r), "verdict": verdict(r)} for r in results], fh, indent=1)
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
