"""Calls Dynamo traces on an int but not on a symbolic one, checked against Dynamo (torch 2.13).  Once the
calls of a compiled function change a size of a tensor they pass (made by a torch factory of literal sizes,
also in a loop: ``for n in (4, 6, 5): f(torch.randn(n, 3))``) or an int they pass, Dynamo recompiles it with
that size or int symbolic (automatic dynamic); under ``dynamic=True`` from the first call.  There ``str``,
``divmod``, ``math.gcd``, ``math.isqrt``, ``sorted`` of it, ``%``-formatting it and their kind break; a
size the calls leave as it is stays an int, and under ``dynamic=False`` nothing is symbolic.  A ``divmod``
of a symbolic int raises inside Dynamo, which then runs that compile's frame eagerly: a later call of the
kind is not met."""
from __future__ import annotations

from conftest import requires_torch
from helpers import break_tests

CODE = """
import math

import torch


@torch.compile(backend="eager")
def rows(x):
    label = str(x.shape[1])
    q, r = divmod(x.shape[0], 4)
    return x * (q + r + math.isqrt(x.shape[0])) + len(label)


@torch.compile(backend="eager")
def steps(x, n):
    return x * math.gcd(n, 4) * len(sorted([n, x.shape[0]]))


@torch.compile(backend="eager", dynamic=True)
def always(x):
    return x * math.isqrt(x.shape[0])


@torch.compile(backend="eager", dynamic=False)
def never(x):
    return x * math.isqrt(x.shape[0])


@torch.compile(backend="eager")
def tagged(x):
    return x * len("rows%03d" % x.shape[0])


def main():
    for n in (4, 6, 5):
        rows(torch.randn(n, 3))
    steps(torch.randn(2), 2)
    steps(torch.randn(2), 6)
    always(torch.randn(5))
    never(torch.randn(4))
    never(torch.randn(9))
    tagged(torch.randn(4))
    tagged(torch.randn(7))
"""

test_check, test_dynamo = break_tests(CODE, {(9, "DYN105"), (15, "DYN105"), (20, "DYN105"), (30, "DYN105")},
                                      "[()]")


NAMED = """
import torch


@torch.compile(backend="eager")
def halves(x):
    pairs, extra = divmod(x.shape[0], 2)
    return x[: pairs * 2] + extra


@torch.compile(backend="eager")
def described(x):
    text = "%d x %d" % (x.shape[0], x.shape[1])
    return x.sum() + len(text)


@torch.compile(backend="eager")
def kept(x):
    return x * len("%d" % x.shape[1])


def main():
    a = torch.ones(4, 3)
    b = torch.ones(6, 3) / 5
    halves(a)
    halves(b)
    c = torch.linspace(-1.0, 1.0, 12).reshape(4, 3)
    d = torch.arange(18.0).reshape(6, 3)
    described(c)
    described(d)
    kept(c)
    kept(d)
"""
"""The shapes the calls pass are followed through a name bound once to a factory (``a = torch.ones(4,
3)``), arithmetic with a number and ``.reshape`` to literal sizes: ``halves`` and ``described`` get a
first dimension that changes and break on the recompile; ``kept`` formats the second, which stays 3."""

test_check_named, test_dynamo_named = break_tests(NAMED, {(6, "DYN105"), (12, "DYN105")}, "[()]")


LABELLED = """
import torch


@torch.compile(backend="eager")
def labelled(x):
    label = "{}-{}".format("rows", x.shape[0])
    return x * len(label)


def main():
    for n in (4, 6):
        labelled(torch.ones(n, 3))
"""
"""``str.format`` of a symbolic int bound to a name is kept unformatted: the graph breaks where the string
is used (``len(label)``), not at the call, which is not reported."""


def test_a_format_bound_to_a_name_is_not_reported_at_the_call(tmp_path, capsys):
    from helpers import checked_breaks

    assert (6, "DYN105") not in checked_breaks(tmp_path, capsys, LABELLED)


@requires_torch
def test_dynamo_breaks_where_the_formatted_string_is_used(tmp_path):
    from helpers import dynamo_break_lines

    assert dynamo_break_lines(tmp_path, LABELLED, "[()]") == {7}


