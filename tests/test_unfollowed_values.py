"""Values the analysis cannot follow to their definition (a registry lookup, a base class's attribute set
several ``__init__``s up) still say what they are by how the code uses them: only a tensor has
``.unsqueeze()``, only an array takes ``.any()`` or several index tensors at once, and a comparison is a
bool or a mask whatever it compares.

Each single-file case is also run under real Dynamo: the lines flagged must be the lines where its
graph-break log reports a break.
"""
from __future__ import annotations

from conftest import requires_torch
from dynalint.analysis import knowledge as K

from helpers import marked_case_tests

_REGISTRY = """
    import torch

    REGISTRY = {}


    def register(fn):
        REGISTRY[fn.__name__] = fn
        return fn


    @register
    def distances(x):
        return torch.cdist(x, x)


    @register
    def identity(t):
        return t


    LINEAR = torch.nn.Linear(3, 3)


    @register
    def linear():
        return LINEAR

"""


CASES = [
    ("tensor-only-method", _REGISTRY + """
    def f(x, labels):
        lab = REGISTRY["identity"](labels)
        same = lab.unsqueeze(1) == lab.unsqueeze(0)
        return (x @ x.t())[same]  # breaks
    """, "f", "[(torch.randn(4, 3), torch.tensor([0, 1, 0, 1]))]"),
    ("comparison-of-unknown-is-a-mask", _REGISTRY + """
    def f(x, labels: torch.Tensor):
        same = labels.unsqueeze(1) == labels.unsqueeze(0)
        mat = REGISTRY["distances"](x)
        return mat[same & (mat < 0.5)]  # breaks
    """, "f", "[(torch.randn(4, 3), torch.tensor([0, 1, 0, 1]))]"),
    ("array-reduction-of-unknown", _REGISTRY + """
    def f(x):
        mat = REGISTRY["distances"](x)
        if mat.any():  # breaks
            x = x * 2
        if REGISTRY["identity"](x).abs().sum() < 1e-5:  # breaks
            x = x + 1
        if REGISTRY["linear"]().float():  # modules have `.float()` too: not taken for a tensor
            x = x - 1
        return x
    """, "f", "[(torch.randn(4, 3),)]"),
    ("several-index-tensors", _REGISTRY + """
    def f(x, rows: torch.Tensor, cols: torch.Tensor):
        mat = REGISTRY["distances"](x)
        picked = mat[rows, cols]
        return rows[picked > 0.5]  # breaks
    """, "f", "[(torch.randn(4, 3), torch.tensor([0, 1]), torch.tensor([2, 3]))]"),
    ("operand-that-decides-and", """
    import torch


    def is_compiling():
        return torch.compiler.is_compiling()


    def f(x, verbose: bool = True):
        if verbose and not is_compiling() and x.sum() > 0:  # `not is_compiling()` is false: never reached
            print("positive")
        if x.max() > 0:  # breaks
            x = x * 2
        return x
    """, "f", "[(torch.randn(4, 3),)]"),
    ("attribute-of-a-far-base-init", """
    import torch
    from torch import nn


    class Distance(nn.Module):
        def forward(self, x, y):
            return torch.cdist(x, y)


    class WithDistance(nn.Module):
        def __init__(self, distance=None, **kwargs):
            super().__init__()
            self.distance = self.default_distance() if distance is None else distance

        def default_distance(self):
            return Distance()


    class Miner(WithDistance):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)


    class TupleMiner(Miner):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)


    class MarginMiner(TupleMiner):
        def __init__(self, margin=0.2, **kwargs):
            super().__init__(**kwargs)
            self.margin = margin

        def forward(self, emb):
            mat = self.distance(emb, emb)
            if mat.sum() > self.margin:  # breaks
                emb = emb * 2
            return emb


    def f(emb):
        return MarginMiner()(emb)
    """, "f", "[(torch.randn(4, 3),)]"),
    # torch's functions of a data-dependent size take nothing but a tensor: the value is one where they run
    ("tensor-only-function", _REGISTRY + """
    import numpy as np


    def positions(x):
        if isinstance(x, np.ndarray):
            return x
        return torch.nonzero(x).flatten()  # breaks


    def f(x, mask):
        return positions(REGISTRY["identity"](mask)).sum() + x
    """, "f", "[(torch.ones(3), torch.tensor([True, False, True]))]"),
    # only a tensor or a NumPy array (a tensor under Dynamo) has `.tolist()`/`.item()`: the value is one;
    # a NumPy integer scalar the analysis knows of is a constant to Dynamo
    ("array-extraction-of-unknown", _REGISTRY + """
    import numpy as np

    COUNT = np.int64(3)


    def f(x):
        picked = REGISTRY["identity"](x)
        rows = picked.tolist()  # breaks
        return x * len(rows) * COUNT.item()
    """, "f", "[(torch.ones(3),)]"),
]


test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)


@requires_torch
def test_tensor_only_methods_are_only_tensor_methods() -> None:
    import numpy as np
    import torch

    others = (int, float, complex, bool, str, bytes, list, tuple, dict, set, np.ndarray, np.float64,
              torch.nn.Module)
    assert all(hasattr(torch.Tensor, name) for name in K.TENSOR_ONLY_METHODS)
    assert not {name for name in K.TENSOR_ONLY_METHODS if any(hasattr(t, name) for t in others)}


@requires_torch
def test_array_extractions_are_only_array_methods() -> None:
    import numpy as np
    import torch

    others = (int, float, complex, bool, str, bytes, list, tuple, dict, set, torch.nn.Module)
    assert all(hasattr(torch.Tensor, name) and hasattr(np.ndarray, name) for name in K.ARRAY_EXTRACTIONS)
    assert not {name for name in K.ARRAY_EXTRACTIONS if any(hasattr(t, name) for t in others)}
