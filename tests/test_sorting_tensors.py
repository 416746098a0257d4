"""Sorting compares its keys in Python, and Dynamo sorts only by keys it knows as constants: ``sorted``
and ``list.sort()`` without a ``key`` break on a list of tensors or of tuples holding one
(``sorted(d.items())`` of a dict of tensors), or with a ``key`` that gives tensors; not on the dict's string
keys nor with a ``key`` giving sizes.  Dynamo's ``min`` and ``max`` of tensors take no keyword at all: with
``key=`` they break whatever it gives (Dynamo's handler for them has no such parameter).  Each case is also run under real Dynamo."""
from __future__ import annotations

from helpers import marked_case_tests

CASES = [
    ("items-of-a-dict-of-tensors", """
    import torch


    def f(x):
        d = {"a": x, "b": x * 2}
        for k, v in sorted(d.items()):  # breaks
            x = x + v
        for k in sorted(d):
            x = x + d[k]
        return x
    """, "f", "[(torch.ones(2, 4),)]"),
    ("a-key-that-gives-tensors", """
    import torch


    def f(x):
        xs = [x, x * 2]
        by_size = sorted(xs, key=lambda t: t.shape[0])[0]
        return sorted(xs, key=lambda t: t.norm())[0] + by_size  # breaks
    """, "f", "[(torch.ones(2, 4),)]"),
    ("min-and-max-with-a-key", """
    import torch


    def f(x):
        xs = [x, x * 2]
        big = max(xs, key=lambda t: t.sum())  # breaks
        short = min(xs, key=lambda t: t.shape[0])  # breaks
        return big + short + max(x, x * 2) + max(len(xs), 1)
    """, "f", "[(torch.ones(2, 4),)]"),
    ("an-untyped-argument-may-be-a-dict", """
    import torch


    def f(d, x):
        for k in sorted(d, key=lambda k: d[k]):
            x = x * d[k]
        return max(d, key=lambda k: d[k]), x
    """, "f", "[({'a': 2, 'b': 1}, torch.ones(2))]"),
    ("pairs-and-lists", """
    import torch


    def f(x):
        pairs = [(1, x), (0, x * 2)]
        first = sorted(pairs)[0][1]  # breaks
        xs = [x, x * 2]
        xs.sort(key=lambda t: t.shape[0])
        return first + xs[0]
    """, "f", "[(torch.ones(2, 4),)]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)
