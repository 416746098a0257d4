"""Generate small model programs from the idioms, as packages on disk.

A program is a package: ``model.py`` holds the compiled entry point (an ``nn.Module``'s
``forward`` or a plain function) and ``main()``, which compiles it and calls it on three inputs;
``helpers.py`` holds helpers that a snippet calls in another module, ``packs.py`` the dataclasses
that carry values.  Every generated line is tagged with the snippet it belongs to, so that a
disagreement found on a line can be traced back to its idioms.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Iterable

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from .idioms import (CAPTURES, CONTAINER, CONTAINERS, CONTEXTS, NUMBERS, PROVENANCE, PROVENANCES, USE_NEEDS,
                     USES)


@dataclass(frozen=True)
class Snippet:
    provenance: str
    use: str
    context: str
    container: str

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.provenance, self.use, self.context, self.container)

    def productions(self) -> tuple[str, ...]:
        """The snippet-level productions it was drawn with, as ``field=value``."""
        return tuple(f"{f}={v}" for f, v in zip(("provenance", "use", "context", "container"), self.key))

    @property
    def needs(self) -> tuple[str, ...]:
        """Modules its code needs imported."""
        return PROVENANCE[self.provenance].needs + USE_NEEDS.get(self.use, ())


@dataclass(frozen=True)
class ProgramSpec:
    snippets: tuple[Snippet, ...]
    entry: str = "module"
    """``module`` (``forward`` of an ``nn.Module``) or ``function`` (a plain function)."""
    k_varies: bool = True
    """Whether the Python int argument differs between the three calls."""
    call_style: str = "literal"
    """``literal``: three calls written out; ``loop``: one call in a loop over the step; ``kwargs``:
    that loop passing ``k`` through a ``**cfg`` dict."""
    annotate: bool = True
    """Whether helper parameters carry type annotations."""
    number: str = "int"
    """How ``k`` is passed: a key of :data:`~.idioms.NUMBERS`."""
    capture: str = ""
    """A capture flag the program turns on (one of :data:`~.idioms.CAPTURES`), or none."""

    def productions(self) -> tuple[str, ...]:
        """The program-level productions this spec was drawn with, as ``field=value``."""
        return (f"entry={self.entry}", f"call_style={self.call_style}", f"number={self.number}",
                f"capture={self.capture or 'none'}", f"k_varies={self.k_varies}")


@dataclass
class Program:
    name: str
    spec: ProgramSpec
    files: dict[str, str]
    """File name inside the package -> source."""
    tags: dict[str, dict[int, int]] = field(default_factory=dict)
    """File name -> line -> index of the snippet that line belongs to (untagged: scaffolding)."""

    def write(self, root: str) -> str:
        pkg = os.path.join(root, self.name)
        os.makedirs(pkg, exist_ok=True)
        for fname, src in self.files.items():
            with open(os.path.join(pkg, fname), "w", encoding="utf-8") as fh:
                fh.write(src)
        return pkg


class _File:
    """Lines of one file, each tagged with its snippet (or None)."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, int | None]] = []

    def add(self, text: str, tag: int | None = None, indent: int = 0) -> None:
        for ln in text.splitlines() or [""]:
            self.lines.append((" " * indent + ln if ln else "", tag))

    def source(self) -> str:
        return "\n".join(t for t, _ in self.lines) + "\n"

    def tags(self) -> dict[int, int]:
        return {i + 1: tag for i, (_, tag) in enumerate(self.lines) if tag is not None}


def _annotation(snippet: Snippet, cls: str) -> str:
    value = "torch.Tensor" if PROVENANCE[snippet.provenance].is_tensor else "int"
    return {"none": value, "tuple": f"tuple[torch.Tensor, {value}]", "list": "list",
            "dict": "dict", "dataclass": cls}[snippet.container]


def _use_lines(snippet: Snippet, access: str, ret: str) -> list[str]:
    return [ln.format(a=access, r=ret) for ln in USES[snippet.use]]


