"""Comprehensions that Dynamo meets as frames of their own, and functions disabled inside analysed code.

A list, set or dict comprehension in a function Dynamo runs eagerly (a break inside one of its loops), or
one over ``enumerate``/``zip`` whose body breaks, is compiled as a frame that cannot step the iterator it
receives ("Missing tp_iternext" at the comprehension's line).  ``check`` reports those, and stays silent
on a comprehension over a ``range`` or a tuple, on a generator expression, on one whose frame refers to no
tensor, module or torch module (Dynamo skips it), and on one that ran in a graph ended by an earlier break.
A function decorated with ``torch.compiler.disable`` inside analysed code runs eagerly: its call breaks,
nothing in its body does, whatever the scope."""
from __future__ import annotations

import pytest

from conftest import requires_torch
from helpers import checked_breaks, dynamo_break_lines

COMPREHENSIONS = """\
    import torch


    @torch.compile(backend="eager")
    def eager_loop(x):
        sizes = [2, 3]
        rows = [torch.full((n,), i) for i, n in enumerate(sizes)]
        stepped = [x * n for n in range(2)]
        plain = [n * 2 for n in reversed(sizes)]
        lazy = list(x * n for n in sorted(sizes))
        fixed = [x + n for n in (1, 2)]
        for i in range(2):
            print(i)
        after = {k: x + v for k, v in {"a": 1}.items()}
        listed = [x * n for n in sizes]
        return rows, stepped, plain, lazy, fixed, after, listed


    @torch.compile(backend="eager")
    def traced_first(x):
        sizes = [2, 3]
        rows = [x + n for n in sorted(sizes)]
        print("first")
        for i in range(2):
            print(i)
        return rows


    def shout(t):
        print("t")
        return t + 1


    @torch.compile(backend="eager")
    def body_breaks(x):
        pairs = [shout(x * a) for a, b in zip([1, 2], [3, 4])]
        rows = [shout(x * a) for a in [1, 2]]
        return pairs, rows


    def main(x):
        return eager_loop(x), traced_first(x), body_breaks(x)
"""
INPUTS = "[(torch.randn(2),)]"
#: the lines of the prints, the comprehensions of `eager_loop` over enumerate, a dict view and a local
#: list, and the comprehension of `body_breaks` over zip
BREAK_LINES = {7, 13, 14, 15, 23, 25, 30, 36}
COMPREHENSION_LINES = {7, 14, 15, 36}


def test_check_reports_the_comprehensions_dynamo_steps_as_frames(tmp_path, capsys) -> None:
    found = checked_breaks(tmp_path, capsys, COMPREHENSIONS)
    assert {line for line, _ in found} == BREAK_LINES
    assert {line for line, code in found if code == "DYN105"} >= COMPREHENSION_LINES


@requires_torch
def test_dynamo_breaks_on_those_lines(tmp_path) -> None:
    assert dynamo_break_lines(tmp_path, COMPREHENSIONS, INPUTS) == BREAK_LINES


#: a break in a `try` body (also in a function it calls) makes Dynamo run the function eagerly from the
#: `try` on: the comprehensions of the `try` (in its body, an `if` in it, its `else`) and after it are
#: frames of their own; one before the `try`, one in a handler that does not run, and one after a
#: `try` that did not break (a resumed frame) are traced
IN_TRY = """\
    import torch


    def shout(t):
        print("t")
        return t + 1


    @torch.compile(backend="eager")
    def broken_try(x):
        ks = [1, 2]
        before = [x * k for k in ks]
        try:
            first = [x + k for k in ks]
            z = shout(x)
            if z.shape[0] > 1:
                second = [x - k for k in ks]
        except ValueError:
            second = [x / k for k in ks]
        else:
            third = [x * k for k in ks]
        after = [x + k * 2 for k in ks]
        return before, first, second, third, after


    @torch.compile(backend="eager")
    def quiet_try(x):
        ks = [1, 2]
        try:
            y = x + 1
        finally:
            pass
        print("q")
        return [y * k for k in ks]


    def main(x):
        return broken_try(x), quiet_try(x)
"""
IN_TRY_BREAKS = {5, 14, 17, 21, 22, 33}


