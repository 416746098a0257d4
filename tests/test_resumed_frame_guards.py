"""What the frame Dynamo resumes after a graph break guards on (DYN204), checked against Dynamo.

Measured on torch 2.13 (``backend="eager"``): a tensor whose size comes from tensor data
(``nonzero``, a boolean mask, ``unique``) breaks, and when the code after the break uses it the
resumed frame guards on its size and recompiles once when it changes (DYN204 reports these only
where the calls the code shows draw the data afresh: otherwise whether the size changes depends on
data it cannot see); a result the code never reads again adds no guard.  So does a class a ``class`` statement builds: the resumed frame guards on its
identity when it uses the class, and it is a new object at every call.  A resumed frame whose only
work is a call of a helper that tests or returns Python values, or arithmetic on a number a skipped
call returned, has no graph: Dynamo skips it and nothing recompiles.  A break inside a later loop
makes Dynamo run the resumed frame eagerly, unless another break ends that frame before the loop."""
from __future__ import annotations

import textwrap

from conftest import requires_torch
from helpers import check, dynamo_recompile_log

CASES = """
    import time

    import torch


    def checked(h, p):
        assert p["v"] >= 0
        return h


    @torch.compile(backend="eager")
    def counted(x):
        n = (x > 0).nonzero().shape[0]
        return x * n


    @torch.compile(backend="eager")
    def masked(x):
        m = x[x > 0]
        return m.sum() + 1


    @torch.compile(backend="eager")
    def distinct(x):
        u = torch.unique((x * 2).round())
        return u * 2


    @torch.compile(backend="eager")
    def unused(x):
        idx = (x > 0).nonzero()
        return x * 2


    @torch.compile(backend="eager")
    def returned(x):
        y = x * 2
        return y, (x > 0).nonzero()


    @torch.compile(backend="eager")
    def through_helper(x):
        h = x * 2
        n = (x > 0).nonzero().shape[0]
        return checked(h, {"h": h, "v": n})


    @torch.compile(backend="eager")
    def item_through_helper(x):
        h = x * 2
        v = int(x.sum().item())
        return checked(h, {"h": h, "v": v})


    @torch.compile(backend="eager")
    def stamped(x):
        h = x.clone()
        v = int(time.time() * 1000) % 3 + 1
        return h, v


    @torch.compile(backend="eager")
    def classed(x):
        h = x * 2
        class Box:
            value = 3
        return h + Box.value


    @torch.compile(backend="eager")
    def class_unused(x):
        h = x * 2
        class Box:
            value = 3
        return h + 1


    @torch.compile(backend="eager")
    def loop_after_break(x):
        n = (x > 0).nonzero().shape[0]
        torch._dynamo.graph_break()
        h = x * n
        for _ in range(2):
            torch._dynamo.graph_break()
            h = h + 1
        return h


    @torch.compile(backend="eager")
    def loop_in_frame(x):
        n = (x > 0).nonzero().shape[0]
        h = x * n
        for _ in range(2):
            torch._dynamo.graph_break()
            h = h + 1
        return h


    @torch.compile(backend="eager")
    def class_before_loop(x):
        h = x * 2
        class Box:
            value = 3
        h = h + Box.value
        for _ in range(2):
            class Inner:
                value = 1
            h = h + Inner.value
        return h


    FUNCTIONS = [class_before_loop, counted, masked, distinct, unused, returned, through_helper, item_through_helper, stamped,
                 classed, class_unused, loop_after_break, loop_in_frame]
"""

RECOMPILED = {"counted", "masked", "distinct", "classed", "loop_after_break"}
"""The functions whose resumed frame Dynamo recompiles over the calls below."""

SIZED_BY_DATA = {"counted", "masked", "distinct", "loop_after_break"}
"""Those that recompile because a size taken from tensor data changed: the calls below select
other numbers of rows, but data that selects as many rows each time recompiles nothing, and the
analysis cannot see the data, so DYN204 stays silent on them."""


