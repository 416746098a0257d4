"""``numpy.linalg`` in compiled code: Dynamo traces the functions ``torch._numpy.linalg`` defines as tensor
code, so what they return is an array of the graph, and reading a number out of it (``float(rel.mean())``)
breaks as ``.item()`` does.  The table is torch's own list; the break is checked under real Dynamo (torch
2.13)."""
from __future__ import annotations

import inspect

from conftest import requires_torch
from helpers import break_tests

from dynalint.analysis import knowledge as K

CODE = """
import numpy as np
import torch


def rel_l2(pred: torch.Tensor, ref: torch.Tensor) -> dict:
    err = (pred - ref).flatten(1).cpu().numpy()
    rel = np.linalg.norm(err, axis=1) / np.linalg.norm(ref.flatten(1).cpu().numpy(), axis=1)
    return {"rel_l2": float(rel.mean())}


def main(pred, ref):
    return torch.compile(rel_l2, backend="eager")(pred, ref)
"""

test_check, test_dynamo = break_tests(CODE, {(8, "DYN102")}, "[(torch.rand(2, 4), torch.rand(2, 4))]")


@requires_torch
def test_the_linalg_table_is_torchs():
    import torch._numpy.linalg as linalg

    defined = {name for name, obj in vars(linalg).items()
               if inspect.isfunction(obj) and not name.startswith("_") and obj.__module__ == linalg.__name__}
    assert K.NUMPY_LINALG_FUNCS == defined - {"linalg_errors"}  # (a decorator of the others)
