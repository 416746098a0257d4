"""The line DYN201 reports a global on is the one Dynamo's recompile reason names.

Measured on torch 2.13 (``backend="eager"``): the guard on a global is named where its value is used,
so a helper that uses it (``return y * SCALE``) is named on its own line, and a helper that returns it
as it is (``return _factor[0]``) on the line that calls it - in the compiled function, or in another
helper that uses what the call returns."""
from __future__ import annotations

import re
import textwrap

from conftest import requires_torch
from helpers import check, dynamo_recompile_log

CODE = textwrap.dedent("""\
    import torch

    SCALE = 1.0
    _factor = [1.0]


    def _inner():
        return _factor[0]


    def _factor_cell():
        return _inner() + 0


    def scaled(x):
        y = x + 1
        return y * SCALE


    @torch.compile(backend="eager")
    def through_two(x):
        return x * _factor_cell()


    @torch.compile(backend="eager")
    def through_one(x):
        y = x + 1
        return y * _inner()


    @torch.compile(backend="eager")
    def using_helper(x):
        return scaled(x) + 1


    def run():
        global SCALE
        for fn in (through_two, through_one, using_helper):
            fn(torch.randn(2))
        SCALE = 2.0
        _factor[0] = 3.0
        for fn in (through_two, through_one, using_helper):
            fn(torch.randn(2))
""")

NAMED = {12, 17, 28}
"""``_inner() + 0`` in ``_factor_cell``, ``y * SCALE`` in ``scaled``, ``y * _inner()`` in ``through_one``."""


def test_dyn201_is_reported_where_the_value_is_used():
    assert {d.line for d in check(CODE) if d.code == "DYN201"} == NAMED


@requires_torch
def test_the_lines_dynamo_names():
    import torch  # noqa: F401

    namespace: dict = {}
    with dynamo_recompile_log() as messages:
        exec(compile(CODE, "<globals>", "exec"), namespace)
        namespace["run"]()
    assert {int(n) for m in messages for n in re.findall(r"<globals>:(\d+) in ", m)} == NAMED
