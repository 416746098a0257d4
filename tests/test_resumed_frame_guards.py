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

from conftest import requires_torch
from helpers import RecompileCase, check, recompile_case_tests, recompiled_frames, recompiles_of_run

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


    def unpacked(x):
        keep = x > 0
        kept, where = x[keep], keep.nonzero()
        return kept.sum() + where.sum()


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


def _call_each(namespace: dict) -> None:
    """Call each of ``FUNCTIONS`` on data that selects other numbers of rows."""
    import torch

    for compiled in namespace["FUNCTIONS"]:
        for values in ([1.0, -1.0, 2.0, -3.0, 0.5], [1.0, 2.0, 3.0, -1.0, 4.0], [1.0, 1.0, 1.0, 2.0, 2.0]):
            compiled(torch.tensor(values))


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


    def unpacked(x):
        keep = x > 0
        kept, where = x[keep], keep.nonzero()
        return kept.sum() + where.sum()


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


    def run_unpacked():
        f = torch.compile(unpacked, backend="eager")
        for _ in range(3):
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


    RUNS = [run_counted, run_masked, run_unpacked, run_drawn, run_unused, run_fixed, run_packed, run_looped,
            run_loop_later, run_ranged, run_ranged_unused, run_via_helper, run_stringed, run_printed]
