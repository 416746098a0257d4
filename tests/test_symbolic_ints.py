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
"""The shapes the calls pass are followed through a name bound once to a factory (``a = torch.ones(4, 3)``),
arithmetic with a number and ``.reshape`` to literal sizes: ``halves`` and ``described`` get a first
dimension that changes and break on the recompile; ``kept`` formats the second, which stays 3."""

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
"""``str.format`` of a symbolic int bound to a name is kept unformatted: the graph breaks where the string is
used (``len(label)``), not at the call, which is not reported."""


def test_a_format_bound_to_a_name_is_not_reported_at_the_call(tmp_path, capsys):
    from helpers import checked_breaks

    assert (6, "DYN105") not in checked_breaks(tmp_path, capsys, LABELLED)


@requires_torch
def test_dynamo_breaks_where_the_formatted_string_is_used(tmp_path):
    from helpers import dynamo_break_lines

    assert dynamo_break_lines(tmp_path, LABELLED, "[()]") == {7}
