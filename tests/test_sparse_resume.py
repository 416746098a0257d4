"""Dynamo skips ``torch.sparse_coo_tensor`` and resumes in a new frame after the call, which cannot take
the sparse tensor as an input: the graph breaks again where that frame first uses it, and the rest of the
function runs eagerly, so a tensor branch after it does not break (measured with real Dynamo, torch 2.13)."""
from __future__ import annotations

from conftest import requires_torch

from helpers import assert_dynamo_breaks_on_marked_lines, break_lines, marked_lines

CODE = """
    import torch

    def contingency(a, b, eps: float):
        c = torch.sparse_coo_tensor(torch.stack((a, b)), torch.ones(a.shape[0]), (4, 4))  # breaks
        n = a.shape[0]
        if eps:
            n = n + 1
        c = c.to_dense()  # breaks
        if c.sum() > 0:
            c = c + 1
        return c * n
"""


def test_flagged_lines() -> None:
    assert break_lines(CODE, entry_points=("contingency",)) == marked_lines(CODE)


@requires_torch
def test_flagged_lines_break_under_dynamo(tmp_path) -> None:
    assert_dynamo_breaks_on_marked_lines(
        CODE, "contingency", "[(torch.tensor([0, 1, 2]), torch.tensor([1, 2, 3]), 0.0)]", tmp_path)


TO_SPARSE = """
    import torch

    def smooth(x: torch.Tensor, w: torch.Tensor):
        a = (w * (w > 0.5)).to_sparse()  # breaks
        y = torch.sparse.mm(a, x)  # breaks
        if y.sum() > 0:
            y = y + 1
        return y
"""
"""A sparse tensor ``to_sparse()`` makes is one too."""


def test_to_sparse_flagged_lines() -> None:
    assert break_lines(TO_SPARSE, entry_points=("smooth",)) == marked_lines(TO_SPARSE)


@requires_torch
def test_to_sparse_flagged_lines_break_under_dynamo(tmp_path) -> None:
    assert_dynamo_breaks_on_marked_lines(TO_SPARSE, "smooth", "[(torch.randn(4, 3), torch.rand(4, 4))]", tmp_path)
