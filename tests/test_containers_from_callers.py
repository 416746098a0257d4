"""A list, tuple or dict of tensors that every call in a script hands a compiled function types its untyped
parameter: its elements are tensors, so ``max(xs, key=...)`` over it, a sort key that reads ``.item()`` of an
element, and ``sorted(d.items())`` (which compares ``(str, Tensor)`` pairs) break, while sorting its keys does
not; a ``collections.namedtuple`` of tensors types its fields. Each text is checked against real Dynamo (torch
2.13, backend ``eager``)."""
from __future__ import annotations

from helpers import break_tests

LISTS = """
import torch


def longest(xs):
    best = max(xs, key=lambda t: t.norm())
    ranked = sorted(xs, key=lambda t: t.sum().item())
    return best + ranked[0]


def main():
    f = torch.compile(longest, backend="eager")
    a = torch.randn(3)
    return [f([a, a + 1]), f((a * 2, a))]
"""
test_check_lists, test_dynamo_lists = break_tests(LISTS, {(5, "DYN105"), (6, "DYN102")}, "[()]")

DICTS = """
import torch


def total(d):
    out = 0
    for k in sorted(d):
        out = out + d[k]
    for _, v in sorted(d.items()):
        out = out + v
    return out


def main():
    f = torch.compile(total, backend="eager")
    a = torch.randn(3)
    return f({"x": a, "y": a * 2})
"""
test_check_dicts, test_dynamo_dicts = break_tests(DICTS, {(8, "DYN105")}, "[()]")

# a `collections.namedtuple` of tensors every call passes: its fields are those tensors, annotated or not
NAMEDTUPLES = """
from collections import namedtuple

import torch

Packed = namedtuple("Packed", ["input_ids", "doc_ids"])


def packed_stats(batch: Packed):
    tokens = (batch.input_ids > 0).sum()
    n_docs = int(batch.doc_ids.max()) + 1
    return tokens, n_docs


def main():
    f = torch.compile(packed_stats, backend="eager")
    b = Packed(torch.randint(0, 5, (2, 8)), torch.randint(0, 3, (2, 8)))
    return f(b)
"""
test_check_namedtuples, test_dynamo_namedtuples = break_tests(NAMEDTUPLES, {(10, "DYN102")}, "[()]")
