"""The differential accuracy fuzzer: generate, run through Dynamo and ``dynalint check``, compare.

:func:`run_corpus` measures a list of program specs; :func:`groups` sorts the disagreements by
idiom; :func:`minimal_example` re-measures one idiom alone, to show the smallest program that
still disagrees.
"""
from __future__ import annotations

import dataclasses
import tempfile
from collections import defaultdict
from typing import Callable, Sequence

from .compare import Disagreement, Result, compare, run_dynalint
from .dynamo_run import observe
from .generate import Program, ProgramSpec, build, build_all

GroupKey = tuple[str, str, str]
"""(kind, provenance, use): a break by the value's provenance and its use, a recompile by the
provenance alone (use ""); a scaffolding line: (kind, "scaffold", its text)."""


def run_corpus(specs: Sequence[ProgramSpec], prefix: str = "accprog",
               progress: Callable[[int], None] | None = None) -> tuple[list[Program], Result]:
    """Write the programs to a fresh directory, run each through Dynamo, lint the directory once."""
    programs = build_all(specs, prefix)
    with tempfile.TemporaryDirectory(prefix="dynalint-accuracy-") as root:
        for p in programs:
            p.write(root)
        observed = {}
        for i, p in enumerate(programs):
            observed[p.name] = observe(p, root)
            if progress is not None:
                progress(i)
        result = compare(programs, observed, run_dynalint(root))
    return programs, result


def group_key(d: Disagreement, programs: dict[str, Program]) -> GroupKey:
    if d.idiom is None:
        text = ""
        if d.line:
            lines = programs[d.program].files[d.file].splitlines()
            text = lines[d.line - 1].strip() if d.line <= len(lines) else ""
        return (d.kind, "scaffold", text or d.detail)
    return (d.kind, d.idiom[0], d.idiom[1] if d.kind.startswith("break") else "")


def groups(result: Result, programs: Sequence[Program]) -> dict[GroupKey, list[Disagreement]]:
    by_name = {p.name: p for p in programs}
    out: dict[GroupKey, list[Disagreement]] = defaultdict(list)
    for d in result.disagreements:
        out[group_key(d, by_name)].append(d)
    return dict(sorted(out.items(), key=lambda kv: (-len(kv[1]), kv[0])))


def minimal_example(key: GroupKey, sample: Disagreement, programs: Sequence[Program]) -> Program:
    """The one-snippet program of the group's idiom when it still disagrees the same way; else the
    smallest program of the group."""
    prog = next(p for p in programs if p.name == sample.program)
    if sample.idiom is not None:
        snippet = next(s for s in prog.spec.snippets if s.key == sample.idiom)
        spec = dataclasses.replace(prog.spec, snippets=(snippet,))
        alone, res = run_corpus([spec], prefix="minimal")
        if any(group_key(d, {p.name: p for p in alone}) == key for d in res.disagreements):
            return alone[0]
    return prog


def source_of(prog: Program) -> str:
    """The program's files in one listing, each headed by its name."""
    return "\n".join(f"# {fname}\n{prog.files[fname].strip()}\n"
                     for fname in ("model.py", "helpers.py", "packs.py") if fname in prog.files)


__all__ = ["run_corpus", "groups", "minimal_example", "source_of", "build", "GroupKey"]
