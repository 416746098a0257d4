"""NumPy in compiled code: Dynamo traces it through ``torch._numpy`` and breaks on what that lacks (a
function, an array attribute or method). The committed table matches the installed torch and NumPy, and
on small cases ``dynalint check`` flags the lines where Dynamo's graph-break log reports a break."""
from __future__ import annotations

import pytest

from conftest import requires_torch

import dynalint.analysis.numpy_calls as committed
from helpers import assert_dynamo_breaks_on_marked_lines, assert_generated_module_current, break_lines, marked_lines

CASES = [
    ("functions-torch-numpy-lacks", """
    import numpy as np
    import torch


    def count(y):
        for _ in np.ndindex(2, 2):  # breaks
            y = y + 1
        return y


    def scalar(y):
        if np.isscalar(3):  # breaks
            y = y + 2
        return y


    def f(x):
        y = count(x + 1)
        y = scalar(y)
        a = x.numpy()
        return y * np.sum(a) + np.shape(a)[0]
    """, "f", "[(torch.ones(3),)]"),
    ("array-attribute-ends-the-frame", """
    import numpy as np
    import torch


    def f(x):
        a = x.numpy()
        y = x + 1
        n = a.ndim
        d = a.dtype  # breaks
        y = y * 2
        if np.isscalar(3):  # not traced: the rest of the function runs eagerly
            y = y + 2
        return y * n
    """, "f", "[(torch.ones(3),)]"),
    ("array-method", """
    import numpy as np
    import torch


    def raw(a):
        return a.tobytes()  # breaks


    def f(x):
        a = np.ones(3) * 2
        b = raw(a)
        return x + a.sum()
    """, "f", "[(torch.ones(3),)]"),
    ("isinstance-array", """
    import numpy as np
    import torch


    def convert(data):
        if isinstance(data, np.ndarray) and data.dtype == np.float32:  # breaks
            return torch.from_numpy(data)
        return data


    def same(data):
        if isinstance(data, np.ndarray) and data.dtype == np.float32:  # a tensor: short-circuited
            return torch.from_numpy(data)
        return data


    def f(x: torch.Tensor, arr):
        return same(x) + convert(arr).sum()
    """, "f", "[(torch.ones(3), np.ones(2, dtype=np.float32))]"),
]


@requires_torch
def test_committed_table_is_current() -> None:
    assert_generated_module_current("dynalint.verify.numpy_calls_table", committed)


def test_the_table_lists_what_torch_numpy_lacks_and_not_what_it_has() -> None:
    assert {"numpy.ndindex", "numpy.isscalar", "numpy.nanmean"} <= committed.BREAKING_NUMPY_CALLS.keys()
    assert not {"numpy.sum", "numpy.where", "numpy.array", "numpy.shape"} & committed.BREAKING_NUMPY_CALLS.keys()
    assert "dtype" in committed.BREAKING_NDARRAY_ATTRIBUTES and "shape" not in committed.BREAKING_NDARRAY_ATTRIBUTES
    assert "tobytes" in committed.BREAKING_NDARRAY_METHODS and "sum" not in committed.BREAKING_NDARRAY_METHODS


@pytest.mark.parametrize("name, code, target, inputs", CASES, ids=[c[0] for c in CASES])
def test_flagged_lines(name: str, code: str, target: str, inputs: str) -> None:
    assert break_lines(code, entry_points=(target,)) == marked_lines(code)


@requires_torch
@pytest.mark.parametrize("name, code, target, inputs", CASES, ids=[c[0] for c in CASES])
def test_flagged_lines_break_under_dynamo(name: str, code: str, target: str, inputs: str, tmp_path) -> None:
    assert_dynamo_breaks_on_marked_lines(code, target, inputs, tmp_path)