def _reported(cases: str = CASES) -> set[str]:
    """The functions DYN204 reports in (by the line of their body)."""
    code = textwrap.dedent(cases)
    lines = code.splitlines()
    found = set()
    for d in check(code):
        if d.code != "DYN204":
            continue
        for i in range(d.line - 1, -1, -1):
            if lines[i].startswith("def "):  # the function the finding is in
                found.add(lines[i][4:].split("(")[0])
                break
    return found


def test_dyn204_reports_the_resumed_frames_that_guard_on_more_than_data():
    assert _reported() == RECOMPILED - SIZED_BY_DATA


@requires_torch
def test_the_cases_under_dynamo():
    import torch

    namespace: dict = {}
    with dynamo_recompile_log() as messages:
        exec(compile(textwrap.dedent(CASES), "<resumed>", "exec"), namespace)
        for compiled in namespace["FUNCTIONS"]:
            for values in ([1.0, -1.0, 2.0, -3.0, 0.5], [1.0, 2.0, 3.0, -1.0, 4.0], [1.0, 1.0, 1.0, 2.0, 2.0]):
                compiled(torch.tensor(values))
    resumed = {m.split("Recompiling function")[1].split()[0] for m in messages}
    assert {name for name in (f._torchdynamo_orig_callable.__name__ for f in namespace["FUNCTIONS"])
            if any(r == name or r.startswith(f"torch_dynamo_resume_in_{name}_") for r in resumed)} == RECOMPILED


FRESH_CASES = """
    from dataclasses import dataclass

    import torch


    @dataclass
    class Pack:
        h: torch.Tensor
        v: int


    def unpack(h, p):
        r = p.v
        return h, r


    def counted(x):
        n = (x > 0).nonzero().shape[0]
        return x * n


    def masked(x):
        m = x[x > 0]
        return m.sum() + 1


    def drawn(x):
        n = (x > 0).nonzero().shape[0]
        return x * n


    def unused(x):
        idx = (x > 0).nonzero()
        return x * 2


    def fixed(x):
        n = (x > 0).nonzero().shape[0]
        return x * n


    def packed(x):
        h = x.clone()
        v = (x[0] > 0).nonzero().shape[0]
        p = Pack(h, v)
        return unpack(h, p)


    def looped(x):
        h = x * 1
        for _ in range(2):
            torch._dynamo.graph_break()
            h = h + 1
        n = (x > 0).nonzero().shape[0]
        return h * n


    def loop_later(x):
        n = (x > 0).nonzero().shape[0]
        h = x * n
        torch._dynamo.graph_break()
        for _ in range(2):
            torch._dynamo.graph_break()
            h = h + 1
        return h


    def ranged(x):
        n = (x > 0).sum()
        return x + torch.arange(n).sum()


    def ranged_unused(x):
        n = (x > 0).sum()
        torch.arange(n)
        return x * 2


    def ranged_in(h, n):
        return h + torch.arange(n).sum()


    def via_helper(x):
        n = (x > 0).sum()
        return ranged_in(x, n)


    def stringed(x):
        n = (x > 0).sum()
        print("value " + str(n))
        return x * 2


    def printed(x):
        n = (x > 0).sum()
        print("value", str(n))
        return x * 2


    def run_stringed():
        f = torch.compile(stringed, backend="eager")
        for _ in range(3):
            f(torch.randn(8))


    def run_printed():
        f = torch.compile(printed, backend="eager")
        for _ in range(3):
            f(torch.randn(8))


    def run_via_helper():
        f = torch.compile(via_helper, backend="eager")
        for _ in range(3):
            f(torch.randn(8))


    def run_ranged():
        f = torch.compile(ranged, backend="eager")
        for _ in range(3):
            f(torch.randn(8))


    def run_ranged_unused():
        f = torch.compile(ranged_unused, backend="eager")
        for _ in range(3):
            f(torch.randn(8))


    def run_counted():
        f = torch.compile(counted, backend="eager")
        for _ in range(3):
            f(torch.randn(8))


    def run_masked():
        f = torch.compile(masked, backend="eager")
        f(torch.randn(8))
        f(torch.randn(8))


    def run_drawn():
        f = torch.compile(drawn, backend="eager")
        for _ in range(3):
            x = torch.randn(8)
            f(x)


    def run_unused():
        f = torch.compile(unused, backend="eager")
        for _ in range(3):
            f(torch.randn(8))


    def run_fixed():
        f = torch.compile(fixed, backend="eager")
        x = torch.randn(8)
        for _ in range(3):
            f(x)


    def run_packed():
        f = torch.compile(packed, backend="eager")
        for _ in range(3):
            f(torch.randn(4, 8))


    def run_looped():
        f = torch.compile(looped, backend="eager")
        for _ in range(3):
            f(torch.randn(8))


    def run_loop_later():
        f = torch.compile(loop_later, backend="eager")
        for _ in range(3):
            f(torch.randn(8))


    RUNS = [run_counted, run_masked, run_drawn, run_unused, run_fixed, run_packed, run_looped, run_loop_later,
            run_ranged, run_ranged_unused, run_via_helper, run_stringed, run_printed]
"""