FLOATS = """
import math

import torch


@torch.compile(backend="eager")
def tagged(x, lr):
    tag = f"lr={lr:.3e}"
    return x * len(tag)


@torch.compile(backend="eager")
def near(x, eps):
    if math.isclose(eps, 1e-5, rel_tol=1e-3):
        return x + eps
    return x - eps


@torch.compile(backend="eager")
def named(x, n):
    key = f"w{n}"
    return x * 2


@torch.compile(backend="eager")
def printed(x, lr):
    text = f"{lr}"
    return x * 2


@torch.compile(backend="eager")
def sized(x):
    tag = f"n={x.shape[0]}"
    return x * len(tag)


@torch.compile(backend="eager")
def compared(x):
    return x * math.isclose(x.shape[0], 4)


def main():
    for lr in (0.1, 0.25, 0.5):
        tagged(torch.ones(3), lr)
        near(torch.ones(3), lr)
        printed(torch.ones(3), lr)
    for n in (3, 4, 5):
        named(torch.ones(3), n)
        sized(torch.ones(n))
        compared(torch.ones(n))
"""
"""A float the calls change is traced as a symbolic float after one recompile, as an int is: an f-string
with a format spec and ``math.isclose`` of it break there, and so does an f-string of a symbolic int passed
to the function, used or not.  A float's f-string without a spec is kept unformatted (it breaks only where
it is used), and a size read from a tensor is specialised by the f-string that formats it (each new size
recompiles, nothing breaks), while ``math.isclose`` of one breaks."""

test_check_floats, test_dynamo_floats = break_tests(
    FLOATS, {(8, "DYN105"), (14, "DYN105"), (21, "DYN105"), (39, "DYN105")}, "[()]")


MESSAGES = """
import torch


@torch.compile(backend="eager")
def checked(x, k):
    assert k > 0, f"k must be positive, got {k}"
    if k > 100:
        raise ValueError(f"k is too large: {k}")
    return x * k


def main():
    for k in (2, 3, 5):
        checked(torch.ones(3), k)
"""
"""The message of an ``assert`` or a ``raise`` is built only when the error is raised: its f-string of a
symbolic int breaks nothing."""

test_check_messages, test_dynamo_messages = break_tests(MESSAGES, set(), "[()]")


KEYED = """
import torch


@torch.compile(backend="eager")
def by_length(x, y):
    ordered = sorted([x, y], key=lambda t: t.shape[0])
    return torch.cat(ordered) * 2


@torch.compile(backend="eager")
def by_width(x, y):
    ordered = sorted([x, y], key=lambda t: t.shape[1])
    return torch.cat(ordered) * 2


def main():
    for n in (3, 5):
        by_length(torch.ones(n, 2), torch.ones(n + 1, 2))
        by_width(torch.ones(n, 2), torch.ones(n + 1, 2))
"""
"""A sort compares what its ``key=`` returns: the first dimension of the tensors the calls pass changes, so
the keys of ``by_length`` are symbolic ints after the recompile, and the sort breaks; the second does not."""

test_check_keyed, test_dynamo_keyed = break_tests(KEYED, {(6, "DYN105")}, "[()]")


SHAPES = """
import torch


@torch.compile(backend="eager")
def keyed(x, flow):
    key = str(flow.size())
    return x * len(key)


@torch.compile(backend="eager")
def steady(x, flow):
    key = str(flow.size())
    return x * len(key)


def main():
    for n in (4, 6, 8):
        keyed(torch.ones(n), torch.ones(n, 2))
        steady(torch.ones(n), torch.ones(3, 2))
"""
"""``str`` of a whole shape one dimension of which the calls change holds symbolic ints after the
recompile, and breaks (a cache key such as a warping grid's); the shape the calls leave as it is folds to
a constant."""

test_check_shapes, test_dynamo_shapes = break_tests(SHAPES, {(6, "DYN105")}, "[()]")


FROM_THE_END = """
import math

import torch


@torch.compile(backend="eager")
def grouped(x: torch.Tensor):
    return x * math.gcd(x.shape[-1], 8)


@torch.compile(backend="eager")
def labelled(x: torch.Tensor):
    return x * len(str(x.shape[-2]))


def main():
    for n in (4, 6, 10):
        grouped(torch.ones(2, 3, n))
        labelled(torch.ones(2, 3, n))
"""
"""A size picked counting from the end (``x.shape[-1]``) of a tensor whose annotation hides its rank: the
calls change the last dimension, which is symbolic after the recompile (``gcd`` of it breaks), not the one
before."""

test_check_from_the_end, test_dynamo_from_the_end = break_tests(FROM_THE_END, {(8, "DYN105")}, "[()]")


EARLY_STOP = """
import torch


@torch.compile(backend="eager")
def validate(x, epoch):
    tag = f"[{epoch}] loss"
    return (x * x).mean(), tag


def main():
    state = {"stop": False}
    for epoch in range(3):
        validate(torch.randn(4), epoch)
        if state["stop"]:
            break
"""
"""An early stop after the call leaves the loop's values as they are for the iterations that run: the epoch is
a symbolic int from the second call, and the f-string breaks at the third."""

test_check_early_stop, test_dynamo_early_stop = break_tests(EARLY_STOP, {(6, "DYN105")}, "[()]")