def _call(spec: ProgramSpec, target: str) -> list[str]:
    """``main()``'s lines that compile the entry point and call it on three inputs."""
    number = NUMBERS[spec.number]
    compiled = f'torch.compile({target}, backend="eager")'
    if spec.capture.startswith("patch:"):
        compiled = f"torch._dynamo.config.patch({spec.capture.split(':', 1)[1]}=True)({compiled})"
    lines = [f"    compiled = {compiled}", "    outs = []"]
    if spec.call_style == "literal":
        ks = ("1", "2", "3") if spec.k_varies else ("2", "2", "2")
        return lines + [f"    outs.append(compiled(torch.randn(4, 8), torch.tensor({n}), "
                        f"{number.literal.format(n=kv)}))" for n, kv in enumerate(ks, 1)]
    k = number.literal.format(n="n + 1" if spec.k_varies else "2")
    lines.append("    for n in range(3):")
    if spec.call_style == "kwargs":
        return lines + [f'        cfg = {{"k": {k}}}',
                        "        outs.append(compiled(torch.randn(4, 8), torch.tensor(n + 1), **cfg))"]
    return lines + [f"        outs.append(compiled(torch.randn(4, 8), torch.tensor(n + 1), {k}))"]


def build(spec: ProgramSpec, name: str) -> Program:
    """The source files of one program."""
    model, packs = _File(), _File()
    helpers_needed = any(s.context == "helper_other" for s in spec.snippets)
    body: list[tuple[str, int | None]] = []  # forward's body, one level in
    same_helpers: list[tuple[str, int]] = []
    other_helpers: list[tuple[str, int]] = []
    returned: list[str] = []
    pack_classes: list[str] = []

    for i, s in enumerate(spec.snippets):
        prov, cont = PROVENANCE[s.provenance], CONTAINER[s.container]
        v, p, cls, r = f"v{i}", (f"p{i}" if s.container != "none" else f"v{i}"), f"Pack{i}", f"r{i}"
        if s.container == "dataclass":
            pack_classes.append(cls)
            packs.add(f"@dataclass\nclass {cls}:\n    h: torch.Tensor\n    v: "
                      f"{'torch.Tensor' if prov.is_tensor else 'int'}\n\n", i)
        define = ([f"{v} = {prov.expr.format(k=NUMBERS[spec.number].read)}"]
                  + ([cont.pack.format(p=p, v=v, cls=cls)] if cont.pack else []))
        access = cont.access.format(p=p)
        if s.use == "return":
            returned.append(r)
        if s.context in ("helper_same", "helper_other"):
            fn = f"helper{i}"
            params = (f"h: torch.Tensor, {p}: {_annotation(s, cls)}" if spec.annotate else f"h, {p}")
            result = f"h, {r}" if s.use == "return" else "h"
            src = "\n".join([f"def {fn}({params}):"] + ["    " + ln for ln in _use_lines(s, access, r)]
                            + [f"    return {result}", "", ""])
            (other_helpers if s.context == "helper_other" else same_helpers).append((src, i))
            body += [(ln, i) for ln in define] + [(f"{result} = {fn}(h, {p})", i)]
        elif s.context == "loop":
            body += [("for _ in range(2):", i)]
            body += [("    " + ln, i) for ln in define + _use_lines(s, access, r)]
        else:
            brk = ["torch._dynamo.graph_break()"] if s.context == "after_break" else []
            body += [(ln, i) for ln in define + brk + _use_lines(s, access, r)]

    needs = sorted({m for s in spec.snippets for m in s.needs})
    model.add("\n".join(["import logging"] + [f"import {m}" for m in needs] + ["", "import torch"]))
    if spec.capture.startswith("config:"):
        model.add(f"torch._dynamo.config.{spec.capture.split(':', 1)[1]} = True")
    if helpers_needed:
        model.add("from .helpers import " + ", ".join(f"helper{i}" for _, i in other_helpers))
    if pack_classes:
        model.add("from .packs import " + ", ".join(pack_classes))
    model.add("\nCONST = 2\nlogger = logging.getLogger(__name__)\n\n")
    for src, i in same_helpers:
        model.add(src, i)

    sig = f"x: torch.Tensor, c: torch.Tensor, k: {NUMBERS[spec.number].annotation}"
    if spec.entry == "module":
        model.add(f"class Model(torch.nn.Module):\n    def forward(self, {sig}):")
        indent, target = 8, "Model()"
    else:
        model.add(f"def step({sig}):")
        indent, target = 4, "step"
    model.add("h = x.clone()", indent=indent)
    for ln, tag in body:
        model.add(ln, tag, indent=indent)
    model.add("return " + ", ".join(["h"] + returned), indent=indent)
    model.add("\n")

    model.add('def main():\n    torch.manual_seed(0)\n    random.seed(0)\n' if "random" in needs
              else "def main():\n    torch.manual_seed(0)\n")
    model.add("\n".join(_call(spec, target) + ["    return outs"]))

    files = {"__init__.py": "", "model.py": model.source()}
    tags = {"model.py": model.tags()}
    if helpers_needed:
        head = _File()
        helper_needs = sorted({m for s in spec.snippets if s.context == "helper_other"
                               for m in USE_NEEDS.get(s.use, ())})
        head.add("\n".join(["import logging"] + [f"import {m}" for m in helper_needs] + ["", "import torch"]))
        if pack_classes:
            head.add("from .packs import " + ", ".join(pack_classes))
        head.add("\nlogger = logging.getLogger(__name__)\n\n")
        offset = len(head.lines)
        for src, i in other_helpers:
            head.add(src, i)
        files["helpers.py"] = head.source()
        tags["helpers.py"] = {ln: t for ln, t in head.tags().items() if ln > offset}
    if pack_classes:
        head = _File()
        head.add("from dataclasses import dataclass\n\nimport torch\n\n")
        head.lines += packs.lines
        files["packs.py"] = head.source()
        tags["packs.py"] = head.tags()
    return Program(name=name, spec=spec, files=files, tags=tags)


