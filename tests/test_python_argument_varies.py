"""DYN206 on constants handed straight to a call Dynamo runs eagerly.

A string or flag the compiled function only passes, as it is, to a call that breaks the graph (``print``)
installs no guard: Dynamo runs the call with the value it was given, and the calls' different values
recompile nothing (measured on torch 2.13).  One it tests, or formats before the call, is guarded.
"""
from __future__ import annotations

from conftest import requires_torch
from helpers import check, recompiled_frames, recompiles_of_run

CODE = """
    import torch


    def announced(x, name):
        print("calling", name)
        return x * 2


    def chosen(x, mode):
        print("mode")
        if mode == "double":
            return x * 2
        return x


    def run():
        a = torch.compile(announced, backend="eager")
        b = torch.compile(chosen, backend="eager")
        x = torch.ones(4)
        for label in ("first", "second"):
            a(x, label)
        for mode in ("double", "same"):
            b(x, mode)
"""


def test_a_constant_only_printed_is_not_reported():
    assert [(d.line, d.message.split("`")[1]) for d in check(CODE) if d.code == "DYN206"] == [(9, "mode")]


@requires_torch
def test_dynamo_recompiles_only_where_the_constant_is_tested():
    messages = recompiles_of_run(CODE, "printed")
    assert {name for name, _ in recompiled_frames(messages)} == {"chosen"}, messages


KINDS = """
    import torch


    def ranked(x, exclude=None):
        if exclude:
            for col in exclude:
                x = x + col
        return x * 2


    def resized(x, size):
        if isinstance(size, int):
            size = (size, size)
        return x * size[0]


    def scaled(x, factor=None):
        return x * 2 if factor is None else x * factor


    def run():
        r = torch.compile(ranked, backend="eager")
        s = torch.compile(resized, backend="eager")
        t = torch.compile(scaled, backend="eager")
        x = torch.ones(4)
        r(x)
        r(x, [1, 2])
        s(x, 2)
        s(x, (2, 3))
        t(x)
        t(x, 1.5)
"""
"""``None`` at one call and a list at another fail the guard ``exclude is None``; an int and a tuple fail
``size == 2`` (measured on torch 2.13): each is a recompile, and the message names the kinds passed."""


def test_a_change_of_kind_is_reported_with_the_kinds_it_names():
    found = {d.message.split("`")[1]: d.message for d in check(KINDS) if d.code == "DYN206"}
    assert set(found) == {"exclude", "size", "factor"}
    assert "one graph for `None` and one for a list" in found["exclude"]
    assert "one graph for `None` and one for a number" in found["factor"]


@requires_torch
def test_dynamo_recompiles_on_each_change_of_kind():
    messages = recompiles_of_run(KINDS, "kinds")
    assert {name for name, _ in recompiled_frames(messages)} == {"ranked", "resized", "scaled"}, messages


FRAMES = """
    import torch


    def group(xyz, feats):
        sel = xyz[xyz > 0]
        if feats is not None:
            return sel.sum() + feats.sum()
        return sel.sum()


    def blend(xyz, feats):
        if feats is not None:
            return xyz.sum() + feats.sum()
        return xyz.sum()


    def net(x):
        a = group(x, None)
        b = group(x, x * 2)
        return a + b + blend(x, None) + blend(x, x * 2)


    def run():
        f = torch.compile(net, backend="eager")
        for _ in range(2):
            f(torch.randn(8))
"""
"""``group`` breaks (a boolean mask): Dynamo breaks at each call of it and runs it as a frame of its own,
guarded on what it reads, so ``None`` at one call and a tensor at the other recompile it (``feats is
None``); ``blend`` is inlined into the caller's graph at each call, and recompiles nothing."""


def test_a_helper_run_as_a_frame_of_its_own_is_reported_for_what_its_calls_pass():
    found = [d for d in check(FRAMES) if d.code == "DYN206"]
    assert [(d.line, d.message.split("`")[1]) for d in found] == [(4, "feats")], found
    assert "one graph for `None` and one for a tensor" in found[0].message


@requires_torch
def test_dynamo_recompiles_the_helper_that_breaks():
    messages = recompiles_of_run(FRAMES, "frames")
    assert {name for name, _ in recompiled_frames(messages)} == {"group"}, messages