"""

FRESH_RECOMPILED = {"counted", "masked", "unpacked", "drawn", "loop_later", "ranged", "stringed"}
"""The functions whose resumed frame recompiles when the calls the code shows draw new random data:
the size taken from it changes (also where a tuple written out is unpacked into names, ``kept, where =
x[keep], keep.nonzero()``; a result never used again, the same tensor at every call, or a
resumed frame that only packs the size into a dataclass and hands it to a helper that returns it,
which has no graph, does not; nor does a function with a break in a loop before the size is taken, which Dynamo runs eagerly from
there; a loop after the break belongs to the resumed frame).  ``torch.arange(n)`` of a 0-d tensor
computed from the data breaks, and the range it returns has that many elements: used after the
break, the resumed frame guards on its size; in a helper Dynamo inlines (``ranged_in``) nothing
recompiles.  ``str(n)`` of a tensor breaks too, and the resumed frame that joins the string to another
guards on its text, which the new data changes (``print`` given the string alone guards on nothing)."""


def _call_runs(namespace: dict) -> None:
    """Call each of ``RUNS``, which compiles one function and calls it as its name says."""
    for run in namespace["RUNS"]:
        run()


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


NEW_DATA_CASES = """
    import torch


    def picked(rnd, pos):
        hit = torch.isin(rnd, pos)
        keep = rnd[~hit]
        return torch.stack([keep // 7, keep % 7])


    def kept(x):
        sel = x[x > 0]
        return sel * 2


    def same(x):
        sel = x[x > 0]
        return sel * 2


    def run():
        f = torch.compile(picked, backend="eager")
        pos = torch.tensor([1, 2, 3, 10])
        f(torch.tensor([1, 2, 5, 6, 8, 9]), pos)
        f(torch.tensor([1, 2, 3, 6, 8, 11]), pos)
        g = torch.compile(kept, backend="eager")
        batches = [torch.tensor([1.0, -1.0, 2.0]), torch.tensor([1.0, 2.0, 3.0])]
        for batch in batches:
            g(batch)
        h = torch.compile(same, backend="eager")
        x = torch.tensor([1.0, -1.0, 2.0])
        for _ in range(3):
            h(x)
"""
"""Data the calls change without drawing it: two different literal tensors (``picked``), what a loop over
batches binds (``kept``); the resumed frame after the mask recompiles when the selected size changes.
``same`` is given the same tensor at each pass of a ``range``: nothing changes."""


PLAIN_CASES = """
    import torch


    def segments(speech, min_len):
        segs, start = [], None
        for i, v in enumerate(speech.tolist()):
            if v and start is None:
                start = i
            elif not v and start is not None:
                if i - start >= min_len:
                    segs.append((start, i))
                start = None
        return segs


    def run():
        f = torch.compile(segments, backend="eager")
        for pattern in ([0, 1, 1, 1, 0, 0], [1, 1, 0, 0, 0, 1], [0, 0, 1, 1, 1, 0]):
            f(torch.tensor(pattern, dtype=torch.bool), 2)
"""
"""After the break at ``.tolist()`` the resumed frame holds Python numbers, lists and ``None`` alone: Dynamo
finds nothing tensor-related in it and skips it ("no tensor-related objects found in frame"), so nothing is
guarded on the list, whatever the data."""


GRAPHLESS_CASES = """
    from collections import namedtuple

    import torch

    Result = namedtuple("Result", ["priors", "value"])


    def evaluate(logits, value):
        probs = torch.softmax(logits, 0)
        return Result(probs, value.tanh().item())


    def sharpen(logits):
        priors = torch.softmax(logits, -1)
        ent = -(priors * priors.clamp_min(1e-12).log()).sum(-1).mean()
        if ent.item() < 0.05:
            priors = 0.9 * priors + 0.1
        return priors


    def run():
        f = torch.compile(evaluate, backend="eager")
        g = torch.compile(sharpen, backend="eager")
        for _ in range(3):
            f(torch.randn(9), torch.randn(()))
            g(torch.randn(4, 7))
"""
"""Frames resumed with no graph: ``evaluate`` only builds a ``collections.namedtuple`` after the break, and
the first call of ``sharpen`` may take the path past its ``if`` that only returns (it does, here: random
logits have a high entropy); Dynamo skips such a frame from then on, and guards nothing there."""


LOOP_CALLEE_CASES = """
    import torch


    def sample(probs, top_p=0.85):
        ordered, _ = torch.sort(probs, descending=True)
        cum = torch.cumsum(ordered, dim=-1)
        cutoff = float(ordered[torch.argmax((cum > top_p).int())])
        probs = probs.masked_fill(probs < cutoff, 0.0)
        return int(torch.multinomial(probs, 1)[0])


    def generate(table, n):
        tokens = []
        for _ in range(n):
            tokens.append(sample(table[len(tokens)].softmax(-1)))
        return tokens


    def run():
        torch.compile(generate, backend="eager")(torch.randn(4, 10), 4)
"""
"""A helper that breaks, called in a loop of the compiled function: Dynamo runs ``generate`` eagerly, and
``sample``, called from eager code, is a frame of its own, resumed after its break and guarded on
``cutoff``: the second call recompiles it."""


RECOMPILE_CASES = [
    RecompileCase("resumed", CASES, RECOMPILED - SIZED_BY_DATA, RECOMPILED, resumed=True, run=_call_each),
    RecompileCase("fresh", FRESH_CASES, FRESH_RECOMPILED, FRESH_RECOMPILED, resumed=True, seed=0,
                  run=_call_runs),
    RecompileCase("eager", EAGER_CASES, {"scaled"}, {"scaled"}, resumed=False, at_definition=True, seed=0,
                  words=("runs eagerly",)),
    RecompileCase("new_number", NEW_NUMBER_CASES, {"scaled", "timed"}, {"scaled", "timed"}, resumed=False,
                  at_definition=True, words=("runs eagerly", "skipped call")),
    RecompileCase("captured", CAPTURED_CASES, {"crossed"}, {"crossed"}, resumed=True),
    RecompileCase("new_data", NEW_DATA_CASES, {"picked", "kept"}, {"picked", "kept"}, resumed=True),
    RecompileCase("plain", PLAIN_CASES, set(), set(), resumed=True),
    RecompileCase("graphless", GRAPHLESS_CASES, set(), set(), resumed=True, seed=0),
    RecompileCase("loop_callee", LOOP_CALLEE_CASES, {"sample"}, {"sample"}, resumed=True, seed=0),
]
"""Each source, the functions DYN204 reports in, and those whose frames Dynamo recompiles when it runs."""

test_reported_functions, test_recompiled_frames_under_dynamo = recompile_case_tests(RECOMPILE_CASES)


SIZES = """
    import torch


    def sized(x):
        b, n = x.shape
        print("shape")
        return x.reshape(b * n) * n


    def unread(x):
        b, n = x.shape
        print("shape", b, n)
        return x * 2


    def fixed(x):
        b, n = x.shape
        print("shape")
        return x.reshape(b * n) * n


    def run():
        f = torch.compile(sized, backend="eager")
        g = torch.compile(unread, backend="eager")
        h = torch.compile(fixed, backend="eager")
        for n in (3, 4):
            f(torch.ones(2, n))
            g(torch.ones(2, n))
        for _ in range(2):
            h(torch.ones(2, 3))
"""
"""``sized`` reads the sizes it took before the ``print`` after it: the frame resumed there receives them as
Python ints, guarded first, and recompiles when the second call changes ``n`` (on ``n == 3``; its own frame
recompiles on the tensor's new shape); ``unread`` only passes them to the call that breaks (its resumed frame
recompiles on the tensor alone), and ``fixed`` is given one shape."""


def test_sizes_the_calls_change_read_after_a_break_are_reported_at_the_break():
    found = [d for d in check(SIZES) if d.code == "DYN204"]
    assert [(d.line, "`n` is a size" in d.message) for d in found] == [(6, True)]


@requires_torch
def test_dynamo_recompiles_the_frame_resumed_after_the_sizes_are_taken():
    messages = recompiles_of_run(SIZES, "sizes")
    assert _resumed_failing(messages, "n == 3") == {"sized"}, messages
    assert not any("fixed" in m for m in messages), messages


SIZES_CALLEE = """
    import torch


    def noted(y):
        print("inner")
        return y * 2


    def outer(x):
        b, n = x.shape
        out = noted(x)
        return out.reshape(b * n)


    def run():
        f = torch.compile(outer, backend="eager")
        for b in (2, 3):
            f(torch.ones(b, 4))
"""
"""A call of a function that breaks splits the caller there too: the frame resumed after ``out = noted(x)``
receives ``b`` as a Python int, guarded on it, and recompiles when the calls change it (``b == 2``)."""


def test_sizes_read_after_a_call_that_breaks_are_reported_at_the_call():
    found = [d for d in check(SIZES_CALLEE) if d.code == "DYN204"]
    assert [(d.line, "`b` is a size" in d.message) for d in found] == [(11, True)]


@requires_torch
def test_dynamo_recompiles_the_frame_resumed_after_the_call():
    messages = recompiles_of_run(SIZES_CALLEE, "sizes_callee")
    assert _resumed_failing(messages, "b == 2") == {"outer"}, messages


def _resumed_failing(messages: list[str], guard: str) -> set[str]:
    """The functions whose resumed frames recompile on ``guard``."""
    return {name for name, is_resumed in recompiled_frames([m for m in messages if guard in m]) if is_resumed}


SUMMED = """\
import torch


def summary(losses, scale):
    total = sum(float(v) for v in losses) / len(losses)
    return torch.tensor(total) * scale


if __name__ == "__main__":
    f = torch.compile(summary, backend="eager")
    for s in (1.0, 2.0, 3.0):
        f([torch.rand(()) * s for _ in range(3)], torch.ones(2))
"""
"""A number taken from tensor data inside a generator expression: Dynamo cannot rebuild the generator to
resume after the break, and runs the whole function eagerly ("Generator reconstruction with mutations"),
so nothing after it is guarded on the number.  (Run as a script of its own: Dynamo's rebuilding of that
generator exhausts the recursion limit in code without a source file, or under a deep test stack.)"""


def test_a_number_taken_inside_a_generator_expression_is_not_reported():
    assert [d.code for d in check(SUMMED) if d.code == "DYN204"] == []


@requires_torch
def test_dynamo_runs_the_function_of_the_generator_expression_eagerly(tmp_path):
    import os
    import subprocess
    import sys

    from helpers import write

    path = write(tmp_path, "summed.py", SUMMED)
    env = dict(os.environ, TORCH_LOGS="graph_breaks,recompiles", OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, path], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Cannot reconstruct a generator" in proc.stderr
    assert "Recompiling function" not in proc.stderr
