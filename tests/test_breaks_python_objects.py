"""Python objects Dynamo cannot handle while tracing, and their near neighbours it can.

An exception class of the checked code whose ``__init__`` calls the builtin exception's through ``super()``
or by name breaks where it is built; one that only sets attributes is traced.  ``dir()`` of an object breaks,
of a constant or a class it folds.  ``copy.copy`` of a list display calls the unbound ``list.copy``, which Dynamo skips; of
a tuple it is traced.  Calling a ``functools.singledispatch`` function breaks.  An assignment expression
inside a list or dict comprehension assigns a cell Dynamo reads before it is set (Python 3.11); inside a
generator expression, or outside any comprehension, it is traced.  ``ExitStack.enter_context`` breaks on a
context manager of torch or the standard library, not on one the checked code defines.  ``functools.cache``
applied to a function defined in compiled code breaks at the decorator; a cached function of the module is
traced.  ``int()`` of a string argument every call passes is traced.  The subject of
a ``match`` statement is evaluated as any expression is.  An optional tensor argument every call passes a
tensor is no ``None``: the test after ``rir is not None and`` breaks.
"""
from __future__ import annotations

import sys

import pytest

from helpers import break_tests

CODE = """\
    import contextlib
    import copy
    import functools
    from typing import Optional

    import torch


    class ShapeError(Exception):
        def __init__(self, msg, got):
            super().__init__(msg)
            self.got = got


    class NamedError(ValueError):
        def __init__(self, msg):
            ValueError.__init__(self, msg)


    class PlainError(Exception):
        def __init__(self, got):
            self.got = got


    class Bag:
        def __init__(self, w):
            self.w = w


    class Listed(type):
        def names(cls):
            return sorted(n for n in dir(cls) if not n.startswith("_"))


    class Modes(metaclass=Listed):
        TRAIN = "train"


    class Resource:
        def __enter__(self):
            return 3

        def __exit__(self, *exc):
            return False


    @functools.singledispatch
    def scale_for(v):
        return 1.0


    @scale_for.register
    def _(v: int):
        return float(v)


    @torch.compile(backend="eager")
    def raised(x):
        try:
            raise ShapeError("rows", x.shape[0])
        except ShapeError as e:
            return x[: e.got // 2]


    @torch.compile(backend="eager")
    def named(x):
        err = NamedError("bad")
        return x + len(err.args)


    @torch.compile(backend="eager")
    def plain(x):
        try:
            raise PlainError(x.shape[0])
        except PlainError as e:
            return x * e.got


    @torch.compile(backend="eager")
    def listed(x):
        names = [n for n in dir(Bag(x)) if not n.startswith("_")]
        known = dir([1, 2])
        modes = Modes.names()
        return x * len(names) + len(known) + len(modes)


    @torch.compile(backend="eager")
    def copied(x):
        pair = copy.copy((1, 2))
        items = copy.copy([1, 2, 3])
        return x * pair[0] * items[-1]


    @torch.compile(backend="eager")
    def dispatched(x):
        return x * scale_for(3)


    @torch.compile(backend="eager")
    def walrus(x):
        if (n := x.shape[0]) > 1:
            x = x * n
        total = sum(b for a in range(3) if (b := a) > 0)
        doubled = [y for r in range(3) if (y := r * 2) > 0]
        return x + total + len(doubled)


    @torch.compile(backend="eager")
    def stacked(x):
        with contextlib.ExitStack() as stack:
            s = stack.enter_context(Resource())
            stack.enter_context(contextlib.nullcontext())
            return x * s


    @functools.lru_cache(maxsize=None)
    def table(n):
        return n * n


    @torch.compile(backend="eager")
    def cached(x):
        @functools.cache
        def square(n):
            return n * n

        @functools.wraps(square)
        def same(n):
            return n

        return x * square(3) * table(2) * same(1)


    @torch.compile(backend="eager")
    def parsed(x, tag, digit):
        return x * int(tag.split("_")[-1]) * int(digit)


    @torch.compile(backend="eager")
    def matched(x):
        match int(x.argmax()):
            case 0:
                return x
            case _:
                return -x


    @torch.compile(backend="eager")
    def convolved(x, rir: Optional[torch.Tensor] = None):
        if rir is not None and rir.sum() > 0:
            x = x * 2
        return x


    def main(x):
        return (raised(x), named(x), plain(x), listed(x), copied(x), dispatched(x), walrus(x), stacked(x),
                cached(x), parsed(x, "block_3", "2"), matched(x), convolved(x, torch.ones(3)))
"""
BREAKS = {(11, "DYN105"), (17, "DYN105"), (81, "DYN105"), (90, "DYN105"), (96, "DYN105"), (104, "DYN105"),
          (112, "DYN105"), (123, "DYN105"), (141, "DYN102"), (150, "DYN101")}