def snippets(provenance: str | None = None, use: str | None = None) -> st.SearchStrategy[Snippet]:
    """Snippets, with the provenance and use given or drawn."""
    return st.builds(
        Snippet,
        provenance=st.just(provenance) if provenance else st.sampled_from([p.name for p in PROVENANCES]),
        use=st.just(use) if use else st.sampled_from(sorted(USES)),
        context=st.sampled_from(CONTEXTS),
        container=st.sampled_from([c.name for c in CONTAINERS]),
    )


def program_specs(first: st.SearchStrategy[Snippet] | None = None) -> st.SearchStrategy[ProgramSpec]:
    """Programs of one to three snippets; the first one drawn from ``first`` when given."""
    return st.builds(
        ProgramSpec,
        snippets=st.tuples(snippets() if first is None else first, st.lists(snippets(), max_size=2))
        .map(lambda t: (t[0], *t[1])),
        entry=st.sampled_from(("module", "function")),
        k_varies=st.booleans(),
        call_style=st.sampled_from(("literal", "loop", "kwargs")),
        annotate=st.booleans(),
        number=st.sampled_from(sorted(NUMBERS)),
        capture=st.one_of(st.just(""), st.sampled_from(CAPTURES)),
    )


PAIRS: tuple[tuple[str, str], ...] = tuple((p.name, u) for p in PROVENANCES for u in sorted(USES))
"""Every provenance × use."""


def draw_specs(n: int, rng_seed: int | None = None) -> list[ProgramSpec]:
    """``n`` distinct program specs drawn by hypothesis, spread over the idioms: programs whose first
    snippet brings a provenance × use not seen yet come first, the others fill the rest in the
    order drawn (hypothesis tends to draw neighbours of what it drew last).

    Without ``rng_seed`` the draw is derandomized (the same specs every time, for CI); with one it is
    seeded by it (a long run draws afresh per seed).
    """
    novel: list[ProgramSpec] = []
    rest: list[ProgramSpec] = []
    seen: set[ProgramSpec] = set()
    pairs: set[tuple[str, str]] = set()

    def collect(spec: ProgramSpec) -> None:
        if spec in seen or len(novel) >= n:
            return
        seen.add(spec)
        pair = (spec.snippets[0].provenance, spec.snippets[0].use)
        if pair in pairs:
            rest.append(spec)
        else:
            pairs.add(pair)
            novel.append(spec)

    conf = settings(max_examples=max(4 * n, len(PAIRS) * 8), derandomize=rng_seed is None, database=None,
                    deadline=None, phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    runner = conf(given(program_specs())(collect))
    if rng_seed is not None:
        runner = seed(rng_seed)(runner)
    runner()
    return (novel + rest)[:n]


def build_all(specs: Iterable[ProgramSpec], prefix: str = "accprog") -> list[Program]:
    return [build(spec, f"{prefix}_{i:05d}") for i, spec in enumerate(specs)]