FRESH_RECOMPILED = {"counted", "masked", "drawn", "loop_later", "ranged", "stringed"}
"""The functions whose resumed frame recompiles when the calls the code shows draw new random data:
the size taken from it changes (a result never used again, the same tensor at every call, or a
resumed frame that only packs the size into a dataclass and hands it to a helper that returns it,
which has no graph, does not; nor does a function with a break in a loop before the size is taken, which Dynamo runs eagerly from
there; a loop after the break belongs to the resumed frame).  ``torch.arange(n)`` of a 0-d tensor
computed from the data breaks, and the range it returns has that many elements: used after the
break, the resumed frame guards on its size; in a helper Dynamo inlines (``ranged_in``) nothing
recompiles.  ``str(n)`` of a tensor breaks too, and the resumed frame that joins the string to another
guards on its text, which the new data changes (``print`` given the string alone guards on nothing)."""


def test_dyn204_reports_sizes_from_data_the_calls_draw_afresh():
    assert _reported(FRESH_CASES) == FRESH_RECOMPILED


@requires_torch
def test_the_fresh_data_cases_under_dynamo():
    import torch

    namespace: dict = {}
    torch.manual_seed(0)
    with dynamo_recompile_log() as messages:
        exec(compile(textwrap.dedent(FRESH_CASES), "<fresh>", "exec"), namespace)
        for run in namespace["RUNS"]:
            run()
    resumed = {m.split("Recompiling function")[1].split()[0] for m in messages}
    assert {name for name in ("counted", "masked", "drawn", "unused", "fixed", "packed", "looped", "loop_later",
                              "ranged", "ranged_unused", "via_helper", "ranged_in", "stringed", "printed")
            if any(r.startswith(f"torch_dynamo_resume_in_{name}_") for r in resumed)} == FRESH_RECOMPILED


EAGER_CASES = """
    import torch


    def scaled(h, p):
        return h * p[1]


    def passed(h, p):
        return h


    def step(x):
        h = x * 1
        for _ in range(2):
            torch._dynamo.graph_break()
            h = h + 1
        v = x.sum().item()
        h = scaled(h, [h, v])
        return passed(h, [h, v])


    def run():
        f = torch.compile(step, backend="eager")
        for _ in range(3):
            f(torch.randn(8))
"""
"""A break inside a loop makes Dynamo run ``step`` eagerly from there: ``.item()`` does not break, and
each helper it calls is a frame of its own, whose input the number is.  ``scaled`` reads it (a guard,
which the next call's number fails); ``passed`` never does."""


def test_dyn204_reports_the_helper_an_eager_frame_hands_a_number_from_data():
    lines = textwrap.dedent(EAGER_CASES).lstrip("\n").splitlines()
    found = [d for d in check(EAGER_CASES) if d.code == "DYN204"]
    assert {lines[d.line - 1].split("def ")[1].split("(")[0] for d in found} == {"scaled"}
    assert all("runs eagerly" in d.message for d in found)