if sys.version_info >= (3, 12):
    pytest.skip("comprehensions are inlined from Python 3.12 on", allow_module_level=True)

test_check, test_dynamo = break_tests(CODE, BREAKS, "[(torch.rand(4, 3),)]")


CELLS = """\
    import torch
    import torch.nn as nn


    @torch.compile(backend="eager")
    def unset(x, k: int):
        doubled = [y * k for r in range(3) if (y := r * 2) > 0]
        return x + len(doubled)


    @torch.compile(backend="eager")
    def set_before(x):
        total = 0
        sums = [(total := total + v) for v in [1, 2, 3]]
        return x * total + len(sums)


    @torch.compile(backend="eager")
    def with_a_tensor_parameter(x):
        scaled = [y * x for r in range(3) if (y := r * 2) > 0]
        return scaled[0]


    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.s = 2

        def forward(self, x):
            doubled = [y * self.s for r in range(3) if (y := r * 2) > 0]
            return x + len(doubled)


    head = torch.compile(Head(), backend="eager")


    def main(x):
        return unset(x, 2), set_before(x), with_a_tensor_parameter(x), head(x)
"""
"""An assignment expression in a comprehension breaks ("Read uninitialized cell") unless the function bound
the name before, or the comprehension also reads a parameter Dynamo holds as an object (a tensor, a module's
``self``); of a number it breaks."""
CELLS_BREAKS = {(7, "DYN105")}

test_check_cells, test_dynamo_cells = break_tests(CELLS, CELLS_BREAKS, "[(torch.rand(4),)]")


CACHED = """\
    import functools

    import torch
    import torch.nn as nn


    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        @functools.cached_property
        def scale(self):
            return 0.5

        @property
        def shift(self):
            return 0.25

        def forward(self, x):
            return self.lin(x) * self.scale + self.shift


    head = torch.compile(Head(), backend="eager")


    def main(x):
        return head(x)
"""
"""The first read of a ``functools.cached_property`` enters the ``RLock`` of its ``__get__`` (Python 3.11); a
plain property is inlined."""
CACHED_BREAKS = {(21, "DYN105")}

test_check_cached, test_dynamo_cached = break_tests(CACHED, CACHED_BREAKS, "[(torch.rand(2, 4),)]")


STORAGE = """\
    import torch


    @torch.compile(backend="eager")
    def stored(x):
        size = x.untyped_storage().size()
        return x * size * x.untyped_storage().nbytes()


    @torch.compile(backend="eager")
    def banked(x, y):
        bank = [y, x]
        if y in bank:
            return x + y
        return x


    def main(x):
        return stored(x), banked(x.sum(), x.sum() * 2)
"""
"""A tensor's untyped storage: ``size()`` is traced, ``nbytes()`` breaks; a branch on ``y in bank`` of a list
of tensors compares them with ``==`` and breaks."""
STORAGE_BREAKS = {(7, "DYN105"), (13, "DYN101")}

test_check_storage, test_dynamo_storage = break_tests(STORAGE, STORAGE_BREAKS, "[(torch.rand(4),)]")


RANDOM_SIZES = """\
    import random

    import torch


    @torch.compile(backend="eager")
    def cropped(seg, th: int):
        margin = max(seg.shape[0] - th, 0)
        y0 = random.randint(0, margin)
        fixed = random.randint(0, 4)
        return seg[:, :4] * 2 + y0 + fixed


    def main(x):
        for n in (8, 10, 12):
            cropped(torch.ones(n, n), 4)
"""
"""``random.randint`` is traced on Python ints; given a size the calls change, which Dynamo traces as a
symbolic int after the recompile, it calls the function itself, which it skips: the graph breaks there on
that recompile."""

test_check_random_sizes, test_dynamo_random_sizes = break_tests(RANDOM_SIZES, {(9, "DYN105")}, "[(None,)]")


MATCH_GUARD = """
import torch


def gated_readout(tokens, gate_logits):
    gate = gate_logits.sigmoid()
    match gate.mean():
        case g if g > 0.5:
            return tokens.amax(1) * gate
        case _:
            return tokens.mean(1) * gate


def main(tokens, gate_logits):
    return torch.compile(gated_readout, backend="eager")(tokens, gate_logits)
"""
"""A capture pattern binds the subject as it is: a case guard on it is a Python branch on tensor data."""

test_check_match_guard, test_dynamo_match_guard = break_tests(
    MATCH_GUARD, {(7, "DYN101")}, "[(torch.randn(2, 5, 8), torch.randn(2, 8))]")
