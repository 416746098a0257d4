"""``and``/``or`` between a Python value and a tensor, as Dynamo evaluates them while tracing: a flag
``and`` a tensor is the tensor (``ok = self.batch_first and mask.all()``; a branch on ``ok`` breaks), and a
size ``or`` anything is the size (``n = max_len or lengths.max().item()`` given ``x.size(1)`` reads no data:
the other operand runs only for an empty dimension).  Each case is also run under real Dynamo (torch 2.13)."""
from __future__ import annotations

from helpers import marked_case_tests

CASES = [
    ("flag-and-tensor", """
    import torch
    from torch import nn


    class Check(nn.Module):
        def __init__(self, batch_first: bool = True):
            super().__init__()
            self.batch_first = batch_first

        def forward(self, emissions: torch.Tensor, mask: torch.Tensor, lengths: torch.Tensor):
            ok = self.batch_first and mask[:, 0].all()
            if not ok:  # breaks
                raise ValueError("mask of the first timestep must all be on")
            empty = self.training or (lengths == 0).any()
            if empty:  # breaks
                return emissions.new_zeros(())
            return emissions.sum()


    def f(emissions: torch.Tensor, mask: torch.Tensor, lengths: torch.Tensor):
        return Check().eval()(emissions, mask, lengths)
    """, "f", "[(torch.randn(2, 3), torch.ones(2, 3, dtype=torch.bool), torch.tensor([3, 3]))]"),
    ("size-or-data", """
    import torch


    def lengths_to_mask(lengths: torch.Tensor, max_len: int = None) -> torch.Tensor:
        max_len = max_len or lengths.max().item()
        return torch.arange(max_len).unsqueeze(0) < lengths.unsqueeze(1)


    def f(x: torch.Tensor, lengths: torch.Tensor):
        mask = lengths_to_mask(lengths, x.size(1)).unsqueeze(-1)
        return (x * mask).sum(1) / mask.sum(1)
    """, "f", "[(torch.randn(2, 5, 3), torch.tensor([5, 3]))]"),
    ("none-or-data", """
    import torch


    def lengths_to_mask(lengths: torch.Tensor, max_len: int = None) -> torch.Tensor:
        max_len = max_len or lengths.max().item()  # breaks
        return torch.arange(max_len).unsqueeze(0) < lengths.unsqueeze(1)


    def f(x: torch.Tensor, lengths: torch.Tensor):
        mask = lengths_to_mask(lengths).unsqueeze(-1)
        return (x * mask).sum(1) / mask.sum(1)
    """, "f", "[(torch.randn(2, 5, 3), torch.tensor([5, 3]))]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)