def test_check_reports_the_comprehensions_after_a_break_in_a_try(tmp_path, capsys) -> None:
    assert {line for line, _ in checked_breaks(tmp_path, capsys, IN_TRY)} == IN_TRY_BREAKS


@requires_torch
def test_dynamo_breaks_on_the_comprehensions_after_a_break_in_a_try(tmp_path) -> None:
    assert dynamo_break_lines(tmp_path, IN_TRY, INPUTS) == IN_TRY_BREAKS


#: an attribute its class binds only to lists is a list: a comprehension over it in a function that runs
#: eagerly is a frame of its own that cannot step it; one over an attribute bound to a tuple is traced
ATTRIBUTE_LIST = """\
    import torch


    def shout(t):
        print("t")
        return t + 1


    class Buffers:
        def __init__(self):
            self.parts = None
            self.pair = (1, 2)

        def fill(self, x):
            self.parts = [x, x + 1]

        def sync(self, x):
            try:
                z = shout(x)
                joined = [torch.relu(p) for p in self.parts]
                paired = [z * k for k in self.pair]
            except ValueError:
                joined = paired = []
            return joined, paired


    buffers = Buffers()


    @torch.compile(backend="eager")
    def run(x):
        buffers.fill(x)
        return buffers.sync(x)


    def main(x):
        return run(x)
"""
ATTRIBUTE_LIST_BREAKS = {5, 20}


def test_check_reports_a_comprehension_over_a_list_attribute(tmp_path, capsys) -> None:
    assert {line for line, _ in checked_breaks(tmp_path, capsys, ATTRIBUTE_LIST)} == ATTRIBUTE_LIST_BREAKS


@requires_torch
def test_dynamo_breaks_on_the_comprehension_over_a_list_attribute(tmp_path) -> None:
    assert dynamo_break_lines(tmp_path, ATTRIBUTE_LIST, INPUTS) == ATTRIBUTE_LIST_BREAKS


#: a parameter annotated as a list is a list too: a comprehension over it before a loop whose body breaks
#: (the function then runs eagerly from its start) is a frame of its own, as is one over `zip`
LIST_PARAMETER = """\
    from typing import List, Sequence

    import torch


    class Encoder(torch.nn.Module):
        def forward(self, xs: List[torch.Tensor], masks: List[torch.Tensor], ks: Sequence[int]):
            ratios = torch.stack([self.ratio(m) for m in masks], 0)
            scaled = [self.ratio(m) * k for k, m in zip(ks, masks)]
            out = []
            for x in xs:
                out.append(x * int(x.argmax()))
            return torch.stack(out) * ratios.sum() + scaled[0].sum()

        def ratio(self, mask: torch.Tensor) -> torch.Tensor:
            return (~mask).float().mean(-1)


    encoder = Encoder()


    @torch.compile(backend="eager")
    def run(x):
        return encoder([x, x * 2], [x > 0, x < 0], (1, 2))


    def main(x):
        return run(x)
"""
LIST_PARAMETER_BREAKS = {8, 9, 12}


def test_check_reports_a_comprehension_over_a_list_parameter(tmp_path, capsys) -> None:
    assert {line for line, _ in checked_breaks(tmp_path, capsys, LIST_PARAMETER)} == LIST_PARAMETER_BREAKS


@requires_torch
def test_dynamo_breaks_on_the_comprehension_over_a_list_parameter(tmp_path) -> None:
    assert dynamo_break_lines(tmp_path, LIST_PARAMETER, INPUTS) == LIST_PARAMETER_BREAKS


