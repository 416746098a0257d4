"""Which part of a function Dynamo runs eagerly after a graph break inside a loop, and what the
compiled parts guard on (DYN206, DYN204), checked against Dynamo.

Measured on torch 2.13 (``backend="eager"``): a break inside a loop makes Dynamo give up on the frame
it is tracing, but when a break outside any loop comes first, that frame is the one resumed after
it: the part of the function before that break is compiled and guarded on the arguments it reads
(``mixed``), while an argument read only in the part run eagerly installs no guard (``late``); a
break inside a ``try`` statement, or at the context manager ``with open(...)`` enters, cannot be
resumed from either (``tried``, ``opened``), though the graph before such a break is compiled and
guarded (``read_first``).  A
number computed from an argument and packed in a tuple that the eager part hands to a function of
the project is an input of that function's own frame (``packed``), unless that function only
passes it on and runs no tensor operation (``returned``); so is the size of a tensor whose size
comes from data that the eager part makes and hands on (``SIZE_CASES``).  A number taken from tensor
data at a break and handed to a function of another module is guarded in the resumed frame that
inlines the function, where the function reads it (``scaled``), not where it only passes it on
(``passed``).  A frame resumed after a value's break that ends at another break outside any loop is
compiled and guarded on the value, even where a later loop's break makes the rest run eagerly
(``RESUMED_CASES``); a number computed from a data test (``torch.equal``) that the eager part hands on
is guarded in the helper's frame where the helper reads it in the part it compiles (``HANDED_CASES``)."""
from __future__ import annotations

import sys
import textwrap

from conftest import requires_torch
from dynalint.config.resolver import resolve
from dynalint.engine.session import Session
from helpers import RecompileCase, dynamo_recompile_log, recompile_case_tests, recompiled_frames

ENTRY_CASES = """
    import operator
    import os

    import torch


    def scaled(h, p):
        return h * p[1]


    def shifted(h, p):
        return h + p[1]


    def operated(x, k):
        h = x * 2
        for _ in range(2):
            torch._dynamo.graph_break()
            h = h + 1
        p = (h, operator.add(k, 1))
        return shifted(h, p)


    def mixed(x, k):
        h = x * k
        torch._dynamo.graph_break()
        for _ in range(2):
            torch._dynamo.graph_break()
            h = h + 1
        return h


    def late(x, k):
        h = x * 2
        torch._dynamo.graph_break()
        h = h * k
        for _ in range(2):
            torch._dynamo.graph_break()
            h = h + 1
        return h


    def packed(x, k):
        h = x * 2
        for _ in range(2):
            torch._dynamo.graph_break()
            h = h + 1
        v = int(k)
        p = (h, v)
        return scaled(h, p)


    def passed_on(h, p):
        r = p[1]
        return h, r


    def returned(x, k):
        h = x * 2
        for _ in range(2):
            torch._dynamo.graph_break()
            h = h + 1
        p = (h, int(k))
        return passed_on(h, p)


    def tried(x, k):
        h = x * 2
        try:
            torch._dynamo.graph_break()
            h = h + 1
        except ValueError:
            pass
        return h * k


    def opened(x, k):
        h = x * 2
        with open(os.devnull, "w") as fh:
            fh.write("a")
        return h * k


    def read_first(x, k):
        h = x * k
        with open(os.devnull, "w") as fh:
            fh.write("a")
        return h + 1


    compiled_mixed = torch.compile(mixed, backend="eager")
    compiled_read_first = torch.compile(read_first, backend="eager")
    compiled_tried = torch.compile(tried, backend="eager")
    compiled_opened = torch.compile(opened, backend="eager")
    compiled_returned = torch.compile(returned, backend="eager")
    compiled_late = torch.compile(late, backend="eager")
    compiled_packed = torch.compile(packed, backend="eager")
    compiled_operated = torch.compile(operated, backend="eager")


    def run():
        for n in range(3):
            compiled_mixed(torch.randn(4), n + 1)
            compiled_late(torch.randn(4), n + 1)
            compiled_packed(torch.randn(4), n + 1)
            compiled_operated(torch.randn(4), n + 1)
            compiled_returned(torch.randn(4), n + 1)
            compiled_tried(torch.randn(4), n + 1)
            compiled_opened(torch.randn(4), n + 1)
            compiled_read_first(torch.randn(4), n + 1)
"""

