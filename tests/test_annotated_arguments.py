"""Arguments of compiled code typed by their annotations where Dynamo sees what they promise: each of
``*planes: torch.Tensor`` is a tensor, so is ``lens: Annotated[torch.Tensor, "b"]``, and ``kpts: np.ndarray`` is a NumPy array, which Dynamo holds as a tensor, so a
branch on its data and a boolean mask of it break there as on a tensor.  Each case is also run under real Dynamo
(torch 2.13)."""
from __future__ import annotations

from helpers import marked_case_tests

CASES = [
    ("star-args", """
    import torch
    import torch.nn as nn
    import torch.nn.functional as F


    class TriplaneSampler(nn.Module):
        def forward(self, xyz: torch.Tensor, *planes: torch.Tensor) -> torch.Tensor:
            grid = xyz[None, :, None, :2]
            feats = [F.grid_sample(p, grid, align_corners=False) for p in planes]
            if planes[0].max() > 1e3:  # breaks
                feats = [f / 1e3 for f in feats]
            return torch.stack(feats).sum(0)
    """, "TriplaneSampler", "[(torch.rand(5, 3) * 2 - 1, torch.rand(1, 4, 8, 8), torch.rand(1, 4, 8, 8))]"),
    ("annotated", """
    from typing import Annotated

    import torch
    import torch.nn.functional as F


    def pad_to_longest(seqs: Annotated[torch.Tensor, "b n d"], lens: Annotated[torch.Tensor, "b"]):
        longest = int(lens.amax())  # breaks
        return F.pad(seqs, (0, 0, 0, longest - seqs.shape[1]))
    """, "pad_to_longest", "[(torch.randn(2, 3, 4), torch.tensor([3, 5]))]"),
    ("numpy-arrays", """
    import numpy as np
    import torch


    def f(kpts: np.ndarray, areas: np.ndarray, thr: float = 0.2) -> np.ndarray:
        vis = kpts[:, :, 2] > 0
        if areas.max() < 1.0:  # breaks
            areas = areas * 64.0
        return kpts[(vis.sum(1) / areas) > thr / 64.0]  # breaks
    """, "f", "[(np.random.rand(4, 17, 3), np.random.rand(4))]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)