EAGER_CALLER = """
    import torch
    import torch.nn as nn


    class Layer(nn.Module):
        def forward(self, x, past=None):
            if past is not None:
                x = x + past
            return x * 2


    def generate(layer, x, steps):
        out = layer(x)
        for _ in range(steps):
            if out.max() == 0:
                break
            out = layer(x, past=out)
        return out


    def run():
        f = torch.compile(generate, backend="eager")
        f(Layer(), torch.randn(2, 3), 3)
"""
"""A break in a loop makes Dynamo run ``generate`` eagerly: each call of the module there runs its
``forward`` as a frame of its own, compiled and guarded on what it is given, so ``past`` left out
(``None``) at one call and a tensor at the next recompile it."""


def test_a_module_called_from_a_frame_run_eagerly_is_reported_for_what_its_calls_pass():
    found = [d for d in check(EAGER_CALLER) if d.code == "DYN206"]
    assert [(d.line, d.message.split("`")[1]) for d in found] == [(6, "past")], found


@requires_torch
def test_dynamo_recompiles_the_forward_of_the_module_called_eagerly():
    messages = recompiles_of_run(EAGER_CALLER, "eager_caller")
    assert {name for name, _ in recompiled_frames(messages)} == {"forward"}, messages


DYNAMIC_TRUE = """
    import torch


    def scale_rows(x, n_rows: int):
        return x[:n_rows] * n_rows


    def scale_cols(x, n_cols: int):
        return x[:, :n_cols] * n_cols


    def run():
        f = torch.compile(scale_rows, backend="eager", dynamic=True)
        g = torch.compile(scale_cols, backend="eager")
        for n in (2, 3, 4):
            f(torch.randn(6, 3), n)
            g(torch.randn(3, 6), n)
"""
"""Under ``dynamic=True`` an int argument is symbolic from the first call: new values recompile nothing;
without it the second value recompiles once."""


def test_an_int_of_a_function_compiled_dynamic_is_not_reported():
    found = [d for d in check(DYNAMIC_TRUE) if d.code == "DYN206"]
    assert [d.message.split("`")[1] for d in found] == ["n_cols"], found


@requires_torch
def test_dynamo_recompiles_only_the_function_compiled_without_dynamic():
    messages = recompiles_of_run(DYNAMIC_TRUE, "dynamic_true")
    assert {name for name, _ in recompiled_frames(messages)} == {"scale_cols"}, messages


SOMETIMES = """
    import torch


    def pool(x, size=None, reduce="sum"):
        if size is None:
            size = int(x.max()) + 1
        out = x.new_zeros(size)
        if reduce == "sum":
            return out + x.sum()
        return out + x.amax()


    def net(x):
        size = x.shape[0] if x.dim() == 1 else None
        return pool(x, size, "sum") + pool(x, size, "max")


    def run():
        f = torch.compile(net, backend="eager")
        for _ in range(2):
            f(torch.randn(8))
"""
"""``pool`` breaks only when it is given no size: called with one (a 1-d input's), Dynamo inlines it into
``net``'s graph, and the two reductions the calls ask for recompile nothing."""


def test_a_helper_that_breaks_on_one_path_only_is_not_taken_for_a_frame():
    assert [d for d in check(SOMETIMES) if d.code == "DYN206"] == []


@requires_torch
def test_dynamo_inlines_the_helper_given_a_size():
    assert recompiles_of_run(SOMETIMES, "sometimes") == []


RETURNS_BEFORE_LOOP = """
    import torch


    def decode(logits, mode="greedy"):
        probs = logits.softmax(-1)
        if mode == "greedy":
            return probs.argmax(-1)
        out = []
        for row in probs:
            out.append(int(row.argmax()))
        return out


    def run():
        f = torch.compile(decode, backend="eager")
        f(torch.randn(3, 5))
        f(torch.randn(3, 5), mode="beam")
"""
"""The loop breaks (``int`` of a tensor), so Dynamo runs ``decode`` eagerly when it gets there; but the first
call returns before the loop, and its frame is compiled and guarded on ``mode == 'greedy'``: the second mode
recompiles it (then meets the loop)."""


def test_a_test_before_the_loop_on_a_returning_path_is_guarded():
    assert [d.message.split("`")[1] for d in check(RETURNS_BEFORE_LOOP) if d.code == "DYN206"] == ["mode"]


@requires_torch
def test_dynamo_recompiles_on_the_test_before_the_loop():
    messages = recompiles_of_run(RETURNS_BEFORE_LOOP, "returns_before_loop")
    assert {name for name, _ in recompiled_frames(messages)} == {"decode"}, messages