ENTRY_RECOMPILED = {"mixed", "scaled", "shifted", "read_first"}
"""``packed`` hands the number on: its frame runs eagerly, ``scaled``'s frame recompiles (so does
``shifted``'s, handed ``operator.add(k, 1)`` by ``operated``); ``passed_on`` only returns it and runs no
tensor operation, a frame Dynamo skips."""

ENTRY_REPORTED = {"mixed", "packed", "operated", "read_first"}
"""DYN206 reports what the compiled part before an eager loop reads: on the entry point whose argument
it is (``packed`` and ``operated`` hand it to the helpers whose frames recompile)."""


SIZE_CASES = """
    import torch


    def scaled(h, p):
        return h * p[1]


    def step(x):
        h = x * 1
        for _ in range(2):
            torch._dynamo.graph_break()
            h = h + 1
        n = (x > 0).nonzero().shape[0]
        return scaled(h, (h, n))


    def run():
        torch.manual_seed(0)
        f = torch.compile(step, backend="eager")
        for _ in range(3):
            f(torch.randn(8))
"""
"""``step`` runs eagerly from its loop on: ``nonzero`` does not break, and ``scaled``, a frame of its own,
is guarded on the number of rows, which the data drawn afresh changes."""


HELPERS = """
    def scaled(h, p):
        return h * p[1]


    def passed(h, p):
        return h + 1
"""

MODEL = """
    import torch

    from pkg.helpers import passed, scaled


    def read(x):
        h = x * 2
        v = (x > 0).sum().item()
        return scaled(h, [h, v])


    def unread(x):
        h = x * 2
        v = (x > 0).sum().item()
        return passed(h, [h, v])


    def run():
        for f in (read, unread):
            compiled = torch.compile(f, backend="eager")
            for values in ([1.0, -1.0, 2.0], [1.0, 2.0, 3.0], [-1.0, -2.0, 3.0]):
                compiled(torch.tensor(values))
"""


def _project(tmp_path, monkeypatch) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.dynalint]\n")
    for name, text in {"pkg/__init__.py": "", "pkg/helpers.py": HELPERS, "pkg/model.py": MODEL}.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    monkeypatch.chdir(tmp_path)


def test_dyn204_follows_a_number_from_data_into_a_function_of_another_module(tmp_path, monkeypatch):
    _project(tmp_path, monkeypatch)
    results = list(Session(resolve(["."])).check(["pkg/model.py"]))
    assert not [r.error for r in results if r.error]
    lines = textwrap.dedent(MODEL).lstrip("\n").splitlines()
    found = [(d.line, d.message) for r in results for d in r.diagnostics if d.code == "DYN204"]
    assert [line for line, _ in found] == [lines.index("def read(x):") + 3]
    assert "handed to `scaled`" in found[0][1]


@requires_torch
def test_the_module_cases_under_dynamo(tmp_path, monkeypatch):
    _project(tmp_path, monkeypatch)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        with dynamo_recompile_log() as messages:
            from pkg import model

            model.run()
    finally:
        for name in ("pkg", "pkg.helpers", "pkg.model"):
            sys.modules.pop(name, None)
    assert recompiled_frames(messages) == {("read", True)}


RESUMED_CASES = """
    import torch


    def counted(x):
        h = x * 2
        v = (x > 0).sum().item()
        torch._dynamo.graph_break()
        h = h * v
        for _ in range(2):
            torch._dynamo.graph_break()
            h = h + 1
        return h


    def uncounted(x):
        h = x * 2
        v = (x > 0).sum().item()
        h = h * v
        for _ in range(2):
            torch._dynamo.graph_break()
            h = h + 1
        return h


    def packed(x):
        h = x * 2
        v = (x > 0).sum().item()
        p = (h, v)
        torch._dynamo.graph_break()
        h = h * p[1]
        for _ in range(2):
            torch._dynamo.graph_break()
            h = h + 1
        return h


    def classed(x):
        h = x * 2
        v = (x > 0).sum().item() + 1
        torch._dynamo.graph_break()

        class Box:
            pass

        h = h * v
        for _ in range(2):
            torch._dynamo.graph_break()
            h = h + Box.__name__.count("B")
        return h


    def run():
        for f in (counted, uncounted, packed, classed):
            compiled = torch.compile(f, backend="eager")
            for values in ([1.0, -1.0, 2.0], [1.0, 2.0, 3.0], [-1.0, -2.0, 3.0]):
                compiled(torch.tensor(values))
"""
"""In ``counted`` the frame resumed after ``.item()`` ends at the next break, outside any loop: it is
compiled and guarded on the number it hands on by name, and only the frame after it runs eagerly; in
``uncounted`` the loop's break comes first and Dynamo runs the whole function eagerly; in ``packed`` the
number is read only after the next break, back from a tuple, in the frame that runs eagerly; in
``classed`` the part of the function before the loop ends with a ``class`` statement, which breaks outside
any loop (the frame resumed after it runs eagerly)."""