@requires_torch
def test_the_eager_frame_case_under_dynamo():
    import torch

    namespace: dict = {}
    torch.manual_seed(0)
    with dynamo_recompile_log() as messages:
        exec(compile(textwrap.dedent(EAGER_CASES), "<eager>", "exec"), namespace)
        namespace["run"]()
    assert {m.split("Recompiling function")[1].split()[0] for m in messages} == {"scaled"}


NEW_NUMBER_CASES = """
    import random
    import time

    import torch


    def scaled(h, p):
        return h * p[1]


    def timed(h, p):
        return h + p[1]


    def checked(h, p):
        assert p[1] >= 0
        return h


    def passed(h, p):
        return h


    def step(x):
        h = x * 1
        for _ in range(2):
            torch._dynamo.graph_break()
            h = h + 1
        v = random.random()
        t = time.perf_counter()
        h = scaled(h, [h, v])
        h = timed(h, (h, t))
        h = checked(h, [h, v])
        return passed(h, [h, v])


    def run():
        f = torch.compile(step, backend="eager")
        for _ in range(3):
            f(torch.randn(8))
"""
"""The same eager frame handing its helpers numbers that skipped calls make anew at every call
(``random.random()``, ``time.perf_counter()``): whatever the data, the helper that reads one recompiles;
``checked`` reads it too, but runs no tensor operation: a frame without a graph, which Dynamo skips."""


def test_dyn204_reports_the_helper_an_eager_frame_hands_a_new_number():
    lines = textwrap.dedent(NEW_NUMBER_CASES).lstrip("\n").splitlines()
    found = [d for d in check(NEW_NUMBER_CASES) if d.code == "DYN204"]
    assert {lines[d.line - 1].split("def ")[1].split("(")[0] for d in found} == {"scaled", "timed"}
    assert all("runs eagerly" in d.message and "skipped call" in d.message for d in found)


@requires_torch
def test_the_new_number_case_under_dynamo():
    import torch

    namespace: dict = {}
    with dynamo_recompile_log() as messages:
        exec(compile(textwrap.dedent(NEW_NUMBER_CASES), "<new>", "exec"), namespace)
        namespace["run"]()
    assert {m.split("Recompiling function")[1].split()[0] for m in messages} == {"scaled", "timed"}


CAPTURED_CASES = """
    import torch


    def crossed(x):
        h = x * 2
        v = (x > 0).sum().item()
        torch._dynamo.graph_break()
        return h * v


    def kept(x):
        h = x * 2
        v = (x > 0).sum().item()
        return h * v


    def returned(x):
        h = x * 2
        v = (x > 0).sum().item()
        torch._dynamo.graph_break()
        return h + 1, v


    def run():
        torch.manual_seed(0)
        first = torch._dynamo.config.patch(capture_scalar_outputs=True)(torch.compile(crossed, backend="eager"))
        second = torch._dynamo.config.patch(capture_scalar_outputs=True)(torch.compile(kept, backend="eager"))
        third = torch._dynamo.config.patch(capture_scalar_outputs=True)(torch.compile(returned, backend="eager"))
        for _ in range(3):
            first(torch.randn(8))
            second(torch.randn(8))
            third(torch.randn(8))
"""
"""With ``capture_scalar_outputs`` ``.item()`` stays in the graph; in ``crossed`` the graph ends at a later
break with the number live, and the resumed frame receives it as a Python number and guards on it where it
uses it; ``kept`` has no later break, and ``returned`` only returns it after the break."""


def test_dyn204_reports_a_captured_number_live_across_a_later_break():
    assert _reported(CAPTURED_CASES) == {"crossed"}


@requires_torch
def test_the_captured_cases_under_dynamo():
    namespace: dict = {}
    with dynamo_recompile_log() as messages:
        exec(compile(textwrap.dedent(CAPTURED_CASES), "<captured>", "exec"), namespace)
        namespace["run"]()
    resumed = {m.split("Recompiling function")[1].split()[0] for m in messages}
    assert {name for name in ("crossed", "kept", "returned")
            if any(r == name or r.startswith(f"torch_dynamo_resume_in_{name}_") for r in resumed)} == {"crossed"}
