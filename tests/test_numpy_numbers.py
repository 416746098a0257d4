"""Numbers taken from NumPy calls in compiled code.  Dynamo traces NumPy through ``torch._numpy``, so what a
NumPy reduction returns is a 0-d tensor there, even of Python numbers: ``int()`` or ``float()`` of it reads
its data and breaks.  As a size of ``reshape``/``view`` the array is taken without a break; ``torch.zeros``
of one, or a slice bounded by one, breaks.  What an elementwise function of one number gives (``np.ceil(h / 4)``) breaks
or not by its dtype and is not judged.  With ``capture_scalar_outputs``, ``int()`` is traced and ``float()``
of an integer array still breaks.  Each case is also run under real Dynamo, in both configurations."""
from __future__ import annotations

import pytest

from conftest import requires_torch
from dynalint.rules.base import Example
from helpers import break_lines, marked_case_tests, marked_lines, run_example_under_dynamo

CASES = [
    ("numpy-reductions", """
    import numpy as np
    import torch


    def flat(x):
        n = int(np.prod(x.shape))  # breaks
        return x.reshape(n)


    def rows(x):
        return x.reshape(x.shape[0], np.prod(x.shape[1:]))


    def grid(x):
        return x.view(-1, np.maximum(x.shape[1], 2))


    def head(x):
        n = np.prod(x.shape)
        return x.flatten()[: n - 1]  # breaks


    def scaled(x):
        return x * float(np.mean([1.0, 2.0]))  # breaks


    def zeros(x):
        return torch.zeros(np.prod(x.shape)) + x.sum()  # breaks


    def f(x):
        return flat(x).sum() + rows(x).sum() + grid(x).sum() + head(x).sum() + scaled(x).sum() + zeros(x).sum()
    """, "f", "[(torch.randn(4, 6),), (torch.randn(6, 6),)]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)

UNDER_CAPTURE = """
import numpy as np
import torch


def f(x):
    n = int(np.prod(x.shape))
    m = int(np.sum([x.shape[0], 1]))
    w = float(np.prod(x.shape[1:]))  # breaks
    return x.reshape(n) * m * w
"""


def test_under_capture_scalar_outputs_only_float_of_an_integer_array_is_promised_to_break() -> None:
    assert break_lines(UNDER_CAPTURE, entry_points=("f",), capture_scalar_outputs=True) == marked_lines(UNDER_CAPTURE)
    assert len(break_lines(UNDER_CAPTURE, entry_points=("f",))) == 3


@requires_torch
def test_that_is_dynamos(tmp_path) -> None:
    example = Example(UNDER_CAPTURE, target="f", inputs="[(torch.randn(4, 6),), (torch.randn(6, 6),)]",
                      settings={"capture_scalar_outputs": True})
    obs, _ = run_example_under_dynamo(example, tmp_path)
    assert not obs.errors, obs.errors
    assert obs.break_lines() == marked_lines(UNDER_CAPTURE)
