"""A tensor the analysis computed stays a tensor whatever an annotation says: Dynamo does not read
annotations, so a helper annotated ``-> Tuple[Tensor, float]`` that returns ``x.mean()`` hands back a tensor
(a branch on it breaks), and a parameter annotated ``float`` that is passed a loss is a tensor.  An argument
only taken for a tensor keeps the annotation.  Each case is also run under real Dynamo (torch 2.13)."""
from __future__ import annotations

from helpers import marked_case_tests

CASES = [
    ("return-and-parameter", """
    from typing import Tuple

    import torch
    import torch.nn.functional as F


    def batch_stats(dist: torch.Tensor, margin: float) -> Tuple[torch.Tensor, float]:
        triplet = torch.relu(dist.unsqueeze(2) - dist.unsqueeze(1) + margin)
        return triplet.mean(), (triplet > 1e-16).float().mean()


    def improved(metric: float, best: float) -> bool:
        return metric < best - 1e-4


    def f(dist: torch.Tensor, target: torch.Tensor):
        loss, frac = batch_stats(dist, 0.2)
        if frac > 0.9:  # breaks
            loss = loss * 2
        if improved(F.mse_loss(dist, target), 1.0):  # breaks
            loss = loss + 1
        return loss
    """, "f", "[(torch.rand(6, 6), torch.rand(6, 6))]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)
