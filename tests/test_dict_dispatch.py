"""A function looked up in a dict of functions, ``d.get(key, default)`` or ``d.setdefault(key, default)``
with a key the analysis cannot know: the function called is one of the dict's values or the default, and
each is followed as for ``d[key]``, so the breaks inside them are reported.

The case is also run under real Dynamo, with keys that reach every function: the lines flagged must be
the lines where its graph-break log reports a break.
"""
from __future__ import annotations

from conftest import requires_torch

from helpers import break_lines, dynamo_break_lines, marked_lines

CODE = """
    import torch


    def _to_int(x):
        print("int")  # breaks
        return x + 1


    def _to_float(x):
        print("float")  # breaks
        return x * 2


    def _other(x):
        print("other")  # breaks
        return x


    def _first_seen(x):
        print("first")  # breaks
        return x - 1


    KERNELS = {int: _to_int, float: _to_float}
    SEEN = {}


    @torch.compile(backend="eager")
    def with_default(x, v):
        kernel = KERNELS.get(type(v), _other)
        return kernel(x)


    @torch.compile(backend="eager")
    def set_default(x, v):
        return SEEN.setdefault(type(v), _first_seen)(x) + 1


    def main(x):
        return with_default(x, 1), with_default(x, 1.0), with_default(x, "s"), set_default(x, 1)
"""
INPUTS = "[(torch.randn(2),)]"


def test_check_follows_the_values_and_the_default() -> None:
    assert break_lines(CODE) == marked_lines(CODE)


@requires_torch
def test_dynamo_breaks_on_those_lines(tmp_path) -> None:
    assert dynamo_break_lines(tmp_path, CODE, INPUTS) == marked_lines(CODE)
