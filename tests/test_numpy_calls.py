"""NumPy in compiled code: Dynamo traces it through ``torch._numpy`` and breaks on what that lacks (a
function, a method of a ufunc such as ``np.add.at``, an array attribute or method, a function that reads the
arrays' data such as ``np.cov``, ``==`` of NumPy types). The
committed table matches the installed torch and NumPy, and
on small cases ``dynalint check`` flags the lines where Dynamo's graph-break log reports a break."""
from __future__ import annotations

import pytest
from conftest import requires_torch

import dynalint.analysis.numpy_calls as committed
from helpers import assert_generated_module_current, marked_case_tests

CASES = [
    ("ufunc-methods", """
    import numpy as np
    import torch


    def f(pitch, idx):
        p = pitch.numpy()
        sums = np.zeros(4, dtype=np.float32)
        np.add.at(sums, idx.numpy(), p)  # breaks
        env = np.maximum.accumulate(p)  # breaks
        grid = np.subtract.outer(p, p)  # breaks
        return torch.from_numpy(sums), torch.from_numpy(env), torch.from_numpy(grid), np.add(p, p)
    """, "f", "[(torch.rand(6), torch.tensor([0, 0, 1, 2, 3, 3]))]"),
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
    ("data-dependent-size", """
    import numpy as np
    import torch


    def as_array(data):
        return data.detach().numpy()


    def coords(x):
        return np.argwhere(as_array(x))  # breaks


    def values(labels):
        return np.unique(labels)  # breaks


    def f(x):
        picked = np.where(x.numpy() > 0, 1.0, 0.0)
        return x + coords(x).shape[0] + values([1, 2, 2]).size + picked.sum()
    """, "f", "[(torch.ones(3),)]"),
    ("array-data-read-in-python", """
    import numpy as np
    import torch


    def pads(box_start, box_end, shape):
        start = np.maximum(-box_start, 0)
        end = np.maximum(box_end - np.asarray(shape), 0)
        return list(zip(start.tolist(), end.tolist()))  # breaks


    def total(x):
        s = x.numpy().sum()
        return s.item()  # breaks


    def f(x):
        p = pads(np.array([1, -2]), np.array([3, 4]), x.shape)
        return x + len(p) + total(x)
    """, "f", "[(torch.ones(3),)]"),
    # an array or a tensor, as the annotations say: either is a tensor to Dynamo, and each branch runs
    ("array-or-tensor-annotation", """
    import numpy as np
    import torch


    def flat(x: np.ndarray | torch.Tensor) -> np.ndarray | torch.Tensor:
        if isinstance(x, np.ndarray):
            return np.ravel(x)
        return x.reshape(-1)


    def positions(x: "np.ndarray | torch.Tensor"):
        if isinstance(x, np.ndarray):
            return np.flatnonzero(x)  # breaks
        return torch.nonzero(x).flatten()  # breaks


    def f(x, options):
        mask = flat(options.get("mask"))
        return x + positions(mask).shape[0]
    """, "f", "[(torch.ones(3), {'mask': torch.tensor([1., 0., 1.])}), (torch.ones(3), {'mask': np.ones(3)})]"),
    ("functions-that-read-data", """
    import numpy as np
    import torch


    def f(feats: torch.Tensor, err: torch.Tensor, sizes: torch.Tensor):
        a = feats.numpy()
        cov = np.cov(a, rowvar=False)  # breaks
        corr = np.corrcoef(err.numpy(), err.numpy())  # breaks
        same = np.allclose(a.sum(1), 1.0)  # breaks
        hist = np.bincount(sizes.numpy(), minlength=4)  # breaks
        return torch.from_numpy(cov), corr, same, torch.from_numpy(hist)
    """, "f", "[(torch.rand(8, 3), torch.rand(8), torch.randint(0, 4, (8,)))]"),
    ("numpy-types-compared", """
    import numpy as np
    import torch


    def f(x: torch.Tensor, out_type=np.uint8):
        if out_type is np.uint8:
            x = x * 255
        if out_type == np.float32:  # breaks
            x = x / 255
        return x
    """, "f", "[(torch.rand(3),)]"),
]


@requires_torch
@pytest.mark.table_generator("dynalint.verify.numpy_calls_table")
def test_committed_table_is_current(generated_table: str) -> None:
    assert_generated_module_current(generated_table, committed)


def test_the_table_lists_what_torch_numpy_lacks_and_not_what_it_has() -> None:
    assert {"numpy.ndindex", "numpy.isscalar", "numpy.nanmean"} <= committed.BREAKING_NUMPY_CALLS.keys()
    assert not {"numpy.sum", "numpy.where", "numpy.array", "numpy.shape"} & committed.BREAKING_NUMPY_CALLS.keys()
    assert "dtype" in committed.BREAKING_NDARRAY_ATTRIBUTES and "shape" not in committed.BREAKING_NDARRAY_ATTRIBUTES
    assert "tobytes" in committed.BREAKING_NDARRAY_METHODS and "sum" not in committed.BREAKING_NDARRAY_METHODS
    assert {"numpy.argwhere", "numpy.unique"} <= committed.DYNAMIC_SHAPE_NUMPY_CALLS
    assert not {"numpy.sum", "numpy.ones_like"} & committed.DYNAMIC_SHAPE_NUMPY_CALLS
    assert "numpy.bincount" in committed.DYNAMIC_SHAPE_NUMPY_CALLS  # (it takes only integer arrays)
    assert {"numpy.cov", "numpy.allclose"} <= committed.DATA_READING_NUMPY_CALLS
    assert {"numpy.uint8", "numpy.float32"} <= committed.COMPARED_NUMPY_TYPES


test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)