DISABLED_INSIDE = """\
    import torch


    def outer(x):
        @torch.compiler.disable
        def eager_part(t):
            print("in eager")
            return t.sum().item()

        @torch._dynamo.disable
        def branchy(t):
            if t.sum() > 0:
                return t
            return -t

        def plain(t):
            print("plain")
            return t

        return eager_part(x) + branchy(x).sum() + plain(x).sum()


    @torch.compile(backend="eager")
    def f(x):
        return outer(x)


    def main(x):
        return f(x)
"""


@pytest.mark.parametrize("scope", ["compiled", "all"])
def test_nothing_breaks_in_a_disabled_nested_function(tmp_path, capsys, scope: str) -> None:
    assert checked_breaks(tmp_path, capsys, DISABLED_INSIDE, "--scope", scope) == {(17, "DYN105"), (20, "DYN105")}


@requires_torch
def test_dynamo_breaks_at_the_disabled_call_not_in_its_body(tmp_path) -> None:
    lines = dynamo_break_lines(tmp_path, DISABLED_INSIDE, INPUTS)
    assert {17, 20} <= lines and not lines & {7, 8, 12}


#: calls and stores Dynamo breaks on whatever the values: `is_nonzero` (also with the capture flag),
#: arithmetic on a data pointer, the json module, setting `requires_grad`, `ExitStack.enter_context`, the
#: length of an f-string of a tensor (not of its shape), a NumPy generator and its methods, a nested tensor
#: built from a list; `t.grad = None` is traced, and
#: a store in a branch or arithmetic after `and` that the analysis cannot decide is not reported
TENSOR_FACTS = """\
    import contextlib
    import json

    import numpy as np

    import torch


    @torch.compile(backend="eager")
    def nonzero_test(x):
        return x.sum().is_nonzero()


    @torch.compile(backend="eager")
    def pointer_arithmetic(x):
        return x + (x.data_ptr() % 16)


    @torch.compile(backend="eager")
    def dumped(x):
        s = json.dumps({"a": 1})
        return x * len(s)


    @torch.compile(backend="eager")
    def grad_switch(x):
        y = x * 2
        y.requires_grad = False
        y.grad = None
        return y


    @torch.compile(backend="eager")
    def guarded(x):
        if x.dim() > 3:
            x.requires_grad = True
        aligned = x.dim() > 3 and x.data_ptr() % 16 == 0
        return x + 1, aligned


    @torch.compile(backend="eager")
    def stacked(x):
        with contextlib.ExitStack() as stack:
            stack.enter_context(torch.no_grad())
            return x * 2


    @torch.compile(backend="eager")
    def described(x):
        msg = f"value {x}"
        shape = f"shape {x.shape}"
        return x + len(msg) + len(shape)


    @torch.compile(backend="eager")
    def drawn(x):
        rng = np.random.default_rng(0)
        return torch.nested.nested_tensor([x, x * rng.random()])


    @torch.compile(backend="eager")
    def jagged(x):
        nt = torch.nested.nested_tensor([x, x[:1]], layout=torch.jagged)
        return torch.nested.as_nested_tensor([x, x[:1] * 2], layout=torch.jagged).values().sum() + nt.values().sum()


    def main(x):
        return (nonzero_test(x), pointer_arithmetic(x), dumped(x), grad_switch(x), guarded(x), stacked(x),
                described(x), drawn(x), jagged(x))
"""
TENSOR_FACT_BREAKS = {(11, "DYN102"), (16, "DYN105"), (21, "DYN105"), (28, "DYN105"), (44, "DYN105"),
                      (52, "DYN105"), (57, "DYN105"), (58, "DYN105")}


def test_check_reports_the_tensor_facts(tmp_path, capsys) -> None:
    assert checked_breaks(tmp_path, capsys, TENSOR_FACTS) == TENSOR_FACT_BREAKS


@requires_torch
def test_dynamo_breaks_on_the_tensor_facts(tmp_path) -> None:
    assert dynamo_break_lines(tmp_path, TENSOR_FACTS, INPUTS) == {line for line, _ in TENSOR_FACT_BREAKS}


