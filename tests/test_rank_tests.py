"""A test of a tensor's rank (``t.dim() > 0``, ``t.ndim == 0``) is no test of a dimension's size: a 0-d input
(a scalar time, a loss, a temperature) is common, so the arm a 0-d tensor takes is analysed too, in a
conditional expression as in an ``if`` statement (measured on torch 2.13: ``float(t)`` in the other arm
breaks for a 0-d ``t``)."""
from helpers import break_tests

RANK = """\
import torch


def broadcast_time(t, z):
    return t.expand(z.shape[0], 1) if t.dim() > 0 else torch.full((z.shape[0], 1), float(t))


def scaled(t, z):
    return z * 2 if t.ndim != 0 else z * float(t)


def step(t, z):
    return z + broadcast_time(t, z) + scaled(t, z)


def main(t, z):
    return torch.compile(step, backend="eager")(t, z)
"""
test_check, test_dynamo = break_tests(RANK, {(5, "DYN102"), (9, "DYN102")},
                                      "[(torch.tensor(0.5), torch.randn(3, 1))]")

#: a dimension's size tested against 0 is still taken for a real input's (the other arm is for an empty one)
SIZE = RANK.replace("t.dim() > 0", "t.shape[0] > 0").replace("t.ndim != 0", "t.size(0) != 0")
test_check_size, test_dynamo_size = break_tests(SIZE, set(), "[(torch.ones(3, 1), torch.randn(3, 1))]")