HANDED_CASES = """
    import os

    import torch


    def scaled(h, p):
        return h * p[1]


    def written(h, p):
        with open(os.devnull, "w") as fh:
            fh.write(str(p[1]))
        return h + 1


    def checked(h, p):
        assert p[1] >= 0
        return h


    def asserted(x):
        h = x * 1
        for _ in range(2):
            torch._dynamo.graph_break()
            h = h + 1
        n = (x > 0).sum().item()
        return checked(h, (h, n))


    def tested(x):
        h = x * 1
        for _ in range(2):
            torch._dynamo.graph_break()
            h = h + 1
        n = int(torch.equal(x[0] > 0, x[1] > 0)) + 1
        return scaled(h, (h, n))


    def unwritten(x):
        h = x * 1
        for _ in range(2):
            torch._dynamo.graph_break()
            h = h + 1
        n = (x > 0).sum().item()
        return written(h, (h, n))


    def run():
        torch.manual_seed(0)
        first = torch.compile(tested, backend="eager")
        for _ in range(4):
            first(torch.randn(8))
        second = torch.compile(unwritten, backend="eager")
        for _ in range(4):
            second(torch.randn(8))
        third = torch.compile(asserted, backend="eager")
        for _ in range(4):
            third(torch.randn(8))
"""
"""``tested`` runs eagerly from its loop on and hands ``scaled``, a frame of its own, a number computed
from a data test on data drawn afresh: ``scaled`` recompiles when the outcome changes.  ``written`` reads
the number it is handed only in the body of a ``with open(...)``, which breaks at its entry: Dynamo runs
that body eagerly, so nothing is guarded on the number; nor in ``checked``, which only tests it: a frame
without a graph, which Dynamo skips."""


_SAMPLER = """
    {decorator}def {name}(w, x, steps=2, guidance=0.0):
        for _ in range(steps):
            y = x @ w
            if guidance > 0:
                y = y + guidance * (y - x)
            x = y.tanh()
            print("positive", int((x > 0).sum()))
        return x
"""
WRAPPED_CASES = """
    import functools

    import torch


    def logged(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            return fn(*args, **kwargs)
        return wrapper

""" + "\n".join(_SAMPLER.format(decorator=decorator, name=name) for decorator, name in (
    ("@torch.no_grad()\n    ", "guided"), ("@logged\n    ", "wrapped"), ("", "bare"))) + """

    def run():
        w = torch.ones(4, 4) * 0.1
        for fn in (guided, wrapped, bare):
            compiled = torch.compile(fn, backend="eager")
            for g in (0.0, 1.5):
                compiled(w, torch.ones(2, 4), guidance=g)
"""
"""A function decorated with one of torch's context managers or with a wrapper of the file runs inside the
decorator's wrapper, which Dynamo compiles: it inlines the function up to the break in its loop and guards on
what it read before it (torch's wrapper is ``inner``, the file's ``wrapper``); the bare function runs eagerly
and never recompiles."""


RECOMPILE_CASES = [
    RecompileCase("entry", ENTRY_CASES, ENTRY_REPORTED, ENTRY_RECOMPILED, resumed=False, rule="DYN206",
                  at_definition=True),
    RecompileCase("size", SIZE_CASES, {"scaled"}, {"scaled"}, resumed=False, at_definition=True,
                  words=("the size of `(x > 0).nonzero()`",)),
    RecompileCase("resumed", RESUMED_CASES, {"counted", "classed"}, {"counted", "classed"}, resumed=True),
    RecompileCase("handed", HANDED_CASES, {"scaled"}, {"scaled"}, resumed=False, at_definition=True),
    RecompileCase("wrapped", WRAPPED_CASES, {"guided", "wrapped"}, {"inner", "wrapper"}, resumed=False,
                  rule="DYN206", at_definition=True, words=("`guidance`",)),
]
"""Each source, what the analysis reports in it, and what Dynamo recompiles when it runs."""

test_reported_functions, test_recompiled_frames_under_dynamo = recompile_case_tests(RECOMPILE_CASES)