DISPLAYED = """\
    import torch


    @torch.compile(backend="eager")
    def post(scores: list[torch.Tensor]):
        kept, idx = [], []
        for s in scores:
            keep = s > 0.5
            kept.append(s[keep])
            idx.append(torch.nonzero(keep)[:, 0])
        a, b = [torch.cat(x) for x in [kept, idx]]
        both = [kept, idx]
        c, d = [torch.cat(x) for x in both]
        return a.sum() + b.sum() + c.sum() + d.sum()


    def main(x):
        return post([x, x + 0.25])
"""
#: the mask in the loop (the function then runs eagerly), and the comprehension over a local list; the one over
#: a list display is stepped: CPython builds `[kept, idx]` there as a tuple
DISPLAYED_BREAK_LINES = {9, 13}


def test_check_stays_silent_on_a_comprehension_over_a_list_display(tmp_path, capsys) -> None:
    assert {line for line, _ in checked_breaks(tmp_path, capsys, DISPLAYED)} == DISPLAYED_BREAK_LINES


@requires_torch
def test_dynamo_steps_a_comprehension_over_a_list_display(tmp_path) -> None:
    assert dynamo_break_lines(tmp_path, DISPLAYED, "[(torch.rand(6),)]") == DISPLAYED_BREAK_LINES


#: a function that runs eagerly because of a break inside a loop runs the loop's comprehensions as frames of
#: their own at every pass, those before the break included; a dict argument's view is one of the iterators
#: such a frame cannot step (whether the findings carry fixes or not: the JSON and text reports agree)
IN_LOOP = """\
    import torch

    net = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)


    @torch.compile(backend="eager")
    def update(batch):
        perm = torch.randperm(8)
        keys = ["obs", "ret"]
        for start in range(0, 8, 4):
            idx = perm[start:start + 4]
            mb = {k: batch[k][idx] for k in keys}
            loss = (net(mb["obs"]).squeeze(-1) - mb["ret"]).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        last = {k: v[idx] for k, v in batch.items()}
        return loss.detach(), last


    def main():
        return update({"obs": torch.randn(8, 4), "ret": torch.randn(8)})
"""
IN_LOOP_BREAKS = {(13, "DYN105"), (15, "DYN105"), (17, "DYN105"), (18, "DYN105")}


def test_check_reports_the_comprehensions_of_a_loop_that_breaks(tmp_path, capsys) -> None:
    from helpers import check

    assert checked_breaks(tmp_path, capsys, IN_LOOP) == IN_LOOP_BREAKS
    assert {(d.line, d.code) for d in check(IN_LOOP) if d.kind == "graph-break"} == IN_LOOP_BREAKS


@requires_torch
def test_dynamo_breaks_on_the_comprehensions_of_a_loop_that_breaks(tmp_path) -> None:
    assert dynamo_break_lines(tmp_path, IN_LOOP, "[()]") == {line for line, _ in IN_LOOP_BREAKS}


#: a list bound by unpacking a display (`out, extra = [], []`) is a local list all the same: the comprehension
#: over it, after a loop whose body breaks, is a frame of its own that cannot step it
UNPACKED = """\
    import torch


    @torch.compile(backend="eager")
    def collect(xs):
        out, extra = [], []
        for x in xs:
            if x.sum() > 0:
                out.append(x * 2)
            else:
                out.append(x)
        return [torch.relu(t[:3]) for t in out]


    def main(x):
        return collect([torch.randn(5), torch.randn(5)])
"""


def test_check_reports_the_comprehension_over_an_unpacked_list(tmp_path, capsys) -> None:
    assert {line for line, _ in checked_breaks(tmp_path, capsys, UNPACKED)} == {8, 12}


@requires_torch
def test_dynamo_breaks_at_the_comprehension_over_an_unpacked_list(tmp_path) -> None:
    assert dynamo_break_lines(tmp_path, UNPACKED, "[(torch.randn(5),)]") == {8, 12}
