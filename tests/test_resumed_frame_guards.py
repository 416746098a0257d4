"""What the frame Dynamo resumes after a graph break guards on (DYN204), checked against Dynamo.

Measured on torch 2.13 (``backend="eager"``): a tensor whose size comes from tensor data
(``nonzero``, a boolean mask, ``unique``) breaks, and when the code after the break uses it the
resumed frame guards on its size and recompiles once when it changes (DYN204 leaves these alone:
whether the size changes depends on the data alone); a result the code never reads again adds no
guard.  So does a class a ``class`` statement builds: the resumed frame guards on its
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


def _reported() -> set[str]:
    """The functions DYN204 reports in (by the line of their body)."""
    code = textwrap.dedent(CASES)
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
